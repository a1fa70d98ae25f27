// One estimate of libjpeg-turbo's block smoothing over a row of blocks: a
// weighted sum of the DC values around each block, scaled and rounded.
#pragma once

#include <cmath>
#include <cstdint>

namespace pcr {

struct SmoothTap {
  int row;  // 0..4: two block rows above to two below
  int dx;   // -2..2: columns left or right
  float weight;
};

// Estimates per component at most: the DC and zigzag 1..9.
constexpr int kMaxSmoothEstimates = 10;

// A term of a kernel folded by its symmetry: weight times basis value
// 5 v + h of the DC values around a block. v: 0 the block's row; 1 and 2
// the rows above and below added and subtracted (above minus below); 3 and 4
// the rows two away. h likewise for the columns (left minus right). Each
// kernel is even or odd in each direction, so a term's weight is one tap's
// and the folded sum is the taps' sum, exactly.
struct SmoothTerm {
  int basis;
  float weight;
};

// Estimate k (zigzag index, 0 the DC) of a component, which no scan sent
// (so it is 0 in every block): sum its taps, then
// DC: (128 + |sum|) >> 8; coefficient: (times * |sum| + round) / (2 round);
// each with the sign of sum and truncated to 16 bits.
struct SmoothEstimate {
  int k = 0;
  int position = 0;  // k's natural (row-major) index in a block
  int num_taps = 0;
  SmoothTap taps[25];
  int num_terms = 0;
  SmoothTerm terms[9];                       // the taps folded
  double times = 0, round = 0, inverse = 0;  // inverse = 1 / (2 round)
};

// The sum is exact in float (16-bit DC values, weights summing below 2^9),
// and times * |sum| stays below 2^40, so the quotient computed in double,
// nudged by 1 / (4 round), is off by less than 2^-11 / (2 round): its floor
// is exact.
inline int32_t SmoothValue(const SmoothEstimate& e, float sum) {
  if (e.k == 0) {
    const int32_t s = static_cast<int32_t>(sum);
    const int32_t q = (128 + (s < 0 ? -s : s)) >> 8;
    return s < 0 ? -q : q;
  }
  const double n = e.times * std::fabs(static_cast<double>(sum)) + e.round + 0.5;
  const auto q = static_cast<uint64_t>(n * e.inverse);
  return static_cast<int32_t>(static_cast<uint32_t>(sum < 0 ? 0 - q : q));
}

}  // namespace pcr
