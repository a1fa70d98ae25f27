// pcr's own decoder from JPEG bytes to pixels: the coefficients of
// ProgressiveCoefficientDecoder, turned into pixels identical to
// libjpeg-turbo's (inverse DCT, upsampling, colour conversion) as each iMCU
// row arrives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "jpeg/coefficients.h"
#include "pcr/decode.h"

namespace pcr {

// CMYK as libjpeg decodes it, to RGB exactly as PIL converts it, or to gray
// with libjpeg's RGB weights. `inverted` samples (Adobe's) hold 255 - C and
// so on.
void ConvertCmyk(const uint8_t* cmyk, bool inverted, bool gray, uint8_t* out, size_t n);

// Why a crop does not fit an image, or why a buffer is too small: the words
// JpegDecoder uses whichever engine decodes.
std::string CropOutsideMessage(const Crop& c, int width, int height);
std::string BufferTooSmallMessage(size_t have, size_t need);

// Decodes what ProgressiveCoefficientDecoder reads, at any scale_denom,
// pixel format and crop, to the pixels JpegDecoder's libjpeg-turbo path
// gives, block smoothing included (where every component has its DC and
// some lacks one of the first 10 coefficients in zigzag order); everything
// else is kNotHandled: frames outside the coefficient decoder, and blocks
// outside the range of an 8-bit image. For YCbCr to gray, scans of only
// chroma are not decoded at all, unless blocks are smoothed.
// Not thread-safe; reuse one per thread to keep its buffers.
enum class SimdLevel { kNone, kSse2, kAvx2 };

// The highest level this build and CPU run: SSE2 on every x86-64, AVX2 where
// the CPU has it.
SimdLevel BestSimdLevel();

class PixelDecoder {
 public:
  PixelDecoder();
  ~PixelDecoder();
  PixelDecoder(const PixelDecoder&) = delete;
  PixelDecoder& operator=(const PixelDecoder&) = delete;

  // Reads the markers; on kOk, frame() is the frame and scaled() the whole
  // image at options' scale and format. `jpeg` must outlive Decode().
  CoefficientOutcome Open(ByteSpan jpeg, const DecodeOptions& options);
  const CoefficientFrame& frame() const;
  ImageShape scaled() const;
  // Writes the image, or the options' crop of it, into `out` in packed rows.
  // REQUIRES: Open() returned kOk, the crop lies inside scaled() and `out`
  // holds its pixels.
  CoefficientOutcome Decode(uint8_t* out);

  // The plain C++ stages (kNone: the reference), SSE2, or SSE2 with AVX2
  // where it helps; every level gives the same pixels. Levels above
  // BestSimdLevel() mean BestSimdLevel(), the default.
  void set_simd(SimdLevel level);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace pcr
