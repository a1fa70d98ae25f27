// JpegDecoder: formats, DCT scaling, crops and reuse, on the bundled sample
// and on its progressive transcodes.
#include <catch2/catch.hpp>

#include <cstdlib>

#include <algorithm>
#include <filesystem>

#include "pcr/decode_iterator.h"
#include "pcr/decode.h"
#include "test_util.h"
#include "pcr/convert.h"
#include "writer/transcode.h"

namespace pcr {
namespace {

namespace fs = std::filesystem;

// Baseline originals and their full-fidelity progressive transcodes.
std::vector<Bytes> SampleJpegs() {
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(test::DataDir() + "/sample")) {
    if (e.is_regular_file()) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<Bytes> out;
  for (const fs::path& p : files) {
    Bytes original = test::ReadFile(p);
    auto t = TranscodeToScanGroups(original, BuiltinScanScript("spectral").value());
    REQUIRE(t.ok());
    out.push_back(t->AtFidelity(static_cast<int>(t->chunks.size())));
    out.push_back(std::move(original));
  }
  return out;
}

// Pixels of `crop` cut out of a whole decode.
std::vector<uint8_t> Cut(const DecodedImage& full, const Crop& c) {
  std::vector<uint8_t> out;
  const size_t bpp = static_cast<size_t>(full.components);
  for (int y = c.y; y < c.y + c.height; ++y) {
    const uint8_t* row = full.pixels.data() + (static_cast<size_t>(y) * full.width + c.x) * bpp;
    out.insert(out.end(), row, row + c.width * bpp);
  }
  return out;
}

TEST_CASE("crops equal the same rectangle of a whole decode, at every scale") {
  JpegDecoder decoder;
  std::vector<uint8_t> buffer;
  int crops = 0;
  for (const Bytes& jpeg : SampleJpegs()) {
    for (const int scale : {1, 2, 4, 8}) {
      const DecodeOptions whole{.scale_denom = scale, .warnings_are_errors = false};
      auto full = DecodeJpeg(jpeg, whole);
      REQUIRE(full.ok());
      const int w = full->width, h = full->height;
      for (const Crop c : {Crop{0, 0, w, h}, Crop{w / 3, h / 4, w / 2 + 1, h / 3 + 1}, Crop{w - 1, h - 1, 1, 1},
                           Crop{1, 0, std::max(1, w - 9), h}, Crop{0, h / 2, w, h - h / 2}}) {
        if (c.x + c.width > w || c.y + c.height > h) continue;
        INFO("scale " << scale << " crop " << c.width << "x" << c.height << "+" << c.x << "+" << c.y << " of "
                      << w << "x" << h);
        DecodeOptions o = whole;
        o.crop = c;
        auto shape = decoder.Shape(jpeg, o);
        REQUIRE(shape.ok());
        CHECK(shape->width == c.width);
        CHECK(shape->height == c.height);
        buffer.assign(shape->bytes(), 0);
        auto got = decoder.Decode(jpeg, o, buffer);
        REQUIRE(got.ok());
        CHECK(buffer == Cut(*full, c));
        ++crops;
      }
    }
  }
  CHECK(crops >= 48 * 4 * 4);
}

TEST_CASE("RGB and gray output of every colour space, CMYK converted") {
  JpegDecoder decoder;
  int cmyk = 0;
  for (const Bytes& jpeg : SampleJpegs()) {
    auto native = DecodeJpeg(jpeg, {.warnings_are_errors = false});
    REQUIRE(native.ok());
    auto rgb = DecodeJpeg(jpeg, {.format = PixelFormat::kRgb, .warnings_are_errors = false});
    REQUIRE(rgb.ok());
    if (native->components == 4) {
      // Each pixel is (255 - K)(255 - C) / 255 and so on, of the samples
      // either as stored or inverted (Adobe's), the same way across the image.
      CHECK(rgb->components == 3);
      int as_stored = 0, as_inverted = 0;
      for (size_t p = 0; p < native->pixels.size() / 4; p += 7) {
        const uint8_t* q = &native->pixels[4 * p];
        bool stored = true, inverted = true;
        for (int j = 0; j < 3; ++j) {
          const int got = rgb->pixels[3 * p + j];
          stored = stored && std::abs(got - (255 - q[j]) * (255 - q[3]) / 255) <= 1;
          inverted = inverted && std::abs(got - q[j] * q[3] / 255) <= 1;
        }
        as_stored += stored;
        as_inverted += inverted;
      }
      const int checked = static_cast<int>((native->pixels.size() / 4 + 6) / 7);
      CHECK((as_stored == checked || as_inverted == checked));
      auto cropped = DecodeJpeg(jpeg, {.format = PixelFormat::kRgb, .crop = {3, 5, 20, 10},
                                       .warnings_are_errors = false});
      REQUIRE(cropped.ok());
      for (int y = 0; y < 10; ++y) {
        CHECK(std::equal(&cropped->pixels[y * 60], &cropped->pixels[y * 60] + 60,
                         &rgb->pixels[((y + 5) * rgb->width + 3) * 3]));
      }
      ++cmyk;
      continue;
    }
    CHECK(rgb->components == 3);
    auto gray = DecodeJpeg(jpeg, {.format = PixelFormat::kGray, .warnings_are_errors = false});
    REQUIRE(gray.ok());
    CHECK(gray->components == 1);
    if (native->components == 1) {
      // A gray file in RGB repeats each sample three times.
      for (size_t i = 0; i < native->pixels.size(); i += 97) {
        CHECK(rgb->pixels[3 * i] == native->pixels[i]);
        CHECK(rgb->pixels[3 * i + 2] == native->pixels[i]);
      }
      CHECK(gray->pixels == native->pixels);
    } else {
      CHECK(rgb->pixels == native->pixels);
    }
  }
  CHECK(cmyk >= 1);
}

TEST_CASE("one decoder is reused across images and errors") {
  JpegDecoder decoder;
  std::vector<uint8_t> buffer;
  const auto jpegs = SampleJpegs();
  const Bytes garbage(1000, 0x55);
  for (int round = 0; round < 2; ++round) {
    for (const Bytes& jpeg : jpegs) {
      const DecodeOptions o{.scale_denom = 2, .warnings_are_errors = false};
      auto want = DecodeJpeg(jpeg, o);
      REQUIRE(want.ok());
      buffer.resize(want->pixels.size() + 16);
      auto got = decoder.Decode(jpeg, o, buffer);
      REQUIRE(got.ok());
      CHECK(std::equal(want->pixels.begin(), want->pixels.end(), buffer.begin()));
      auto bad = decoder.Decode(garbage, o, buffer);
      REQUIRE_FALSE(bad.ok());
      CHECK(bad.status().code() == StatusCode::kCorruption);
      auto small = decoder.Decode(jpeg, o, std::span<uint8_t>(buffer).first(want->pixels.size() - 1));
      REQUIRE_FALSE(small.ok());
      CHECK(small.status().code() == StatusCode::kInvalidArgument);
      auto outside = decoder.Shape(jpeg, {.scale_denom = 2, .crop = {want->width, 0, 1, 1}});
      REQUIRE_FALSE(outside.ok());
      CHECK_THAT(outside.status().message(), Catch::Contains("outside"));
    }
  }
  CHECK_FALSE(decoder.Decode(jpegs[0], {.scale_denom = 3}, buffer).ok());
  // Enum values outside their range are refused before any pixel is written.
  std::vector<uint8_t> tiny(100, 0xab);
  for (const DecodeOptions& o : {DecodeOptions{.format = static_cast<PixelFormat>(3)},
                                 DecodeOptions{.decoder = static_cast<DecoderChoice>(9)}}) {
    auto r = decoder.Decode(jpegs[0], o, tiny);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(r.status().message(), Catch::Contains("must be"));
    CHECK(std::all_of(tiny.begin(), tiny.end(), [](uint8_t v) { return v == 0xab; }));
    CHECK_FALSE(JpegDecoder::CheckOptions(o).ok());
  }
}

TEST_CASE("the decode stage delivers every record's pixels, in order, on a pool of threads") {
  test::TempDir dir;
  auto converted = ConvertImages({.src_dir = test::DataDir() + "/sample", .out_dir = dir / "ds",
                                  .images_per_record = 5, .jobs = 2});
  REQUIRE(converted.ok());
  auto ds = ImageDataset::Open(dir / "ds", {.io = test::Io()});
  REQUIRE(ds.ok());
  // pcr's decoder at full fidelity, where it decodes every image itself.
  for (const auto& [crop, decoder] : {std::pair{false, DecoderChoice::kAuto}, std::pair{true, DecoderChoice::kAuto},
                                     std::pair{false, DecoderChoice::kPcr}, std::pair{true, DecoderChoice::kPcr}}) {
    INFO("crop " << crop << " decoder " << static_cast<int>(decoder));
    DecodeIteratorOptions o{.records = {.fidelity = decoder == DecoderChoice::kPcr ? 5 : 3, .records_in_flight = 2},
                            .decode = {.scale_denom = 2, .warnings_are_errors = false, .decoder = decoder},
                            .threads = 3};
    if (crop) {
      o.crop = [](const ImageShape& s) {
        return Crop{s.width / 4, s.height / 3, std::max(1, s.width / 2), std::max(1, s.height / 2)};
      };
    }
    auto decoded = DecodeIterator::Create(**ds, o);
    REQUIRE(decoded.ok());
    auto raw = RecordIterator::Create(**ds, o.records);
    REQUIRE(raw.ok());
    DecodedBatch batch;
    RecordBatch want;
    uint64_t images = 0;
    while (true) {
      auto more = (*decoded)->Next(&batch);
      REQUIRE(more.ok());
      auto want_more = (*raw)->Next(&want);
      REQUIRE(want_more.ok());
      REQUIRE(*more == *want_more);
      if (!*more) break;
      REQUIRE(batch.record == want.record);
      REQUIRE(batch.images.size() == want.images.size());
      for (size_t i = 0; i < want.images.size(); ++i) {
        DecodeOptions reference = o.decode;
        reference.decoder = DecoderChoice::kLibjpeg;
        auto full = DecodeJpeg(want.images[i].jpeg, reference);
        REQUIRE(full.ok());
        const DecodedView& got = batch.images[i];
        CHECK(got.key == want.images[i].key);
        CHECK(got.label == want.images[i].label);
        const Crop c = crop ? o.crop({full->width, full->height, full->components})
                            : Crop{0, 0, full->width, full->height};
        CHECK(got.shape.width == c.width);
        CHECK(std::vector<uint8_t>(got.pixels.begin(), got.pixels.end()) == Cut(*full, c));
        ++images;
      }
    }
    CHECK(images == (*ds)->num_images());
  }
}

}  // namespace
}  // namespace pcr
