#include "jpeg/pixel_decoder.h"

#if defined(__x86_64__)
#include <emmintrin.h>

#include "jpeg/avx2.h"
#endif

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "jpeg/idct.h"
#include "jpeg/smooth.h"

namespace pcr {

void ConvertCmyk(const uint8_t* cmyk, bool inverted, bool gray, uint8_t* out, size_t n) {
  for (size_t i = 0; i < n; ++i, cmyk += 4) {
    const unsigned nk = inverted ? cmyk[3] : 255u - cmyk[3];
    unsigned rgb[3];
    for (int j = 0; j < 3; ++j) {
      const unsigned v = inverted ? 255u - cmyk[j] : cmyk[j];
      const unsigned t = v * nk + 128;
      rgb[j] = nk - (((t >> 8) + t) >> 8);
    }
    if (gray) {
      *out++ = static_cast<uint8_t>((rgb[0] * 19595 + rgb[1] * 38470 + rgb[2] * 7471 + 32768) >> 16);
    } else {
      for (int j = 0; j < 3; ++j) *out++ = static_cast<uint8_t>(rgb[j]);
    }
  }
}

std::string CropOutsideMessage(const Crop& c, int width, int height) {
  return "crop " + std::to_string(c.width) + "x" + std::to_string(c.height) + "+" + std::to_string(c.x) + "+" +
         std::to_string(c.y) + " lies outside the " + std::to_string(width) + "x" + std::to_string(height) +
         " image";
}

std::string BufferTooSmallMessage(size_t have, size_t need) {
  return "output buffer of " + std::to_string(have) + " bytes, the image needs " + std::to_string(need);
}

namespace {

// jdcolor.c's tables: 16-bit fixed point, rounding folded into Cb_g.
struct ColorTables {
  int cr_r[256], cb_b[256];
  int64_t cr_g[256], cb_g[256];
  int64_t r_y[256], g_y[256], b_y[256];

  // R, G and B before the range limit.
  void YccToRgb(int y, int cb, int cr, int* rgb) const {
    rgb[0] = y + cr_r[cr];
    rgb[1] = y + static_cast<int>((cb_g[cb] + cr_g[cr]) >> 16);
    rgb[2] = y + cb_b[cb];
  }

  ColorTables() {
    constexpr int kScaleBits = 16;
    constexpr int64_t kHalf = int64_t{1} << (kScaleBits - 1);
    auto fix = [](double x) { return static_cast<int64_t>(x * (1 << kScaleBits) + 0.5); };
    for (int i = 0; i < 256; ++i) {
      const int64_t x = i - 128;
      cr_r[i] = static_cast<int>((fix(1.40200) * x + kHalf) >> kScaleBits);
      cb_b[i] = static_cast<int>((fix(1.77200) * x + kHalf) >> kScaleBits);
      cr_g[i] = -fix(0.71414) * x;
      cb_g[i] = -fix(0.34414) * x + kHalf;
      r_y[i] = fix(0.29900) * i;
      g_y[i] = fix(0.58700) * i;
      b_y[i] = fix(0.11400) * i + kHalf;
    }
  }
};

const ColorTables& Tables() {
  static const ColorTables tables;
  return tables;
}

inline uint8_t Clamp255(int v) { return static_cast<uint8_t>(std::clamp(v, 0, 255)); }

// The DCT scaled size jpeg_core_output_dimensions gives every component at
// least: 8 / scale_denom.
int MinScaledSize(int scale_denom) { return 8 / scale_denom; }

inline int CeilDiv(int64_t a, int64_t b) { return static_cast<int>((a + b - 1) / b); }

// The column of the DC value a block's smoothing takes `d` columns away,
// in a row of last + 1 blocks: the nearest edge block beyond the row, except
// in a row of two, where libjpeg-turbo's sliding window gives block 0 for
// both blocks' far right neighbours and block 1's near one.
inline int NeighbourColumn(int b, int d, int last) {
  if (last == 1 && ((b == 0 && d == 2) || (b == 1 && d > 0))) return 0;
  return std::clamp(b + d, 0, last);
}

#if defined(__x86_64__)

// Two 16-bit constants for _mm_madd_epi16: a weighs the first of each pair, b the second.
inline __m128i Pair(int a, int b) {
  return _mm_set1_epi32(static_cast<int32_t>((static_cast<uint32_t>(b) << 16) | (static_cast<uint32_t>(a) & 0xffff)));
}

// ColorTables::YccToRgb and the range limit on 8 pixels (16-bit lanes): the
// tables' products regrouped so that each factor fits 16 bits, exactly.
inline void YccToRgb8(__m128i y, __m128i cb, __m128i cr, __m128i* r, __m128i* g, __m128i* b) {
  const __m128i center = _mm_set1_epi16(128), two = _mm_set1_epi16(2), half = _mm_set1_epi32(1 << 15);
  cb = _mm_sub_epi16(cb, center);
  cr = _mm_sub_epi16(cr, center);
  auto shr16 = [](__m128i lo, __m128i hi) { return _mm_packs_epi32(_mm_srai_epi32(lo, 16), _mm_srai_epi32(hi, 16)); };
  // 91881 = 65536 + 26345: (91881 x + 2^15) >> 16 = x + ((26345 x + 2 * 16384) >> 16).
  const __m128i kr = Pair(26345, 16384);
  const __m128i rr = shr16(_mm_madd_epi16(_mm_unpacklo_epi16(cr, two), kr), _mm_madd_epi16(_mm_unpackhi_epi16(cr, two), kr));
  // -46802 = 18734 - 65536.
  const __m128i kg = Pair(-22554, 18734);
  const __m128i gg = _mm_sub_epi16(
      shr16(_mm_add_epi32(_mm_madd_epi16(_mm_unpacklo_epi16(cb, cr), kg), half),
            _mm_add_epi32(_mm_madd_epi16(_mm_unpackhi_epi16(cb, cr), kg), half)),
      cr);
  // 116130 = 131072 - 14942.
  const __m128i kb = Pair(-14942, 16384);
  const __m128i bb = shr16(_mm_madd_epi16(_mm_unpacklo_epi16(cb, two), kb), _mm_madd_epi16(_mm_unpackhi_epi16(cb, two), kb));
  *r = _mm_add_epi16(y, _mm_add_epi16(cr, rr));
  *g = _mm_add_epi16(y, gg);
  *b = _mm_add_epi16(y, _mm_add_epi16(_mm_add_epi16(cb, cb), bb));
}

// YCbCr rows to packed RGB, n pixels; returns how many it converted (a
// multiple of 16), the rest left to the caller.
// Pixels x..x + 15 of YCbCr rows as R, G and B bytes.
inline void YccToRgb16(const uint8_t* y, const uint8_t* cb, const uint8_t* cr, size_t x, __m128i* rgb) {
  const __m128i zero = _mm_setzero_si128();
  const __m128i vy = _mm_loadu_si128(reinterpret_cast<const __m128i*>(y + x));
  const __m128i vb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(cb + x));
  const __m128i vr = _mm_loadu_si128(reinterpret_cast<const __m128i*>(cr + x));
  __m128i r0, g0, b0, r1, g1, b1;
  YccToRgb8(_mm_unpacklo_epi8(vy, zero), _mm_unpacklo_epi8(vb, zero), _mm_unpacklo_epi8(vr, zero), &r0, &g0, &b0);
  YccToRgb8(_mm_unpackhi_epi8(vy, zero), _mm_unpackhi_epi8(vb, zero), _mm_unpackhi_epi8(vr, zero), &r1, &g1, &b1);
  rgb[0] = _mm_packus_epi16(r0, r1);
  rgb[1] = _mm_packus_epi16(g0, g1);
  rgb[2] = _mm_packus_epi16(b0, b1);
}

size_t YccToRgbRowSse2(const uint8_t* y, const uint8_t* cb, const uint8_t* cr, uint8_t* out, size_t n) {
  alignas(16) uint8_t rgb[3][16];
  size_t x = 0;
  for (; x + 16 <= n; x += 16) {
    __m128i v[3];
    YccToRgb16(y, cb, cr, x, v);
    for (int c = 0; c < 3; ++c) _mm_store_si128(reinterpret_cast<__m128i*>(rgb[c]), v[c]);
    uint8_t* o = out + 3 * x;
    for (int i = 0; i < 16; ++i) {
      o[3 * i] = rgb[0][i];
      o[3 * i + 1] = rgb[1][i];
      o[3 * i + 2] = rgb[2][i];
    }
  }
  return x;
}

// Fancy upsampling by 2 across, from 16-bit column values c[-1..n] (edges
// repeated): out[2i] = (3 c[i] + c[i-1] + even) >> shift, out[2i+1] = (3
// c[i] + c[i+1] + odd) >> shift. Returns the i done (a multiple of 8).
size_t Fancy2xSse2(const int16_t* c, size_t n, int even, int odd, int shift, uint8_t* out) {
  const __m128i ke = _mm_set1_epi16(static_cast<int16_t>(even)), ko = _mm_set1_epi16(static_cast<int16_t>(odd));
  const __m128i sh = _mm_cvtsi32_si128(shift);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i mid = _mm_loadu_si128(reinterpret_cast<const __m128i*>(c + i));
    const __m128i left = _mm_loadu_si128(reinterpret_cast<const __m128i*>(c + i - 1));
    const __m128i right = _mm_loadu_si128(reinterpret_cast<const __m128i*>(c + i + 1));
    const __m128i three = _mm_add_epi16(mid, _mm_add_epi16(mid, mid));
    const __m128i e = _mm_srl_epi16(_mm_add_epi16(_mm_add_epi16(three, left), ke), sh);
    const __m128i o = _mm_srl_epi16(_mm_add_epi16(_mm_add_epi16(three, right), ko), sh);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * i),
                     _mm_packus_epi16(_mm_unpacklo_epi16(e, o), _mm_unpackhi_epi16(e, o)));
  }
  return i;
}
#endif
}  // namespace

struct PixelDecoder::State {
  ProgressiveCoefficientDecoder coefficients;
  DecodeOptions options;
  ImageShape whole;  // scaled, before the crop
  int max_h = 1, max_v = 1, min_size = 8;

  // How one component becomes full-size samples.
  struct Plane {
    bool needed = false;
    int size = 8;             // DCT scaled size
    IdctFn idct = nullptr;
    std::array<int32_t, 64> quant{};
    IdctSteps steps{};  // for size 8
    int width = 0, height = 0;  // downsampled_width and _height
    int fh = 1, fv = 1;         // upsampling factors
    bool fancy_h = false, fancy_v = false;
    int rows_per_imcu = 0;      // v * size
    int stride = 0;             // ring row bytes
    std::vector<uint8_t> ring;  // three iMCU rows of samples
    // Samples the crop needs (context included): columns and rows.
    int x0 = 0, x1 = 0, y0 = 0, y1 = 0;
    std::vector<uint8_t> row;   // one upsampled row of the crop
    std::vector<int16_t> cols;  // the SIMD path's column values for it
    // Block smoothing: which of zigzag coefficients 1..9 no scan sends (bit
    // k), whether DC and all nine are estimated, and the estimates made.
    unsigned missing = 0;
    bool dc_only = false;
    bool low = false;  // smoothed from DC alone: coefficients in rows and columns 0..3
    std::vector<SmoothEstimate> estimates;
    std::vector<int16_t*> block_rows;  // the last rows delivered, by row % size
    // DC of the last 8 block rows, by row % 8, each as floats with two
    // copies of its first and last value either side, then room to read
    // eight blocks past the last.
    std::vector<float> dcs;
    float* DcRow(int r) { return dcs.data() + static_cast<size_t>(r & 7) * (static_cast<size_t>(stride / size) + 16); }
    // Whether block row r holds samples the crop needs.
    bool InCrop(int r) const { return r * size < y1 && (r + 1) * size > y0; }
    const uint8_t* Row(int r) const {
      r = std::clamp(r, 0, height - 1);
      return ring.data() + static_cast<size_t>(r % (3 * rows_per_imcu)) * static_cast<size_t>(stride);
    }
  };
  std::array<Plane, 4> planes;
  int crop_x = 0, crop_y = 0, crop_w = 0, crop_h = 0;
  std::vector<uint8_t> pixel;  // one row in the decoded colour space, when a CMYK conversion follows
  uint8_t* out = nullptr;
  SimdLevel simd = BestSimdLevel();
  bool smooth = false;  // libjpeg-turbo would smooth blocks
  bool in_range = true;

  bool IdctRow(Plane& p, int r, const int16_t* blocks);
  void SmoothRow(Plane& p, int c, int t, int16_t* blocks);
  void SmoothImcu(int j);

  // Row y of plane p upsampled: its first sample in the crop. Upsample is
  // the reference, UpsampleFast the same samples with SIMD.
  const uint8_t* Upsample(Plane& p, int y);
  const uint8_t* UpsampleFast(Plane& p, int y);
  void EmitImcu(int m);
  void ConvertRow(int y);
};

PixelDecoder::PixelDecoder() : s_(std::make_unique<State>()) {}
PixelDecoder::~PixelDecoder() = default;
SimdLevel BestSimdLevel() {
#if defined(__x86_64__)
  static const SimdLevel best = __builtin_cpu_supports("avx2") ? SimdLevel::kAvx2 : SimdLevel::kSse2;
  return best;
#else
  return SimdLevel::kNone;
#endif
}

void PixelDecoder::set_simd(SimdLevel level) { s_->simd = std::min(level, BestSimdLevel()); }
const CoefficientFrame& PixelDecoder::frame() const { return s_->coefficients.frame(); }
ImageShape PixelDecoder::scaled() const { return s_->whole; }

CoefficientOutcome PixelDecoder::Open(ByteSpan jpeg, const DecodeOptions& options) {
  State& s = *s_;
  CoefficientOutcome opened = s.coefficients.Open(jpeg);
  if (!opened.ok()) return opened;
  const CoefficientFrame& f = s.coefficients.frame();
  s.options = options;
  // libjpeg-turbo smooths the blocks of every component when each has its
  // DC, a table with nonzero steps for zigzag coefficients 0..9, and some
  // component lacks one of 1..9 (jdcoefct.c's smoothing_ok).
  bool smooths = true, useful = false;
  for (int c = 0; c < f.num_components; ++c) {
    const auto& comp = f.components[static_cast<size_t>(c)];
    bool zero_step = false;
    for (int k : kSmoothedPosition) zero_step |= comp.quant[static_cast<size_t>(k)] == 0;
    if (!comp.quant_latched || zero_step || !(comp.sent & 1)) smooths = false;
    if ((comp.sent & 0x3fe) != 0x3fe) useful = true;
  }
  s.smooth = smooths && useful;
  s.max_h = s.max_v = 1;
  for (int c = 0; c < f.num_components; ++c) {
    s.max_h = std::max(s.max_h, f.components[static_cast<size_t>(c)].h);
    s.max_v = std::max(s.max_v, f.components[static_cast<size_t>(c)].v);
  }
  const int min_size = s.min_size = MinScaledSize(options.scale_denom);
  const int width = CeilDiv(int64_t{f.width} * min_size, 8), height = CeilDiv(int64_t{f.height} * min_size, 8);
  int components = 0;
  const JpegColorSpace cs = f.color_space;
  const bool cmyk = cs == JpegColorSpace::kCmyk || cs == JpegColorSpace::kYcck;
  switch (options.format) {
    case PixelFormat::kNative: components = cmyk ? 4 : cs == JpegColorSpace::kGray ? 1 : 3; break;
    case PixelFormat::kRgb: components = 3; break;
    case PixelFormat::kGray: components = 1; break;
  }
  s.whole = {width, height, components};
  const bool only_luma = options.format == PixelFormat::kGray &&
                         (cs == JpegColorSpace::kYCbCr || cs == JpegColorSpace::kGray);
  const bool fancy = min_size > 1;
  for (int c = 0; c < f.num_components; ++c) {
    const auto& comp = f.components[static_cast<size_t>(c)];
    State::Plane& p = s.planes[static_cast<size_t>(c)];
    p.needed = c == 0 || !only_luma;
    // jpeg_calc_output_dimensions: chroma scaled up in the IDCT where it can.
    int size = min_size;
    while (size < 8 && (s.max_h * min_size) % (comp.h * size * 2) == 0 &&
           (s.max_v * min_size) % (comp.v * size * 2) == 0) {
      size *= 2;
    }
    p.size = size;
    p.idct = IdctForSize(size);
    for (size_t k = 0; k < 64; ++k) p.quant[k] = comp.quant[k];
    p.steps = PrepareIdctSteps(p.quant.data());
    p.width = CeilDiv(int64_t{f.width} * comp.h * size, int64_t{s.max_h} * 8);
    p.height = CeilDiv(int64_t{f.height} * comp.v * size, int64_t{s.max_v} * 8);
    // jinit_upsampler's choice.
    const int h_in = comp.h * size / min_size, v_in = comp.v * size / min_size;
    if (h_in != s.max_h && h_in * 2 != s.max_h) return {CoefficientOutcome::kNotHandled, "upsampling factors"};
    if (v_in != s.max_v && v_in * 2 != s.max_v) return {CoefficientOutcome::kNotHandled, "upsampling factors"};
    p.fh = s.max_h / h_in;
    p.fv = s.max_v / v_in;
    p.fancy_h = p.fancy_v = false;
    if (p.fh == 2 && p.fv == 1) {
      p.fancy_h = fancy && p.width > 2;
    } else if (p.fh == 1 && p.fv == 2) {
      p.fancy_v = fancy;
    } else if (p.fh == 2 && p.fv == 2) {
      p.fancy_h = p.fancy_v = fancy && p.width > 2;
    }
    p.rows_per_imcu = comp.v * size;
    p.stride = comp.width_in_blocks * size;
    p.missing = ~static_cast<unsigned>(comp.sent) & 0x3fe;
    p.dc_only = p.missing == 0x3fe;
    p.low = s.smooth && comp.sent == 1;
    p.estimates.clear();
    if (s.smooth) {
      for (int k = 0; k < 10; ++k) {
        if (k == 0 ? !p.dc_only : (!((p.missing >> k) & 1) || (!p.dc_only && k > 5))) continue;
        p.estimates.push_back(MakeSmoothEstimate(k, p.dc_only, comp.quant.data()));
      }
      p.block_rows.assign(static_cast<size_t>(3 * comp.v), nullptr);
      // Rows padded for 8 blocks at a time past the last.
      p.dcs.assign(static_cast<size_t>(8 * (comp.width_in_blocks + 16)), 0);
    }
  }
  return {};
}

// Estimates the missing low coefficients of block row t of component c in
// place, from the DC values around each block, as libjpeg-turbo does.
void PixelDecoder::State::SmoothRow(Plane& p, int c, int t, int16_t* blocks) {
  if (p.estimates.empty()) return;
  const CoefficientFrame& f = coefficients.frame();
  const auto& comp = f.components[static_cast<size_t>(c)];
  const int v = comp.v, j = t / v, block_row = t - j * v;
  const int rows = std::min((j + 1) * v, comp.height_in_blocks) - j * v;
  const int last_imcu = CeilDiv(f.height, 8 * max_v) - 1;
  // The rows above and below as jdcoefct.c picks them: within the image,
  // and two rows away only past the image's second iMCU row and before its
  // second to last.
  const int prev = block_row > 0 || j > 0 ? t - 1 : t;
  const int prev2 = block_row > 1 || j > 1 ? t - 2 : prev;
  const int next = block_row < rows - 1 || j < last_imcu ? t + 1 : t;
  const int next2 = block_row < rows - 2 || j + 1 < last_imcu ? t + 2 : next;
  const int picks[5] = {prev2, prev, t, next, next2};
  const int size = p.size;
  const int bx0 = p.x0 / size, bx1 = (p.x1 + size - 1) / size, n = bx1 - bx0, last = comp.width_in_blocks - 1;
  const float* dc_rows[5];
  for (int i = 0; i < 5; ++i) dc_rows[i] = p.DcRow(picks[i]) + 2 + bx0;
  int16_t* row = blocks + static_cast<size_t>(bx0) * 64;
#if defined(__x86_64__)
  // Columns past the edges repeat the edge's value, as the padding does,
  // but for rows of two blocks. The padding also covers 8 blocks at a time
  // past the last.
  if (simd == SimdLevel::kAvx2 && last != 1) {
    SmoothRowAvx2(dc_rows, n, p.estimates.data(), static_cast<int>(p.estimates.size()), row);
    return;
  }
#endif
  for (const SmoothEstimate& e : p.estimates) {
    for (int b = 0; b < n; ++b) {
      float sum = 0;
      for (int t = 0; t < e.num_taps; ++t) {
        const SmoothTap& tap = e.taps[t];
        sum += tap.weight * dc_rows[tap.row][NeighbourColumn(bx0 + b, tap.dx, last) - bx0];
      }
      row[static_cast<size_t>(b) * 64 + static_cast<size_t>(e.position)] = static_cast<int16_t>(SmoothValue(e, sum));
    }
  }
}

// The reference: one row of plane p's samples for output row y, upsampled,
// over the crop.
const uint8_t* PixelDecoder::State::Upsample(Plane& p, int y) {
  const int w = crop_w;
  p.row.resize(static_cast<size_t>(w));
  uint8_t* dst = p.row.data();
  const int last = p.width - 1;
  if (p.fv == 1 && p.fh == 1) {
    std::copy_n(p.Row(y) + crop_x, w, dst);
    return dst;
  }
  if (!p.fancy_v) {
    const uint8_t* src = p.Row(p.fv == 2 ? y / 2 : y);
    if (p.fh == 1) {
      std::copy_n(src + crop_x, w, dst);
    } else if (!p.fancy_h) {
      for (int x = 0; x < w; ++x) dst[x] = src[(crop_x + x) / 2];
    } else {
      for (int x = 0; x < w; ++x) {
        const int ox = crop_x + x, i = ox / 2;
        const int other = (ox & 1) ? std::min(i + 1, last) : std::max(i - 1, 0);
        dst[x] = static_cast<uint8_t>((3 * src[i] + src[other] + ((ox & 1) ? 2 : 1)) >> 2);
      }
    }
    return dst;
  }
  // Vertical fancy: the nearer row weighs 3, the row above (even y) or below
  // (odd y) 1; rows past the image's edges repeat its first and last.
  const int near = y / 2, far = (y & 1) ? near + 1 : near - 1;
  const uint8_t* a = p.Row(near);
  const uint8_t* b = p.Row(far);
  if (p.fh == 1) {
    const int bias = (y & 1) ? 2 : 1;
    for (int x = 0; x < w; ++x) {
      const int ox = crop_x + x;
      dst[x] = static_cast<uint8_t>((3 * a[ox] + b[ox] + bias) >> 2);
    }
    return dst;
  }
  auto colsum = [&](int i) { return 3 * a[i] + b[i]; };
  for (int x = 0; x < w; ++x) {
    const int ox = crop_x + x, i = ox / 2;
    if (ox & 1) {
      dst[x] = static_cast<uint8_t>((3 * colsum(i) + colsum(std::min(i + 1, last)) + 7) >> 4);
    } else {
      dst[x] = static_cast<uint8_t>((3 * colsum(i) + colsum(std::max(i - 1, 0)) + 8) >> 4);
    }
  }
  return dst;
}

#if defined(__x86_64__)
const uint8_t* PixelDecoder::State::UpsampleFast(Plane& p, int y) {
  if (p.fh == 1 && !p.fancy_v) return p.Row(p.fv == 2 ? y / 2 : y) + crop_x;
  if (!p.fancy_h && (p.fh == 2 || !p.fancy_v)) return Upsample(p, y);
  const __m128i zero = _mm_setzero_si128();
  const int near = y / 2, far = (y & 1) ? near + 1 : near - 1;
  const uint8_t* a = p.fancy_v ? p.Row(near) : p.Row(p.fv == 2 ? y / 2 : y);
  const uint8_t* b = p.fancy_v ? p.Row(far) : nullptr;
  if (p.fh == 1) {
    // Vertical only: (3 a + b + 1 or 2) >> 2.
    const int w = crop_w;
    p.row.resize(static_cast<size_t>(w));
    uint8_t* dst = p.row.data();
    const int bias = (y & 1) ? 2 : 1;
    const __m128i kb = _mm_set1_epi16(static_cast<int16_t>(bias));
    int x = 0;
    for (; x + 16 <= w; x += 16) {
      const __m128i va = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + crop_x + x));
      const __m128i vb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + crop_x + x));
      __m128i half[2];
      for (int h = 0; h < 2; ++h) {
        const __m128i ma = h == 0 ? _mm_unpacklo_epi8(va, zero) : _mm_unpackhi_epi8(va, zero);
        const __m128i mb = h == 0 ? _mm_unpacklo_epi8(vb, zero) : _mm_unpackhi_epi8(vb, zero);
        half[h] = _mm_srli_epi16(_mm_add_epi16(_mm_add_epi16(_mm_add_epi16(ma, _mm_add_epi16(ma, ma)), mb), kb), 2);
      }
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + x), _mm_packus_epi16(half[0], half[1]));
    }
    for (; x < w; ++x) dst[x] = static_cast<uint8_t>((3 * a[crop_x + x] + b[crop_x + x] + bias) >> 2);
    return dst;
  }
  // By 2 across: the column values (samples, or 3 a + b with vertical
  // fancy) of the samples the crop comes from, edges repeated.
  const int i0 = crop_x / 2, n = (crop_x + crop_w - 1) / 2 - i0 + 1, last = p.width - 1;
  p.cols.resize(static_cast<size_t>(n) + 2);
  int16_t* c = p.cols.data() + 1;
  auto value = [&](int i) { return static_cast<int16_t>(p.fancy_v ? 3 * a[i] + b[i] : a[i]); };
  int k = simd == SimdLevel::kAvx2
              ? static_cast<int>(FancyColumnsAvx2(a + i0, p.fancy_v ? b + i0 : nullptr, static_cast<size_t>(n), c))
              : 0;
  for (; k + 8 <= n; k += 8) {
    const __m128i ma = _mm_unpacklo_epi8(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(a + i0 + k)), zero);
    __m128i v = ma;
    if (p.fancy_v) {
      const __m128i mb = _mm_unpacklo_epi8(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + i0 + k)), zero);
      v = _mm_add_epi16(_mm_add_epi16(ma, _mm_add_epi16(ma, ma)), mb);
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(c + k), v);
  }
  for (; k < n; ++k) c[k] = value(i0 + k);
  c[-1] = value(std::max(i0 - 1, 0));
  c[n] = value(std::min(i0 + n, last));
  const int even = p.fancy_v ? 8 : 1, odd = p.fancy_v ? 7 : 2, shift = p.fancy_v ? 4 : 2;
  p.row.resize(2 * static_cast<size_t>(n));
  uint8_t* out = p.row.data();
  size_t done = simd == SimdLevel::kAvx2 ? Fancy2xAvx2(c, static_cast<size_t>(n), even, odd, shift, out) : 0;
  done += Fancy2xSse2(c + done, static_cast<size_t>(n) - done, even, odd, shift, out + 2 * done);
  for (int i = static_cast<int>(done); i < n; ++i) {
    out[2 * i] = static_cast<uint8_t>((3 * c[i] + c[i - 1] + even) >> shift);
    out[2 * i + 1] = static_cast<uint8_t>((3 * c[i] + c[i + 1] + odd) >> shift);
  }
  return out + (crop_x - 2 * i0);
}
#else
const uint8_t* PixelDecoder::State::UpsampleFast(Plane& p, int y) { return Upsample(p, y); }
#endif

void PixelDecoder::State::ConvertRow(int y) {
  const CoefficientFrame& f = coefficients.frame();
  const uint8_t* rows[4] = {};
  for (int c = 0; c < f.num_components; ++c) {
    Plane& p = planes[static_cast<size_t>(c)];
    if (p.needed) rows[c] = simd != SimdLevel::kNone ? UpsampleFast(p, y) : Upsample(p, y);
  }
  const size_t w = static_cast<size_t>(crop_w);
  uint8_t* dst = out + static_cast<size_t>(y - crop_y) * w * static_cast<size_t>(whole.components);
  const uint8_t *c0 = rows[0], *c1 = rows[1], *c2 = rows[2], *c3 = rows[3];
  const ColorTables& t = Tables();
  const PixelFormat format = options.format;
  switch (f.color_space) {
    case JpegColorSpace::kGray:
      if (format == PixelFormat::kRgb) {
        for (size_t x = 0; x < w; ++x) dst[3 * x] = dst[3 * x + 1] = dst[3 * x + 2] = c0[x];
      } else {
        std::copy_n(c0, w, dst);
      }
      return;
    case JpegColorSpace::kYCbCr:
      if (format == PixelFormat::kGray) {
        std::copy_n(c0, w, dst);
        return;
      }
#if defined(__x86_64__)
      for (size_t x = simd == SimdLevel::kAvx2   ? YccToRgbRowAvx2(c0, c1, c2, dst, w)
                      : simd == SimdLevel::kSse2 ? YccToRgbRowSse2(c0, c1, c2, dst, w)
                                                 : 0;
           x < w; ++x) {
#else
      for (size_t x = 0; x < w; ++x) {
#endif
        int rgb[3];
        t.YccToRgb(c0[x], c1[x], c2[x], rgb);
        for (int j = 0; j < 3; ++j) dst[3 * x + static_cast<size_t>(j)] = Clamp255(rgb[j]);
      }
      return;
    case JpegColorSpace::kRgb:
      if (format == PixelFormat::kGray) {
        for (size_t x = 0; x < w; ++x) dst[x] = static_cast<uint8_t>((t.r_y[c0[x]] + t.g_y[c1[x]] + t.b_y[c2[x]]) >> 16);
        return;
      }
      for (size_t x = 0; x < w; ++x) {
        dst[3 * x] = c0[x];
        dst[3 * x + 1] = c1[x];
        dst[3 * x + 2] = c2[x];
      }
      return;
    case JpegColorSpace::kCmyk:
    case JpegColorSpace::kYcck: {
      const bool native = format == PixelFormat::kNative;
      pixel.resize(w * 4);
      uint8_t* cmyk = native ? dst : pixel.data();
      for (size_t x = 0; x < w; ++x) {
        if (f.color_space == JpegColorSpace::kCmyk) {
          cmyk[4 * x] = c0[x];
          cmyk[4 * x + 1] = c1[x];
          cmyk[4 * x + 2] = c2[x];
        } else {
          int rgb[3];
          t.YccToRgb(c0[x], c1[x], c2[x], rgb);
          for (int j = 0; j < 3; ++j) cmyk[4 * x + static_cast<size_t>(j)] = Clamp255(255 - rgb[j]);
        }
        cmyk[4 * x + 3] = c3[x];
      }
      if (!native) ConvertCmyk(cmyk, f.saw_adobe, format == PixelFormat::kGray, dst, w);
      return;
    }
  }
}

// The output rows of iMCU row m that lie in the crop.
void PixelDecoder::State::EmitImcu(int m) {
  const int rows = max_v * min_size;
  const int y_end = std::min({(m + 1) * rows, whole.height, crop_y + crop_h});
  for (int y = std::max(m * rows, crop_y); y < y_end; ++y) ConvertRow(y);
}

// Block row r of plane p, when the crop needs it, into the sample ring;
// false when a block leaves the range of an 8-bit image.
bool PixelDecoder::State::IdctRow(Plane& p, int r, const int16_t* blocks) {
  const int size = p.size;
  if (!p.InCrop(r)) return true;
  const int bx0 = p.x0 / size, bx1 = (p.x1 + size - 1) / size;
  uint8_t* dst =
      p.ring.data() + static_cast<size_t>((r * size) % (3 * p.rows_per_imcu)) * static_cast<size_t>(p.stride);
  bool ok = true;
  if (size == 8 && simd != SimdLevel::kNone) {
    int bx = bx0;
#if defined(__x86_64__)
    if (simd == SimdLevel::kAvx2) {
      const auto pair = p.low ? IdctIslow8x8LowPairAvx2 : IdctIslow8x8PairAvx2;
      for (; bx + 1 < bx1; bx += 2) {
        ok &= pair(blocks + static_cast<size_t>(bx) * 64, p.steps, dst + static_cast<size_t>(bx) * 8, p.stride);
      }
    }
    const auto single = p.low ? IdctIslow8x8LowSse2 : IdctIslow8x8Sse2;
#else
    const auto single = IdctIslow8x8Simd;
#endif
    for (; bx < bx1; ++bx) {
      ok &= single(blocks + static_cast<size_t>(bx) * 64, p.steps, dst + static_cast<size_t>(bx) * 8, p.stride);
    }
    return ok;
  }
#if defined(__x86_64__)
  if ((size == 4 || size == 2) && simd != SimdLevel::kNone) {
    const auto idct = size == 4 ? Idct4x4Sse2 : Idct2x2Sse2;
    int bx = bx0;
    if (size == 4 && simd == SimdLevel::kAvx2) {
      for (; bx + 1 < bx1; bx += 2) {
        ok &= Idct4x4PairAvx2(blocks + static_cast<size_t>(bx) * 64, p.steps, dst + static_cast<size_t>(bx) * 4,
                              p.stride);
      }
    }
    for (; bx < bx1; ++bx) {
      ok &= idct(blocks + static_cast<size_t>(bx) * 64, p.steps, dst + static_cast<size_t>(bx) * size, p.stride);
    }
    return ok;
  }
#endif
  for (int bx = bx0; bx < bx1; ++bx) {
    ok &= p.idct(blocks + static_cast<size_t>(bx) * 64, p.quant.data(), dst + static_cast<size_t>(bx) * size, p.stride);
  }
  return ok;
}

// Smooths and transforms iMCU row j of every needed component: its blocks
// and the DC values two block rows around them have all been delivered.
void PixelDecoder::State::SmoothImcu(int j) {
  const CoefficientFrame& f = coefficients.frame();
  for (int c = 0; c < f.num_components; ++c) {
    Plane& p = planes[static_cast<size_t>(c)];
    if (!p.needed) continue;
    const auto& comp = f.components[static_cast<size_t>(c)];
    const int v = comp.v, end = std::min((j + 1) * v, comp.height_in_blocks);
    for (int t = j * v; t < end; ++t) {
      if (!p.InCrop(t)) continue;
      int16_t* blocks = p.block_rows[static_cast<size_t>(t % (3 * v))];
      SmoothRow(p, c, t, blocks);
      in_range &= IdctRow(p, t, blocks);
    }
  }
}

CoefficientOutcome PixelDecoder::Decode(uint8_t* out) {
  State& s = *s_;
  const CoefficientFrame& f = s.coefficients.frame();
  const Crop& crop = s.options.crop;
  const bool cropped = crop.width > 0;
  s.crop_x = cropped ? crop.x : 0;
  s.crop_y = cropped ? crop.y : 0;
  s.crop_w = cropped ? crop.width : s.whole.width;
  s.crop_h = cropped ? crop.height : s.whole.height;
  s.out = out;
  s.in_range = true;
  unsigned mask = 0;
  for (int c = 0; c < f.num_components; ++c) {
    State::Plane& p = s.planes[static_cast<size_t>(c)];
    if (!p.needed) continue;
    mask |= 1u << c;
    p.ring.resize(static_cast<size_t>(3 * p.rows_per_imcu) * static_cast<size_t>(p.stride));
    // The samples the crop's pixels come from, with the neighbours fancy
    // upsampling weighs in.
    auto span = [](int from, int to, int factor, int limit) {
      if (factor == 1) return std::pair{from, to};
      return std::pair{std::max(0, from / 2 - 1), std::min(limit, (to - 1) / 2 + 2)};
    };
    std::tie(p.x0, p.x1) = span(s.crop_x, s.crop_x + s.crop_w, p.fh, p.width);
    std::tie(p.y0, p.y1) = span(s.crop_y, s.crop_y + s.crop_h, p.fv, p.height);
  }
  const int imcu_rows = CeilDiv(f.height, 8 * s.max_v);
  int current = -1;  // the iMCU row being delivered
  // Without smoothing a block row is transformed as it arrives; with it,
  // iMCU row m is transformed once row m + 2 has arrived.
  const int delay = s.smooth ? 2 : 0;
  const int last_c = f.num_components - 1;
  auto row = [&](int c, int r, int16_t* blocks) {
    State::Plane& p = s.planes[static_cast<size_t>(c)];
    const auto& comp = f.components[static_cast<size_t>(c)];
    if (c == 0 && r % comp.v == 0) current = r / comp.v;
    if (p.needed) {
      if (!s.smooth) {
        s.in_range &= s.IdctRow(p, r, blocks);
      } else {
        p.block_rows[static_cast<size_t>(r % (3 * comp.v))] = blocks;
        float* dcs = p.DcRow(r);
        const int w = comp.width_in_blocks;
        for (int b = 0; b < w; ++b) dcs[b + 2] = blocks[static_cast<size_t>(b) * 64];
        dcs[0] = dcs[1] = dcs[2];
        dcs[w + 2] = dcs[w + 3] = dcs[w + 1];
      }
    }
    // Once iMCU row m has arrived whole, row m - delay is transformed and
    // the row before that has every sample its pixels need.
    if (c == last_c && r + 1 == std::min((current + 1) * comp.v, comp.height_in_blocks)) {
      const int m = current - delay;
      if (m >= 0 && s.smooth) s.SmoothImcu(m);
      if (m >= 1) s.EmitImcu(m - 1);
    }
  };
  // A component whose blocks become single samples needs their DC alone.
  unsigned dc_only = 0;
  for (int c = 0; c < f.num_components; ++c) dc_only |= s.planes[static_cast<size_t>(c)].size == 1 ? 1u << c : 0;
  if (s.smooth) {
    // Every scan is read: where one ends early, libjpeg-turbo smooths the
    // rows past that point with the coefficients known before that scan.
    mask = (1u << f.num_components) - 1;
    dc_only = 0;
  }
  CoefficientOutcome outcome = s.coefficients.Decode(row, mask, dc_only, delay);
  if (!outcome.ok()) return outcome;
  for (int m = std::max(0, imcu_rows - delay); m < imcu_rows; ++m) {
    s.SmoothImcu(m);
    if (m >= 1) s.EmitImcu(m - 1);
  }
  if (!s.in_range) return {CoefficientOutcome::kNotHandled, "coefficients outside the range of an 8-bit image"};
  s.EmitImcu(imcu_rows - 1);
  return outcome;
}

}  // namespace pcr
