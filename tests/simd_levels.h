// Checks that PixelDecoder gives the same pixels at every SIMD level.
#pragma once

#include <catch2/catch.hpp>

#include <vector>

#include "jpeg/pixel_decoder.h"

namespace pcr::test {

// `want` are JpegDecoder's pixels of `jpeg` under `o` with pcr's decoder;
// where PixelDecoder takes the file, each level gives them too.
inline void CheckSimdLevels(ByteSpan jpeg, const DecodeOptions& o, const std::vector<uint8_t>& want) {
  for (SimdLevel level : {SimdLevel::kNone, SimdLevel::kSse2, SimdLevel::kAvx2}) {
    PixelDecoder decoder;
    decoder.set_simd(level);
    if (!decoder.Open(jpeg, o).ok()) return;  // libjpeg-turbo's
    std::vector<uint8_t> got(want.size(), 0x5a);
    if (!decoder.Decode(got.data()).ok()) return;
    INFO("SIMD level " << static_cast<int>(level));
    CHECK((got == want));
  }
}

}  // namespace pcr::test
