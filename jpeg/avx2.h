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

// Fancy upsampling by 2 across (Fancy2xSse2 in pixel_decoder.cc), 16
// columns at a time: from 16-bit column values c[-1..n], out[2 i] =
// (3 c[i] + c[i - 1] + even) >> shift and out[2 i + 1] with c[i + 1] and
// odd. Returns how many columns it did (a multiple of 16).
size_t Fancy2xAvx2(const int16_t* c, size_t n, int even, int odd, int shift, uint8_t* out);

// The column values of n samples for Fancy2xAvx2: 3 a[i] + b[i] where b is
// given, else a[i]. Returns how many it did (a multiple of 16).
size_t FancyColumnsAvx2(const uint8_t* a, const uint8_t* b, size_t n, int16_t* c);

// Estimates e[0, count), in order of k, of blocks [0, n) (64 coefficients
// each), written at e[i].position in each: SmoothValue(e[i], sum over the
// taps of weight * rows[row][b + dx]), from the folded terms. With all ten
// (no coefficient but the DC sent), the rest of rows and columns 0..3 is
// written 0 too. rows hold 2 values more on the left and 10 on the right.
void SmoothRowAvx2(const float* const rows[5], int n, const SmoothEstimate* e, int count, int16_t* blocks);

}  // namespace pcr
