// Decoding JPEG bytes to pixels with libjpeg-turbo.
#pragma once

#include <cstdint>
#include <vector>

#include "format/coding.h"
#include "format/status.h"

namespace pcr {

struct DecodeOptions {
  int scale_denom = 1;          // 1, 2, 4 or 8: decode at 1/scale_denom size
  bool warnings_are_errors = true;  // fail on libjpeg's corrupt-data warnings
};

struct DecodedImage {
  int width = 0;
  int height = 0;
  int components = 0;           // 1 gray, 3 RGB, 4 CMYK
  std::vector<uint8_t> pixels;  // rows of width * components bytes
};

// Decodes to libjpeg's default output colour space for the file (gray, RGB
// or CMYK). Corruption on any decoder error.
Result<DecodedImage> DecodeJpeg(ByteSpan jpeg, const DecodeOptions& options = {});

}  // namespace pcr
