// The large suite over ../shared/corpus: every JPEG layout, malformed files,
// and every tabular CSV.
// Exits 77 (skipped) when the corpus is absent.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "reader/inspect.h"
#include "pcr/decode.h"
#include "tests/csv_check.h"
#include "tests/image_util.h"
#include "tests/simd_levels.h"
#include "test_util.h"
#include "pcr/convert.h"
#include "jpeg/coefficients.h"
#include "writer/transcode.h"

namespace pcr {
namespace {

namespace fs = std::filesystem;
using test::CorpusDir;
using test::ReadFile;
using test::MetadataSegments;
using test::TempDir;

std::vector<fs::path> FilesUnder(const fs::path& dir, bool jpeg_only) {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string ext = e.path().extension().string();
    if (e.is_regular_file() && (!jpeg_only || ext == ".jpg" || ext == ".jpeg")) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Checks a successful transcode: full fidelity gives the original's pixels,
// and every prefix decodes cleanly with growing size.
void CheckTranscode(const Bytes& original, const TranscodedImage& t, int groups) {
  auto want = DecodeJpeg(original, {.warnings_are_errors = false});
  REQUIRE(want.ok());
  size_t previous = 0;
  for (int k = 1; k <= groups; ++k) {
    const Bytes partial = t.AtFidelity(k);
    CHECK(partial.size() >= previous);
    previous = partial.size();
    auto got = DecodeJpeg(partial);
    REQUIRE(got.ok());
    if (k == groups) {
      CHECK(got->width == want->width);
      CHECK(got->height == want->height);
      CHECK(got->pixels == want->pixels);
    }
  }
}

TEST_CASE("every valid 8-bit corpus JPEG converts losslessly; the rest are refused for a reason") {
  const fs::path root = fs::path(CorpusDir()) / "jpeg";
  size_t converted = 0, refused = 0;
  for (const std::string& name : BuiltinScanScriptNames()) {
    const ScanScript script = *BuiltinScanScript(name);
    for (const char* dir : {"golang", "libjpeg-turbo", "jpeg-decoder-reftest", "neverball-textures"}) {
      for (const fs::path& file : FilesUnder(root / dir, true)) {
        INFO(file.string() << " with " << name);
        const Bytes original = ReadFile(file);
        auto t = TranscodeToScanGroups(original, script);
        if (t.ok()) {
          ++converted;
          CheckTranscode(original, *t, script.group_count());
          // Segments libjpeg misreads (it warns) are replaced; all others are kept exactly.
          if (DecodeJpeg(original).ok()) {
            auto whole = t->Original();
            REQUIRE(whole.ok());
            CHECK(MetadataSegments(*whole) == MetadataSegments(original));
          }
          continue;
        }
        ++refused;
        const Status& s = t.status();
        UNSCOPED_INFO("refused: " << s.ToString());
        if (s.code() == StatusCode::kNotSupported) continue;
        REQUIRE(s.code() == StatusCode::kCorruption);
        // Refused as corrupt: libjpeg-turbo itself warns or fails on it, or it
        // is a progressive file that never codes some coefficients.
        const bool strict_decode_fails = !DecodeJpeg(original).ok();
        const bool incomplete = s.message().find("incomplete progressive") != std::string::npos;
        CHECK((strict_decode_fails || incomplete));
      }
    }
  }
  std::printf("corpus: %zu transcodes verified pixel-exact, %zu refusals\n", converted, refused);
  CHECK(converted >= 400);
}

TEST_CASE("pcr's entropy decoder gives libjpeg-turbo's coefficients for every corpus image pcr converts") {
  const fs::path root = fs::path(CorpusDir()) / "jpeg";
  ProgressiveCoefficientDecoder pcr_decoder;
  LibjpegCoefficientReader libjpeg;
  size_t handled = 0, not_handled = 0, refused = 0;
  auto compare = [&](const Bytes& jpeg) {
    const CoefficientComparison c = CompareCoefficientDecoders(jpeg, pcr_decoder, libjpeg);
    INFO("pcr: " << c.pcr.message << "; libjpeg-turbo: " << c.libjpeg.message);
    CHECK(c.mismatch.empty());
    if (c.pcr.ok()) {
      ++handled;
    } else if (c.pcr.kind == CoefficientOutcome::kNotHandled) {
      ++not_handled;
    } else {
      ++refused;
    }
  };
  for (const std::string name : {"spectral5", "spectral"}) {
    const ScanScript script = *BuiltinScanScript(name);
    for (const char* dir : {"golang", "libjpeg-turbo", "jpeg-decoder-reftest", "neverball-textures", "malformed"}) {
      for (const fs::path& file : FilesUnder(root / dir, false)) {
        INFO(file.string() << " with " << name);
        const Bytes original = ReadFile(file);
        if (name == "spectral5") compare(original);  // as it is
        auto t = TranscodeToScanGroups(original, script);
        if (!t.ok()) continue;
        for (int k = 1; k <= script.group_count(); ++k) {
          INFO("fidelity " << k);
          compare(t->AtFidelity(k));
        }
      }
    }
  }
  std::printf("entropy decoder: %zu decodes equal libjpeg-turbo's, %zu not handled, %zu refused as it does\n",
              handled, not_handled, refused);
  CHECK(handled >= 2000);
}

TEST_CASE("pcr's decoder gives libjpeg-turbo's pixels for every corpus image pcr converts") {
  const fs::path root = fs::path(CorpusDir()) / "jpeg";
  JpegDecoder pcr_decoder, libjpeg;
  std::vector<uint8_t> want, got;
  auto compare = [&](const Bytes& jpeg, const DecodeOptions& options) {
    DecodeOptions o = options;
    o.decoder = DecoderChoice::kLibjpeg;
    auto shape = libjpeg.Shape(jpeg, o);
    if (!shape.ok()) return;
    want.assign(shape->bytes(), 0);
    got.assign(shape->bytes(), 1);
    auto a = libjpeg.Decode(jpeg, o, want);
    o.decoder = DecoderChoice::kPcr;
    auto b = pcr_decoder.Decode(jpeg, o, got);
    INFO("1/" << o.scale_denom << " format " << static_cast<int>(o.format) << " crop " << o.crop.width << "x"
              << o.crop.height << "+" << o.crop.x << "+" << o.crop.y << ": " << a.status().ToString() << " / "
              << b.status().ToString());
    REQUIRE(a.ok() == b.ok());
    if (a.ok()) CHECK((want == got));
    if (b.ok()) test::CheckSimdLevels(jpeg, o, got);
  };
  size_t images = 0, fallback_images = 0;
  for (const std::string name : {"spectral5", "spectral"}) {
    const ScanScript script = *BuiltinScanScript(name);
    for (const char* dir : {"golang", "libjpeg-turbo", "jpeg-decoder-reftest", "neverball-textures", "malformed"}) {
      for (const fs::path& file : FilesUnder(root / dir, false)) {
        INFO(file.string() << " with " << name);
        auto t = TranscodeToScanGroups(ReadFile(file), script);
        if (!t.ok()) continue;
        ++images;
        // Every fidelity at every scale, whole and cropped; full fidelity
        // in every format, partial ones (block-smoothed) in RGB.
        for (int k = 1; k <= script.group_count(); ++k) {
          INFO("fidelity " << k);
          const Bytes jpeg = t->AtFidelity(k);
          const bool full = k == script.group_count();
          const uint64_t fallbacks_before = pcr_decoder.counts().fallbacks;
          for (int scale : {1, 2, 4, 8}) {
            for (PixelFormat format : {PixelFormat::kNative, PixelFormat::kRgb, PixelFormat::kGray}) {
              if (!full && format != PixelFormat::kRgb) continue;
              compare(jpeg, {.scale_denom = scale, .format = format});
              auto shape = libjpeg.Shape(jpeg, {.scale_denom = scale});
              if (shape.ok() && shape->width > 4 && shape->height > 4) {
                const Crop crop{shape->width / 3 + 1, shape->height / 4 + 1, shape->width / 2, shape->height / 2};
                compare(jpeg, {.scale_denom = scale, .format = format, .crop = crop});
              }
            }
          }
          if (pcr_decoder.counts().fallbacks > fallbacks_before) {
            ++fallback_images;
            std::printf("fidelity %d handed to libjpeg-turbo: %s with %s\n", k, file.string().c_str(), name.c_str());
          }
        }
      }
    }
  }
  const DecoderCounts c = pcr_decoder.counts();
  std::printf(
      "pixel decoder: %zu converted images (%zu fidelities of them handed to libjpeg-turbo), %llu decodes by pcr, "
      "%llu handed to libjpeg-turbo\n",
      images, fallback_images, static_cast<unsigned long long>(c.pcr), static_cast<unsigned long long>(c.fallbacks));
  CHECK(images >= 200);
  CHECK(c.pcr >= 5000);
}

TEST_CASE("malformed JPEGs are refused or converted exactly, never a crash") {
  const ScanScript script = *BuiltinScanScript("spectral");
  size_t converted = 0, refused = 0;
  for (const fs::path& file : FilesUnder(fs::path(CorpusDir()) / "jpeg/malformed", false)) {
    INFO(file.string());
    const Bytes original = ReadFile(file);
    auto t = TranscodeToScanGroups(original, script);
    if (!t.ok()) {
      ++refused;
      CHECK_FALSE(t.status().message().empty());
      continue;
    }
    ++converted;
    CheckTranscode(original, *t, script.group_count());
  }
  std::printf("malformed: %zu converted exactly, %zu refused\n", converted, refused);
  CHECK(refused > 0);
}

TEST_CASE("malformed JPEGs through the converter: skipped with a reason or stored exactly") {
  TempDir tmp;
  const fs::path src = tmp.path() / "src/m";
  fs::create_directories(src);
  const auto files = FilesUnder(fs::path(CorpusDir()) / "jpeg/malformed", false);
  for (size_t i = 0; i < files.size(); ++i) {
    fs::copy_file(files[i], src / (std::to_string(i) + ".jpg"));  // every file, whatever its name
  }
  auto done = ConvertImages({.src_dir = (tmp.path() / "src").string(), .out_dir = tmp / "out", .jobs = 2,
                             .skip_bad = true});
  REQUIRE(done.ok());
  CHECK(done->images + done->skipped.size() == files.size());
  for (const auto& [key, reason] : done->skipped) CHECK_FALSE(reason.empty());
  auto ds = ImageDataset::Open(tmp / "out", {.io = test::Io()});
  REQUIRE(ds.ok());
  const ScanScript& script = (*ds)->scan_script();
  for (uint64_t i = 0; i < (*ds)->num_images(); ++i) {
    INFO((*ds)->sample(i)->key);
    auto stored = (*ds)->ReadImage(i, script.group_count());
    REQUIRE(stored.ok());
    // The same bytes as the transcode the test above checks pixel by pixel.
    auto t = TranscodeToScanGroups(ReadFile(tmp.path() / "src" / (*ds)->sample(i)->key), script);
    REQUIRE(t.ok());
    CHECK(stored->jpeg == t->AtFidelity(script.group_count()));
  }
  std::printf("malformed through the converter: %llu stored, %zu skipped\n",
              static_cast<unsigned long long>(done->images), done->skipped.size());
}

TEST_CASE("real photos: smaller than the originals, scan group 1 at most 15 percent") {
  TempDir tmp;
  const fs::path src = fs::path(CorpusDir()) / "jpeg/neverball-textures";
  uint64_t original_bytes = 0;
  {
    std::ofstream list(tmp / "list.csv");
    for (const fs::path& f : FilesUnder(src, true)) {
      list << f.filename().string() << ",0\n";
      original_bytes += fs::file_size(f);
    }
  }
  for (const std::string& name : BuiltinScanScriptNames()) {
    INFO(name);
    const std::string out = tmp / ("ds-" + name);
    auto summary = ConvertImages(
        {.src_dir = src.string(), .list_file = tmp / "list.csv", .out_dir = out, .scan_script = name});
    REQUIRE(summary.ok());
    auto ds = ImageDataset::Open(out, {.io = test::Io()});
    REQUIRE(ds.ok());
    const std::vector<uint64_t> bytes = (*ds)->StreamBytes().value();
    uint64_t total = 0;
    for (uint64_t b : bytes) total += b;
    CHECK(summary->output_bytes <= original_bytes);
    CHECK(static_cast<double>(bytes[0] + bytes[1]) <= 0.15 * static_cast<double>(total));
  }
}

TEST_CASE("every corpus CSV reads back exactly") {
  const std::string corpus = CorpusDir();
  int files = 0;
  for (const auto& e : fs::directory_iterator(corpus + "/tabular")) {
    if (e.path().extension() != ".csv") continue;
    test::CheckCsvRoundTrip(e.path().string(), 0);
    test::CheckCsvRoundTrip(e.path().string(), 1000);
    ++files;
  }
  CHECK(files >= 5);
}

}  // namespace
}  // namespace pcr

int main(int argc, char** argv) {
  if (pcr::test::CorpusDir().empty()) {
    std::printf("skipped: corpus directory %s not found\n", PCR_CORPUS_DIR);
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
