#include "loader/resize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace pcr {

namespace {

// Fixed-point weights have kPrecisionBits fraction bits, as PIL's.
constexpr int kPrecisionBits = 22;

// Filter taps of one resampling direction: output i (counted from the
// first output computed) reads input [first[i], first[i] + count[i]) with
// weights[i * max_taps + k].
struct Taps {
  std::vector<int> first;
  std::vector<int> count;
  std::vector<int32_t> weights;
  int max_taps = 0;
};

// The triangle filter PIL's BILINEAR resampling uses, widened by the scale
// when shrinking, with PIL's tap positions, arithmetic, normalisation and
// rounding, for outputs [out_first, out_first + n) of a resize from `in` to
// `out` pixels.
Taps MakeTaps(int in, int out, int out_first, int n) {
  const double scale = static_cast<double>(in) / out;
  const double filter_scale = std::max(scale, 1.0);
  const double support = filter_scale;  // the triangle's support is 1
  const double inverse = 1.0 / filter_scale;
  Taps t;
  t.max_taps = static_cast<int>(std::ceil(support)) * 2 + 1;
  t.first.resize(n);
  t.count.resize(n);
  t.weights.assign(static_cast<size_t>(n) * t.max_taps, 0);
  std::vector<double> w(t.max_taps);
  for (int i = 0; i < n; ++i) {
    const double center = (out_first + i + 0.5) * scale;
    const int lo = std::max(static_cast<int>(center - support + 0.5), 0);
    const int hi = std::min(static_cast<int>(center + support + 0.5), in);
    double total = 0;
    for (int k = 0; k < hi - lo; ++k) {
      w[k] = std::max(0.0, 1.0 - std::abs((k + lo - center + 0.5) * inverse));
      total += w[k];
    }
    int32_t* fixed = &t.weights[static_cast<size_t>(i) * t.max_taps];
    for (int k = 0; k < hi - lo; ++k) {
      fixed[k] = static_cast<int32_t>(0.5 + (total != 0 ? w[k] / total : w[k]) * (1 << kPrecisionBits));
    }
    t.first[i] = lo;
    t.count[i] = hi - lo;
  }
  return t;
}

// The inputs that taps read.
Span SpanOf(const Taps& t) {
  Span span{std::numeric_limits<int>::max(), 0};
  for (size_t i = 0; i < t.first.size(); ++i) {
    span.first = std::min(span.first, t.first[i]);
    span.last = std::max(span.last, t.first[i] + t.count[i]);
  }
  return span;
}

// out[i] = the weighted sum of rows[k * stride + i] over `taps` rows, in
// fixed point, clipped to 0..255; `sums` holds `stride` values. The hot
// loop of both passes, so it is also built for AVX2 where the CPU has it.
__attribute__((target_clones("avx2", "default"))) void AddRows(const uint8_t* __restrict rows, size_t stride,
                                                                 const int32_t* __restrict w, int taps,
                                                                 int32_t* __restrict sums, uint8_t* __restrict out) {
  std::fill_n(sums, stride, 1 << (kPrecisionBits - 1));
  for (int k = 0; k < taps; ++k) {
    const uint8_t* __restrict in = rows + k * stride;
    const int32_t wk = w[k];
    for (size_t i = 0; i < stride; ++i) sums[i] += wk * in[i];
  }
  for (size_t i = 0; i < stride; ++i) out[i] = static_cast<uint8_t>(std::clamp(sums[i] >> kPrecisionBits, 0, 255));
}

// dst = src transposed: src (height rows of width pixels of kChannels
// bytes) row y, column x goes to dst row x, column y, or column height - 1 -
// y when mirrored. In blocks that keep both sides in cache.
template <int kChannels>
void Transpose(const uint8_t* __restrict src, int width, int height, int channels, bool mirror,
               uint8_t* __restrict dst) {
  constexpr int kBlock = 16;
  if constexpr (kChannels > 0) channels = kChannels;
  for (int y0 = 0; y0 < height; y0 += kBlock) {
    const int y1 = std::min(height, y0 + kBlock);
    for (int x0 = 0; x0 < width; x0 += kBlock) {
      const int x1 = std::min(width, x0 + kBlock);
      for (int y = y0; y < y1; ++y) {
        const uint8_t* row = src + static_cast<size_t>(y) * width * channels;
        const size_t column = static_cast<size_t>(mirror ? height - 1 - y : y);
        for (int x = x0; x < x1; ++x) {
          std::memcpy(dst + (static_cast<size_t>(x) * height + column) * channels,
                      row + static_cast<size_t>(x) * channels, kChannels > 0 ? kChannels : channels);
        }
      }
    }
  }
}

void Transpose(const uint8_t* src, int width, int height, int channels, bool mirror, uint8_t* dst) {
  switch (channels) {
    case 1:
      return Transpose<1>(src, width, height, channels, mirror, dst);
    case 3:
      return Transpose<3>(src, width, height, channels, mirror, dst);
    case 4:
      return Transpose<4>(src, width, height, channels, mirror, dst);
  }
  Transpose<0>(src, width, height, channels, mirror, dst);
}

// Splits n interleaved pixels of kChannels bytes into kChannels planes
// `plane` bytes apart.
void Deinterleave(const uint8_t* __restrict src, size_t n, int channels, uint8_t* __restrict dst, size_t plane) {
  if (channels == 3) {
    // One pass with all three loads, which the compiler vectorises as a group.
    uint8_t* __restrict r = dst;
    uint8_t* __restrict g = dst + plane;
    uint8_t* __restrict b = dst + 2 * plane;
    for (size_t i = 0; i < n; ++i) {
      r[i] = src[3 * i];
      g[i] = src[3 * i + 1];
      b[i] = src[3 * i + 2];
    }
    return;
  }
  for (int c = 0; c < channels; ++c) {
    uint8_t* __restrict out = dst + c * plane;
    for (size_t i = 0; i < n; ++i) out[i] = src[i * channels + c];
  }
}

}  // namespace

Span InputSpan(int in, int out, int out_first, int count) { return SpanOf(MakeTaps(in, out, out_first, count)); }

void Resizer::Resize(const uint8_t* src, int src_width, int src_height, int channels, uint8_t* dst, int dst_width,
                     int dst_height, ResizeLayout layout) {
  Resize({.in_width = src_width,
          .in_height = src_height,
          .out_width = dst_width,
          .out_height = dst_height,
          .width = dst_width,
          .height = dst_height},
         src, channels, dst, layout);
}

void Resizer::Resize(const ResizeWindow& window, const uint8_t* src, int channels, uint8_t* dst,
                     ResizeLayout layout) {
  Taps horizontal = MakeTaps(window.in_width, window.out_width, window.x, window.width);
  Taps vertical = MakeTaps(window.in_height, window.out_height, window.y, window.height);
  const Span xs = SpanOf(horizontal), ys = SpanOf(vertical);
  for (int& first : horizontal.first) first -= xs.first;
  for (int& first : vertical.first) first -= ys.first;
  const int src_width = xs.last - xs.first, src_height = ys.last - ys.first;
  const int dst_width = window.width, dst_height = window.height;
  const size_t column = static_cast<size_t>(src_height) * channels;
  columns_.resize(column * src_width);
  resized_columns_.resize(column * dst_width);
  rows_.resize(static_cast<size_t>(dst_width) * src_height * channels);
  sums_.resize(std::max(column, static_cast<size_t>(dst_width) * channels));
  // Rows first, into an 8-bit intermediate, then columns, as PIL does.
  Transpose(src, src_width, src_height, channels, false, columns_.data());
  for (int x = 0; x < dst_width; ++x) {
    AddRows(columns_.data() + horizontal.first[x] * column, column,
            &horizontal.weights[static_cast<size_t>(x) * horizontal.max_taps], horizontal.count[x], sums_.data(),
            resized_columns_.data() + x * column);
  }
  Transpose(resized_columns_.data(), src_height, dst_width, channels, layout.mirror, rows_.data());
  const size_t row = static_cast<size_t>(dst_width) * channels;
  uint8_t* out = dst;
  if (layout.planar) {
    interleaved_.resize(row * dst_height);
    out = interleaved_.data();
  }
  for (int y = 0; y < dst_height; ++y) {
    AddRows(rows_.data() + vertical.first[y] * row, row, &vertical.weights[static_cast<size_t>(y) * vertical.max_taps],
            vertical.count[y], sums_.data(), out + y * row);
  }
  if (!layout.planar) return;
  const size_t pixels = static_cast<size_t>(dst_width) * dst_height;
  Deinterleave(out, pixels, channels, dst, pixels);
}

}  // namespace pcr
