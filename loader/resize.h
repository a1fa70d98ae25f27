// PIL's BILINEAR resampling in fixed point, with scratch space kept across
// images.
#pragma once

#include <cstdint>
#include <vector>

namespace pcr {

struct ResizeLayout {
  bool planar = false;  // dst holds one dst_height x dst_width plane per channel
  bool mirror = false;  // dst is flipped left to right
};

// Part of a resize from in_width x in_height to out_width x out_height: the
// output pixels [x, x + width) x [y, y + height), computed from the input
// pixels [src_x, ...) x [src_y, ...) that InputSpan names.
struct ResizeWindow {
  int in_width = 0;
  int in_height = 0;
  int out_width = 0;
  int out_height = 0;
  int x = 0;
  int y = 0;
  int width = 0;
  int height = 0;
};

// The input pixels [first, last) that outputs [out_first, out_first + count)
// of a resize from `in` to `out` pixels read.
struct Span {
  int first = 0;
  int last = 0;
};
Span InputSpan(int in, int out, int out_first, int count);

// Resizes as ResizeBilinear (include/pcr/transform.h) does, byte for byte.
// Both passes are weighted sums of whole rows: the horizontal one runs on
// the transposed image, so every tap is a vector operation over a row. The
// mirror is taken when transposing back; planes are split off at the end.
// Thread safety: not thread-safe; use one Resizer per thread.
class Resizer {
 public:
  // REQUIRES: all sizes 1..65535; buffers hold their images.
  void Resize(const uint8_t* src, int src_width, int src_height, int channels, uint8_t* dst, int dst_width,
              int dst_height, ResizeLayout layout = {});

  // Computes `window` of a resize into dst (window.height rows of
  // window.width pixels), the same bytes as resizing all of the input and
  // cutting the window out. src holds the input pixels the window reads:
  // InputSpan's columns and rows. REQUIRES: the window lies in the output.
  void Resize(const ResizeWindow& window, const uint8_t* src, int channels, uint8_t* dst, ResizeLayout layout = {});

 private:
  std::vector<uint8_t> columns_;  // the source, transposed
  std::vector<uint8_t> resized_columns_;
  std::vector<uint8_t> rows_;  // resized horizontally
  std::vector<uint8_t> interleaved_;  // the result, before it is split into planes
  std::vector<int32_t> sums_;
};

}  // namespace pcr
