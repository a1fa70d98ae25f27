// The AVX2 stages of pcr's decoder, each giving exactly the bytes of its
// SSE2 and plain C++ counterparts. REQUIRES: the CPU has AVX2
// (BestSimdLevel() == SimdLevel::kAvx2).
#pragma once

#include <cstddef>
#include <cstdint>

#include "jpeg/idct.h"
#include "jpeg/smooth.h"

namespace pcr {

// IdctIslow8x8Simd on two blocks side by side: coef[0, 64) written at out
// and coef[64, 128) at out + 8. True when both are.
bool IdctIslow8x8PairAvx2(const int16_t* coef, const IdctSteps& steps, uint8_t* out, ptrdiff_t stride);
// IdctIslow8x8PairAvx2 for blocks whose coefficients outside rows and
// columns 0..3 are 0, as IdctIslow8x8LowSse2.
bool IdctIslow8x8LowPairAvx2(const int16_t* coef, const IdctSteps& steps, uint8_t* out, ptrdiff_t stride);

// Idct4x4Sse2 on two blocks side by side: coef[0, 64) written at out and
// coef[64, 128) at out + 4. True when both are.
bool Idct4x4PairAvx2(const int16_t* coef, const IdctSteps& steps, uint8_t* out, ptrdiff_t stride);

// YCbCr rows to packed RGB, n pixels: returns how many it converted (a
// multiple of 16), the rest left to the caller.
size_t YccToRgbRowAvx2(const uint8_t* y, const uint8_t* cb, const uint8_t* cr, uint8_t* out, size_t n);

// Estimate e of blocks [0, n): out[b] = SmoothValue(e, sum over the taps of
// weight * rows[row][b + dx]). Returns how many it did (a multiple of 8),
// the rest left to the caller.
int SmoothRowAvx2(const float* const rows[5], int n, const SmoothEstimate& e, int16_t* out);

}  // namespace pcr
