#include "writer/transcode.h"

#include "format/file_format.h"
#include "format/segments.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <string>

#include "jpeg/error_manager.h"

// clang-format off
#include <jerror.h>
// clang-format on

namespace pcr {

namespace {

constexpr uint8_t kSOI = 0xd8, kEOI = 0xd9, kSOS = 0xda;

bool IsStandalone(uint8_t m) { return m == 0x01 || (m >= 0xd0 && m <= 0xd9); }
bool IsSof(uint8_t m) { return m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc; }

// Reads the frame header without decoding to give clear refusals for
// encodings libjpeg-turbo's 8-bit API cannot transcode.
Status CheckFrameType(ByteSpan in) {
  if (in.size() < 2 || in[0] != 0xff || in[1] != kSOI) {
    return Status::Corruption("not a JPEG file (no SOI marker at offset 0)");
  }
  size_t pos = 2;
  while (pos + 4 <= in.size()) {
    if (in[pos] != 0xff) return Status::OK();  // let libjpeg report the damage
    const uint8_t m = in[pos + 1];
    if (m == 0xff) {
      ++pos;
      continue;
    }
    if (IsStandalone(m)) {
      pos += 2;
      continue;
    }
    const size_t len = static_cast<size_t>(in[pos + 2]) << 8 | in[pos + 3];
    if (IsSof(m)) {
      if (m == 0xc3 || m == 0xcb) return Status::NotSupported("lossless JPEG is not supported");
      if ((m >= 0xc5 && m <= 0xc7) || m >= 0xcd) {
        return Status::NotSupported("hierarchical JPEG is not supported");
      }
      if (pos + 4 < in.size() && in[pos + 4] != 8) {
        return Status::NotSupported(std::to_string(in[pos + 4]) +
                                    "-bit JPEG is not supported (only 8-bit samples)");
      }
      return Status::OK();
    }
    if (m == kSOS) return Status::OK();
    pos += 2 + len;
  }
  return Status::OK();
}

// The scans of `script` for an image whose components are described by
// `comps`, and the group each scan belongs to.
struct ScanPlan {
  std::vector<jpeg_scan_info> scans;
  std::vector<int> group_of_scan;
};

ScanPlan PlanScans(const ScanScript& script, int num_components, const jpeg_component_info* comps) {
  ScanPlan plan;
  const unsigned present = (1u << num_components) - 1;
  for (int g = 0; g < script.group_count(); ++g) {
    for (const ScanSpec& spec : script.groups[g]) {
      const unsigned mask = spec.component_mask & present;
      if (mask == 0) continue;
      int blocks = 0;
      for (int c = 0; c < num_components; ++c) {
        if (mask & (1u << c)) blocks += comps[c].h_samp_factor * comps[c].v_samp_factor;
      }
      // An interleaved scan must fit C_MAX_BLOCKS_IN_MCU; otherwise code each
      // component in its own scan of the same group.
      const bool split = blocks > C_MAX_BLOCKS_IN_MCU;
      jpeg_scan_info scan{};
      scan.Ss = spec.ss;
      scan.Se = spec.se;
      scan.Ah = spec.ah;
      scan.Al = spec.al;
      for (int c = 0; c < num_components; ++c) {
        if ((mask & (1u << c)) == 0) continue;
        scan.component_index[scan.comps_in_scan++] = c;
        if (split) {
          plan.scans.push_back(scan);
          plan.group_of_scan.push_back(g);
          scan.comps_in_scan = 0;
        }
      }
      if (!split) {
        plan.scans.push_back(scan);
        plan.group_of_scan.push_back(g);
      }
    }
  }
  return plan;
}

bool IsJfifApp0(const jpeg_saved_marker_ptr m) {
  return m->marker == JPEG_APP0 && m->data_length >= 5 && std::memcmp(m->data, "JFIF\0", 5) == 0;
}
bool IsAdobeApp14(const jpeg_saved_marker_ptr m) {
  return m->marker == JPEG_APP0 + 14 && m->data_length >= 5 && std::memcmp(m->data, "Adobe", 5) == 0;
}

// Finds the end of the SOF segment and the end of every scan's entropy-coded
// data in a JPEG written by libjpeg.
Status SplitScans(ByteSpan jpeg, size_t* header_end, std::vector<size_t>* scan_ends) {
  size_t pos = 2;
  *header_end = 0;
  while (pos + 2 <= jpeg.size()) {
    if (jpeg[pos] != 0xff) return Status::Corruption("transcoder output: expected a marker");
    const uint8_t m = jpeg[pos + 1];
    if (m == kEOI) {
      if (pos + 2 != jpeg.size()) return Status::Corruption("transcoder output: data after EOI");
      return *header_end != 0 ? Status::OK() : Status::Corruption("transcoder output: no SOF");
    }
    if (pos + 4 > jpeg.size()) break;
    const size_t seg_end = pos + 2 + (static_cast<size_t>(jpeg[pos + 2]) << 8 | jpeg[pos + 3]);
    if (seg_end > jpeg.size()) break;
    if (IsSof(m)) *header_end = seg_end;
    pos = seg_end;
    if (m != kSOS) continue;
    // Entropy-coded data runs to the next marker other than RSTn; 0xff00 is
    // a stuffed byte.
    while (pos + 1 < jpeg.size() &&
           !(jpeg[pos] == 0xff && jpeg[pos + 1] != 0 && !(jpeg[pos + 1] >= 0xd0 && jpeg[pos + 1] <= 0xd7))) {
      ++pos;
    }
    scan_ends->push_back(pos);
  }
  return Status::Corruption("transcoder output: truncated");
}

// A libjpeg destination writing into a Bytes the caller owns, so the output
// is freed exactly once however the compression ends (jpeg_mem_dest frees
// and replaces its buffer as it grows, which a longjmp can leave dangling).
struct BytesDestination {
  jpeg_destination_mgr pub{};
  Bytes* out = nullptr;

  static void Init(j_compress_ptr cinfo) { Grow(cinfo, 0); }
  static boolean Empty(j_compress_ptr cinfo) {
    auto* d = reinterpret_cast<BytesDestination*>(cinfo->dest);
    Grow(cinfo, d->out->size());
    return TRUE;
  }
  static void Term(j_compress_ptr cinfo) {
    auto* d = reinterpret_cast<BytesDestination*>(cinfo->dest);
    d->out->resize(d->out->size() - d->pub.free_in_buffer);
  }
  // Keeps the `used` bytes written and makes room for as many again.
  static void Grow(j_compress_ptr cinfo, size_t used) {
    auto* d = reinterpret_cast<BytesDestination*>(cinfo->dest);
    bool grown = true;
    try {
      d->out->resize(std::max<size_t>(used * 2, 64 << 10));
    } catch (const std::bad_alloc&) {
      grown = false;
    }
    if (!grown) ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 10);  // outside the handler: it longjmps
    d->pub.next_output_byte = d->out->data() + used;
    d->pub.free_in_buffer = d->out->size() - used;
  }

  void Attach(j_compress_ptr cinfo, Bytes* bytes) {
    out = bytes;
    pub.init_destination = Init;
    pub.empty_output_buffer = Empty;
    pub.term_destination = Term;
    cinfo->dest = &pub;
  }
};

struct Codec {
  jpeg_decompress_struct src{};
  jpeg_compress_struct dst{};
  JpegErrorManager err{};
  BytesDestination dest;
  Bytes out;
  Bytes segments;  // the segments kept apart (SegmentEntries)
  std::optional<int> orientation;
  bool src_created = false;
  bool dst_created = false;

  ~Codec() {
    if (dst_created) jpeg_destroy_compress(&dst);
    if (src_created) jpeg_destroy_decompress(&src);
  }
};

// Runs libjpeg; every C++ object it touches lives in `codec` or outside, so
// a longjmp out of libjpeg skips no destructor.
bool RunLibjpeg(Codec* c, ByteSpan jpeg, const TranscodeOptions& options, const ScanScript& script,
                ScanPlan* plan) {
  c->err.Install(reinterpret_cast<j_common_ptr>(&c->src));
  c->err.warnings = JpegWarnings::kLossIsError;
  c->err.max_input_scans = options.max_input_scans;
  c->err.max_memory_bytes = options.max_memory_bytes;
  if (setjmp(c->err.jump)) return false;
  jpeg_create_decompress(&c->src);
  c->src_created = true;
  c->src.mem->max_memory_to_use = static_cast<long>(options.max_memory_bytes);
  c->err.WatchScans(&c->src);
  jpeg_mem_src(&c->src, jpeg.data(), jpeg.size());
  // Stripped images still carry the JFIF and Adobe segments they had: the
  // Adobe one says how to read CMYK and YCCK samples.
  jpeg_save_markers(&c->src, JPEG_APP0, 0xffff);
  jpeg_save_markers(&c->src, JPEG_APP0 + 14, 0xffff);
  if (options.keep_metadata) {
    jpeg_save_markers(&c->src, JPEG_COM, 0xffff);
    for (int i = 1; i < 14; ++i) jpeg_save_markers(&c->src, JPEG_APP0 + i, 0xffff);
    jpeg_save_markers(&c->src, JPEG_APP0 + 15, 0xffff);
  }
  jpeg_read_header(&c->src, TRUE);
  if (static_cast<uint64_t>(c->src.image_width) * c->src.image_height > options.max_pixels) {
    c->err.message = PixelLimitMessage(c->src.image_width, c->src.image_height, options.max_pixels);
    c->err.not_supported = true;
    return false;
  }
  if (c->src.num_components < 1 || c->src.num_components > kMaxScanComponents) {
    c->err.message = std::to_string(c->src.num_components) + " components (supported: 1 to 4)";
    c->err.not_supported = true;
    return false;
  }
  // Progressive scans name components by id, so ids must tell them apart.
  for (int ci = 0; ci < c->src.num_components; ++ci) {
    for (int cj = 0; cj < ci; ++cj) {
      if (c->src.comp_info[ci].component_id == c->src.comp_info[cj].component_id) {
        c->err.message = "components " + std::to_string(cj) + " and " + std::to_string(ci) +
                         " share the id " + std::to_string(c->src.comp_info[ci].component_id);
        return false;
      }
    }
  }
  // libjpeg-turbo's upsampler decodes only integral sampling ratios; a file
  // it cannot decode to pixels has no pixels to preserve.
  for (int ci = 0; ci < c->src.num_components; ++ci) {
    const jpeg_component_info& comp = c->src.comp_info[ci];
    if (c->src.max_h_samp_factor % comp.h_samp_factor != 0 ||
        c->src.max_v_samp_factor % comp.v_samp_factor != 0) {
      c->err.message = "sampling factors " + std::to_string(comp.h_samp_factor) + "x" +
                       std::to_string(comp.v_samp_factor) + " of component " + std::to_string(ci) +
                       " are not an integral fraction of the maximum (not decodable)";
      c->err.not_supported = true;
      return false;
    }
  }
  jvirt_barray_ptr* coefs = jpeg_read_coefficients(&c->src);
  // libjpeg smooths blocks whose coefficients a progressive file never sent,
  // so such a file cannot be transcoded to the same pixels.
  if (c->src.progressive_mode && c->src.coef_bits != nullptr) {
    for (int ci = 0; ci < c->src.num_components; ++ci) {
      for (int k = 0; k < DCTSIZE2; ++k) {
        if (c->src.coef_bits[ci][k] != 0) {
          c->err.message = "incomplete progressive JPEG: coefficient " + std::to_string(k) +
                           " of component " + std::to_string(ci) + " is not fully coded";
          return false;
        }
      }
    }
  }

  c->dst.err = &c->err.pub;
  jpeg_create_compress(&c->dst);
  c->dst_created = true;
  c->dst.mem->max_memory_to_use = static_cast<long>(options.max_memory_bytes);
  jpeg_copy_critical_parameters(&c->src, &c->dst);
  // The original's segments are copied as they were and libjpeg adds none.
  // But where libjpeg warned about a JFIF version or an Adobe transform and
  // read the image in a colour space of its choosing, it writes its own JFIF
  // and Adobe segments for that colour space in place of the originals.
  const bool replace = c->err.misread_segment;
  if (!replace) {
    c->dst.write_JFIF_header = FALSE;
    c->dst.write_Adobe_marker = FALSE;
  }
  c->dst.optimize_coding = TRUE;
  *plan = PlanScans(script, c->dst.num_components, c->dst.comp_info);
  c->dst.scan_info = plan->scans.data();
  c->dst.num_scans = static_cast<int>(plan->scans.size());
  c->dest.Attach(&c->dst, &c->out);
  jpeg_write_coefficients(&c->dst, coefs);
  // The segments libjpeg writes itself come first in group 1.
  uint64_t position = (c->dst.write_JFIF_header ? 1 : 0) + (c->dst.write_Adobe_marker ? 1 : 0);
  for (jpeg_saved_marker_ptr m = c->src.marker_list; m != nullptr; m = m->next) {
    const bool jfif_or_adobe = IsJfifApp0(m) || IsAdobeApp14(m);
    if (!(options.keep_metadata || jfif_or_adobe) || (replace && jfif_or_adobe)) continue;
    const ByteSpan payload(m->data, m->data_length);
    if (IsDecodingSegment(static_cast<uint8_t>(m->marker), payload)) {
      jpeg_write_marker(&c->dst, m->marker, m->data, m->data_length);
    } else {
      PutSegmentEntry(position, static_cast<uint8_t>(m->marker), payload, &c->segments);
      if (m->marker == JPEG_APP0 + 1 && !c->orientation) c->orientation = ExifOrientation(payload);
    }
    ++position;
  }
  jpeg_finish_compress(&c->dst);
  jpeg_finish_decompress(&c->src);
  return true;
}

}  // namespace

Result<Bytes> TranscodedImage::Original() const {
  Bytes out;
  PCR_RETURN_IF_ERROR(InsertSegments(chunks[0], segments, &out));
  for (size_t g = 1; g < chunks.size(); ++g) PutBytes(&out, chunks[g]);
  PutBytes(&out, kJpegEndOfImage);
  return out;
}

Bytes TranscodedImage::AtFidelity(int k) const {
  Bytes out;
  for (int g = 0; g < k; ++g) PutBytes(&out, chunks[g]);
  PutBytes(&out, kJpegEndOfImage);
  return out;
}

Result<TranscodedImage> TranscodeToScanGroups(ByteSpan jpeg, const ScanScript& script,
                                              const TranscodeOptions& options) {
  if (jpeg.size() > options.max_memory_bytes) {
    return Status::NotSupported("file of " + std::to_string(jpeg.size()) + " bytes, more than " +
                                MemoryLimitText(options.max_memory_bytes));
  }
  PCR_RETURN_IF_ERROR(CheckFrameType(jpeg));
  Codec codec;
  ScanPlan plan;
  if (!RunLibjpeg(&codec, jpeg, options, script, &plan)) {
    if (codec.err.not_supported) return Status::NotSupported(codec.err.message);
    return Status::Corruption(codec.err.message);
  }
  const ByteSpan out(codec.out);
  size_t header_end = 0;
  std::vector<size_t> scan_ends;
  PCR_RETURN_IF_ERROR(SplitScans(out, &header_end, &scan_ends));
  if (scan_ends.size() != plan.scans.size()) {
    return Status::Corruption("transcoder output has " + std::to_string(scan_ends.size()) +
                              " scans, expected " + std::to_string(plan.scans.size()));
  }
  TranscodedImage image;
  image.width = static_cast<int>(codec.dst.image_width);
  image.height = static_cast<int>(codec.dst.image_height);
  image.components = codec.dst.num_components;
  image.segments = std::move(codec.segments);
  image.orientation = codec.orientation;
  image.chunks.resize(script.group_count());
  image.chunks[0].assign(out.begin(), out.begin() + header_end);
  size_t start = header_end;
  for (size_t s = 0; s < scan_ends.size(); ++s) {
    Bytes& chunk = image.chunks[plan.group_of_scan[s]];
    chunk.insert(chunk.end(), out.begin() + start, out.begin() + scan_ends[s]);
    start = scan_ends[s];
  }
  return image;
}

}  // namespace pcr
