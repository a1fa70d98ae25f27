// The AVX2 stages of pcr's decoder. Built with -mavx2; called only where
// the CPU has AVX2.
#include "jpeg/avx2.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "jpeg/idct_internal.h"

namespace pcr {

namespace {

struct Avx2 {
  using V = __m256i;
  static V Zero() { return _mm256_setzero_si256(); }
  static V Set16(int16_t v) { return _mm256_set1_epi16(v); }
  static V Set32(int32_t v) { return _mm256_set1_epi32(v); }
  static V Add16(V a, V b) { return _mm256_add_epi16(a, b); }
  static V Sub16(V a, V b) { return _mm256_sub_epi16(a, b); }
  static V Add32(V a, V b) { return _mm256_add_epi32(a, b); }
  static V Sub32(V a, V b) { return _mm256_sub_epi32(a, b); }
  static V Madd(V a, V b) { return _mm256_madd_epi16(a, b); }
  template <int n>
  static V Sra32(V a) { return _mm256_srai_epi32(a, n); }
  static V Packs32(V a, V b) { return _mm256_packs_epi32(a, b); }
  static V UnpackLo16(V a, V b) { return _mm256_unpacklo_epi16(a, b); }
  static V UnpackHi16(V a, V b) { return _mm256_unpackhi_epi16(a, b); }
  static V UnpackLo32(V a, V b) { return _mm256_unpacklo_epi32(a, b); }
  static V UnpackHi32(V a, V b) { return _mm256_unpackhi_epi32(a, b); }
  static V UnpackLo64(V a, V b) { return _mm256_unpacklo_epi64(a, b); }
  static V UnpackHi64(V a, V b) { return _mm256_unpackhi_epi64(a, b); }
  static V Or(V a, V b) { return _mm256_or_si256(a, b); }
  static V And(V a, V b) { return _mm256_and_si256(a, b); }
  static V Gt16(V a, V b) { return _mm256_cmpgt_epi16(a, b); }
  static V Lt16(V a, V b) { return _mm256_cmpgt_epi16(b, a); }
  static V PackUs16(V a, V b) { return _mm256_packus_epi16(a, b); }
  // The same eight lanes in each 16-byte half.
  static V Lanes16(short a, short b, short c, short d, short e, short f, short g, short h) {
    return _mm256_setr_epi16(a, b, c, d, e, f, g, h, a, b, c, d, e, f, g, h);
  }
};

// Two blocks' dequantised rows 0..kRows-1 into x (the first block in the
// low halves), the coefficients outside the lanes marked in *bad; bit 0
// set when the first block is DC alone, bit 1 when the second is.
template <int kRows = 8>
inline __attribute__((always_inline)) int LoadPair(const int16_t* coef, const IdctSteps& steps, __m256i* x,
                                                   __m256i* bad) {
  __m256i ac = _mm256_setzero_si256();
  const __m256i first_ac = _mm256_setr_epi16(0, -1, -1, -1, -1, -1, -1, -1, 0, -1, -1, -1, -1, -1, -1, -1);
  for (int r = 0; r < kRows; ++r) {
    const __m256i c = _mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(coef + 8 * r))),
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(coef + 64 + 8 * r)), 1);
    const __m256i limit =
        _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(steps.limit + 8 * r)));
    *bad = _mm256_or_si256(*bad, _mm256_or_si256(_mm256_cmpgt_epi16(c, limit),
                                                 _mm256_cmpgt_epi16(_mm256_sub_epi16(_mm256_setzero_si256(), limit), c)));
    ac = _mm256_or_si256(ac, r == 0 ? _mm256_and_si256(c, first_ac) : c);
    x[r] = _mm256_mullo_epi16(
        c, _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(steps.step + 8 * r))));
  }
  const int zero_ac = _mm256_movemask_epi8(_mm256_cmpeq_epi16(ac, _mm256_setzero_si256()));
  return ((zero_ac & 0xffff) == 0xffff ? 1 : 0) | ((static_cast<unsigned>(zero_ac) >> 16) == 0xffff ? 2 : 0);
}

// A pair whose blocks are not both transformed in AVX2 (dc from LoadPair,
// not 0): the DC shortcut for a block of DC alone, `single` for the other.
bool SplitPair(int dc, const int16_t* coef, const IdctSteps& steps, int size,
               bool (*single)(const int16_t*, const IdctSteps&, uint8_t*, ptrdiff_t), uint8_t* out, ptrdiff_t stride) {
  const bool a = dc & 1 ? DcBlock(coef, steps, size, out, stride) : single(coef, steps, out, stride);
  const bool b = dc & 2 ? DcBlock(coef + 64, steps, size, out + size, stride) : single(coef + 64, steps, out + size, stride);
  return a && b;
}

template <bool kLow>
bool Islow8x8PairAvx2(const int16_t* coef, const IdctSteps& steps, uint8_t* out, ptrdiff_t stride) {
  __m256i x[8];
  __m256i bad = _mm256_setzero_si256();
  if (const int dc = LoadPair<(kLow ? 4 : 8)>(coef, steps, x, &bad); dc != 0) {
    return SplitPair(dc, coef, steps, 8, kLow ? IdctIslow8x8LowSse2 : IdctIslow8x8Sse2, out, stride);
  }
  IslowSimd<Avx2>::Transform<kLow>(x, &bad);
  const __m256i center = _mm256_set1_epi16(128);
  for (int r = 0; r < 8; r += 2) {
    // Each half: block rows r and r + 1.
    const __m256i two = _mm256_packus_epi16(_mm256_add_epi16(x[r], center), _mm256_add_epi16(x[r + 1], center));
    const __m128i a = _mm256_castsi256_si128(two), b = _mm256_extracti128_si256(two, 1);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + r * stride), a);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + (r + 1) * stride), _mm_srli_si128(a, 8));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + 8 + r * stride), b);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + 8 + (r + 1) * stride), _mm_srli_si128(b, 8));
  }
  return _mm256_movemask_epi8(bad) == 0;
}

}  // namespace

bool IdctIslow8x8PairAvx2(const int16_t* coef, const IdctSteps& steps, uint8_t* out, ptrdiff_t stride) {
  return Islow8x8PairAvx2<false>(coef, steps, out, stride);
}

bool IdctIslow8x8LowPairAvx2(const int16_t* coef, const IdctSteps& steps, uint8_t* out, ptrdiff_t stride) {
  return Islow8x8PairAvx2<true>(coef, steps, out, stride);
}

bool Idct4x4PairAvx2(const int16_t* coef, const IdctSteps& steps, uint8_t* out, ptrdiff_t stride) {
  __m256i x[8];
  __m256i bad = _mm256_setzero_si256();
  if (const int dc = LoadPair(coef, steps, x, &bad); dc != 0) {
    return SplitPair(dc, coef, steps, 4, Idct4x4Sse2, out, stride);
  }
  const __m256i samples = IslowSimd<Avx2>::Transform4x4(x, &bad);
  // Row r of each block side by side: rows 0 and 1, then 2 and 3.
  const __m128i a = _mm256_castsi256_si128(samples), b = _mm256_extracti128_si256(samples, 1);
  const __m128i lo = _mm_unpacklo_epi32(a, b), hi = _mm_unpackhi_epi32(a, b);
  _mm_storel_epi64(reinterpret_cast<__m128i*>(out), lo);
  _mm_storel_epi64(reinterpret_cast<__m128i*>(out + stride), _mm_srli_si128(lo, 8));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(out + 2 * stride), hi);
  _mm_storel_epi64(reinterpret_cast<__m128i*>(out + 3 * stride), _mm_srli_si128(hi, 8));
  return _mm256_movemask_epi8(bad) == 0;
}

// jdcolor.c's YCbCr to RGB, its products regrouped to fit 16 bits as in the
// SSE2 path (YccToRgb8 in pixel_decoder.cc); R's and B's from 16-bit
// products alone.
size_t YccToRgbRowAvx2(const uint8_t* y, const uint8_t* cb, const uint8_t* cr, uint8_t* out, size_t n) {
  // Byte i of each 16-byte output chunk takes channel i % 3 of pixel i / 3
  // (of the pixels in the same 16-byte half).
  auto mask = [](int chunk, int channel) {
    alignas(16) int8_t m[16];
    for (int i = 0; i < 16; ++i) {
      const int j = 16 * chunk + i;
      m[i] = static_cast<int8_t>(j % 3 == channel ? j / 3 : -1);
    }
    return _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(m)));
  };
  __m256i masks[3][3];
  for (int chunk = 0; chunk < 3; ++chunk) {
    for (int channel = 0; channel < 3; ++channel) masks[chunk][channel] = mask(chunk, channel);
  }
  const __m256i center = _mm256_set1_epi16(128), two = _mm256_set1_epi16(2), half = _mm256_set1_epi32(1 << 15);
  const __m256i kg = _mm256_set1_epi32((18734 << 16) | (-22554 & 0xffff));
  auto shr16 = [](__m256i lo, __m256i hi) {
    return _mm256_packs_epi32(_mm256_srai_epi32(lo, 16), _mm256_srai_epi32(hi, 16));
  };
  // (k x + 2^15) >> 16 for -128 <= x < 128: the high half of 4 x times k
  // is floor(k x / 2^14), and (that + 2) >> 2 the same floor as the whole.
  auto product = [two](__m256i x, int16_t k) {
    return _mm256_srai_epi16(_mm256_add_epi16(_mm256_mulhi_epi16(_mm256_slli_epi16(x, 2), _mm256_set1_epi16(k)), two),
                             2);
  };
  // R, G and B of pixels x..x+15 as 16-bit lanes, before the clamp.
  auto channels = [&](size_t x, __m256i* rgb) {
    const __m256i vy = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(y + x)));
    const __m256i vb = _mm256_sub_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(cb + x))), center);
    const __m256i vr = _mm256_sub_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(cr + x))), center);
    const __m256i rr = product(vr, 26345);
    // Unpacks and packs pair up within each 16-byte half, so the order holds.
    const __m256i gg = _mm256_sub_epi16(shr16(_mm256_add_epi32(_mm256_madd_epi16(_mm256_unpacklo_epi16(vb, vr), kg), half),
                                              _mm256_add_epi32(_mm256_madd_epi16(_mm256_unpackhi_epi16(vb, vr), kg), half)),
                                        vr);
    const __m256i bb = product(vb, -14942);
    rgb[0] = _mm256_add_epi16(vy, _mm256_add_epi16(vr, rr));
    rgb[1] = _mm256_add_epi16(vy, gg);
    rgb[2] = _mm256_add_epi16(vy, _mm256_add_epi16(_mm256_add_epi16(vb, vb), bb));
  };
  size_t x = 0;
  for (; x + 32 <= n; x += 32) {
    __m256i a[3], b[3], bytes[3];
    channels(x, a);
    channels(x + 16, b);
    // Pixels 0..15 in the low half, 16..31 in the high half.
    bytes[0] = _mm256_permute4x64_epi64(_mm256_packus_epi16(a[0], b[0]), 0xd8);
    bytes[1] = _mm256_permute4x64_epi64(_mm256_packus_epi16(a[1], b[1]), 0xd8);
    bytes[2] = _mm256_permute4x64_epi64(_mm256_packus_epi16(a[2], b[2]), 0xd8);
    auto chunk = [&](int k) {
      return _mm256_or_si256(
          _mm256_or_si256(_mm256_shuffle_epi8(bytes[0], masks[k][0]), _mm256_shuffle_epi8(bytes[1], masks[k][1])),
          _mm256_shuffle_epi8(bytes[2], masks[k][2]));
    };
    const __m256i v[3] = {chunk(0), chunk(1), chunk(2)};
    // Each v: output bytes 16 chunk.. in the low half, 48 + 16 chunk.. in the high.
    uint8_t* o = out + 3 * x;
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(o), _mm256_permute2x128_si256(v[0], v[1], 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + 32), _mm256_permute2x128_si256(v[2], v[0], 0x30));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + 64), _mm256_permute2x128_si256(v[1], v[2], 0x31));
  }
  for (; x + 16 <= n; x += 16) {
    __m256i a[3];
    __m128i bytes[3];
    channels(x, a);
    for (int c = 0; c < 3; ++c) bytes[c] = _mm_packus_epi16(_mm256_castsi256_si128(a[c]), _mm256_extracti128_si256(a[c], 1));
    for (int chunk = 0; chunk < 3; ++chunk) {
      __m128i v = _mm_setzero_si128();
      for (int c = 0; c < 3; ++c) v = _mm_or_si128(v, _mm_shuffle_epi8(bytes[c], _mm256_castsi256_si128(masks[chunk][c])));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 3 * x + 16 * static_cast<size_t>(chunk)), v);
    }
  }
  return x;
}

size_t Fancy2xAvx2(const int16_t* c, size_t n, int even, int odd, int shift, uint8_t* out) {
  const __m256i ke = _mm256_set1_epi16(static_cast<int16_t>(even)), ko = _mm256_set1_epi16(static_cast<int16_t>(odd));
  const __m128i sh = _mm_cvtsi32_si128(shift);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i mid = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + i));
    const __m256i left = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + i - 1));
    const __m256i right = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + i + 1));
    const __m256i three = _mm256_add_epi16(mid, _mm256_add_epi16(mid, mid));
    const __m256i e = _mm256_srl_epi16(_mm256_add_epi16(_mm256_add_epi16(three, left), ke), sh);
    const __m256i o = _mm256_srl_epi16(_mm256_add_epi16(_mm256_add_epi16(three, right), ko), sh);
    // Within each 16-byte half: columns 0..3, then 4..7, each even then odd.
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 2 * i),
                        _mm256_packus_epi16(_mm256_unpacklo_epi16(e, o), _mm256_unpackhi_epi16(e, o)));
  }
  return i;
}

size_t FancyColumnsAvx2(const uint8_t* a, const uint8_t* b, size_t n, int16_t* c) {
  size_t k = 0;
  for (; k + 16 <= n; k += 16) {
    __m256i v = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + k)));
    if (b != nullptr) {
      const __m256i vb = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + k)));
      v = _mm256_add_epi16(_mm256_add_epi16(v, _mm256_add_epi16(v, v)), vb);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + k), v);
  }
  return k;
}

void SmoothRowAvx2(const float* const rows[5], int n, const SmoothEstimate* e, int count, int16_t* blocks) {
  // The rows and columns the terms take: 1 and 2 the neighbours, 3 and 4
  // those two away.
  bool near_v = false, far_v = false, near_h = false, far_h = false;
  for (int i = 0; i < count; ++i) {
    for (int t = 0; t < e[i].num_terms; ++t) {
      const int v = e[i].terms[t].basis / 5, h = e[i].terms[t].basis % 5;
      near_v |= v == 1 || v == 2;
      far_v |= v >= 3;
      near_h |= h == 1 || h == 2;
      far_h |= h >= 3;
    }
  }
  const __m256 sign = _mm256_set1_ps(-0.0f);
  alignas(32) int32_t q[kMaxSmoothEstimates][8];
  int b = 0;
  for (; b < n; b += 8) {
    __m256 cols[5][5], basis[25];
    for (int r = 0; r < 5; ++r) {
      if (r != 2 && !((r == 1 || r == 3) ? near_v : far_v)) continue;
      const float* d = rows[r] + b;
      cols[r][0] = _mm256_loadu_ps(d);
      if (near_h) {
        const __m256 left = _mm256_loadu_ps(d - 1), right = _mm256_loadu_ps(d + 1);
        cols[r][1] = _mm256_add_ps(left, right);
        cols[r][2] = _mm256_sub_ps(left, right);
      }
      if (far_h) {
        const __m256 left = _mm256_loadu_ps(d - 2), right = _mm256_loadu_ps(d + 2);
        cols[r][3] = _mm256_add_ps(left, right);
        cols[r][4] = _mm256_sub_ps(left, right);
      }
    }
    for (int h = 0; h < 5; ++h) {
      if ((h == 1 || h == 2) ? !near_h : (h >= 3 && !far_h)) continue;
      basis[h] = cols[2][h];
      if (near_v) {
        basis[5 + h] = _mm256_add_ps(cols[1][h], cols[3][h]);
        basis[10 + h] = _mm256_sub_ps(cols[1][h], cols[3][h]);
      }
      if (far_v) {
        basis[15 + h] = _mm256_add_ps(cols[0][h], cols[4][h]);
        basis[20 + h] = _mm256_sub_ps(cols[0][h], cols[4][h]);
      }
    }
    for (int i = 0; i < count; ++i) {
      const SmoothEstimate& est = e[i];
      __m256 sum = _mm256_setzero_ps();
      for (int t = 0; t < est.num_terms; ++t) {
        sum = _mm256_add_ps(sum, _mm256_mul_ps(_mm256_set1_ps(est.terms[t].weight), basis[est.terms[t].basis]));
      }
      const __m256 magnitude = _mm256_andnot_ps(sign, sum);
      __m256i value;
      if (est.k == 0) {
        value = _mm256_srai_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(magnitude), _mm256_set1_epi32(128)), 8);
      } else if (const __m256 nf =
                     _mm256_add_ps(_mm256_mul_ps(magnitude, _mm256_set1_ps(static_cast<float>(est.times))),
                                   _mm256_set1_ps(static_cast<float>(est.round + 0.5)));
                 _mm256_movemask_ps(_mm256_cmp_ps(nf, _mm256_set1_ps(kSmoothFloatLimit), _CMP_GE_OQ)) == 0) {
        value = _mm256_cvttps_epi32(_mm256_mul_ps(nf, _mm256_set1_ps(static_cast<float>(est.inverse))));
      } else {
        const __m256d times = _mm256_set1_pd(est.times), add = _mm256_set1_pd(est.round + 0.5);
        const __m256d inverse = _mm256_set1_pd(est.inverse);
        const __m256d lo = _mm256_mul_pd(
            _mm256_add_pd(_mm256_mul_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(magnitude)), times), add), inverse);
        const __m256d hi = _mm256_mul_pd(
            _mm256_add_pd(_mm256_mul_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(magnitude, 1)), times), add), inverse);
        value = _mm256_set_m128i(_mm256_cvttpd_epi32(hi), _mm256_cvttpd_epi32(lo));
      }
      // The sign of the sum, then the low 16 bits.
      const __m256i negative = _mm256_castps_si256(_mm256_cmp_ps(sum, _mm256_setzero_ps(), _CMP_LT_OQ));
      _mm256_store_si256(reinterpret_cast<__m256i*>(q[i]),
                         _mm256_sub_epi32(_mm256_xor_si256(value, negative), negative));
    }
    int16_t* block = blocks + static_cast<size_t>(b) * 64;
    const int m = std::min(8, n - b);
    if (count == kMaxSmoothEstimates) {
      // DC and all nine, so no other coefficient is sent: rows 0..3 of each
      // block, columns 0..3, as four 64-bit stores. Zigzag 0, 1, 5, 6 in
      // row 0; 2, 4, 7 in row 1; 3, 8 in row 2; 9 in row 3.
      const __m256i low = _mm256_set1_epi32(0xffff);
      auto at = [&](int k) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(q[k])); };
      auto pair = [&](int k0, int k1) {
        return _mm256_or_si256(_mm256_and_si256(at(k0), low), _mm256_slli_epi32(at(k1), 16));
      };
      const __m256i halves[4][2] = {{pair(0, 1), pair(5, 6)},
                                    {pair(2, 4), _mm256_and_si256(at(7), low)},
                                    {pair(3, 8), _mm256_setzero_si256()},
                                    {_mm256_and_si256(at(9), low), _mm256_setzero_si256()}};
      alignas(32) uint64_t rows[4][8];
      for (int r = 0; r < 4; ++r) {
        // Blocks 0, 1, 4, 5, then 2, 3, 6, 7.
        const __m256i lo = _mm256_unpacklo_epi32(halves[r][0], halves[r][1]);
        const __m256i hi = _mm256_unpackhi_epi32(halves[r][0], halves[r][1]);
        _mm256_store_si256(reinterpret_cast<__m256i*>(rows[r]), _mm256_permute2x128_si256(lo, hi, 0x20));
        _mm256_store_si256(reinterpret_cast<__m256i*>(rows[r] + 4), _mm256_permute2x128_si256(lo, hi, 0x31));
      }
      for (int j = 0; j < m; ++j, block += 64) {
        for (int r = 0; r < 4; ++r) std::memcpy(block + 8 * r, &rows[r][j], 8);
      }
      continue;
    }
    for (int j = 0; j < m; ++j, block += 64) {
      for (int i = 0; i < count; ++i) block[e[i].position] = static_cast<int16_t>(q[i][j]);
    }
  }
}

}  // namespace pcr
