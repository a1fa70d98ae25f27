// Crop choice, resizing and batch decoding for training and evaluation.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <vector>

#include "pcr/decode.h"
#include "pcr/transform.h"
#include "tests/test_util.h"

namespace pcr {
namespace {

using test::DataDir;
using test::ReadFile;

TEST_CASE("RandomResizedCrop regions lie in the image with the asked scale and ratio") {
  const RandomResizedCropOptions o;
  for (auto [w, h] : {std::pair{500, 375}, {375, 500}, {64, 64}, {1000, 40}, {1, 1}, {7, 300}}) {
    int fallbacks = 0;
    for (uint64_t seed = 0; seed < 300; ++seed) {
      const Region r = RandomResizedCropRegion(w, h, o, seed).value();
      INFO(w << "x" << h << " seed " << seed << ": " << r.x << "," << r.y << " " << r.width << "x" << r.height);
      REQUIRE(r.width >= 1);
      REQUIRE(r.height >= 1);
      REQUIRE(r.x >= 0);
      REQUIRE(r.y >= 0);
      REQUIRE(r.x + r.width <= w);
      REQUIRE(r.y + r.height <= h);
      CHECK(RandomResizedCropRegion(w, h, o, seed).value() == r);
      const double area = static_cast<double>(r.width) * r.height / (static_cast<double>(w) * h);
      const double ratio = static_cast<double>(r.width) / r.height;
      // Rounding of width and height moves both a little; the fallback (the
      // central crop of the nearest ratio) may leave the scale range.
      const bool drawn = area >= o.scale_min * 0.9 && area <= o.scale_max * 1.01 &&
                         ratio >= o.ratio_min * 0.9 && ratio <= o.ratio_max * 1.1;
      if (!drawn) {
        ++fallbacks;
        CHECK(r.x == (w - r.width) / 2);
        CHECK(r.y == (h - r.height) / 2);
      }
    }
    // Ordinary shapes draw their crop; extreme ones fall back often.
    if (std::max(w, h) < 4 * std::min(w, h)) CHECK(fallbacks <= 3);
  }
  // Different seeds give different regions.
  CHECK_FALSE(RandomResizedCropRegion(500, 375, o, 1).value() == RandomResizedCropRegion(500, 375, o, 2).value());
}

TEST_CASE("the evaluation crop is torchvision's Resize then CenterCrop") {
  // The longer side is truncated; the offsets round half to even.
  CHECK(CenterCropOf(500, 375, 256, 224).value() == CenterCropGeometry{341, 256, {58, 16, 224, 224}});
  CHECK(CenterCropOf(375, 500, 256, 224).value() == CenterCropGeometry{256, 341, {16, 58, 224, 224}});
  CHECK(CenterCropOf(503, 375, 256, 224).value() == CenterCropGeometry{343, 256, {60, 16, 224, 224}});
  CHECK(CenterCropOf(224, 224, 224, 224).value() == CenterCropGeometry{224, 224, {0, 0, 224, 224}});
  CHECK(CenterCropOf(1, 1, 256, 224).value() == CenterCropGeometry{256, 256, {16, 16, 224, 224}});
  CHECK(CenterCropOf(65535, 1, 256, 224).value() == CenterCropGeometry{16776960, 256, {8388368, 16, 224, 224}});
}

TEST_CASE("bilinear resizing keeps sizes, constants and averages") {
  std::vector<uint8_t> src(7 * 5 * 3);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 37);
  std::vector<uint8_t> same(src.size());
  REQUIRE(ResizeBilinear(src, 7, 5, 3, same, 7, 5).ok());
  CHECK(same == src);
  const std::vector<uint8_t> flat(40 * 30, 77);
  std::vector<uint8_t> up(97 * 61), down(3 * 2);
  REQUIRE(ResizeBilinear(flat, 40, 30, 1, up, 97, 61).ok());
  REQUIRE(ResizeBilinear(flat, 40, 30, 1, down, 3, 2).ok());
  CHECK(std::all_of(up.begin(), up.end(), [](uint8_t v) { return v == 77; }));
  CHECK(std::all_of(down.begin(), down.end(), [](uint8_t v) { return v == 77; }));
  // Halving averages each 2x2 block of columns 0,1 | 2,3 (with the
  // triangle's reach into the neighbours): a step from 0 to 200 stays a step.
  const std::vector<uint8_t> step = {0, 0, 200, 200, 0, 0, 200, 200};
  std::vector<uint8_t> half(2);
  REQUIRE(ResizeBilinear(step, 4, 2, 1, half, 2, 1).ok());
  CHECK(half[0] < half[1]);
  CHECK(half[0] + half[1] == 200);
}

// Small RGB and grey images of the sample.
std::vector<Bytes> SmallRgbJpegs() {
  std::vector<Bytes> out;
  for (const char* name : {"video/video-001.q50.422.jpeg", "video/video-001.q50.444.jpeg", "video/video-001.jpeg",
                           "video/video-001.progressive.jpeg", "video/video-005.gray.jpeg"}) {
    if (!std::filesystem::exists(DataDir() + "/sample/" + name)) continue;
    out.push_back(ReadFile(DataDir() + "/sample/" + name));
  }
  return out;
}

TEST_CASE("a centre-cropped batch equals resizing each whole image and cropping the middle") {
  const std::vector<Bytes> jpegs = SmallRgbJpegs();
  REQUIRE(jpegs.size() >= 4);
  for (auto [size, resize] : {std::pair{48, 56}, {40, 120}, {103, 103}}) {
    auto decoder = BatchDecoder::Create({.size = size, .crop = BatchTransformOptions::Crop::kCenter, .resize = resize,
                                         .threads = 3});
    REQUIRE(decoder.ok());
    std::vector<ByteSpan> spans(jpegs.begin(), jpegs.end());
    std::vector<uint8_t> batch(spans.size() * (*decoder)->image_bytes());
    REQUIRE((*decoder)->Decode(spans, 5, batch).ok());
    for (size_t i = 0; i < jpegs.size(); ++i) {
      INFO("image " << i << " size " << size << " resize " << resize);
      auto full = DecodeJpeg(jpegs[i], {.format = PixelFormat::kRgb});
      REQUIRE(full.ok());
      const CenterCropGeometry g = CenterCropOf(full->width, full->height, resize, size).value();
      std::vector<uint8_t> resized(static_cast<size_t>(g.resized_width) * g.resized_height * 3);
      REQUIRE(ResizeBilinear(full->pixels, full->width, full->height, 3, resized, g.resized_width,
                     g.resized_height).ok());
      const uint8_t* got = &batch[i * (*decoder)->image_bytes()];
      const size_t plane = static_cast<size_t>(size) * size;
      for (int y = 0; y < size; ++y) {
        for (int x = 0; x < size; ++x) {
          const size_t at = (static_cast<size_t>(g.crop.y + y) * g.resized_width + g.crop.x + x) * 3;
          for (int c = 0; c < 3; ++c) REQUIRE(got[c * plane + y * size + x] == resized[at + c]);
        }
      }
    }
  }
}

TEST_CASE("random crops and flips depend on the seed alone") {
  const std::vector<Bytes> jpegs = SmallRgbJpegs();
  std::vector<ByteSpan> spans;
  for (int copy = 0; copy < 6; ++copy) spans.insert(spans.end(), jpegs.begin(), jpegs.end());
  auto run = [&](BatchTransformOptions o, uint64_t seed) {
    auto d = BatchDecoder::Create(o);
    REQUIRE(d.ok());
    std::vector<uint8_t> out(spans.size() * (*d)->image_bytes());
    REQUIRE((*d)->Decode(spans, seed, out).ok());
    return out;
  };
  const BatchTransformOptions base{.size = 32, .threads = 1};
  const auto one = run(base, 7);
  CHECK(run({.size = 32, .threads = 4}, 7) == one);
  CHECK(run(base, 8) != one);
  // Without flips every image is its flipped twin or itself, and some flip.
  const auto unflipped = run({.size = 32, .random_flip = false, .threads = 2}, 7);
  const size_t bytes = 32 * 32 * 3;
  int flipped = 0;
  for (size_t i = 0; i < spans.size(); ++i) {
    const uint8_t* a = &one[i * bytes];
    const uint8_t* b = &unflipped[i * bytes];
    bool same = true, mirrored = true;
    for (int c = 0; c < 3; ++c) {
      for (int y = 0; y < 32; ++y) {
        for (int x = 0; x < 32; ++x) {
          const uint8_t v = a[(c * 32 + y) * 32 + x];
          same = same && v == b[(c * 32 + y) * 32 + x];
          mirrored = mirrored && v == b[(c * 32 + y) * 32 + 31 - x];
        }
      }
    }
    CHECK((same || mirrored));
    flipped += !same;
  }
  CHECK(flipped > 0);
  CHECK(flipped < static_cast<int>(spans.size()));
  // Channels last holds the same values, transposed.
  const auto last = run({.size = 32, .channels_last = true, .threads = 1}, 7);
  for (size_t i = 0; i < spans.size(); ++i) {
    for (size_t p = 0; p < 32 * 32; ++p) {
      for (int c = 0; c < 3; ++c) REQUIRE(last[i * bytes + p * 3 + c] == one[i * bytes + c * 32 * 32 + p]);
    }
  }
}

TEST_CASE("a training batch equals cropping each whole image, resizing and flipping") {
  const std::vector<Bytes> jpegs = SmallRgbJpegs();
  std::vector<ByteSpan> spans;
  for (int copy = 0; copy < 4; ++copy) spans.insert(spans.end(), jpegs.begin(), jpegs.end());
  const int size = 40;
  const BatchTransformOptions o{.size = size, .channels_last = true, .threads = 2};
  auto d = BatchDecoder::Create(o);
  REQUIRE(d.ok());
  std::vector<uint8_t> batch(spans.size() * (*d)->image_bytes());
  REQUIRE((*d)->Decode(spans, 11, batch).ok());
  auto fast = BatchDecoder::Create({.size = size, .fast_scale = true, .channels_last = true, .threads = 2});
  REQUIRE(fast.ok());
  std::vector<uint8_t> scaled(batch.size());
  REQUIRE((*fast)->Decode(spans, 11, scaled).ok());
  int flipped = 0;
  for (size_t i = 0; i < spans.size(); ++i) {
    INFO("image " << i);
    auto full = DecodeJpeg(spans[i], {.format = PixelFormat::kRgb});
    REQUIRE(full.ok());
    const Region r = RandomResizedCropRegion(full->width, full->height, o.random_resized,
                                             BatchDecoder::ImageSeed(11, i))
                         .value();
    std::vector<uint8_t> region(static_cast<size_t>(r.width) * r.height * 3);
    for (int y = 0; y < r.height; ++y) {
      std::copy_n(&full->pixels[(static_cast<size_t>(r.y + y) * full->width + r.x) * 3], r.width * 3,
                  &region[static_cast<size_t>(y) * r.width * 3]);
    }
    std::vector<uint8_t> want(static_cast<size_t>(size) * size * 3);
    REQUIRE(ResizeBilinear(region, r.width, r.height, 3, want, size, size).ok());
    const uint8_t* got = &batch[i * (*d)->image_bytes()];
    bool same = true, mirrored = true;
    for (int y = 0; y < size; ++y) {
      for (int x = 0; x < size * 3; ++x) {
        same = same && got[y * size * 3 + x] == want[y * size * 3 + x];
        mirrored = mirrored && got[y * size * 3 + x] == want[y * size * 3 + (size - 1 - x / 3) * 3 + x % 3];
      }
    }
    REQUIRE((same || mirrored));
    flipped += !same;
    // fast_scale draws the same crop and flip and gives close pixels.
    double diff = 0;
    for (size_t k = 0; k < want.size(); ++k) diff += std::abs(scaled[i * want.size() + k] - got[k]);
    CHECK(diff / static_cast<double>(want.size()) < 12);
  }
  CHECK(flipped > 0);
  CHECK(flipped < static_cast<int>(spans.size()));
}

// The float a float16's bits stand for.
double FromHalf(uint16_t h) {
  const int exponent = (h >> 10) & 0x1F, mantissa = h & 0x3FF;
  const double magnitude = exponent == 0    ? std::ldexp(mantissa, -24)
                           : exponent == 31 ? (mantissa ? NAN : INFINITY)
                                            : std::ldexp(1024 + mantissa, exponent - 25);
  return (h & 0x8000) ? -magnitude : magnitude;
}

TEST_CASE("float outputs are ToTensor then Normalize in float32, and float16 rounds to nearest even") {
  const std::vector<Bytes> jpegs = SmallRgbJpegs();
  const std::vector<ByteSpan> spans(jpegs.begin(), jpegs.end());
  const BatchTransformOptions base{.size = 24, .crop = BatchTransformOptions::Crop::kCenter, .resize = 30,
                                   .threads = 2};
  auto run = [&](BatchTransformOptions o) {
    auto d = BatchDecoder::Create(o);
    REQUIRE(d.ok());
    std::vector<uint8_t> out(spans.size() * (*d)->image_bytes());
    REQUIRE((*d)->Decode(spans, 3, out).ok());
    return out;
  };
  const size_t plane = 24 * 24;
  // Ordinary, tiny (float16 subnormals) and huge (float16 infinities) values.
  for (auto [mean, stddev] : {std::pair{std::array{0.485f, 0.456f, 0.406f}, std::array{0.229f, 0.224f, 0.225f}},
                              {std::array{0.0f, 0.5f, 1.0f}, std::array{3e5f, -2e4f, 7e6f}},
                              {std::array{0.25f, 0.0f, 0.5f}, std::array{1e-6f, 2e-5f, -3e-7f}}}) {
    for (bool last : {false, true}) {
      BatchTransformOptions o = base;
      o.mean = mean;
      o.stddev = stddev;
      o.channels_last = last;
      const std::vector<uint8_t> v = run({.size = 24, .crop = BatchTransformOptions::Crop::kCenter, .resize = 30,
                                          .channels_last = last, .threads = 1});
      o.dtype = BatchTransformOptions::Dtype::kFloat32;
      const std::vector<uint8_t> f32 = run(o);
      o.dtype = BatchTransformOptions::Dtype::kFloat16;
      const std::vector<uint8_t> f16 = run(o);
      REQUIRE(f32.size() == 4 * v.size());
      REQUIRE(f16.size() == 2 * v.size());
      for (size_t k = 0; k < v.size(); ++k) {
        const size_t c = last ? k % 3 : (k / plane) % 3;
        const float want = (static_cast<float>(v[k]) / 255.0f - mean[c]) / stddev[c];
        float got;
        std::memcpy(&got, &f32[k * 4], 4);
        REQUIRE(got == want);
        uint16_t h;
        std::memcpy(&h, &f16[k * 2], 2);
        // The nearest float16, ties to the even one.
        const double near = FromHalf(h), err = std::abs(near - want);
        const double up = std::abs(FromHalf(h + 1) - want), down = std::abs(FromHalf(h - 1) - want);
        INFO("value " << want << " became " << near);
        if (std::isinf(near)) {
          REQUIRE(std::abs(want) >= 65520);
        } else {
          REQUIRE((err < up || (err == up && (h & 1) == 0)));
          REQUIRE((err < down || (err == down && (h & 1) == 0) || (h & 0x7FFF) == 0));
        }
      }
    }
  }
  CHECK_FALSE(BatchDecoder::Create({.mean = {0.5f, 0, 0}}).ok());
  CHECK_FALSE(BatchDecoder::Create({.dtype = BatchTransformOptions::Dtype::kFloat16, .stddev = {1, 0, 1}}).ok());
}

TEST_CASE("batch decoding names the image that fails, and refuses bad options") {
  const std::vector<Bytes> jpegs = SmallRgbJpegs();
  const Bytes cut(jpegs[1].begin(), jpegs[1].begin() + static_cast<long>(jpegs[1].size() / 2));
  const std::vector<ByteSpan> spans = {jpegs[0], jpegs[2], cut};
  auto d = BatchDecoder::Create({.size = 16, .threads = 2});
  REQUIRE(d.ok());
  std::vector<uint8_t> out(spans.size() * (*d)->image_bytes());
  const Status st = (*d)->Decode(spans, 1, out);
  REQUIRE_FALSE(st.ok());
  CHECK_THAT(st.message(), Catch::Contains("image 2 of the batch"));
  CHECK((*d)->Decode(spans, 1, std::span(out).first(10)).code() == StatusCode::kInvalidArgument);
  CHECK_FALSE(BatchDecoder::Create({.size = 0}).ok());
  CHECK_FALSE(BatchDecoder::Create({.size = 224, .crop = BatchTransformOptions::Crop::kCenter, .resize = 200}).ok());
  CHECK_FALSE(BatchDecoder::Create({.random_resized = {.scale_min = 0.5, .scale_max = 0.2}}).ok());
}

}  // namespace
}  // namespace pcr
