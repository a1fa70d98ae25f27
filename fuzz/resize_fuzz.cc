// Differential: a window of a resize (loader/resize.h, computed from only
// the input pixels the window reads) against resizing the whole image with
// ResizeBilinear and cutting the window out, planar and mirrored layouts
// included. The first nine bytes choose the sizes, channels, layout and
// window; the rest are the pixels, repeated as needed.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "loader/resize.h"
#include "pcr/transform.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 10) return 0;
  static const int kChannels[] = {1, 3, 4, 3};
  const int in_w = 1 + data[0] % 80, in_h = 1 + data[1] % 80;
  const int out_w = 1 + data[2] % 120, out_h = 1 + data[3] % 120;
  const int channels = kChannels[data[4] & 3];
  const pcr::ResizeLayout layout{.planar = (data[4] & 4) != 0, .mirror = (data[4] & 8) != 0};
  const int x = data[5] % out_w, y = data[6] % out_h;
  const int w = 1 + data[7] % (out_w - x), h = 1 + data[8] % (out_h - y);
  const size_t n = size - 9;
  std::vector<uint8_t> src(static_cast<size_t>(in_w) * in_h * channels);
  for (size_t i = 0; i < src.size(); ++i) src[i] = data[9 + i % n];

  std::vector<uint8_t> whole(static_cast<size_t>(out_w) * out_h * channels);
  if (!pcr::ResizeBilinear(src, in_w, in_h, channels, whole, out_w, out_h).ok()) __builtin_trap();

  const pcr::Span xs = pcr::InputSpan(in_w, out_w, x, w), ys = pcr::InputSpan(in_h, out_h, y, h);
  std::vector<uint8_t> part(static_cast<size_t>(xs.last - xs.first) * (ys.last - ys.first) * channels);
  for (int r = ys.first; r < ys.last; ++r) {
    for (int c = xs.first; c < xs.last; ++c) {
      for (int k = 0; k < channels; ++k) {
        part[((static_cast<size_t>(r - ys.first) * (xs.last - xs.first)) + c - xs.first) * channels + k] =
            src[(static_cast<size_t>(r) * in_w + c) * channels + k];
      }
    }
  }
  std::vector<uint8_t> got(static_cast<size_t>(w) * h * channels);
  pcr::Resizer resizer;
  resizer.Resize({.in_width = in_w, .in_height = in_h, .out_width = out_w, .out_height = out_h, .x = x, .y = y,
                  .width = w, .height = h},
                 part.data(), channels, got.data(), layout);
  for (int r = 0; r < h; ++r) {
    for (int c = 0; c < w; ++c) {
      for (int k = 0; k < channels; ++k) {
        const uint8_t want = whole[((static_cast<size_t>(y + r) * out_w) + x + c) * channels + k];
        const int column = layout.mirror ? w - 1 - c : c;
        const size_t at = layout.planar ? (static_cast<size_t>(k) * h + r) * w + column
                                        : (static_cast<size_t>(r) * w + column) * channels + k;
        if (got[at] != want) {
          std::fprintf(stderr, "%dx%d -> %dx%d, window %d,%d %dx%d, channel %d of %d: pixel %d,%d is %d, not %d\n",
                       in_w, in_h, out_w, out_h, x, y, w, h, k, channels, c, r, got[at], want);
          std::abort();
        }
      }
    }
  }
  return 0;
}
