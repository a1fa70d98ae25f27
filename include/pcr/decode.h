// Decoding JPEG bytes to pixels, with libjpeg-turbo or pcr's own decoder:
// whole, scaled in the DCT domain, or cropped.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "pcr/bytes.h"
#include "pcr/export.h"
#include "pcr/status.h"

namespace pcr {

enum class PixelFormat {
  kNative,  // libjpeg's default for the file: gray, RGB or CMYK
  kRgb,     // 3 bytes per pixel; CMYK files are converted as PIL converts them
  kGray,    // 1 byte per pixel
};

// Images with more pixels are refused unless a limit says otherwise: Pillow's
// decompression-bomb limit, about 13400x13400.
inline constexpr uint64_t kDefaultMaxPixels = 178956970;

// A rectangle in output pixels (after scaling).
// A rectangle of the (scaled) image: width and height both positive, or
// both 0 for no crop.
struct Crop {
  int x = 0;
  int y = 0;
  int width = 0;
  int height = 0;
};

// Which decoder turns a JPEG into pixels. Both give identical pixels; see
// JpegDecoder for where pcr's decoder reports less.
enum class DecoderChoice {
  kAuto,     // the faster for the image: pcr's decoder for the images it
             // takes, else libjpeg-turbo (not counted as fallbacks)
  kPcr,      // pcr's decoder for the progressive files pcr writes (see
             // JpegDecoder); libjpeg-turbo for any other image
  kLibjpeg,  // libjpeg-turbo
};

struct DecodeOptions {
  int scale_denom = 1;              // 1, 2, 4 or 8: DCT-domain downscaling to 1/scale_denom
  PixelFormat format = PixelFormat::kNative;
  Crop crop;                        // only these pixels are produced
  bool warnings_are_errors = true;  // fail on libjpeg's corrupt-data warnings
  uint64_t max_pixels = kDefaultMaxPixels;  // larger frames are refused after the header
  DecoderChoice decoder = DecoderChoice::kAuto;
};

// The Decode calls of a JpegDecoder each decoder answered, whatever the
// outcome.
struct DecoderCounts {
  uint64_t pcr = 0;        // by pcr's decoder
  uint64_t libjpeg = 0;    // by libjpeg-turbo, fallbacks included
  uint64_t fallbacks = 0;  // asked for kPcr, answered by libjpeg-turbo
};

// Size of the pixels a decode produces: rows of width * components bytes.
struct ImageShape {
  int width = 0;
  int height = 0;
  int components = 0;  // 1 gray, 3 RGB, 4 CMYK

  size_t bytes() const {
    return static_cast<size_t>(width) * static_cast<size_t>(height) * static_cast<size_t>(components);
  }
};

// A reusable decoder: one libjpeg decompressor, pcr's decoder and scratch
// space kept across images, so steady-state decoding allocates nothing on the
// caller's side.
//
// pcr's decoder (DecoderChoice::kAuto, the default, and kPcr) reads
// progressive Huffman 8-bit JPEGs
// whose scans use spectral selection only, as pcr-convert writes them, with
// 1, 3 or 4 components sampled 1x1 but for the first (1x1, 2x1, 1x2 or
// 2x2): every fidelity of the records of every image so sampled. It gives
// exactly libjpeg-turbo 2.1's pixels, block smoothing of partial fidelities
// included; any other image,
// and any image with corrupt data libjpeg-turbo only warns about when
// warnings are not errors, it hands to libjpeg-turbo, counted in counts().
// Its errors carry the scan and the byte offset where the data went wrong.
// At full fidelity, decoding YCbCr to kGray, it does not read the chroma
// scans, and at scale 1/8 not the AC scans of components whose blocks
// become single samples (every component but the chroma of 4:2:0 and 1x2
// images), so corruption there goes unseen.
// Thread safety: not thread-safe; use one decoder per thread.
class PCR_EXPORT JpegDecoder {
 public:
  JpegDecoder();
  ~JpegDecoder();
  JpegDecoder(const JpegDecoder&) = delete;
  JpegDecoder& operator=(const JpegDecoder&) = delete;

  // InvalidArgument, naming the option and its range, unless format and
  // decoder are values of their enums, scale_denom is 1, 2, 4 or 8 and the
  // crop is none (0 x 0) or a positive width and height at x, y >= 0: the
  // checks of every decode that need no image.
  static Status CheckOptions(const DecodeOptions& options);
  // Reads only the header: the shape Decode would produce.
  Result<ImageShape> Shape(ByteSpan jpeg, const DecodeOptions& options = {});
  // Decodes into `out`, which must hold at least the shape's bytes. A crop is
  // decoded by skipping the rows above and below it and, where libjpeg-turbo
  // allows, the blocks left and right of it. Corruption on decoder errors,
  // InvalidArgument on a crop outside the image or a buffer too small,
  // NotSupported on a frame over max_pixels (refused before any allocation
  // that depends on the frame size).
  Result<ImageShape> Decode(ByteSpan jpeg, const DecodeOptions& options, std::span<uint8_t> out);
  // Images decoded so far, by decoder (Shape() counts none).
  DecoderCounts counts() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

struct DecodedImage {
  int width = 0;
  int height = 0;
  int components = 0;           // 1 gray, 3 RGB, 4 CMYK
  std::vector<uint8_t> pixels;  // rows of width * components bytes
};

// One-off decode into a new buffer.
PCR_EXPORT Result<DecodedImage> DecodeJpeg(ByteSpan jpeg, const DecodeOptions& options = {});

}  // namespace pcr
