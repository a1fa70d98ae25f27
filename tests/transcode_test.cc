// Lossless transcoding into scan groups, and what it refuses.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "format/checksum.h"
#include "pcr/convert.h"
#include "pcr/decode.h"
#include "pcr/verify.h"
#include "reader/inspect.h"
#include "tests/image_util.h"
#include "writer/transcode.h"

namespace pcr {
namespace {

namespace fs = std::filesystem;
using test::DataDir;
using test::ReadFile;
using test::RequireSamePixels;
using test::SampleFiles;
using test::TempDir;

TEST_CASE("every sample JPEG transcodes losslessly with every built-in script") {
  for (const std::string& name : BuiltinScanScriptNames()) {
    const ScanScript script = *BuiltinScanScript(name);
    for (const fs::path& file : SampleFiles()) {
      INFO(file.string() << " with " << name);
      const Bytes original = ReadFile(file);
      auto t = TranscodeToScanGroups(original, script);
      REQUIRE(t.ok());
      REQUIRE(t->chunks.size() == static_cast<size_t>(script.group_count()));
      RequireSamePixels(original, t->AtFidelity(script.group_count()));
      size_t previous = 0;
      for (int k = 1; k <= script.group_count(); ++k) {
        const Bytes partial = t->AtFidelity(k);
        CHECK(partial.size() >= previous);
        previous = partial.size();
        auto decoded = DecodeJpeg(partial);
        CHECK(decoded.ok());
      }
    }
  }
}

TEST_CASE("grayscale images leave colour-only scan groups empty") {
  const ScanScript script = *BuiltinScanScript("spectral");
  auto t = TranscodeToScanGroups(ReadFile(DataDir() + "/sample/misc/testimggray.jpg"), script);
  REQUIRE(t.ok());
  CHECK(t->components == 1);
  // Group 4 of "spectral" holds only the AC scans of components 1 and 2.
  CHECK(t->chunks[3].empty());
  for (int g : {0, 1, 2, 4, 5}) CHECK_FALSE(t->chunks[g].empty());
  // Groups 3 and 5 of "spectral5" too.
  auto t5 = TranscodeToScanGroups(ReadFile(DataDir() + "/sample/misc/testimggray.jpg"), *BuiltinScanScript("spectral5"));
  REQUIRE(t5.ok());
  for (int g : {0, 1, 3}) CHECK_FALSE(t5->chunks[g].empty());
  for (int g : {2, 4}) CHECK(t5->chunks[g].empty());
}

TEST_CASE("APPn segments are kept by default and dropped on request") {
  const Bytes original = ReadFile(DataDir() + "/sample/misc/jpg-srgb-icc.jpg");
  const ScanScript script = *BuiltinScanScript("spectral");
  const std::string icc = "ICC_PROFILE";
  auto contains_icc = [&](const Bytes& b) {
    return std::search(b.begin(), b.end(), icc.begin(), icc.end()) != b.end();
  };
  REQUIRE(contains_icc(original));
  auto kept = TranscodeToScanGroups(original, script);
  auto stripped = TranscodeToScanGroups(original, script, {.keep_metadata = false});
  REQUIRE(kept.ok());
  REQUIRE(stripped.ok());
  CHECK(contains_icc(kept->chunks[0]));
  CHECK_FALSE(contains_icc(stripped->chunks[0]));
  RequireSamePixels(original, stripped->AtFidelity(script.group_count()));
}

TEST_CASE("the original's APPn and COM segments: decoding's in group 1, the rest apart, all put back exactly") {
  const ScanScript script = *BuiltinScanScript("spectral5");
  size_t without_jfif = 0;
  for (const fs::path& file : SampleFiles()) {
    INFO(file.string());
    const Bytes original = ReadFile(file);
    const auto segments = test::MetadataSegments(original);
    auto kept = TranscodeToScanGroups(original, script);
    auto stripped = TranscodeToScanGroups(original, script, {.keep_metadata = false});
    REQUIRE(kept.ok());
    REQUIRE(stripped.ok());
    auto whole = kept->Original();
    REQUIRE(whole.ok());
    CHECK(test::MetadataSegments(*whole) == segments);
    // Group 1 keeps the JFIF, ICC and Adobe segments; stripping keeps the
    // JFIF and Adobe segments the original had, and no others.
    std::vector<std::pair<int, Bytes>> decoding, colour;
    for (const auto& [marker, payload] : segments) {
      const std::string head(payload.begin(), payload.begin() + std::min<size_t>(12, payload.size()));
      const bool jfif_or_adobe = (marker == 0xe0 && head.starts_with(std::string("JFIF\0", 5))) ||
                                 (marker == 0xee && head.starts_with("Adobe"));
      if (jfif_or_adobe || (marker == 0xe2 && head == std::string("ICC_PROFILE\0", 12))) {
        decoding.emplace_back(marker, payload);
      }
      if (jfif_or_adobe) colour.emplace_back(marker, payload);
    }
    CHECK(test::MetadataSegments(kept->AtFidelity(script.group_count())) == decoding);
    CHECK(kept->segments.empty() == (decoding.size() == segments.size()));
    CHECK(test::MetadataSegments(stripped->AtFidelity(script.group_count())) == colour);
    CHECK(stripped->segments.empty());
    if (segments.empty() || segments.front().first != 0xe0) ++without_jfif;
  }
  CHECK(without_jfif > 0);  // the samples include files that had no JFIF segment
}

// A baseline JPEG with its colour markers rewritten: the JFIF segment kept or
// dropped, an Adobe segment of `transform` added after SOI (none when < 0),
// and with `rgb_ids` the components named 'R', 'G', 'B' in SOF and SOS.
Bytes WithColourMarkers(const Bytes& jpeg, bool keep_jfif, int transform, bool rgb_ids) {
  Bytes out(jpeg.begin(), jpeg.begin() + 2);
  if (transform >= 0) {
    const Bytes adobe = {0xff, 0xee, 0x00, 0x0e, 'A', 'd', 'o', 'b', 'e', 0x00, 0x64, 0x00, 0x00, 0x00, 0x00,
                         static_cast<uint8_t>(transform)};
    out.insert(out.end(), adobe.begin(), adobe.end());
  }
  size_t pos = 2;
  while (pos + 4 <= jpeg.size()) {
    const uint8_t marker = jpeg[pos + 1];
    const size_t end = pos + 2 + (static_cast<size_t>(jpeg[pos + 2]) << 8 | jpeg[pos + 3]);
    Bytes segment(jpeg.begin() + pos, jpeg.begin() + (marker == 0xda ? jpeg.size() : end));
    if (rgb_ids && marker == 0xc0) {
      for (int c = 0; c < segment[9]; ++c) segment[10 + 3 * c] = static_cast<uint8_t>("RGB"[c]);
    }
    if (rgb_ids && marker == 0xda) {
      for (int c = 0; c < segment[4]; ++c) segment[5 + 2 * c] = static_cast<uint8_t>("RGB"[c]);
    }
    if (keep_jfif || marker != 0xe0) out.insert(out.end(), segment.begin(), segment.end());
    if (marker == 0xda) break;
    pos = end;
  }
  return out;
}

TEST_CASE("colour segments are kept exactly unless libjpeg misreads them") {
  const Bytes jpeg = ReadFile(DataDir() + "/sample/video/video-001.jpeg");
  const ScanScript script = *BuiltinScanScript("spectral5");
  auto full = [&](const Bytes& original) {
    auto t = TranscodeToScanGroups(original, script);
    REQUIRE(t.ok());
    auto whole = t->Original();
    REQUIRE(whole.ok());
    return *whole;
  };
  // Adobe transform 2 on three components is read as YCbCr with a warning
  // when no JFIF segment says so; with RGB component ids and no segment a
  // decoder would read RGB. The writer puts a JFIF segment in its place.
  const Bytes misread = WithColourMarkers(jpeg, false, 2, true);
  REQUIRE_FALSE(DecodeJpeg(misread).ok());
  const Bytes replaced = full(misread);
  RequireSamePixels(misread, replaced);
  const auto segments = test::MetadataSegments(replaced);
  REQUIRE(segments.size() == 1);
  CHECK(segments[0].first == 0xe0);
  // Segments kept apart go back after the JFIF segment libjpeg wrote.
  Bytes commented = misread;
  const Bytes com = {0xff, 0xfe, 0x00, 0x05, 'a', 'b', 'c'};
  commented.insert(commented.begin() + 18, com.begin(), com.end());  // after SOI and the Adobe segment
  const auto with_comment = test::MetadataSegments(full(commented));
  REQUIRE(with_comment.size() == 2);
  CHECK(with_comment[0].first == 0xe0);
  CHECK(with_comment[1] == std::pair<int, Bytes>{0xfe, Bytes{'a', 'b', 'c'}});
  // With the JFIF segment, libjpeg ignores the transform: nothing is misread.
  for (const Bytes& exact : {WithColourMarkers(jpeg, true, 2, true), WithColourMarkers(jpeg, false, 1, true),
                             WithColourMarkers(jpeg, false, -1, false)}) {
    REQUIRE(DecodeJpeg(exact).ok());
    const Bytes converted = full(exact);
    RequireSamePixels(exact, converted);
    CHECK(test::MetadataSegments(converted) == test::MetadataSegments(exact));
  }
}

TEST_CASE("unsupported and corrupt JPEGs are refused with a reason") {
  const ScanScript script = *BuiltinScanScript("spectral");
  auto twelve = TranscodeToScanGroups(ReadFile(DataDir() + "/bad/testorig12.jpg"), script);
  REQUIRE_FALSE(twelve.ok());
  CHECK(twelve.status().code() == StatusCode::kNotSupported);
  CHECK_THAT(twelve.status().message(), Catch::Contains("12-bit"));

  auto truncated =
      TranscodeToScanGroups(ReadFile(DataDir() + "/bad/video-001.progressive.truncated.jpeg"), script);
  REQUIRE_FALSE(truncated.ok());
  CHECK(truncated.status().code() == StatusCode::kCorruption);

  auto text = TranscodeToScanGroups(ReadFile(DataDir() + "/bad/not-a-jpeg.jpg"), script);
  REQUIRE_FALSE(text.ok());
  CHECK_THAT(text.status().message(), Catch::Contains("not a JPEG"));

  // SOI, then a lossless (SOF3) frame header.
  const Bytes lossless = {0xff, 0xd8, 0xff, 0xc3, 0x00, 0x0b, 0x08, 0x00, 0x10,
                          0x00, 0x10, 0x01, 0x01, 0x11, 0x00};
  auto refused = TranscodeToScanGroups(lossless, script);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::kNotSupported);
  CHECK_THAT(refused.status().message(), Catch::Contains("lossless"));
}

Bytes WithFrameSize(Bytes jpeg, uint16_t width, uint16_t height) {
  for (size_t i = 2; i + 9 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xff && jpeg[i + 1] >= 0xc0 && jpeg[i + 1] <= 0xc2) {
      jpeg[i + 5] = static_cast<uint8_t>(height >> 8);
      jpeg[i + 6] = static_cast<uint8_t>(height);
      jpeg[i + 7] = static_cast<uint8_t>(width >> 8);
      jpeg[i + 8] = static_cast<uint8_t>(width);
      return jpeg;
    }
  }
  FAIL("no frame header");
  return jpeg;
}

TEST_CASE("absurd dimensions and memory needs are refused before the pixels are touched") {
  const ScanScript script = *BuiltinScanScript("spectral5");
  const Bytes real = ReadFile(DataDir() + "/sample/textures/ring.jpg");
  const Bytes bomb = WithFrameSize(real, 64250, 64250);

  auto t = TranscodeToScanGroups(bomb, script);
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().code() == StatusCode::kNotSupported);
  CHECK_THAT(t.status().message(), Catch::Contains("64250x64250 = 4128062500 pixels, over the limit of 178956970"));
  JpegDecoder decoder;
  auto shape = decoder.Shape(bomb);
  REQUIRE_FALSE(shape.ok());
  CHECK(shape.status().code() == StatusCode::kNotSupported);

  // The limit is the caller's: a real 256x256 image over a 60000-pixel limit.
  auto small_limit = TranscodeToScanGroups(real, script, {.max_pixels = 60000});
  REQUIRE_FALSE(small_limit.ok());
  CHECK_THAT(small_limit.status().message(), Catch::Contains("256x256 = 65536 pixels, over the limit of 60000"));
  CHECK_FALSE(DecodeJpeg(real, {.max_pixels = 60000}).ok());
  CHECK(DecodeJpeg(real, {.max_pixels = 65536}).ok());

  // 8000x8000 passes the pixel limit, but its coefficients need about 190 MiB.
  auto big = TranscodeToScanGroups(WithFrameSize(real, 8000, 8000), script, {.max_memory_bytes = 64 << 20});
  REQUIRE_FALSE(big.ok());
  CHECK(big.status().code() == StatusCode::kNotSupported);
  CHECK_THAT(big.status().message(), Catch::Contains("needs more than the 64 MiB of working memory allowed"));

  // Through the converter: named, and skipped with --skip-bad.
  TempDir tmp;
  fs::create_directories(tmp.path() / "src/a");
  fs::copy(DataDir() + "/sample/textures/ring.jpg", tmp.path() / "src/a/ring.jpg");
  test::WriteFile(tmp.path() / "src/a/bomb.jpg", bomb);
  auto refused = ConvertImages({.src_dir = tmp / "src", .out_dir = tmp / "out"});
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.status().message(), Catch::Contains("a/bomb.jpg"));
  CHECK_THAT(refused.status().message(), Catch::Contains("over the limit of 178956970"));
  auto skipped = ConvertImages({.src_dir = tmp / "src", .out_dir = tmp / "out2", .skip_bad = true});
  REQUIRE(skipped.ok());
  CHECK(skipped->images == 1);
  auto tiny_budget = ConvertImages({.src_dir = tmp / "src", .out_dir = tmp / "out3", .jobs = 2,
                                    .skip_bad = true, .max_pixels = uint64_t{1} << 33, .memory_bytes = 2u << 20});
  REQUIRE(tiny_budget.ok());
  REQUIRE(tiny_budget->skipped.size() == 1);
  CHECK_THAT(tiny_budget->skipped[0].second, Catch::Contains("needs more than the 1 MiB of working memory allowed"));
}

}  // namespace
}  // namespace pcr
