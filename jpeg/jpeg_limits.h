// Limits on JPEG input that transcoding and decoding share, and their messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "pcr/decode.h"

namespace pcr {

// "W x H = N pixels, over the limit of M": why an image is refused by size.
inline std::string PixelLimitMessage(uint64_t width, uint64_t height, uint64_t max_pixels) {
  return std::to_string(width) + "x" + std::to_string(height) + " = " + std::to_string(width * height) +
         " pixels, over the limit of " + std::to_string(max_pixels);
}

// "the N MiB of working memory allowed".
inline std::string MemoryLimitText(size_t max_memory_bytes) {
  return "the " + std::to_string(max_memory_bytes >> 20) + " MiB of working memory allowed";
}

}  // namespace pcr
