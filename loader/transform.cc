#include "pcr/transform.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>
#include <vector>

#include "format/permutation.h"
#include "loader/resize.h"
#include "loader/threads.h"
#include "pcr/decode.h"

namespace pcr {

namespace {

// A double in [0, 1) from 53 random bits.
double Uniform(SplitMix64& rng) { return static_cast<double>(rng.Next() >> 11) * 0x1.0p-53; }

}  // namespace

Region RandomResizedCropRegion(int width, int height, const RandomResizedCropOptions& o, uint64_t seed) {
  SplitMix64 rng(seed);
  const double area = static_cast<double>(width) * height;
  const double log_min = std::log(o.ratio_min), log_max = std::log(o.ratio_max);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * (o.scale_min + (o.scale_max - o.scale_min) * Uniform(rng));
    const double ratio = std::exp(log_min + (log_max - log_min) * Uniform(rng));
    const int w = static_cast<int>(std::lround(std::sqrt(target * ratio)));
    const int h = static_cast<int>(std::lround(std::sqrt(target / ratio)));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      const int y = static_cast<int>(rng.Below(static_cast<uint64_t>(height - h + 1)));
      const int x = static_cast<int>(rng.Below(static_cast<uint64_t>(width - w + 1)));
      return {x, y, w, h};
    }
  }
  // The central crop of the nearest allowed ratio.
  const double in_ratio = static_cast<double>(width) / height;
  int w = width, h = height;
  if (in_ratio < o.ratio_min) {
    h = std::max(1, static_cast<int>(std::lround(width / o.ratio_min)));
  } else if (in_ratio > o.ratio_max) {
    w = std::max(1, static_cast<int>(std::lround(height * o.ratio_max)));
  }
  return {(width - w) / 2, (height - h) / 2, w, h};
}

Region CenterCropRegion(int width, int height, int resize, int crop) {
  const int shorter = std::min(width, height);
  const int side = std::clamp(static_cast<int>(std::lround(static_cast<double>(shorter) * crop / resize)), 1, shorter);
  return {(width - side) / 2, (height - side) / 2, side, side};
}

void ResizeBilinear(const uint8_t* src, int src_width, int src_height, int channels, uint8_t* dst, int dst_width,
                    int dst_height) {
  Resizer().Resize(src, src_width, src_height, channels, dst, dst_width, dst_height);
}

struct BatchDecoder::Rep {
  // What one decoding thread keeps from batch to batch.
  struct Scratch {
    JpegDecoder decoder;
    Resizer resizer;
    std::vector<uint8_t> pixels;
  };

  BatchTransformOptions options;
  int threads = 1;
  std::vector<std::unique_ptr<Scratch>> scratch;  // one per thread

  // Decodes, crops, resizes and flips one image into `out`.
  Status One(Scratch& s, ByteSpan jpeg, uint64_t seed, uint8_t* out) const {
    JpegDecoder& decoder = s.decoder;
    std::vector<uint8_t>& pixels = s.pixels;
    const int size = options.size;
    PCR_ASSIGN_OR_RETURN(const ImageShape whole, decoder.Shape(jpeg, {.format = PixelFormat::kRgb}));
    bool flip = false;
    Region r;
    if (options.crop == BatchTransformOptions::Crop::kRandomResized) {
      r = RandomResizedCropRegion(whole.width, whole.height, options.random_resized, seed);
      flip = options.random_flip && (SplitMix64(MixSeeds(seed, 1)).Next() & 1) != 0;
    } else {
      r = CenterCropRegion(whole.width, whole.height, options.resize, size);
    }
    // The largest DCT scaling that still leaves at least `size` pixels each way.
    int scale = 1;
    for (int s : {8, 4, 2}) {
      if (r.width / s >= size && r.height / s >= size) {
        scale = s;
        break;
      }
    }
    DecodeOptions o{.scale_denom = scale, .format = PixelFormat::kRgb, .decoder = options.decoder};
    // libjpeg rounds scaled sizes up.
    const ImageShape scaled{(whole.width + scale - 1) / scale, (whole.height + scale - 1) / scale, 3};
    const int x0 = std::min(r.x / scale, scaled.width - 1);
    const int y0 = std::min(r.y / scale, scaled.height - 1);
    const int x1 = std::clamp((r.x + r.width + scale - 1) / scale, x0 + 1, scaled.width);
    const int y1 = std::clamp((r.y + r.height + scale - 1) / scale, y0 + 1, scaled.height);
    o.crop = {.x = x0, .y = y0, .width = x1 - x0, .height = y1 - y0};
    pixels.resize(static_cast<size_t>(o.crop.width) * o.crop.height * 3);
    PCR_RETURN_IF_ERROR(decoder.Decode(jpeg, o, pixels).status());
    s.resizer.Resize(pixels.data(), o.crop.width, o.crop.height, 3, out, size, size,
                   {.planar = !options.channels_last, .mirror = flip});
    return Status::OK();
  }
};

Result<std::unique_ptr<BatchDecoder>> BatchDecoder::Create(const BatchTransformOptions& options) {
  if (options.size < 1 || options.size > 65535) return Status::InvalidArgument("size must be 1..65535");
  if (options.crop == BatchTransformOptions::Crop::kCenter && options.resize < options.size) {
    return Status::InvalidArgument("resize must be at least the crop size");
  }
  const RandomResizedCropOptions& r = options.random_resized;
  if (!(r.scale_min > 0 && r.scale_min <= r.scale_max && r.scale_max <= 1 && r.ratio_min > 0 &&
        r.ratio_min <= r.ratio_max)) {
    return Status::InvalidArgument("RandomResizedCrop needs 0 < scale_min <= scale_max <= 1 and 0 < ratio_min <= ratio_max");
  }
  PCR_RETURN_IF_ERROR(CheckThreads(options.threads));
  auto rep = std::make_unique<Rep>();
  rep->options = options;
  rep->threads = options.threads > 0 ? options.threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  return std::unique_ptr<BatchDecoder>(new BatchDecoder(std::move(rep)));
}

BatchDecoder::BatchDecoder(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}
BatchDecoder::~BatchDecoder() = default;

size_t BatchDecoder::image_bytes() const {
  return static_cast<size_t>(rep_->options.size) * rep_->options.size * 3;
}

Status BatchDecoder::Decode(std::span<const ByteSpan> jpegs, uint64_t seed, std::span<uint8_t> out, size_t* failed) {
  if (out.size() != jpegs.size() * image_bytes()) {
    return Status::InvalidArgument("output holds " + std::to_string(out.size()) + " bytes, the batch needs " +
                                   std::to_string(jpegs.size() * image_bytes()));
  }
  std::vector<Status> errors(jpegs.size());
  std::atomic<size_t> next{0};
  const int n = std::min<int>(rep_->threads, static_cast<int>(jpegs.size()));
  while (rep_->scratch.size() < static_cast<size_t>(n)) rep_->scratch.push_back(std::make_unique<Rep::Scratch>());
  auto work = [&](Rep::Scratch& scratch) {
    for (size_t i = next++; i < jpegs.size(); i = next++) {
      Status st = rep_->One(scratch, jpegs[i], MixSeeds(seed, i), out.data() + i * image_bytes());
      if (!st.ok()) errors[i] = st.WithPrefix("image " + std::to_string(i) + " of the batch");
    }
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < n; ++t) threads.emplace_back(work, std::ref(*rep_->scratch[t]));
  work(*rep_->scratch[0]);
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < errors.size(); ++i) {
    if (errors[i].ok()) continue;
    if (failed != nullptr) *failed = i;
    return errors[i];
  }
  return Status::OK();
}

}  // namespace pcr
