// Internal to the inverse DCTs: libjpeg's constants, and the SIMD islow
// kernel written once over a vector type, for the SSE2 (idct.cc) and AVX2
// (avx2.cc) translation units. Everything has internal linkage, so
// that each unit keeps the code its own flags compiled.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "jpeg/idct.h"

namespace pcr {
namespace {

constexpr int kConstBits = 13;
constexpr int kPass1Bits = 2;

// FIX(x) at 13 bits, as jidctint.c and jidctred.c round them.
constexpr int64_t k0_211164243 = 1730;
constexpr int64_t k0_298631336 = 2446;
constexpr int64_t k0_390180644 = 3196;
constexpr int64_t k0_509795579 = 4176;
constexpr int64_t k0_541196100 = 4433;
constexpr int64_t k0_601344887 = 4926;
constexpr int64_t k0_720959822 = 5906;
constexpr int64_t k0_765366865 = 6270;
constexpr int64_t k0_850430095 = 6967;
constexpr int64_t k0_899976223 = 7373;
constexpr int64_t k1_061594337 = 8697;
constexpr int64_t k1_175875602 = 9633;
constexpr int64_t k1_272758580 = 10426;
constexpr int64_t k1_451774981 = 11893;
constexpr int64_t k1_501321110 = 12299;
constexpr int64_t k1_847759065 = 15137;
constexpr int64_t k1_961570560 = 16069;
constexpr int64_t k2_053119869 = 16819;
constexpr int64_t k2_172734803 = 17799;
constexpr int64_t k2_562915447 = 20995;
constexpr int64_t k3_072711026 = 25172;
constexpr int64_t k3_624509785 = 29692;

// The ranges inside which libjpeg-turbo's SIMD transforms, with their 16-bit
// lanes and saturating packs, agree with its C code: dequantised
// coefficients and first-pass outputs within +-kLaneLimit, outputs within
// -512..511 (before the +128 level shift).
constexpr int32_t kLaneLimit = 8191;

// The samples of a block whose AC coefficients are all zero, at every size:
// the first pass's dc << 2, descaled by 5, in size x size samples. Returns
// what the SIMD transforms return for it.
inline bool DcBlock(const int16_t* coef, const IdctSteps& steps, int size, uint8_t* out, ptrdiff_t stride) {
  const int64_t dc = int64_t{coef[0]} * steps.step[0];
  const bool in_range = std::abs(int{coef[0]}) <= steps.limit[0] && dc * 4 >= -kLaneLimit && dc * 4 <= kLaneLimit;
  const uint8_t v = static_cast<uint8_t>(std::clamp<int64_t>(((dc * 4 + 16) >> 5) + 128, 0, 255));
  for (int r = 0; r < size; ++r) std::memset(out + r * stride, v, static_cast<size_t>(size));
  return in_range;
}

// The islow transform in 16-bit lanes. Ops supplies the vector type V and
// its operations on 16 bytes (SSE2) or on each 16-byte half (AVX2).
template <typename Ops>
struct IslowSimd {
  using V = typename Ops::V;

  // Two 16-bit constants for madd: a weighs the first of each pair, b the second.
  static V Pair(int64_t a, int64_t b) {
    return Ops::Set32(static_cast<int32_t>((static_cast<uint32_t>(b) << 16) | (static_cast<uint32_t>(a) & 0xffff)));
  }

  // jidctint.c's 1-D transform on eight lanes at once, x[i] holding element
  // i of each lane's vector (16-bit), into out[i] descaled by kShift and
  // packed to 16 bits with saturation. The multiplications are C's,
  // regrouped into pairs: exact while the inputs and their pairwise sums fit
  // 16 bits.
  // kHalf: lanes 4..7 of every x are 0, so are those of every output.
  // kFew: x[4..7] are 0, and each output takes one product per pair of
  // x[0..3] (the same sums, regrouped).
  template <int kShift, bool kHalf = false, bool kFew = false>
  __attribute__((always_inline)) static void Pass(const V* x, V* out) {
    const V round = Ops::Set32(1 << (kShift - 1));
    const V zero = Ops::Zero();
    V even[4][2], odd[4][2];  // [tmp10, tmp11, tmp12, tmp13] and [tmp0..tmp3], low and high halves
    for (int h = 0; h < (kHalf ? 1 : 2); ++h) {
      auto unpack = [h](V a, V b) { return h == 0 ? Ops::UnpackLo16(a, b) : Ops::UnpackHi16(a, b); };
      const V z23 = unpack(x[2], kFew ? zero : x[6]);
      const V tmp3 = Ops::Madd(z23, Pair(k0_541196100 + k0_765366865, k0_541196100));
      const V tmp2 = Ops::Madd(z23, Pair(k0_541196100, k0_541196100 - k1_847759065));
      if constexpr (kFew) {
        const V tmp0 = Ops::template Sra32<16 - kConstBits>(unpack(zero, x[0]));
        even[0][h] = Ops::Add32(tmp0, tmp3);
        even[3][h] = Ops::Sub32(tmp0, tmp3);
        even[1][h] = Ops::Add32(tmp0, tmp2);
        even[2][h] = Ops::Sub32(tmp0, tmp2);
        // z3 and z4 with x[5] and x[7] 0, folded into each product.
        const V x31 = unpack(x[3], x[1]);
        constexpr int64_t z3_3 = k1_175875602 - k1_961570560, z3_1 = k1_175875602;
        constexpr int64_t z4_3 = k1_175875602, z4_1 = k1_175875602 - k0_390180644;
        odd[0][h] = Ops::Madd(x31, Pair(z3_3, z3_1 - k0_899976223));
        odd[3][h] = Ops::Madd(x31, Pair(z4_3, z4_1 + k1_501321110 - k0_899976223));
        odd[1][h] = Ops::Madd(x31, Pair(z4_3 - k2_562915447, z4_1));
        odd[2][h] = Ops::Madd(x31, Pair(z3_3 + k3_072711026 - k2_562915447, z3_1));
        continue;
      }
      // (x0 +- x4) << 13, sign-extended from the high half of each 32-bit lane.
      const V tmp0 = Ops::template Sra32<16 - kConstBits>(unpack(zero, Ops::Add16(x[0], x[4])));
      const V tmp1 = Ops::template Sra32<16 - kConstBits>(unpack(zero, Ops::Sub16(x[0], x[4])));
      even[0][h] = Ops::Add32(tmp0, tmp3);
      even[3][h] = Ops::Sub32(tmp0, tmp3);
      even[1][h] = Ops::Add32(tmp1, tmp2);
      even[2][h] = Ops::Sub32(tmp1, tmp2);
      const V z34 = unpack(Ops::Add16(x[7], x[3]), Ops::Add16(x[5], x[1]));
      const V z3 = Ops::Madd(z34, Pair(k1_175875602 - k1_961570560, k1_175875602));
      const V z4 = Ops::Madd(z34, Pair(k1_175875602, k1_175875602 - k0_390180644));
      const V x71 = unpack(x[7], x[1]), x53 = unpack(x[5], x[3]);
      odd[0][h] = Ops::Add32(Ops::Madd(x71, Pair(k0_298631336 - k0_899976223, -k0_899976223)), z3);
      odd[3][h] = Ops::Add32(Ops::Madd(x71, Pair(-k0_899976223, k1_501321110 - k0_899976223)), z4);
      odd[1][h] = Ops::Add32(Ops::Madd(x53, Pair(k2_053119869 - k2_562915447, -k2_562915447)), z4);
      odd[2][h] = Ops::Add32(Ops::Madd(x53, Pair(-k2_562915447, k3_072711026 - k2_562915447)), z3);
    }
    auto emit = [&](int i, int e, int o, bool plus) {
      V half[2] = {zero, zero};
      for (int h = 0; h < (kHalf ? 1 : 2); ++h) {
        const V sum = plus ? Ops::Add32(even[e][h], odd[o][h]) : Ops::Sub32(even[e][h], odd[o][h]);
        half[h] = Ops::template Sra32<kShift>(Ops::Add32(sum, round));
      }
      out[i] = Ops::Packs32(half[0], half[1]);
    };
    emit(0, 0, 3, true);
    emit(7, 0, 3, false);
    emit(1, 1, 2, true);
    emit(6, 1, 2, false);
    emit(2, 2, 1, true);
    emit(5, 2, 1, false);
    emit(3, 3, 0, true);
    emit(4, 3, 0, false);
  }

  static void Transpose8x8(V* r) {
    const V a0 = Ops::UnpackLo16(r[0], r[1]), a1 = Ops::UnpackHi16(r[0], r[1]);
    const V a2 = Ops::UnpackLo16(r[2], r[3]), a3 = Ops::UnpackHi16(r[2], r[3]);
    const V a4 = Ops::UnpackLo16(r[4], r[5]), a5 = Ops::UnpackHi16(r[4], r[5]);
    const V a6 = Ops::UnpackLo16(r[6], r[7]), a7 = Ops::UnpackHi16(r[6], r[7]);
    const V b0 = Ops::UnpackLo32(a0, a2), b1 = Ops::UnpackHi32(a0, a2);
    const V b2 = Ops::UnpackLo32(a1, a3), b3 = Ops::UnpackHi32(a1, a3);
    const V b4 = Ops::UnpackLo32(a4, a6), b5 = Ops::UnpackHi32(a4, a6);
    const V b6 = Ops::UnpackLo32(a5, a7), b7 = Ops::UnpackHi32(a5, a7);
    r[0] = Ops::UnpackLo64(b0, b4);
    r[1] = Ops::UnpackHi64(b0, b4);
    r[2] = Ops::UnpackLo64(b1, b5);
    r[3] = Ops::UnpackHi64(b1, b5);
    r[4] = Ops::UnpackLo64(b2, b6);
    r[5] = Ops::UnpackHi64(b2, b6);
    r[6] = Ops::UnpackLo64(b3, b7);
    r[7] = Ops::UnpackHi64(b3, b7);
  }

  // Lanes of v outside lo..hi, as all-ones lanes.
  static V Outside(V v, int16_t lo, int16_t hi) {
    return Ops::Or(Ops::Gt16(v, Ops::Set16(hi)), Ops::Lt16(v, Ops::Set16(lo)));
  }

  template <int kShift>
  static V Descale32(V v) {
    return Ops::template Sra32<kShift>(Ops::Add32(v, Ops::Set32(1 << (kShift - 1))));
  }

  // jidctred.c's 4-point odd and even parts, on the low and high halves
  // (h) of rows or columns x: x[0] the DC, x[1], x[3], x[5], x[7] the odd
  // inputs, x[2], x[6] the even ones. Outputs 0..3 before their descale.
  static void Idct4Parts(const V* x, int h, V* sum) {
    auto unpack = [h](V a, V b) { return h == 0 ? Ops::UnpackLo16(a, b) : Ops::UnpackHi16(a, b); };
    const V tmp0 = Ops::template Sra32<16 - (kConstBits + 1)>(unpack(Ops::Zero(), x[0]));
    const V tmp2 = Ops::Madd(unpack(x[2], x[6]), Pair(k1_847759065, -k0_765366865));
    const V tmp10 = Ops::Add32(tmp0, tmp2), tmp12 = Ops::Sub32(tmp0, tmp2);
    const V x75 = unpack(x[7], x[5]), x31 = unpack(x[3], x[1]);
    const V odd0 = Ops::Add32(Ops::Madd(x75, Pair(-k0_211164243, k1_451774981)),
                              Ops::Madd(x31, Pair(-k2_172734803, k1_061594337)));
    const V odd2 = Ops::Add32(Ops::Madd(x75, Pair(-k0_509795579, -k0_601344887)),
                              Ops::Madd(x31, Pair(k0_899976223, k2_562915447)));
    sum[0] = Ops::Add32(tmp10, odd2);
    sum[3] = Ops::Sub32(tmp10, odd2);
    sum[1] = Ops::Add32(tmp12, odd0);
    sum[2] = Ops::Sub32(tmp12, odd0);
  }

  // jidctred.c's 4x4 transform of dequantised rows x (clobbered), the lanes
  // outside the agreement range added to `bad`: each 16 bytes hold the 4x4
  // samples, row after row.
  static V Transform4x4(V* x, V* bad) {
    V ws[8];
    // Pass 1, columns as lanes: rows 0..3 of the workspace.
    for (int h = 0; h < 2; ++h) {
      V sum[4];
      Idct4Parts(x, h, sum);
      for (int i = 0; i < 4; ++i) sum[i] = Descale32<kConstBits - kPass1Bits + 1>(sum[i]);
      for (int i = 0; i < 4; ++i) ws[i] = h == 0 ? sum[i] : Ops::Packs32(ws[i], sum[i]);
    }
    // Column 4 plays no part.
    const V used = Ops::Lanes16(-1, -1, -1, -1, 0, -1, -1, -1);
    for (int i = 0; i < 4; ++i) *bad = Ops::Or(*bad, Ops::And(used, Outside(ws[i], -kLaneLimit, kLaneLimit)));
    for (int i = 4; i < 8; ++i) ws[i] = Ops::Zero();
    Transpose8x8(ws);  // ws[c]: column c, rows 0..3 in the low lanes
    V o[4];
    Idct4Parts(ws, 0, o);
    for (int i = 0; i < 4; ++i) o[i] = Descale32<kConstBits + kPass1Bits + 3 + 1>(o[i]);
    // o[i] lane r: row r, column i; rows as 16-bit lanes.
    const V t01 = Ops::UnpackLo32(o[0], o[1]), t23 = Ops::UnpackLo32(o[2], o[3]);
    const V u01 = Ops::UnpackHi32(o[0], o[1]), u23 = Ops::UnpackHi32(o[2], o[3]);
    const V rows01 = Ops::Packs32(Ops::UnpackLo64(t01, t23), Ops::UnpackHi64(t01, t23));
    const V rows23 = Ops::Packs32(Ops::UnpackLo64(u01, u23), Ops::UnpackHi64(u01, u23));
    *bad = Ops::Or(*bad, Ops::Or(Outside(rows01, -512, 511), Outside(rows23, -512, 511)));
    const V center = Ops::Set16(128);
    return Ops::PackUs16(Ops::Add16(rows01, center), Ops::Add16(rows23, center));
  }

  // Both passes over dequantised rows x (in place, rows again after), with
  // the lanes outside the agreement range added to `bad`; x[r] then holds
  // row r of samples before the +128 level shift. kLow: only rows and
  // columns 0..3 of x hold nonzero coefficients (x[4..7] may be left
  // unset), and each pass takes those alone.
  template <bool kLow = false>
  static void Transform(V* x, V* bad) {
    Pass<kConstBits - kPass1Bits, kLow, kLow>(x, x);
    for (int r = 0; r < 8; ++r) *bad = Ops::Or(*bad, Outside(x[r], -kLaneLimit, kLaneLimit));
    Transpose8x8(x);
    Pass<kConstBits + kPass1Bits + 3, false, kLow>(x, x);
    for (int r = 0; r < 8; ++r) *bad = Ops::Or(*bad, Outside(x[r], -512, 511));
    Transpose8x8(x);
  }
};

}  // namespace
}  // namespace pcr
