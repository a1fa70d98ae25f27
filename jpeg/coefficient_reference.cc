// libjpeg-turbo's reading of a JPEG's coefficients, the reference pcr's
// progressive decoder is compared with, and the comparison.
#include <cstring>
#include <vector>

#include "jpeg/coefficients.h"
#include "jpeg/error_manager.h"

namespace pcr {

struct LibjpegCoefficientReader::State {
  jpeg_decompress_struct cinfo{};
  JpegErrorManager err{};
};

LibjpegCoefficientReader::LibjpegCoefficientReader() : s_(std::make_unique<State>()) {
  s_->err.Install(reinterpret_cast<j_common_ptr>(&s_->cinfo));
  jpeg_create_decompress(&s_->cinfo);
}

LibjpegCoefficientReader::~LibjpegCoefficientReader() { jpeg_destroy_decompress(&s_->cinfo); }

CoefficientOutcome LibjpegCoefficientReader::Read(ByteSpan jpeg, bool warnings_are_errors, const BlockRowFn& row,
                                                  CoefficientFrame* frame) {
  RenewDecompressor(&s_->cinfo, &s_->err);
  jpeg_decompress_struct& cinfo = s_->cinfo;
  s_->err.Reset();
  s_->err.warnings = warnings_are_errors ? JpegWarnings::kAllAreErrors : JpegWarnings::kIgnore;
  if (setjmp(s_->err.jump)) {
    jpeg_abort_decompress(&cinfo);
    return {CoefficientOutcome::kError, s_->err.message};
  }
  jpeg_mem_src(&cinfo, jpeg.data(), static_cast<unsigned long>(jpeg.size()));
  jpeg_read_header(&cinfo, TRUE);
  jvirt_barray_ptr* arrays = jpeg_read_coefficients(&cinfo);
  if (frame != nullptr) {
    *frame = {};
    frame->width = static_cast<int>(cinfo.image_width);
    frame->height = static_cast<int>(cinfo.image_height);
    frame->num_components = std::min(cinfo.num_components, 4);
    for (int c = 0; c < frame->num_components; ++c) {
      const jpeg_component_info& ci = cinfo.comp_info[c];
      frame->components[static_cast<size_t>(c)] = {ci.component_id, ci.h_samp_factor, ci.v_samp_factor,
                                                   static_cast<int>(ci.width_in_blocks),
                                                   static_cast<int>(ci.height_in_blocks)};
    }
  }
  if (row) {
    for (int c = 0; c < cinfo.num_components; ++c) {
      const jpeg_component_info& ci = cinfo.comp_info[c];
      for (JDIMENSION r = 0; r < ci.height_in_blocks; ++r) {
        JBLOCKARRAY b = (*cinfo.mem->access_virt_barray)(reinterpret_cast<j_common_ptr>(&cinfo), arrays[c], r, 1,
                                                         FALSE);
        row(c, static_cast<int>(r), b[0][0]);
      }
    }
  }
  jpeg_abort_decompress(&cinfo);
  return {};
}

CoefficientComparison CompareCoefficientDecoders(ByteSpan jpeg, ProgressiveCoefficientDecoder& pcr_decoder,
                                                 LibjpegCoefficientReader& libjpeg_reader) {
  CoefficientComparison out;
  std::vector<std::vector<int16_t>> blocks(4);
  out.pcr = pcr_decoder.Open(jpeg);
  CoefficientFrame frame;
  if (out.pcr.ok()) {
    frame = pcr_decoder.frame();
    for (int c = 0; c < frame.num_components; ++c) {
      const auto& comp = frame.components[static_cast<size_t>(c)];
      blocks[static_cast<size_t>(c)].assign(size_t(comp.width_in_blocks) * comp.height_in_blocks * 64, 0);
    }
    out.pcr = pcr_decoder.Decode([&](int c, int r, const int16_t* b) {
      const size_t n = size_t(frame.components[static_cast<size_t>(c)].width_in_blocks) * 64;
      std::memcpy(blocks[static_cast<size_t>(c)].data() + size_t(r) * n, b, n * sizeof(int16_t));
    });
  }
  CoefficientFrame reference;
  std::string first_difference;
  out.libjpeg = libjpeg_reader.Read(
      jpeg, true,
      [&](int c, int r, const int16_t* b) {
        if (!out.pcr.ok() || !first_difference.empty() || c >= frame.num_components) return;
        const auto& comp = frame.components[static_cast<size_t>(c)];
        if (r >= comp.height_in_blocks) return;
        const size_t n = size_t(comp.width_in_blocks) * 64;
        const int16_t* mine = blocks[static_cast<size_t>(c)].data() + size_t(r) * n;
        for (size_t i = 0; i < n; ++i) {
          if (mine[i] != b[i]) {
            first_difference = "component " + std::to_string(c) + " block row " + std::to_string(r) + " block " +
                               std::to_string(i / 64) + " coefficient " + std::to_string(i % 64) + ": pcr " +
                               std::to_string(mine[i]) + ", libjpeg-turbo " + std::to_string(b[i]);
            return;
          }
        }
      },
      &reference);
  if (out.pcr.ok() && !out.libjpeg.ok()) {
    out.mismatch = "pcr decoded what libjpeg-turbo refuses: " + out.libjpeg.message;
  } else if (out.pcr.ok()) {
    bool same = reference.width == frame.width && reference.height == frame.height &&
                reference.num_components == frame.num_components;
    for (int c = 0; same && c < frame.num_components; ++c) {
      const auto& a = frame.components[static_cast<size_t>(c)];
      const auto& b = reference.components[static_cast<size_t>(c)];
      same = a.id == b.id && a.h == b.h && a.v == b.v && a.width_in_blocks == b.width_in_blocks &&
             a.height_in_blocks == b.height_in_blocks;
    }
    if (!same) {
      out.mismatch = "the frames differ";
    } else if (!first_difference.empty()) {
      out.mismatch = first_difference;
    }
  } else if (out.pcr.kind != CoefficientOutcome::kNotHandled && out.libjpeg.ok()) {
    out.mismatch = "pcr reports what libjpeg-turbo accepts: " + out.pcr.message;
  }
  return out;
}

}  // namespace pcr

