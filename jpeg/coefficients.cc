// pcr's progressive entropy decoder: the scan loops that decode each iMCU
// row's coefficients from every scan. The hot loops stay in one unit so the
// compiler inlines them together.
#include "jpeg/coefficients.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <vector>

#include "jpeg/coefficient_state.h"

namespace pcr {

using entropy::BitReader;
using entropy::DecodeSymbol;
using entropy::Extend;
using entropy::HuffTable;
using entropy::kFastBits;
using entropy::kFastEob;
using entropy::kFastSymbol;
using entropy::kNaturalOrder;

ProgressiveCoefficientDecoder::ProgressiveCoefficientDecoder() : s_(std::make_unique<State>()) {}
ProgressiveCoefficientDecoder::~ProgressiveCoefficientDecoder() = default;
const CoefficientFrame& ProgressiveCoefficientDecoder::frame() const { return s_->frame; }
CoefficientOutcome ProgressiveCoefficientDecoder::Open(ByteSpan jpeg) { return s_->Open(jpeg); }

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

}  // namespace pcr
