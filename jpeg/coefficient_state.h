// The state of pcr's progressive entropy decoder that its marker parser
// (jpeg/coefficient_markers.cc) and its scan loops (jpeg/coefficients.cc)
// share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "jpeg/coefficients.h"
#include "jpeg/huffman.h"

namespace pcr {

inline constexpr int kMaxScans = 64;

struct Scan {
  int ncomp = 0;
  int comp[4] = {};  // frame component indices, in SOS order
  int ss = 0, se = 0;
  entropy::HuffTable dc[4];  // per scan component (DC scans)
  entropy::HuffTable ac;     // AC scans
  unsigned restart_interval = 0;
  size_t sos_offset = 0;
  // Destuffed data of each segment: [segment_begin[i], segment_begin[i + 1]) in State::data.
  std::vector<size_t> segment_begin;
  bool ends_at_file_end = false;  // no marker after the data
  uint8_t end_marker = 0;
  // Decoding state.
  entropy::BitReader br;
  size_t segment = 0;
  unsigned restarts_to_go = 0;
  unsigned eobrun = 0;
  int last_dc[4] = {};
  bool done = false;  // stopped at a problem
};

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

}  // namespace pcr
