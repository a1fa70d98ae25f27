// One estimate of libjpeg-turbo's block smoothing over a row of blocks: a
// weighted sum of the DC values around each block, scaled and rounded.
#pragma once

#include <algorithm>
#include <array>
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

// Below this, times * |sum| + round + 1/2 is exact in float, and its
// product with 1 / (2 round), each rounded to float, is within 2^-23 of
// the quotient, under 2^21 / (2 round): off by less than 1 / (8 round),
// inside the nudge of 1 / (4 round), so its floor is exact too.
constexpr float kSmoothFloatLimit = 2097152.0f;  // 2^21

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

// libjpeg-turbo's block smoothing (jdcoefct.c, decompress_smooth_data): the
// natural positions of zigzag coefficients 0 to 9 it may estimate, and for
// each the weights of the 5 x 5 DC values around the block (rows and columns
// -2..2), first where the component has no coefficient 1..9 at all (then DC
// and all nine are estimated), then, by zigzag index 1 to 5, where it has
// some.
constexpr int kSmoothedPosition[10] = {0, 1, 8, 16, 9, 2, 3, 10, 17, 24};
using Kernel = std::array<int16_t, 25>;
constexpr Kernel kDcOnlyKernels[10] = {
    {-2, -6, -8, -6, -2, -6, 6, 42, 6, -6, -8, 42, 152, 42, -8, -6, 6, 42, 6, -6, -2, -6, -8, -6, -2},
    {-1, -1, 0, 1, 1, -3, 13, 0, -13, 3, -3, 38, 0, -38, 3, -3, 13, 0, -13, 3, -1, -1, 0, 1, 1},
    {-1, -3, -3, -3, -1, -1, 13, 38, 13, -1, 0, 0, 0, 0, 0, 1, -13, -38, -13, 1, 1, 3, 3, 3, 1},
    {0, 0, 1, 0, 0, 0, 2, 7, 2, 0, 0, -5, -14, -5, 0, 0, 2, 7, 2, 0, 0, 0, 1, 0, 0},
    {-1, 0, 0, 0, 1, 0, 9, 0, -9, 0, 0, 0, 0, 0, 0, 0, -9, 0, 9, 0, 1, 0, 0, 0, -1},
    {0, 0, 0, 0, 0, 0, 2, -5, 2, 0, 1, 7, -14, 7, 1, 0, 2, -5, 2, 0, 0, 0, 0, 0, 0},
    {0, 0, 0, 0, 0, 0, 1, 0, -1, 0, 0, 2, 0, -2, 0, 0, 1, 0, -1, 0, 0, 0, 0, 0, 0},
    {0, 0, 0, 0, 0, 0, 1, -3, 1, 0, 0, 0, 0, 0, 0, 0, -1, 3, -1, 0, 0, 0, 0, 0, 0},
    {0, 0, 0, 0, 0, 0, 1, 0, -1, 0, 0, -3, 0, 3, 0, 0, 1, 0, -1, 0, 0, 0, 0, 0, 0},
    {0, 0, 0, 0, 0, 0, 1, 2, 1, 0, 0, 0, 0, 0, 0, 0, -1, -2, -1, 0, 0, 0, 0, 0, 0},
};
constexpr Kernel kKernels[6] = {
    {},
    {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -7, 50, 0, -50, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {0, 0, -7, 0, 0, 0, 0, 50, 0, 0, 0, 0, 0, 0, 0, 0, 0, -50, 0, 0, 0, 0, 7, 0, 0},
    {0, 0, -1, 0, 0, 0, 0, 13, 0, 0, 0, 0, -24, 0, 0, 0, 0, 13, 0, 0, 0, 0, -1, 0, 0},
    {0, -1, 0, 1, 0, -1, 10, 0, -10, 1, 0, 0, 0, 0, 0, 1, -10, 0, 10, -1, 0, 1, 0, -1, 0},
    {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1, 13, -24, 13, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
};
constexpr int KernelBound(const Kernel* kernels, int n) {
  int most = 0;
  for (int i = 0; i < n; ++i) {
    int sum = 0;
    for (int w : kernels[i]) sum += w < 0 ? -w : w;
    most = std::max(most, sum);
  }
  return most;
}
// SmoothValue's bounds: sums of 16-bit DC values stay within 2^24, and
// the quotients of coefficients 1..9, with 16-bit steps, within 2^31.
static_assert(KernelBound(kDcOnlyKernels, 10) <= 512 && KernelBound(kKernels, 6) <= 512);
static_assert(int64_t{std::max(KernelBound(kDcOnlyKernels + 1, 9), KernelBound(kKernels + 1, 5))} * 32768 * 65535 +
                  128 * 65535 <
              int64_t{256} << 31);

// 1 when a kernel is even across its rows (or columns), -1 when odd, 0
// when neither.
constexpr int Parity(const Kernel& w, bool rows) {
  bool even = true, odd = true;
  for (int r = 0; r < 5; ++r) {
    for (int c = 0; c < 5; ++c) {
      const int mirror = rows ? w[static_cast<size_t>(5 * (4 - r) + c)] : w[static_cast<size_t>(5 * r + 4 - c)];
      even &= w[static_cast<size_t>(5 * r + c)] == mirror;
      odd &= w[static_cast<size_t>(5 * r + c)] == -mirror;
    }
  }
  return even ? 1 : odd ? -1 : 0;
}
constexpr bool Folds(const Kernel* kernels, int n) {
  for (int i = 0; i < n; ++i) {
    if (Parity(kernels[i], true) == 0 || Parity(kernels[i], false) == 0) return false;
  }
  return true;
}
static_assert(Folds(kDcOnlyKernels, 10) && Folds(kKernels, 6));

// The terms of SmoothTerm's folding of kernel w into e.
inline void Fold(const Kernel& w, SmoothEstimate& e) {
  const int odd_v = Parity(w, true) < 0 ? 1 : 0, odd_h = Parity(w, false) < 0 ? 1 : 0;
  // Row or column 2 is the block's; 1 and 0 pair with 3 and 4.
  auto base = [](int i, int odd) { return i == 2 ? 0 : (i == 1 ? 1 : 3) + odd; };
  for (int r = 2; r >= 0; --r) {
    for (int c = 2; c >= 0; --c) {
      const int weight = w[static_cast<size_t>(5 * r + c)];
      if (weight != 0) e.terms[e.num_terms++] = {5 * base(r, odd_v) + base(c, odd_h), static_cast<float>(weight)};
    }
  }
}

// Estimate k for a component with no coefficient 1..9 sent (dc_only) or
// some, its quantisation table quant in natural order.
inline SmoothEstimate MakeSmoothEstimate(int k, bool dc_only, const uint16_t* quant) {
  SmoothEstimate e;
  e.k = k;
  e.position = kSmoothedPosition[k];
  const double q = quant[kSmoothedPosition[k]];
  e.times = quant[0];
  e.round = q * 128;
  e.inverse = 1 / (q * 256);
  const Kernel& kernel = dc_only ? kDcOnlyKernels[k] : kKernels[k];
  for (int i = 0; i < 25; ++i) {
    if (kernel[static_cast<size_t>(i)] != 0) {
      e.taps[e.num_taps++] = {i / 5, i % 5 - 2, static_cast<float>(kernel[static_cast<size_t>(i)])};
    }
  }
  Fold(kernel, e);
  return e;
}

}  // namespace pcr
