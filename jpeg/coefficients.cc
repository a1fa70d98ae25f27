// pcr's progressive entropy decoder beside its libjpeg-turbo reference and
// the comparison of the two. Over 700 lines: the Huffman tables, the marker
// parser and the per-scan decoding loops share one State, and the hot loops
// stay in one unit so the compiler inlines them together.
#include "jpeg/coefficients.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <vector>

#include "jpeg/error_manager.h"

namespace pcr {

namespace {

constexpr int kFastBits = 10;
constexpr int kMaxScans = 64;

// Zigzag index to natural index; entries past 63 catch the band overruns that
// corrupt data produces, as libjpeg's jpeg_natural_order does.
constexpr std::array<uint8_t, 80> kNaturalOrder = {
    0,  1,  8,  16, 9,  2,  3,  10, 17, 24, 32, 25, 18, 11, 4,  5,  12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13,
    6,  7,  14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31,
    39, 46, 53, 60, 61, 54, 47, 55, 62, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63};

inline uint64_t LoadBigEndian64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return __builtin_bswap64(v);
}

inline int Extend(uint32_t r, int s) {
  return r < (1u << (s - 1)) ? static_cast<int>(r) - (1 << s) + 1 : static_cast<int>(r);
}

// A Huffman table as DHT defines it.
struct RawTable {
  bool defined = false;
  uint8_t bits[17] = {};
  uint8_t values[256] = {};
};

// fast entries: value << 16 | kFastEob | run << 8 | bits used, for a symbol
// whose value bits fit too; symbol << 16 | kFastSymbol | code length, for one
// whose value bits do not (or a run of zeros, or an EOB run); kFastSymbol
// alone for a code longer than kFastBits.
constexpr int32_t kFastEob = 1 << 12;
constexpr int32_t kFastSymbol = 1 << 13;

// A decoding table: the next kFastBits bits give the symbol's whole meaning
// (a DC difference, an AC coefficient after its run, or the end of the
// block), or the symbol alone; longer codes go through maxcode as in the JPEG
// standard (F.2.2.3).
struct HuffTable {
  int32_t fast[1 << kFastBits];
  int32_t maxcode[18];
  int32_t valoffset[17];
  uint8_t values[256];
};

// Builds `t` from `raw` with the checks of libjpeg's jpeg_make_d_derived_tbl;
// false where libjpeg refuses the table.
bool BuildTable(const RawTable& raw, bool dc, HuffTable* t) {
  uint8_t size[257];
  uint32_t code_of[257];
  int p = 0;
  for (int l = 1; l <= 16; ++l) {
    if (p + raw.bits[l] > 256) return false;
    for (int i = 0; i < raw.bits[l]; ++i) size[p++] = static_cast<uint8_t>(l);
  }
  size[p] = 0;
  const int count = p;
  uint32_t code = 0;
  int si = size[0];
  p = 0;
  while (size[p]) {
    while (size[p] == si) code_of[p++] = code++;
    if (code >= (1u << si)) return false;
    code <<= 1;
    ++si;
  }
  p = 0;
  for (int l = 1; l <= 16; ++l) {
    if (raw.bits[l]) {
      t->valoffset[l] = p - static_cast<int32_t>(code_of[p]);
      p += raw.bits[l];
      t->maxcode[l] = static_cast<int32_t>(code_of[p - 1]);
    } else {
      t->maxcode[l] = -1;
    }
  }
  t->valoffset[0] = 0;
  t->maxcode[0] = -1;
  t->maxcode[17] = 0xFFFFF;
  std::memcpy(t->values, raw.values, 256);
  if (dc) {
    for (int i = 0; i < count; ++i) {
      if (raw.values[i] > 15) return false;
    }
  }
  uint32_t end = 0;  // past the entries filled so far
  for (int i = 0; i < count && size[i] <= kFastBits; ++i) {
    const int len = size[i];
    const uint8_t sym = raw.values[i];
    const int spare = kFastBits - len;
    const uint32_t first = code_of[i] << spare;
    const int run = dc ? 0 : sym >> 4, s = dc ? sym : sym & 15;
    int32_t* e = t->fast + first;
    end = first + (1u << spare);
    if (s != 0 && len + s <= kFastBits) {
      for (uint32_t j = 0; j < (1u << spare); ++j) {
        const uint32_t r = (j >> (spare - s)) & ((1u << s) - 1);
        e[j] = static_cast<int32_t>(static_cast<uint32_t>(Extend(r, s)) << 16) | run << 8 | (len + s);
      }
      continue;
    }
    int32_t v = sym << 16 | kFastSymbol | len;
    if (dc && s == 0) v = len;
    if (!dc && sym == 0x00) v = kFastEob | len;
    std::fill_n(e, 1u << spare, v);
  }
  // Longer codes, and bits that start no code.
  std::fill(t->fast + end, t->fast + (1 << kFastBits), kFastSymbol);
  return true;
}

// Reads the bits of one destuffed entropy-coded segment; past its end it
// reads zeros, as libjpeg does, and overran() tells.
struct BitReader {
  const uint8_t* data = nullptr;
  size_t size = 0;
  size_t pos = 0;    // next byte to load
  uint64_t buf = 0;  // left-aligned
  int bits = 0;

  void Reset(const uint8_t* d, size_t n) {
    data = d;
    size = n;
    pos = 0;
    buf = 0;
    bits = 0;
  }
  void Refill() {
    if (pos + 8 <= size) {
      buf |= LoadBigEndian64(data + pos) >> bits;
      pos += static_cast<size_t>(63 - bits) >> 3;
      bits |= 56;
      return;
    }
    while (bits <= 56) {
      const uint64_t b = pos < size ? data[pos] : 0;
      buf |= b << (56 - bits);
      ++pos;
      bits += 8;
    }
  }
  void Ensure(int n) {
    if (bits < n) Refill();
  }
  uint32_t Peek(int n) const { return static_cast<uint32_t>(buf >> (64 - n)); }
  void Skip(int n) {
    buf <<= n;
    bits -= n;
  }
  uint32_t Get(int n) {
    if (n == 0) return 0;
    const uint32_t v = Peek(n);
    Skip(n);
    return v;
  }
  uint64_t consumed() const { return uint64_t{pos} * 8 - static_cast<uint64_t>(bits); }
  bool overran() const { return consumed() > uint64_t{size} * 8; }
  // Whole bytes of the segment left unread.
  uint64_t unused_bytes() const {
    const uint64_t used = (consumed() + 7) / 8;
    return used >= size ? 0 : size - used;
  }
};

// The symbol of a code whose fast entry `e` has kFastSymbol, or -1 for a
// code libjpeg calls bad. REQUIRES: 16 bits buffered.
inline int DecodeSymbol(BitReader& br, const HuffTable& t, int32_t e) {
  if ((e & 0xff) != 0) {
    br.Skip(e & 0xff);
    return (e >> 16) & 0xff;
  }
  int l = kFastBits + 1;
  int32_t code = static_cast<int32_t>(br.Peek(l));
  while (l <= 16 && code > t.maxcode[l]) {
    ++l;
    code = static_cast<int32_t>(br.Peek(l));
  }
  if (l > 16) {
    br.Skip(16);
    return -1;
  }
  br.Skip(l);
  return t.values[(code + t.valoffset[l]) & 0xff];
}

struct Scan {
  int ncomp = 0;
  int comp[4] = {};  // frame component indices, in SOS order
  int ss = 0, se = 0;
  HuffTable dc[4];  // per scan component (DC scans)
  HuffTable ac;     // AC scans
  unsigned restart_interval = 0;
  size_t sos_offset = 0;
  // Destuffed data of each segment: [segment_begin[i], segment_begin[i + 1]) in State::data.
  std::vector<size_t> segment_begin;
  bool ends_at_file_end = false;  // no marker after the data
  uint8_t end_marker = 0;
  // Decoding state.
  BitReader br;
  size_t segment = 0;
  unsigned restarts_to_go = 0;
  unsigned eobrun = 0;
  int last_dc[4] = {};
  bool done = false;  // stopped at a problem
};

}  // namespace

struct ProgressiveCoefficientDecoder::State {
  ByteSpan jpeg;
  CoefficientFrame frame;
  int max_h = 1, max_v = 1;
  int mcus_per_row = 0, imcu_rows = 0;
  std::vector<Scan> scans;
  size_t num_scans = 0;
  std::vector<uint8_t> data;  // destuffed entropy-coded bytes of every scan
  std::vector<int16_t> rows[4];  // `keep` + 1 iMCU rows of blocks per component
  int padded_width[4] = {};      // blocks per row in rows[c]
  int16_t* current[4] = {};      // the iMCU row being decoded in rows[c]

  CoefficientOutcome NotHandled(const std::string& why) { return {CoefficientOutcome::kNotHandled, why}; }
  CoefficientOutcome Open(ByteSpan jpeg);
  CoefficientOutcome ReadScanData(size_t* pos, Scan* scan);
  CoefficientOutcome Problem(CoefficientOutcome::Kind kind, const std::string& what, size_t scan) const {
    return {kind, what + " (scan " + std::to_string(scan + 1) + ", SOS at byte " +
                      std::to_string(scans[scan].sos_offset) + ")"};
  }
  void StartSegment(Scan& sc, size_t segment);
  bool DecodeDcMcus(Scan& sc, int x0, int n, int mcu_row, int* dc_overflow);
  bool DecodeAcBlocks(Scan& sc, int16_t* blocks, int n);
};

ProgressiveCoefficientDecoder::ProgressiveCoefficientDecoder() : s_(std::make_unique<State>()) {}
ProgressiveCoefficientDecoder::~ProgressiveCoefficientDecoder() = default;
const CoefficientFrame& ProgressiveCoefficientDecoder::frame() const { return s_->frame; }
CoefficientOutcome ProgressiveCoefficientDecoder::Open(ByteSpan jpeg) { return s_->Open(jpeg); }

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

void ProgressiveCoefficientDecoder::State::StartSegment(Scan& sc, size_t segment) {
  sc.segment = segment;
  const size_t b = sc.segment_begin[segment], e = sc.segment_begin[segment + 1];
  sc.br.Reset(data.data() + b, e - b);
  sc.restarts_to_go = sc.restart_interval;
  sc.eobrun = 0;
  std::fill(std::begin(sc.last_dc), std::end(sc.last_dc), 0);
}

// MCUs [x0, x0 + n) of a DC scan of iMCU row (or, not interleaved, block
// row) mcu_row. False on a bad code or an overflowing DC (*dc_overflow set).
bool ProgressiveCoefficientDecoder::State::DecodeDcMcus(Scan& sc, int x0, int n, int mcu_row, int* dc_overflow) {
  const bool interleaved = sc.ncomp > 1;
  struct Part {
    const HuffTable* t;
    int16_t* out;  // the MCU's first block
    size_t row_step;
    int bh, bv;
  } parts[4];
  for (int i = 0; i < sc.ncomp; ++i) {
    const int c = sc.comp[i];
    const auto& comp = frame.components[static_cast<size_t>(c)];
    Part& p = parts[i];
    p.t = &sc.dc[i];
    p.bh = interleaved ? comp.h : 1;
    p.bv = interleaved ? comp.v : 1;
    p.row_step = static_cast<size_t>(padded_width[c]) * 64;
    p.out = current[c] + static_cast<size_t>(interleaved ? 0 : mcu_row) * p.row_step +
            static_cast<size_t>(x0) * static_cast<size_t>(p.bh) * 64;
  }
  BitReader br = sc.br;  // a local copy stays in registers
  bool good = true;
  for (int m = 0; m < n && good; ++m) {
    for (int i = 0; i < sc.ncomp && good; ++i) {
      Part& p = parts[i];
      const HuffTable& t = *p.t;
      int last = sc.last_dc[i];
      for (int y = 0; y < p.bv && good; ++y) {
        for (int x = 0; x < p.bh; ++x) {
          br.Ensure(32);
          int diff;
          if (const int32_t f = t.fast[br.Peek(kFastBits)]; (f & kFastSymbol) == 0) {
            br.Skip(f & 0xff);
            diff = f >> 16;
          } else {
            const int s = DecodeSymbol(br, t, f);
            if (s < 0) {
              good = false;
              break;
            }
            diff = s ? Extend(br.Get(s), s) : 0;
          }
          if (__builtin_add_overflow(last, diff, &last)) {
            *dc_overflow = 1;
            good = false;
            break;
          }
          p.out[static_cast<size_t>(y) * p.row_step + static_cast<size_t>(x) * 64] = static_cast<int16_t>(last);
        }
      }
      sc.last_dc[i] = last;
      p.out += static_cast<size_t>(p.bh) * 64;
    }
  }
  sc.br = br;
  return good;
}

// `n` consecutive blocks of an AC scan; false on a bad code.
bool ProgressiveCoefficientDecoder::State::DecodeAcBlocks(Scan& sc, int16_t* blocks, int n) {
  BitReader br = sc.br;  // local copies stay in registers
  unsigned eobrun = sc.eobrun;
  const HuffTable& t = sc.ac;
  const int ss = sc.ss, se = sc.se;
  bool good = true;
  for (int b = 0; b < n && good; ++b, blocks += 64) {
    if (eobrun > 0) {
      // The run's blocks have nothing in this band.
      const int skip = static_cast<int>(std::min<unsigned>(eobrun, static_cast<unsigned>(n - b)));
      eobrun -= static_cast<unsigned>(skip);
      b += skip - 1;
      blocks += static_cast<ptrdiff_t>(skip - 1) * 64;
      continue;
    }
    for (int k = ss; k <= se; ++k) {
      br.Ensure(32);
      const int32_t f = t.fast[br.Peek(kFastBits)];
      if ((f & kFastSymbol) == 0) {
        br.Skip(f & 0xff);
        if (f & kFastEob) break;
        k += (f >> 8) & 15;
        blocks[kNaturalOrder[static_cast<size_t>(k)]] = static_cast<int16_t>(f >> 16);
        continue;
      }
      const int sym = DecodeSymbol(br, t, f);
      if (sym < 0) {
        good = false;
        break;
      }
      const int r = sym >> 4, s = sym & 15;
      if (s) {
        k += r;
        blocks[kNaturalOrder[static_cast<size_t>(k)]] = static_cast<int16_t>(Extend(br.Get(s), s));
      } else if (r == 15) {
        k += 15;
      } else {
        eobrun = (1u << r) - 1 + br.Get(r);
        break;
      }
    }
  }
  sc.br = br;
  sc.eobrun = eobrun;
  return good;
}

CoefficientOutcome ProgressiveCoefficientDecoder::Decode(const BlockRowFn& row, unsigned components, unsigned dc_only,
                                                         int keep) {
  State& st = *s_;
  const CoefficientFrame& f = st.frame;
  const size_t num_scans = st.num_scans;
  // The first scan with a problem decides the outcome, as libjpeg decodes
  // scans in file order; later scans stop, earlier ones go on.
  size_t problem_scan = num_scans;
  CoefficientOutcome problem;
  auto report = [&](size_t s, CoefficientOutcome::Kind kind, const std::string& what) {
    if (s < problem_scan) {
      problem_scan = s;
      problem = st.Problem(kind, what, s);
    }
    st.scans[s].done = true;
  };
  static const char kHitMarker[] = "Corrupt JPEG data: premature end of data segment";
  static const char kBadCode[] = "Corrupt JPEG data: bad Huffman code";
  // libjpeg reads ahead into a file's end before it needs the bits there.
  static const char kEndOfFile[] = "Premature end of JPEG file";
  auto extraneous = [](uint64_t nbytes, int marker) {
    char buf[96];
    std::snprintf(buf, sizeof(buf), "Corrupt JPEG data: %llu extraneous bytes before marker 0x%02x",
                  static_cast<unsigned long long>(nbytes), marker);
    return std::string(buf);
  };
  const int slots = std::max(keep, 0) + 1;
  auto slot = [&](int c, int m) {
    const size_t blocks = static_cast<size_t>(st.padded_width[c]) * f.components[static_cast<size_t>(c)].v * 64;
    return st.rows[c].data() + static_cast<size_t>(m % slots) * blocks;
  };
  for (int c = 0; c < f.num_components; ++c) {
    st.rows[c].assign(static_cast<size_t>(st.padded_width[c]) * f.components[static_cast<size_t>(c)].v * 64 *
                          static_cast<size_t>(slots),
                      0);
  }
  for (size_t s = 0; s < num_scans; ++s) {
    Scan& sc = st.scans[s];
    sc.done = true;  // a scan of no component asked for is passed over
    for (int i = 0; i < sc.ncomp; ++i) {
      sc.done &= ((components >> sc.comp[i]) & 1) == 0 || (sc.ss != 0 && ((dc_only >> sc.comp[i]) & 1) != 0);
    }
    st.StartSegment(sc, 0);
  }
  // How many MCUs scan s may decode before its next restart marker, after
  // crossing one if due; 0 when the scan stopped.
  auto mcus_before_restart = [&](size_t s) -> unsigned {
    Scan& sc = st.scans[s];
    if (sc.restart_interval == 0) return UINT_MAX;
    if (sc.restarts_to_go == 0) {
      // Bytes left before the RSTn: libjpeg reports them when it has not read
      // up to the marker, which it may have done for up to 8 of them.
      if (const uint64_t extra = sc.br.unused_bytes(); extra > 8) {
        report(s, CoefficientOutcome::kWarning, extraneous(extra, 0xd0 + static_cast<int>(sc.segment & 7)));
        return 0;
      } else if (extra > 0) {
        report(s, CoefficientOutcome::kNotHandled, "bytes after the last code before a restart marker");
        return 0;
      }
      st.StartSegment(sc, sc.segment + 1);
    }
    return sc.restarts_to_go;
  };
  // After decoding MCUs of scan s: stops the scan at a problem.
  auto check = [&](size_t s, bool good, int overflow) {
    const Scan& sc = st.scans[s];
    if (sc.br.overran()) {
      report(s, CoefficientOutcome::kWarning, sc.ends_at_file_end ? kEndOfFile : kHitMarker);
    } else if (!good) {
      report(s, overflow ? CoefficientOutcome::kError : CoefficientOutcome::kWarning,
             overflow ? "DCT coefficient out of range" : kBadCode);
    }
  };
  // Decodes MCUs [0, count) of scan s, `run(x, n)` decoding n from x, in runs
  // that end at restart markers.
  auto decode_mcus = [&](size_t s, int count, auto run) {
    Scan& sc = st.scans[s];
    for (int x = 0; x < count && !sc.done;) {
      const unsigned allowed = mcus_before_restart(s);
      if (allowed == 0) break;
      const int n = static_cast<int>(std::min<unsigned>(allowed, static_cast<unsigned>(count - x)));
      if (sc.restart_interval) sc.restarts_to_go -= static_cast<unsigned>(n);
      int overflow = 0;
      check(s, run(x, n, &overflow), overflow);
      x += n;
    }
  };
  for (int m = 0; m < st.imcu_rows && problem_scan > 0; ++m) {
    for (int c = 0; c < f.num_components; ++c) st.current[c] = slot(c, m);
    for (size_t s = 0; s < std::min(num_scans, problem_scan); ++s) {
      Scan& sc = st.scans[s];
      if (sc.done) continue;
      if (sc.ss == 0 && sc.ncomp > 1) {
        decode_mcus(s, st.mcus_per_row,
                    [&](int x0, int n, int* overflow) { return st.DecodeDcMcus(sc, x0, n, 0, overflow); });
        continue;
      }
      const int c = sc.comp[0];
      const auto& comp = f.components[static_cast<size_t>(c)];
      const int r_end = std::min((m + 1) * comp.v, comp.height_in_blocks);
      for (int r = m * comp.v; r < r_end && !sc.done; ++r) {
        const int y = r - m * comp.v;
        int16_t* base = st.current[c] + static_cast<size_t>(y) * st.padded_width[c] * 64;
        decode_mcus(s, comp.width_in_blocks, [&](int x0, int n, int* overflow) {
          return sc.ss != 0 ? st.DecodeAcBlocks(sc, base + static_cast<size_t>(x0) * 64, n)
                            : st.DecodeDcMcus(sc, x0, n, y, overflow);
        });
      }
    }
    for (int c = 0; c < f.num_components && problem_scan == num_scans && row; ++c) {
      const auto& comp = f.components[static_cast<size_t>(c)];
      const int r_end = std::min((m + 1) * comp.v, comp.height_in_blocks);
      for (int r = m * comp.v; r < r_end; ++r) {
        row(c, r, st.current[c] + static_cast<size_t>(r - m * comp.v) * st.padded_width[c] * 64);
      }
    }
    // The slot the next iMCU row takes: its blocks delivered `keep` rows ago.
    for (int c = 0; c < f.num_components; ++c) {
      std::memset(
          slot(c, m + 1), 0,
          static_cast<size_t>(st.padded_width[c]) * f.components[static_cast<size_t>(c)].v * 64 * sizeof(int16_t));
    }
  }
  // The end of each scan: what libjpeg finds after the data.
  for (size_t s = 0; s < std::min(num_scans, problem_scan); ++s) {
    Scan& sc = st.scans[s];
    if (sc.done) continue;
    if (sc.ends_at_file_end) {
      report(s, CoefficientOutcome::kWarning, kEndOfFile);
      continue;
    }
    const uint64_t extra = sc.br.unused_bytes();
    // libjpeg reads up to 8 bytes ahead of the bits it uses; what it left
    // before the marker it reports.
    if (extra > 8) {
      report(s, CoefficientOutcome::kWarning, extraneous(extra, sc.end_marker));
    } else if (extra > 0) {
      report(s, CoefficientOutcome::kNotHandled, "bytes after a scan's last code");
    }
  }
  if (problem_scan < num_scans) return problem;
  return {};
}

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
