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

 private:
  std::vector<uint8_t> columns_;  // the source, transposed
  std::vector<uint8_t> resized_columns_;
  std::vector<uint8_t> rows_;  // resized horizontally
  std::vector<uint8_t> interleaved_;  // the result, before it is split into planes
  std::vector<int32_t> sums_;
};

}  // namespace pcr
