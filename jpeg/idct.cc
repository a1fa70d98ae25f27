#include "jpeg/idct.h"

#include <algorithm>
#include <cstring>
#include <initializer_list>

#include "jpeg/idct_internal.h"

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace pcr {

namespace {

// libjpeg's LEFT_SHIFT: through unsigned, so it wraps rather than overflows.
inline int64_t Shl(int64_t a, int b) { return static_cast<int64_t>(static_cast<uint64_t>(a) << b); }
// DESCALE: a rounded arithmetic right shift.
inline int64_t Descale(int64_t x, int n) { return (x + (int64_t{1} << (n - 1))) >> n; }
// The int a pass stores: the 64-bit value truncated as C's cast does.
inline int32_t Int(int64_t x) { return static_cast<int32_t>(x); }
inline int32_t Dequantize(int16_t coef, int32_t q) { return coef * q; }

inline bool InLane(int64_t v) { return v >= -kLaneLimit && v <= kLaneLimit; }
inline bool InOutput(int64_t v) { return v >= -512 && v <= 511; }

bool CoefficientsInLane(const int16_t* coef, const int32_t* quant) {
  bool in = true;
  for (int k = 0; k < 64; ++k) in &= InLane(int64_t{coef[k]} * quant[k]);
  return in;
}

// The first pass's outputs in `columns` of `rows` rows.
bool PassInLane(const int32_t* ws, int rows, std::initializer_list<int> columns) {
  bool in = true;
  for (int r = 0; r < rows; ++r) {
    for (int c : columns) in &= InLane(ws[8 * r + c]);
  }
  return in;
}

// The post-IDCT range limit: the low 10 bits as a signed value, plus 128,
// clamped to 0..255.
inline uint8_t Limit(bool& in_range, int64_t v) {
  in_range &= InOutput(v);
  int x = Int(v) & 1023;
  if (x >= 512) x -= 1024;
  return static_cast<uint8_t>(std::clamp(x + 128, 0, 255));
}

// jidctint.c's 1-D transform of x[0..7], scaled by 2^13: out[i] before
// its final descale.
inline void Islow1D(const int64_t* x, int64_t* out) {
  int64_t z2 = x[2], z3 = x[6];
  int64_t z1 = (z2 + z3) * k0_541196100;
  int64_t tmp2 = z1 + z3 * -k1_847759065;
  int64_t tmp3 = z1 + z2 * k0_765366865;
  int64_t tmp0 = Shl(x[0] + x[4], kConstBits);
  int64_t tmp1 = Shl(x[0] - x[4], kConstBits);
  const int64_t tmp10 = tmp0 + tmp3, tmp13 = tmp0 - tmp3, tmp11 = tmp1 + tmp2, tmp12 = tmp1 - tmp2;
  tmp0 = x[7];
  tmp1 = x[5];
  tmp2 = x[3];
  tmp3 = x[1];
  z1 = tmp0 + tmp3;
  z2 = tmp1 + tmp2;
  z3 = tmp0 + tmp2;
  int64_t z4 = tmp1 + tmp3;
  const int64_t z5 = (z3 + z4) * k1_175875602;
  tmp0 *= k0_298631336;
  tmp1 *= k2_053119869;
  tmp2 *= k3_072711026;
  tmp3 *= k1_501321110;
  z1 *= -k0_899976223;
  z2 *= -k2_562915447;
  z3 = z3 * -k1_961570560 + z5;
  z4 = z4 * -k0_390180644 + z5;
  tmp0 += z1 + z3;
  tmp1 += z2 + z4;
  tmp2 += z2 + z3;
  tmp3 += z1 + z4;
  out[0] = tmp10 + tmp3;
  out[7] = tmp10 - tmp3;
  out[1] = tmp11 + tmp2;
  out[6] = tmp11 - tmp2;
  out[2] = tmp12 + tmp1;
  out[5] = tmp12 - tmp1;
  out[3] = tmp13 + tmp0;
  out[4] = tmp13 - tmp0;
}

}  // namespace

bool IdctIslow8x8(const int16_t* coef, const int32_t* quant, uint8_t* out, ptrdiff_t stride) {
  bool in_range = CoefficientsInLane(coef, quant);
  int32_t ws[64];
  int64_t x[8], y[8];
  for (int c = 0; c < 8; ++c) {
    const int16_t* in = coef + c;
    const int32_t* q = quant + c;
    int32_t* w = ws + c;
    if (in[8] == 0 && in[16] == 0 && in[24] == 0 && in[32] == 0 && in[40] == 0 && in[48] == 0 && in[56] == 0) {
      const int32_t dc = Int(Shl(Dequantize(in[0], q[0]), kPass1Bits));
      for (int r = 0; r < 8; ++r) w[8 * r] = dc;
      continue;
    }
    for (int r = 0; r < 8; ++r) x[r] = Dequantize(in[8 * r], q[8 * r]);
    Islow1D(x, y);
    for (int r = 0; r < 8; ++r) w[8 * r] = Int(Descale(y[r], kConstBits - kPass1Bits));
  }
  in_range &= PassInLane(ws, 8, {0, 1, 2, 3, 4, 5, 6, 7});
  for (int r = 0; r < 8; ++r, out += stride) {
    const int32_t* w = ws + 8 * r;
    if (w[1] == 0 && w[2] == 0 && w[3] == 0 && w[4] == 0 && w[5] == 0 && w[6] == 0 && w[7] == 0) {
      std::fill_n(out, 8, Limit(in_range, Descale(w[0], kPass1Bits + 3)));
      continue;
    }
    for (int c = 0; c < 8; ++c) x[c] = w[c];
    Islow1D(x, y);
    for (int c = 0; c < 8; ++c) out[c] = Limit(in_range, Descale(y[c], kConstBits + kPass1Bits + 3));
  }
  return in_range;
}

// Column 4 and row 4 of the coefficients play no part at this size.
bool Idct4x4(const int16_t* coef, const int32_t* quant, uint8_t* out, ptrdiff_t stride) {
  bool in_range = CoefficientsInLane(coef, quant);
  int32_t ws[8 * 4];
  for (int c = 0; c < 8; ++c) {
    if (c == 4) continue;
    const int16_t* in = coef + c;
    const int32_t* q = quant + c;
    int32_t* w = ws + c;
    if (in[8] == 0 && in[16] == 0 && in[24] == 0 && in[40] == 0 && in[48] == 0 && in[56] == 0) {
      const int32_t dc = Int(Shl(Dequantize(in[0], q[0]), kPass1Bits));
      for (int r = 0; r < 4; ++r) w[8 * r] = dc;
      continue;
    }
    int64_t tmp0 = Shl(Dequantize(in[0], q[0]), kConstBits + 1);
    const int64_t z2a = Dequantize(in[16], q[16]), z3a = Dequantize(in[48], q[48]);
    int64_t tmp2 = z2a * k1_847759065 + z3a * -k0_765366865;
    const int64_t tmp10 = tmp0 + tmp2, tmp12 = tmp0 - tmp2;
    const int64_t z1 = Dequantize(in[56], q[56]), z2 = Dequantize(in[40], q[40]);
    const int64_t z3 = Dequantize(in[24], q[24]), z4 = Dequantize(in[8], q[8]);
    tmp0 = z1 * -k0_211164243 + z2 * k1_451774981 + z3 * -k2_172734803 + z4 * k1_061594337;
    tmp2 = z1 * -k0_509795579 + z2 * -k0_601344887 + z3 * k0_899976223 + z4 * k2_562915447;
    constexpr int s = kConstBits - kPass1Bits + 1;
    w[0] = Int(Descale(tmp10 + tmp2, s));
    w[24] = Int(Descale(tmp10 - tmp2, s));
    w[8] = Int(Descale(tmp12 + tmp0, s));
    w[16] = Int(Descale(tmp12 - tmp0, s));
  }
  in_range &= PassInLane(ws, 4, {0, 1, 2, 3, 5, 6, 7});
  for (int r = 0; r < 4; ++r, out += stride) {
    const int32_t* w = ws + 8 * r;
    if (w[1] == 0 && w[2] == 0 && w[3] == 0 && w[5] == 0 && w[6] == 0 && w[7] == 0) {
      std::fill_n(out, 4, Limit(in_range, Descale(w[0], kPass1Bits + 3)));
      continue;
    }
    int64_t tmp0 = Shl(w[0], kConstBits + 1);
    int64_t tmp2 = int64_t{w[2]} * k1_847759065 + int64_t{w[6]} * -k0_765366865;
    const int64_t tmp10 = tmp0 + tmp2, tmp12 = tmp0 - tmp2;
    const int64_t z1 = w[7], z2 = w[5], z3 = w[3], z4 = w[1];
    tmp0 = z1 * -k0_211164243 + z2 * k1_451774981 + z3 * -k2_172734803 + z4 * k1_061594337;
    tmp2 = z1 * -k0_509795579 + z2 * -k0_601344887 + z3 * k0_899976223 + z4 * k2_562915447;
    constexpr int s = kConstBits + kPass1Bits + 3 + 1;
    out[0] = Limit(in_range, Descale(tmp10 + tmp2, s));
    out[3] = Limit(in_range, Descale(tmp10 - tmp2, s));
    out[1] = Limit(in_range, Descale(tmp12 + tmp0, s));
    out[2] = Limit(in_range, Descale(tmp12 - tmp0, s));
  }
  return in_range;
}

// Only columns and rows 0, 1, 3, 5 and 7 play a part at this size.
bool Idct2x2(const int16_t* coef, const int32_t* quant, uint8_t* out, ptrdiff_t stride) {
  bool in_range = CoefficientsInLane(coef, quant);
  int32_t ws[8 * 2];
  for (int c = 0; c < 8; ++c) {
    if (c == 2 || c == 4 || c == 6) continue;
    const int16_t* in = coef + c;
    const int32_t* q = quant + c;
    int32_t* w = ws + c;
    if (in[8] == 0 && in[24] == 0 && in[40] == 0 && in[56] == 0) {
      const int32_t dc = Int(Shl(Dequantize(in[0], q[0]), kPass1Bits));
      w[0] = w[8] = dc;
      continue;
    }
    const int64_t tmp10 = Shl(Dequantize(in[0], q[0]), kConstBits + 2);
    const int64_t tmp0 = int64_t{Dequantize(in[56], q[56])} * -k0_720959822 +
                         int64_t{Dequantize(in[40], q[40])} * k0_850430095 +
                         int64_t{Dequantize(in[24], q[24])} * -k1_272758580 +
                         int64_t{Dequantize(in[8], q[8])} * k3_624509785;
    constexpr int s = kConstBits - kPass1Bits + 2;
    w[0] = Int(Descale(tmp10 + tmp0, s));
    w[8] = Int(Descale(tmp10 - tmp0, s));
  }
  in_range &= PassInLane(ws, 2, {0, 1, 3, 5, 7});
  for (int r = 0; r < 2; ++r, out += stride) {
    const int32_t* w = ws + 8 * r;
    if (w[1] == 0 && w[3] == 0 && w[5] == 0 && w[7] == 0) {
      std::fill_n(out, 2, Limit(in_range, Descale(w[0], kPass1Bits + 3)));
      continue;
    }
    const int64_t tmp10 = Shl(w[0], kConstBits + 2);
    const int64_t tmp0 = int64_t{w[7]} * -k0_720959822 + int64_t{w[5]} * k0_850430095 +
                         int64_t{w[3]} * -k1_272758580 + int64_t{w[1]} * k3_624509785;
    constexpr int s = kConstBits + kPass1Bits + 3 + 2;
    out[0] = Limit(in_range, Descale(tmp10 + tmp0, s));
    out[1] = Limit(in_range, Descale(tmp10 - tmp0, s));
  }
  return in_range;
}

bool Idct1x1(const int16_t* coef, const int32_t* quant, uint8_t* out, ptrdiff_t) {
  bool in_range = InLane(Dequantize(coef[0], quant[0]));
  out[0] = Limit(in_range, Descale(Dequantize(coef[0], quant[0]), 3));
  return in_range;
}

IdctSteps PrepareIdctSteps(const int32_t* quant) {
  IdctSteps s;
  for (int k = 0; k < 64; ++k) {
    s.step[k] = static_cast<int16_t>(static_cast<uint16_t>(quant[k]));
    s.limit[k] = static_cast<int16_t>(quant[k] == 0 ? 32767 : std::min<int64_t>(kLaneLimit / quant[k], 32767));
  }
  return s;
}

#if defined(__x86_64__)

namespace {

struct Sse2 {
  using V = __m128i;
  static V Zero() { return _mm_setzero_si128(); }
  static V Set16(int16_t v) { return _mm_set1_epi16(v); }
  static V Set32(int32_t v) { return _mm_set1_epi32(v); }
  static V Add16(V a, V b) { return _mm_add_epi16(a, b); }
  static V Sub16(V a, V b) { return _mm_sub_epi16(a, b); }
  static V Add32(V a, V b) { return _mm_add_epi32(a, b); }
  static V Sub32(V a, V b) { return _mm_sub_epi32(a, b); }
  static V Madd(V a, V b) { return _mm_madd_epi16(a, b); }
  template <int n>
  static V Sra32(V a) { return _mm_srai_epi32(a, n); }
  static V Packs32(V a, V b) { return _mm_packs_epi32(a, b); }
  static V UnpackLo16(V a, V b) { return _mm_unpacklo_epi16(a, b); }
  static V UnpackHi16(V a, V b) { return _mm_unpackhi_epi16(a, b); }
  static V UnpackLo32(V a, V b) { return _mm_unpacklo_epi32(a, b); }
  static V UnpackHi32(V a, V b) { return _mm_unpackhi_epi32(a, b); }
  static V UnpackLo64(V a, V b) { return _mm_unpacklo_epi64(a, b); }
  static V UnpackHi64(V a, V b) { return _mm_unpackhi_epi64(a, b); }
  static V Or(V a, V b) { return _mm_or_si128(a, b); }
  static V And(V a, V b) { return _mm_and_si128(a, b); }
  static V Gt16(V a, V b) { return _mm_cmpgt_epi16(a, b); }
  static V Lt16(V a, V b) { return _mm_cmplt_epi16(a, b); }
  static V PackUs16(V a, V b) { return _mm_packus_epi16(a, b); }
  static V Lanes16(short a, short b, short c, short d, short e, short f, short g, short h) {
    return _mm_setr_epi16(a, b, c, d, e, f, g, h);
  }
};

// The dequantised rows 0..kRows-1 of a block into x, the coefficients
// outside the lanes marked in *bad; returns the AC coefficients ORed
// together.
template <int kRows = 8>
inline __m128i LoadBlock(const int16_t* coef, const IdctSteps& steps, __m128i* x, __m128i* bad) {
  __m128i ac = _mm_setzero_si128();
  for (int r = 0; r < kRows; ++r) {
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(coef + 8 * r));
    const __m128i limit = _mm_load_si128(reinterpret_cast<const __m128i*>(steps.limit + 8 * r));
    *bad = _mm_or_si128(*bad, _mm_or_si128(_mm_cmpgt_epi16(c, limit),
                                           _mm_cmplt_epi16(c, _mm_sub_epi16(_mm_setzero_si128(), limit))));
    ac = _mm_or_si128(ac, r == 0 ? _mm_srli_si128(c, 2) : c);
    x[r] = _mm_mullo_epi16(c, _mm_load_si128(reinterpret_cast<const __m128i*>(steps.step + 8 * r)));
  }
  return ac;
}

// A block of DC alone (ac all zero): its samples written, and true with
// *in_range as the transform would return it; false for any other block.
inline bool DcAlone(const int16_t* coef, const IdctSteps& steps, __m128i ac, int size, uint8_t* out,
                    ptrdiff_t stride, bool* in_range) {
  if (_mm_movemask_epi8(_mm_cmpeq_epi16(ac, _mm_setzero_si128())) != 0xffff) return false;
  *in_range = DcBlock(coef, steps, size, out, stride);
  return true;
}

}  // namespace

namespace {

template <bool kLow>
bool Islow8x8Sse2(const int16_t* coef, const IdctSteps& steps, uint8_t* out, ptrdiff_t stride) {
  __m128i x[8];
  __m128i bad = _mm_setzero_si128();
  const __m128i ac = LoadBlock<(kLow ? 4 : 8)>(coef, steps, x, &bad);
  if (bool in_range; DcAlone(coef, steps, ac, 8, out, stride, &in_range)) return in_range;
  IslowSimd<Sse2>::Transform<kLow>(x, &bad);
  const __m128i center = _mm_set1_epi16(128);
  for (int r = 0; r < 8; r += 2) {
    const __m128i two = _mm_packus_epi16(_mm_add_epi16(x[r], center), _mm_add_epi16(x[r + 1], center));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + r * stride), two);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + (r + 1) * stride), _mm_srli_si128(two, 8));
  }
  return _mm_movemask_epi8(bad) == 0;
}

}  // namespace

bool IdctIslow8x8Sse2(const int16_t* coef, const IdctSteps& steps, uint8_t* out, ptrdiff_t stride) {
  return Islow8x8Sse2<false>(coef, steps, out, stride);
}

bool IdctIslow8x8LowSse2(const int16_t* coef, const IdctSteps& steps, uint8_t* out, ptrdiff_t stride) {
  return Islow8x8Sse2<true>(coef, steps, out, stride);
}

bool IdctIslow8x8Simd(const int16_t* coef, const IdctSteps& steps, uint8_t* out, ptrdiff_t stride) {
  return IdctIslow8x8Sse2(coef, steps, out, stride);
}

bool Idct4x4Sse2(const int16_t* coef, const IdctSteps& steps, uint8_t* out, ptrdiff_t stride) {
  __m128i x[8];
  __m128i bad = _mm_setzero_si128();
  const __m128i ac = LoadBlock(coef, steps, x, &bad);
  if (bool in_range; DcAlone(coef, steps, ac, 4, out, stride, &in_range)) return in_range;
  alignas(16) uint8_t b[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(b), IslowSimd<Sse2>::Transform4x4(x, &bad));
  for (int r = 0; r < 4; ++r) std::memcpy(out + r * stride, b + 4 * r, 4);
  return _mm_movemask_epi8(bad) == 0;
}

bool Idct2x2Sse2(const int16_t* coef, const IdctSteps& steps, uint8_t* out, ptrdiff_t stride) {
  using K = IslowSimd<Sse2>;
  __m128i x[8];
  __m128i bad = _mm_setzero_si128();
  const __m128i ac = LoadBlock(coef, steps, x, &bad);
  if (bool in_range; DcAlone(coef, steps, ac, 2, out, stride, &in_range)) return in_range;
  // jidctred.c's 2-point parts on the low half (h = 0) or high half of x:
  // the DC << 15 and the odd sum.
  auto parts = [](const __m128i* v, int h, __m128i* even, __m128i* odd) {
    auto unpack = [h](__m128i a, __m128i b) { return h == 0 ? _mm_unpacklo_epi16(a, b) : _mm_unpackhi_epi16(a, b); };
    *even = _mm_srai_epi32(unpack(_mm_setzero_si128(), v[0]), 16 - (kConstBits + 2));
    *odd = _mm_add_epi32(_mm_madd_epi16(unpack(v[7], v[5]), K::Pair(-k0_720959822, k0_850430095)),
                         _mm_madd_epi16(unpack(v[3], v[1]), K::Pair(-k1_272758580, k3_624509785)));
  };
  // Pass 1, columns as lanes: rows 0 and 1 of the workspace.
  __m128i ws[8] = {};
  for (int h = 0; h < 2; ++h) {
    __m128i even, odd;
    parts(x, h, &even, &odd);
    const __m128i w0 = K::Descale32<kConstBits - kPass1Bits + 2>(_mm_add_epi32(even, odd));
    const __m128i w1 = K::Descale32<kConstBits - kPass1Bits + 2>(_mm_sub_epi32(even, odd));
    ws[0] = h == 0 ? w0 : _mm_packs_epi32(ws[0], w0);
    ws[1] = h == 0 ? w1 : _mm_packs_epi32(ws[1], w1);
  }
  // Columns 2, 4 and 6 play no part.
  const __m128i used = _mm_setr_epi16(-1, -1, 0, -1, 0, -1, 0, -1);
  for (int i = 0; i < 2; ++i) bad = _mm_or_si128(bad, _mm_and_si128(used, K::Outside(ws[i], -kLaneLimit, kLaneLimit)));
  K::Transpose8x8(ws);  // ws[c]: column c, rows 0 and 1 in the low lanes
  __m128i even, odd;
  parts(ws, 0, &even, &odd);
  const __m128i o0 = K::Descale32<kConstBits + kPass1Bits + 3 + 2>(_mm_add_epi32(even, odd));
  const __m128i o1 = K::Descale32<kConstBits + kPass1Bits + 3 + 2>(_mm_sub_epi32(even, odd));
  const __m128i pixels = _mm_packs_epi32(_mm_unpacklo_epi32(o0, o1), _mm_setzero_si128());  // row 0, row 1
  bad = _mm_or_si128(bad, _mm_and_si128(_mm_setr_epi16(-1, -1, -1, -1, 0, 0, 0, 0), K::Outside(pixels, -512, 511)));
  const uint32_t b = static_cast<uint32_t>(
      _mm_cvtsi128_si32(_mm_packus_epi16(_mm_add_epi16(pixels, _mm_set1_epi16(128)), _mm_setzero_si128())));
  out[0] = static_cast<uint8_t>(b);
  out[1] = static_cast<uint8_t>(b >> 8);
  out[stride] = static_cast<uint8_t>(b >> 16);
  out[stride + 1] = static_cast<uint8_t>(b >> 24);
  return _mm_movemask_epi8(bad) == 0;
}

#else

bool IdctIslow8x8Simd(const int16_t* coef, const IdctSteps& steps, uint8_t* out, ptrdiff_t stride) {
  int32_t quant[64];
  for (int k = 0; k < 64; ++k) quant[k] = static_cast<uint16_t>(steps.step[k]);
  return IdctIslow8x8(coef, quant, out, stride);
}

#endif

IdctFn IdctForSize(int size) {
  switch (size) {
    case 1: return Idct1x1;
    case 2: return Idct2x2;
    case 4: return Idct4x4;
    default: return IdctIslow8x8;
  }
}

}  // namespace pcr
