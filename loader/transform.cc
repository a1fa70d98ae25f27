#include "pcr/transform.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "format/permutation.h"
#include "loader/resize.h"
#include "loader/threads.h"
#include "pcr/decode.h"

namespace pcr {

namespace {

// torch's CPU generator after torch.manual_seed(seed): the Mersenne Twister
// seeded with the seed's low 32 bits, drawn from as torch draws.
class TorchRandom {
 public:
  explicit TorchRandom(uint64_t seed) : engine_(static_cast<uint32_t>(seed)) {}

  // Tensor.uniform_(from, to) of one float32: 24 bits, mapped in double.
  double Uniform(double from, double to) {
    const float f = static_cast<float>(from), t = static_cast<float>(to);
    const double x = static_cast<double>(engine_() & 0xFFFFFF) * 0x1.0p-24;
    return static_cast<float>(x * static_cast<double>(t - f) + static_cast<double>(f));
  }

  // torch.randint(0, n). REQUIRES: 1 <= n <= 2^32 - 1
  int Below(int n) { return static_cast<int>(engine_() % static_cast<uint32_t>(n)); }

 private:
  std::mt19937 engine_;
};

// Python's int(round(v)) for a v that fits an int: half to even.
int RoundHalfEven(double v) { return static_cast<int>(std::nearbyint(v)); }

// RandomResizedCrop.get_params, draw for draw.
Region DrawRandomResizedCrop(int width, int height, const RandomResizedCropOptions& o, TorchRandom& rng) {
  const double area = static_cast<double>(width) * height;
  const float log_min = std::log(static_cast<float>(o.ratio_min));
  const float log_max = std::log(static_cast<float>(o.ratio_max));
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * rng.Uniform(o.scale_min, o.scale_max);
    const double ratio = std::exp(static_cast<float>(rng.Uniform(log_min, log_max)));
    const double w = std::nearbyint(std::sqrt(target * ratio));
    const double h = std::nearbyint(std::sqrt(target / ratio));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      const int y = rng.Below(height - static_cast<int>(h) + 1);
      const int x = rng.Below(width - static_cast<int>(w) + 1);
      return {x, y, static_cast<int>(w), static_cast<int>(h)};
    }
  }
  // The central crop of the nearest allowed ratio.
  const double in_ratio = static_cast<double>(width) / height;
  int w = width, h = height;
  if (in_ratio < o.ratio_min) {
    h = std::clamp(RoundHalfEven(width / o.ratio_min), 1, height);
  } else if (in_ratio > o.ratio_max) {
    w = std::clamp(RoundHalfEven(height * o.ratio_max), 1, width);
  }
  return {(width - w) / 2, (height - h) / 2, w, h};
}

// float16 bits of f, rounded to nearest even.
uint16_t HalfOf(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t a = x & 0x7FFFFFFF;
  if (a > 0x7F800000) return sign | 0x7E00;   // NaN
  if (a >= 0x477FF000) return sign | 0x7C00;  // 65520 and up round to infinity
  if (a >= 0x38800000) {                      // a normal float16
    const uint32_t rounded = a + 0xFFF + ((a >> 13) & 1) - ((127 - 15) << 23);
    return static_cast<uint16_t>(sign | (rounded >> 13));
  }
  // Subnormal: a whole number of 2^-24 (scaling by 2^24 is exact).
  return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(std::bit_cast<float>(a) * 0x1.0p24f)));
}

// The region of the source a resize window shows, to decode at a DCT scale.
Region SourceOf(const CenterCropGeometry& g, int width, int height) {
  const auto map = [](int v, int in, int out) { return static_cast<int>(static_cast<int64_t>(v) * in / out); };
  const int x = map(g.crop.x, width, g.resized_width), y = map(g.crop.y, height, g.resized_height);
  const int x1 = std::max(x + 1, map(g.crop.x + g.crop.width, width, g.resized_width));
  const int y1 = std::max(y + 1, map(g.crop.y + g.crop.height, height, g.resized_height));
  return {x, y, std::min(x1, width) - x, std::min(y1, height) - y};
}

// CenterCropOf, its arguments checked.
CenterCropGeometry CenterCropGeometryOf(int width, int height, int resize, int crop) {
  CenterCropGeometry g;
  // int(resize * longer / shorter), in exact integer arithmetic.
  const int longer = static_cast<int>(static_cast<int64_t>(resize) * std::max(width, height) / std::min(width, height));
  g.resized_width = width <= height ? resize : longer;
  g.resized_height = width <= height ? longer : resize;
  g.crop = {RoundHalfEven((g.resized_width - crop) / 2.0), RoundHalfEven((g.resized_height - crop) / 2.0), crop, crop};
  return g;
}

Status CheckSide(int side, const char* name) {
  if (side < 1 || side > 65535) {
    return Status::InvalidArgument(std::string(name) + " must be 1..65535, not " + std::to_string(side));
  }
  return Status::OK();
}

Status CheckRandomResized(const RandomResizedCropOptions& r) {
  if (!(r.scale_min > 0 && r.scale_min <= r.scale_max && r.scale_max <= 1 && r.ratio_min > 0 &&
        r.ratio_min <= r.ratio_max && std::isfinite(r.ratio_max))) {
    return Status::InvalidArgument(
        "RandomResizedCrop needs 0 < scale_min <= scale_max <= 1 and 0 < ratio_min <= ratio_max, finite");
  }
  return Status::OK();
}

}  // namespace

Result<Region> RandomResizedCropRegion(int width, int height, const RandomResizedCropOptions& o, uint64_t seed) {
  PCR_RETURN_IF_ERROR(CheckSide(width, "width"));
  PCR_RETURN_IF_ERROR(CheckSide(height, "height"));
  PCR_RETURN_IF_ERROR(CheckRandomResized(o));
  TorchRandom rng(seed);
  return DrawRandomResizedCrop(width, height, o, rng);
}

Result<CenterCropGeometry> CenterCropOf(int width, int height, int resize, int crop) {
  PCR_RETURN_IF_ERROR(CheckSide(width, "width"));
  PCR_RETURN_IF_ERROR(CheckSide(height, "height"));
  PCR_RETURN_IF_ERROR(CheckSide(resize, "resize"));
  if (crop < 1 || crop > resize) {
    return Status::InvalidArgument("crop must be 1..resize (" + std::to_string(resize) + "), not " + std::to_string(crop));
  }
  if (static_cast<int64_t>(resize) * std::max(width, height) / std::min(width, height) >
      std::numeric_limits<int>::max()) {
    return Status::InvalidArgument("resize " + std::to_string(resize) + " of a " + std::to_string(width) + " x " +
                                   std::to_string(height) + " image has a side beyond 2^31 - 1");
  }
  return CenterCropGeometryOf(width, height, resize, crop);
}

Status ResizeBilinear(std::span<const uint8_t> src, int src_width, int src_height, int channels,
                      std::span<uint8_t> dst, int dst_width, int dst_height) {
  PCR_RETURN_IF_ERROR(CheckSide(src_width, "src_width"));
  PCR_RETURN_IF_ERROR(CheckSide(src_height, "src_height"));
  PCR_RETURN_IF_ERROR(CheckSide(dst_width, "dst_width"));
  PCR_RETURN_IF_ERROR(CheckSide(dst_height, "dst_height"));
  if (channels < 1 || channels > 4) return Status::InvalidArgument("channels must be 1..4, not " + std::to_string(channels));
  const auto bytes = [&](int w, int h) { return static_cast<size_t>(w) * static_cast<size_t>(h) * static_cast<size_t>(channels); };
  if (src.size() != bytes(src_width, src_height)) {
    return Status::InvalidArgument("src holds " + std::to_string(src.size()) + " bytes, the image " +
                                   std::to_string(bytes(src_width, src_height)));
  }
  if (dst.size() != bytes(dst_width, dst_height)) {
    return Status::InvalidArgument("dst holds " + std::to_string(dst.size()) + " bytes, the image " +
                                   std::to_string(bytes(dst_width, dst_height)));
  }
  Resizer().Resize(src.data(), src_width, src_height, channels, dst.data(), dst_width, dst_height);
  return Status::OK();
}

struct BatchDecoder::Rep {
  // What one decoding thread keeps from batch to batch.
  struct Scratch {
    JpegDecoder decoder;
    Resizer resizer;
    std::vector<uint8_t> pixels;
    std::vector<uint8_t> resized;  // the uint8 image, for float outputs
  };

  BatchTransformOptions options;
  int threads = 1;
  // Channel c's value v becomes floats[c][v] (kFloat32) or halves[c][v]
  // (kFloat16).
  std::array<std::array<float, 256>, 3> floats{};
  std::array<std::array<uint16_t, 256>, 3> halves{};
  std::vector<std::unique_ptr<Scratch>> scratch;  // one per thread

  // Decodes, crops, resizes, flips and converts one image into `out`.
  Status One(Scratch& s, ByteSpan jpeg, uint64_t seed, uint8_t* out) const {
    if (options.dtype == BatchTransformOptions::Dtype::kUInt8) return Resized(s, jpeg, seed, out);
    const size_t values = static_cast<size_t>(options.size) * options.size * 3;
    s.resized.resize(values);
    PCR_RETURN_IF_ERROR(Resized(s, jpeg, seed, s.resized.data()));
    // Value k is of channel k % 3 (channels last) or k / plane.
    const size_t plane = values / 3;
    for (size_t c = 0; c < 3; ++c) {
      const size_t first = options.channels_last ? c : c * plane, step = options.channels_last ? 3 : 1;
      const uint8_t* in = s.resized.data() + first;
      if (options.dtype == BatchTransformOptions::Dtype::kFloat32) {
        uint8_t* to = out + first * sizeof(float);
        for (size_t i = 0; i < plane; ++i) std::memcpy(to + i * step * sizeof(float), &floats[c][in[i * step]], 4);
      } else {
        uint8_t* to = out + first * sizeof(uint16_t);
        for (size_t i = 0; i < plane; ++i) std::memcpy(to + i * step * sizeof(uint16_t), &halves[c][in[i * step]], 2);
      }
    }
    return Status::OK();
  }

  // Decodes, crops, resizes and flips one image into `out`, as uint8.
  Status Resized(Scratch& s, ByteSpan jpeg, uint64_t seed, uint8_t* out) const {
    const int size = options.size;
    PCR_ASSIGN_OR_RETURN(const ImageShape whole, s.decoder.Shape(jpeg, {.format = PixelFormat::kRgb}));
    const ResizeLayout layout{.planar = !options.channels_last};
    if (options.crop == BatchTransformOptions::Crop::kRandomResized) {
      TorchRandom rng(seed);
      const Region r = DrawRandomResizedCrop(whole.width, whole.height, options.random_resized, rng);
      const bool flip = options.random_flip && rng.Uniform(0, 1) < 0.5;
      return Decoded(s, jpeg, whole, r, out, {.planar = layout.planar, .mirror = flip});
    }
    const int64_t longer = int64_t{options.resize} * std::max(whole.width, whole.height) /
                           std::min(whole.width, whole.height);
    if (longer > std::numeric_limits<int>::max() / 2) {
      return Status::InvalidArgument("a " + std::to_string(whole.width) + " x " + std::to_string(whole.height) +
                                     " image resized to " + std::to_string(options.resize) +
                                     " on its shorter side would be " + std::to_string(longer) + " long");
    }
    const CenterCropGeometry g = CenterCropGeometryOf(whole.width, whole.height, options.resize, size);
    const Region source = SourceOf(g, whole.width, whole.height);
    if (Scale(source) > 1) return Decoded(s, jpeg, whole, source, out, layout);
    const ResizeWindow window{.in_width = whole.width,
                              .in_height = whole.height,
                              .out_width = g.resized_width,
                              .out_height = g.resized_height,
                              .x = g.crop.x,
                              .y = g.crop.y,
                              .width = size,
                              .height = size};
    const Span xs = InputSpan(whole.width, g.resized_width, g.crop.x, size);
    const Span ys = InputSpan(whole.height, g.resized_height, g.crop.y, size);
    const DecodeOptions o{.format = PixelFormat::kRgb,
                          .crop = {.x = xs.first, .y = ys.first, .width = xs.last - xs.first, .height = ys.last - ys.first},
                          .decoder = options.decoder};
    s.pixels.resize(static_cast<size_t>(o.crop.width) * o.crop.height * 3);
    PCR_RETURN_IF_ERROR(s.decoder.Decode(jpeg, o, s.pixels).status());
    s.resizer.Resize(window, s.pixels.data(), 3, out, layout);
    return Status::OK();
  }

  // With fast_scale, the largest DCT scaling that still leaves at least
  // `size` pixels of region r each way; else 1.
  int Scale(const Region& r) const {
    for (int d : {8, 4, 2}) {
      if (options.fast_scale && r.width / d >= options.size && r.height / d >= options.size) return d;
    }
    return 1;
  }

  // Decodes region r of the image (at a DCT scale, with fast_scale) and
  // resizes it to the output size.
  Status Decoded(Scratch& s, ByteSpan jpeg, const ImageShape& whole, const Region& r, uint8_t* out,
                 ResizeLayout layout) const {
    const int size = options.size;
    const int scale = Scale(r);
    DecodeOptions o{.scale_denom = scale, .format = PixelFormat::kRgb, .decoder = options.decoder};
    // libjpeg rounds scaled sizes up.
    const ImageShape scaled{(whole.width + scale - 1) / scale, (whole.height + scale - 1) / scale, 3};
    const int x0 = std::min(r.x / scale, scaled.width - 1);
    const int y0 = std::min(r.y / scale, scaled.height - 1);
    const int x1 = std::clamp((r.x + r.width + scale - 1) / scale, x0 + 1, scaled.width);
    const int y1 = std::clamp((r.y + r.height + scale - 1) / scale, y0 + 1, scaled.height);
    o.crop = {.x = x0, .y = y0, .width = x1 - x0, .height = y1 - y0};
    s.pixels.resize(static_cast<size_t>(o.crop.width) * o.crop.height * 3);
    PCR_RETURN_IF_ERROR(s.decoder.Decode(jpeg, o, s.pixels).status());
    s.resizer.Resize(s.pixels.data(), o.crop.width, o.crop.height, 3, out, size, size, layout);
    return Status::OK();
  }
};

Result<std::unique_ptr<BatchDecoder>> BatchDecoder::Create(const BatchTransformOptions& options) {
  if (options.size < 1 || options.size > 65535) return Status::InvalidArgument("size must be 1..65535");
  if (options.crop != BatchTransformOptions::Crop::kRandomResized && options.crop != BatchTransformOptions::Crop::kCenter) {
    return Status::InvalidArgument("crop must be Crop::kRandomResized or kCenter, not " +
                                   std::to_string(static_cast<int>(options.crop)));
  }
  if (options.dtype != BatchTransformOptions::Dtype::kUInt8 && options.dtype != BatchTransformOptions::Dtype::kFloat32 &&
      options.dtype != BatchTransformOptions::Dtype::kFloat16) {
    return Status::InvalidArgument("dtype must be Dtype::kUInt8, kFloat32 or kFloat16, not " +
                                   std::to_string(static_cast<int>(options.dtype)));
  }
  if (options.crop == BatchTransformOptions::Crop::kCenter && (options.resize < options.size || options.resize > 65535)) {
    return Status::InvalidArgument("resize must be at least the crop size, and at most 65535");
  }
  PCR_RETURN_IF_ERROR(CheckRandomResized(options.random_resized));
  PCR_RETURN_IF_ERROR(CheckThreads(options.threads));
  const bool floats = options.dtype != BatchTransformOptions::Dtype::kUInt8;
  for (int c = 0; c < 3; ++c) {
    if (!floats && (options.mean[c] != 0 || options.stddev[c] != 1)) {
      return Status::InvalidArgument("mean and stddev need a float dtype (float32 or float16)");
    }
    if (!std::isfinite(options.mean[c]) || !std::isfinite(options.stddev[c]) || options.stddev[c] == 0) {
      return Status::InvalidArgument("mean and stddev must be finite and stddev not 0");
    }
  }
  auto rep = std::make_unique<Rep>();
  rep->options = options;
  for (int c = 0; c < 3; ++c) {
    for (int v = 0; v < 256; ++v) {
      // ToTensor's division, then Normalize's subtraction and division, each in float32.
      const float x = static_cast<float>(v) / 255.0f;
      rep->floats[c][v] = (x - options.mean[c]) / options.stddev[c];
      rep->halves[c][v] = HalfOf(rep->floats[c][v]);
    }
  }
  rep->threads = ResolveThreads(options.threads);
  return std::unique_ptr<BatchDecoder>(new BatchDecoder(std::move(rep)));
}

uint64_t BatchDecoder::ImageSeed(uint64_t seed, size_t i) { return MixSeeds(seed, i) & 0xFFFFFFFF; }

BatchDecoder::BatchDecoder(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}
BatchDecoder::~BatchDecoder() = default;

size_t BatchDecoder::image_bytes() const {
  static constexpr size_t kBytes[] = {1, 4, 2};
  return static_cast<size_t>(rep_->options.size) * rep_->options.size * 3 *
         kBytes[static_cast<int>(rep_->options.dtype)];
}

Status BatchDecoder::Decode(std::span<const ByteSpan> jpegs, uint64_t seed, std::span<uint8_t> out, size_t* failed) {
  if (out.size() != jpegs.size() * image_bytes()) {
    return Status::InvalidArgument("output holds " + std::to_string(out.size()) + " bytes, the batch needs " +
                                   std::to_string(jpegs.size() * image_bytes()));
  }
  const size_t used = std::min<size_t>(static_cast<size_t>(rep_->threads), std::max<size_t>(jpegs.size(), 1));
  while (rep_->scratch.size() < used) rep_->scratch.push_back(std::make_unique<Rep::Scratch>());
  return ParallelFor(
      jpegs.size(), rep_->scratch,
      [&](Rep::Scratch& scratch, size_t i) {
        Status st = rep_->One(scratch, jpegs[i], ImageSeed(seed, i), out.data() + i * image_bytes());
        if (!st.ok()) return st.WithPrefix("image " + std::to_string(i) + " of the batch");
        return st;
      },
      failed);
}

}  // namespace pcr
