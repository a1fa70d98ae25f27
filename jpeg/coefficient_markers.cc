// pcr's progressive decoder's marker parser: a JPEG's frame, tables and
// scans, with the entropy-coded data of each scan destuffed.
#include <algorithm>
#include <cstring>

#include "jpeg/coefficient_state.h"

namespace pcr {

using entropy::BuildTable;
using entropy::kNaturalOrder;
using entropy::RawTable;

// Copies the entropy-coded data at *pos without its stuffing, split at RSTn
// markers, and leaves *pos at the marker that ends it (or the end of input).
CoefficientOutcome ProgressiveCoefficientDecoder::State::ReadScanData(size_t* pos, Scan* scan) {
  const uint8_t* p = jpeg.data();
  const size_t n = jpeg.size();
  size_t i = *pos;
  scan->segment_begin.assign(1, data.size());
  int next_rst = 0;
  while (true) {
    const void* ff = i < n ? std::memchr(p + i, 0xff, n - i) : nullptr;
    const size_t run_end = ff ? static_cast<size_t>(static_cast<const uint8_t*>(ff) - p) : n;
    data.insert(data.end(), p + i, p + run_end);
    i = run_end;
    if (i >= n) {
      scan->ends_at_file_end = true;
      break;
    }
    size_t j = i + 1;
    while (j < n && p[j] == 0xff) ++j;  // fill bytes
    if (j >= n) {
      scan->ends_at_file_end = true;
      i = n;
      break;
    }
    if (p[j] == 0) {
      data.push_back(0xff);
      i = j + 1;
      continue;
    }
    if (p[j] >= 0xd0 && p[j] <= 0xd7) {
      if (p[j] != 0xd0 + next_rst) return NotHandled("restart markers out of order");
      next_rst = (next_rst + 1) & 7;
      scan->segment_begin.push_back(data.size());
      i = j + 1;
      continue;
    }
    scan->end_marker = p[j];
    i = j - 1;  // the marker's last 0xff
    break;
  }
  scan->segment_begin.push_back(data.size());
  *pos = i;
  return {};
}

CoefficientOutcome ProgressiveCoefficientDecoder::State::Open(ByteSpan in) {
  jpeg = in;
  frame = {};
  num_scans = 0;
  data.clear();
  if (scans.size() < kMaxScans) scans.resize(kMaxScans);
  const uint8_t* p = in.data();
  const size_t n = in.size();
  if (n < 4 || p[0] != 0xff || p[1] != 0xd8) return NotHandled("no SOI marker");
  RawTable dc_tables[4], ac_tables[4];
  bool quant_defined[4] = {};
  std::array<uint16_t, 64> quant_tables[4] = {};
  bool quant_latched[4] = {};
  int quant_of[4] = {};
  bool saw_sof = false, saw_jfif = false, saw_adobe = false;
  int adobe_transform = 0;
  unsigned restart_interval = 0;
  // Coefficients already sent, per component (bit k: zigzag k).
  uint64_t sent[4] = {};
  size_t pos = 2;
  while (true) {
    if (pos >= n || p[pos] != 0xff) return NotHandled("bytes outside a segment at byte " + std::to_string(pos));
    size_t mpos = pos;
    while (mpos + 1 < n && p[mpos + 1] == 0xff) ++mpos;
    if (mpos + 1 >= n) return NotHandled("truncated marker");
    const uint8_t m = p[mpos + 1];
    pos = mpos + 2;
    if (m == 0xd9) break;  // EOI
    if (m >= 0xd0 && m <= 0xd7) continue;  // a stray RSTn: libjpeg passes over it
    if (pos + 2 > n) return NotHandled("truncated segment");
    const size_t length = static_cast<size_t>(p[pos]) << 8 | p[pos + 1];
    if (length < 2 || pos + length > n) return NotHandled("truncated or malformed segment");
    const uint8_t* seg = p + pos + 2;
    const size_t len = length - 2;
    const size_t seg_start = mpos;
    pos += length;
    if (m >= 0xe0 && m <= 0xef) {
      if (m == 0xe0 && len >= 14 && std::memcmp(seg, "JFIF\0", 5) == 0) {
        if (seg[5] != 1) return NotHandled("JFIF major version " + std::to_string(seg[5]));
        saw_jfif = true;
      } else if (m == 0xee && len >= 12 && std::memcmp(seg, "Adobe", 5) == 0) {
        saw_adobe = true;
        frame.saw_adobe = true;
        adobe_transform = seg[11];
      }
      continue;
    }
    if (m == 0xfe) continue;  // COM
    if (m == 0xdb) {          // DQT
      size_t k = 0;
      while (k < len) {
        const int t = seg[k] & 15, prec = seg[k] >> 4;
        if (t >= 4) return NotHandled("DQT table index");
        const size_t need = 1 + 64 * (prec ? 2 : 1);
        if (k + need > len) return NotHandled("short DQT");
        quant_defined[t] = true;
        for (size_t i = 0; i < 64; ++i) {
          const uint8_t* q = seg + k + 1 + (prec ? 2 * i : i);
          quant_tables[t][kNaturalOrder[i]] = static_cast<uint16_t>(prec ? q[0] << 8 | q[1] : q[0]);
        }
        k += need;
      }
      continue;
    }
    if (m == 0xc4) {  // DHT
      size_t k = 0;
      while (len - k > 16) {
        const int index = seg[k];
        int count = 0;
        for (int i = 1; i <= 16; ++i) count += seg[k + static_cast<size_t>(i)];
        if (count > 256 || static_cast<size_t>(count) > len - k - 17) return NotHandled("bad DHT counts");
        const int slot = index & 0x0f;
        if ((index & ~0x1f) != 0 || slot >= 4) return NotHandled("DHT table index");
        RawTable& t = (index & 0x10) ? ac_tables[slot] : dc_tables[slot];
        t.defined = true;
        t.bits[0] = 0;
        std::memcpy(t.bits + 1, seg + k + 1, 16);
        std::memset(t.values, 0, 256);
        std::memcpy(t.values, seg + k + 17, static_cast<size_t>(count));
        k += 17 + static_cast<size_t>(count);
      }
      if (k != len) return NotHandled("DHT length");
      continue;
    }
    if (m == 0xdd) {  // DRI
      if (len != 2) return NotHandled("DRI length");
      restart_interval = static_cast<unsigned>(seg[0]) << 8 | seg[1];
      continue;
    }
    if (m == 0xc2) {  // SOF2
      if (saw_sof) return NotHandled("a second SOF");
      saw_sof = true;
      if (len < 6) return NotHandled("short SOF");
      const int nc = seg[5];
      if (len != 6 + 3 * static_cast<size_t>(nc)) return NotHandled("SOF length");
      if (seg[0] != 8) return NotHandled(std::to_string(seg[0]) + "-bit samples");
      frame.height = seg[1] << 8 | seg[2];
      frame.width = seg[3] << 8 | seg[4];
      if (frame.width == 0 || frame.height == 0 || frame.width > 65500 || frame.height > 65500) {
        return NotHandled("frame size");
      }
      if (nc != 1 && nc != 3 && nc != 4) return NotHandled(std::to_string(nc) + " components");
      frame.num_components = nc;
      max_h = max_v = 1;
      for (int c = 0; c < nc; ++c) {
        const uint8_t* d = seg + 6 + 3 * c;
        auto& comp = frame.components[static_cast<size_t>(c)];
        comp.id = d[0];
        comp.h = d[1] >> 4;
        comp.v = d[1] & 15;
        quant_of[c] = d[2];
        const bool first = c == 0 && comp.h >= 1 && comp.h <= 2 && comp.v >= 1 && comp.v <= 2;
        if (!first && !(comp.h == 1 && comp.v == 1)) return NotHandled("sampling factors");
        for (int o = 0; o < c; ++o) {
          if (frame.components[static_cast<size_t>(o)].id == comp.id) return NotHandled("component ids repeat");
        }
        max_h = std::max(max_h, comp.h);
        max_v = std::max(max_v, comp.v);
      }
      for (int c = 0; c < nc; ++c) {
        auto& comp = frame.components[static_cast<size_t>(c)];
        const int w = (frame.width * comp.h + max_h - 1) / max_h;
        const int h = (frame.height * comp.v + max_v - 1) / max_v;
        comp.width_in_blocks = (w + 7) / 8;
        comp.height_in_blocks = (h + 7) / 8;
      }
      mcus_per_row = (frame.width + 8 * max_h - 1) / (8 * max_h);
      imcu_rows = (frame.height + 8 * max_v - 1) / (8 * max_v);
      continue;
    }
    if (m != 0xda) {
      char what[64];
      std::snprintf(what, sizeof(what), "marker 0x%02x (not a progressive Huffman JPEG)", m);
      return NotHandled(what);
    }
    // SOS
    if (!saw_sof) return NotHandled("SOS before SOF");
    if (num_scans == kMaxScans) return NotHandled("more than " + std::to_string(kMaxScans) + " scans");
    if (len < 1) return NotHandled("short SOS");
    const int ns = seg[0];
    if (ns < 1 || ns > 4 || len != 4 + 2 * static_cast<size_t>(ns)) return NotHandled("SOS length");
    if (num_scans == 0) {
      // libjpeg's colour space guess, made here, warns about unknown Adobe
      // transforms.
      const int nc = frame.num_components;
      if (saw_adobe && ((nc == 3 && !saw_jfif && adobe_transform > 1) ||
                        (nc == 4 && adobe_transform != 0 && adobe_transform != 2))) {
        return NotHandled("Adobe transform " + std::to_string(adobe_transform));
      }
      const auto& comps = frame.components;
      if (frame.num_components == 1) {
        frame.color_space = JpegColorSpace::kGray;
      } else if (frame.num_components == 4) {
        frame.color_space = saw_adobe && adobe_transform == 0 ? JpegColorSpace::kCmyk
                            : saw_adobe                       ? JpegColorSpace::kYcck
                                                              : JpegColorSpace::kCmyk;
      } else if (saw_jfif) {
        frame.color_space = JpegColorSpace::kYCbCr;
      } else if (saw_adobe) {
        frame.color_space = adobe_transform == 0 ? JpegColorSpace::kRgb : JpegColorSpace::kYCbCr;
      } else {
        frame.color_space = comps[0].id == 'R' && comps[1].id == 'G' && comps[2].id == 'B' ? JpegColorSpace::kRgb
                                                                                            : JpegColorSpace::kYCbCr;
      }
    }
    Scan& sc = scans[num_scans];
    sc.ncomp = ns;
    sc.sos_offset = seg_start;
    int table_sel[4];
    for (int i = 0; i < ns; ++i) {
      const int id = seg[1 + 2 * i];
      int found = -1;
      for (int c = 0; c < frame.num_components; ++c) {
        bool used = false;
        for (int o = 0; o < i; ++o) used |= sc.comp[o] == c;
        if (frame.components[static_cast<size_t>(c)].id == id && !used) {
          found = c;
          break;
        }
      }
      if (found < 0) return NotHandled("SOS component id");
      sc.comp[i] = found;
      table_sel[i] = seg[2 + 2 * i];
    }
    sc.ss = seg[1 + 2 * ns];
    sc.se = seg[2 + 2 * ns];
    if (seg[3 + 2 * ns] != 0) return NotHandled("successive approximation");
    const bool dc_scan = sc.ss == 0;
    if (dc_scan ? sc.se != 0 : (sc.se > 63 || sc.ss > sc.se || ns != 1)) return NotHandled("scan band");
    const uint64_t band = dc_scan ? 1 : (sc.se == 63 ? ~uint64_t{0} : (uint64_t{1} << (sc.se + 1)) - 1) &
                                            ~((uint64_t{1} << sc.ss) - 1);
    for (int i = 0; i < ns; ++i) {
      const int c = sc.comp[i];
      if (!dc_scan && !(sent[c] & 1)) return NotHandled("AC scan before its DC scan");
      if (sent[c] & band) return NotHandled("a coefficient in two scans");
      sent[c] |= band;
      if (!quant_latched[c]) {
        if (quant_of[c] >= 4 || !quant_defined[quant_of[c]]) return NotHandled("no quantisation table");
        quant_latched[c] = true;
        frame.components[static_cast<size_t>(c)].quant = quant_tables[quant_of[c]];
        frame.components[static_cast<size_t>(c)].quant_latched = true;
      }
      frame.components[static_cast<size_t>(c)].sent = sent[c];
      const int slot = dc_scan ? table_sel[i] >> 4 : table_sel[i] & 15;
      const RawTable& raw = dc_scan ? dc_tables[slot & 3] : ac_tables[slot & 3];
      if (slot >= 4 || !raw.defined) return NotHandled("no Huffman table");
      if (!BuildTable(raw, dc_scan, dc_scan ? &sc.dc[i] : &sc.ac)) return NotHandled("bad Huffman table");
    }
    sc.restart_interval = restart_interval;
    sc.ends_at_file_end = false;
    sc.end_marker = 0;
    if (auto r = ReadScanData(&pos, &sc); !r.ok()) return r;
    const uint64_t mcus = ns > 1 ? uint64_t(mcus_per_row) * imcu_rows
                                 : uint64_t(frame.components[static_cast<size_t>(sc.comp[0])].width_in_blocks) *
                                       frame.components[static_cast<size_t>(sc.comp[0])].height_in_blocks;
    const uint64_t segments = restart_interval ? (mcus + restart_interval - 1) / restart_interval : 1;
    if (sc.segment_begin.size() - 1 != segments) return NotHandled("restart markers do not match DRI");
    ++num_scans;
    if (sc.ends_at_file_end) break;
  }
  if (!saw_sof || num_scans == 0) return NotHandled("no scan");
  for (int c = 0; c < frame.num_components; ++c) {
    padded_width[c] = mcus_per_row * frame.components[static_cast<size_t>(c)].h;
  }
  return {};
}

}  // namespace pcr
