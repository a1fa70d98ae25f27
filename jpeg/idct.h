// Inverse DCTs equal to libjpeg-turbo's C code: jpeg_idct_islow (jidctint.c)
// and the reduced-size jpeg_idct_4x4, _2x2 and _1x1 (jidctred.c), with their
// range limit, which clamps to 0..255 and wraps values far outside it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pcr {

// Each transforms one block: `coef` holds 64 quantised coefficients and
// `quant` their quantisation steps, both in natural order; `out` receives an
// N x N block of samples, rows `stride` bytes apart. Returns false when the
// block leaves the range where libjpeg-turbo's SIMD transforms (16-bit lanes,
// saturating) and its C code agree: never for the blocks of an 8-bit image,
// only for damaged or contrived coefficients.
bool IdctIslow8x8(const int16_t* coef, const int32_t* quant, uint8_t* out, ptrdiff_t stride);
bool Idct4x4(const int16_t* coef, const int32_t* quant, uint8_t* out, ptrdiff_t stride);
bool Idct2x2(const int16_t* coef, const int32_t* quant, uint8_t* out, ptrdiff_t stride);
bool Idct1x1(const int16_t* coef, const int32_t* quant, uint8_t* out, ptrdiff_t stride);

using IdctFn = bool (*)(const int16_t*, const int32_t*, uint8_t*, ptrdiff_t);

// The transform libjpeg-turbo uses for a DCT scaled size of 1, 2, 4 or 8.
IdctFn IdctForSize(int size);

// Quantisation steps prepared for IdctIslow8x8Simd.
struct IdctSteps {
  alignas(16) int16_t step[64];   // each step's low 16 bits
  alignas(16) int16_t limit[64];  // the largest |coefficient| whose dequantised value stays in the lanes
};
IdctSteps PrepareIdctSteps(const int32_t* quant);

// IdctIslow8x8 in SSE2 where the build targets it (every x86-64), else
// IdctIslow8x8 itself: the same samples wherever that returns true, and
// false wherever it returns false (and for a coefficient of -32768 under a
// step of 0, which it accepts).
bool IdctIslow8x8Simd(const int16_t* coef, const IdctSteps& steps, uint8_t* out, ptrdiff_t stride);

#if defined(__x86_64__)
// IdctIslow8x8Simd in SSE2.
bool IdctIslow8x8Sse2(const int16_t* coef, const IdctSteps& steps, uint8_t* out, ptrdiff_t stride);
// IdctIslow8x8Sse2 for a block whose coefficients outside rows and columns
// 0..3 are 0 (a block-smoothed block of DC alone), with less work.
bool IdctIslow8x8LowSse2(const int16_t* coef, const IdctSteps& steps, uint8_t* out, ptrdiff_t stride);
// Idct4x4 in SSE2: its samples wherever it returns true, and false wherever
// it does (as IdctIslow8x8Simd).
bool Idct4x4Sse2(const int16_t* coef, const IdctSteps& steps, uint8_t* out, ptrdiff_t stride);
// Idct2x2 in SSE2, as Idct4x4Sse2.
bool Idct2x2Sse2(const int16_t* coef, const IdctSteps& steps, uint8_t* out, ptrdiff_t stride);
#endif

}  // namespace pcr
