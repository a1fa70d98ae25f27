// pcr's progressive entropy decoder against libjpeg-turbo's
// jpeg_read_coefficients: every block of every component, at every prefix of
// pcr's scans, with restart markers, and on damaged data.
#include <catch2/catch.hpp>

#include <jpeglib.h>

#include <filesystem>
#include <random>

#include "jpeg/coefficients.h"
#include "jpeg/error_manager.h"
#include "tests/image_util.h"
#include "writer/transcode.h"

namespace pcr {
namespace {

namespace fs = std::filesystem;
using test::DataDir;
using test::ReadFile;
using test::SampleFiles;

// Both decoders over `jpeg`; fails the test where they disagree.
CoefficientOutcome::Kind Compare(const Bytes& jpeg) {
  ProgressiveCoefficientDecoder pcr_decoder;
  LibjpegCoefficientReader libjpeg;
  const CoefficientComparison c = CompareCoefficientDecoders(jpeg, pcr_decoder, libjpeg);
  INFO("pcr: " << c.pcr.message << "; libjpeg-turbo: " << c.libjpeg.message);
  CHECK(c.mismatch.empty());
  return c.pcr.kind;
}

// `original` rewritten by libjpeg-turbo as a progressive JPEG of spectral
// selection scans (DC interleaved, two AC bands per component) with a restart
// marker every `interval` MCUs.
Bytes WithRestarts(const Bytes& original, unsigned interval) {
  jpeg_decompress_struct src{};
  jpeg_compress_struct dst{};
  JpegErrorManager src_err, dst_err;
  src_err.Install(reinterpret_cast<j_common_ptr>(&src));
  dst_err.Install(reinterpret_cast<j_common_ptr>(&dst));
  jpeg_create_decompress(&src);
  jpeg_create_compress(&dst);
  unsigned char* out = nullptr;
  unsigned long out_size = 0;
  Bytes result;
  if (setjmp(src_err.jump) == 0 && setjmp(dst_err.jump) == 0) {
    jpeg_mem_src(&src, original.data(), original.size());
    jpeg_read_header(&src, TRUE);
    jvirt_barray_ptr* coefs = jpeg_read_coefficients(&src);
    jpeg_copy_critical_parameters(&src, &dst);
    std::vector<jpeg_scan_info> scans;
    jpeg_scan_info dc{};
    dc.comps_in_scan = src.num_components;
    for (int c = 0; c < src.num_components; ++c) dc.component_index[c] = c;
    scans.push_back(dc);
    for (auto [ss, se] : {std::pair{1, 5}, std::pair{6, 63}}) {
      for (int c = 0; c < src.num_components; ++c) {
        jpeg_scan_info ac{};
        ac.comps_in_scan = 1;
        ac.component_index[0] = c;
        ac.Ss = ss;
        ac.Se = se;
        scans.push_back(ac);
      }
    }
    dst.scan_info = scans.data();
    dst.num_scans = static_cast<int>(scans.size());
    dst.restart_interval = interval;
    jpeg_mem_dest(&dst, &out, &out_size);
    jpeg_write_coefficients(&dst, coefs);
    jpeg_finish_compress(&dst);
    jpeg_finish_decompress(&src);
    result.assign(out, out + out_size);
  } else {
    FAIL("libjpeg-turbo: " << src_err.message << dst_err.message);
  }
  jpeg_destroy_compress(&dst);
  jpeg_destroy_decompress(&src);
  std::free(out);
  return result;
}

TEST_CASE("every block equals libjpeg-turbo's at every prefix of pcr's scans") {
  for (const std::string name : {"spectral5", "spectral"}) {
    const ScanScript script = *BuiltinScanScript(name);
    for (const fs::path& file : SampleFiles()) {
      auto t = TranscodeToScanGroups(ReadFile(file), script);
      REQUIRE(t.ok());
      // Luma sampled 4x1 (4:1:1 and 4:1:0) is outside the decoder.
      const bool outside = file.string().ends_with(".410.jpeg") || file.string().ends_with(".411.jpeg");
      for (int k = 1; k <= script.group_count(); ++k) {
        INFO(file.string() << " with " << name << " at fidelity " << k);
        CHECK(Compare(t->AtFidelity(k)) == (outside ? CoefficientOutcome::kNotHandled : CoefficientOutcome::kOk));
      }
    }
  }
}

TEST_CASE("images whose sampling pcr's decoder covers are all handled") {
  for (const std::string file : {"/sample/misc/testimggray.jpg", "/sample/video/video-001.jpeg",
                                 "/sample/video/video-001.q50.422.jpeg", "/sample/video/video-001.q50.440.jpeg",
                                 "/sample/video/video-001.q50.444.jpeg", "/sample/video/video-001.cmyk.jpeg",
                                 "/sample/misc/jpg-size-1x1.jpg"}) {
    INFO(file);
    auto t = TranscodeToScanGroups(ReadFile(DataDir() + file), *BuiltinScanScript("spectral5"));
    REQUIRE(t.ok());
    CHECK(Compare(t->AtFidelity(5)) == CoefficientOutcome::kOk);
  }
}

TEST_CASE("what is not for this decoder is said to be") {
  // Baseline originals, and successive approximation (the libjpeg script).
  const Bytes original = ReadFile(DataDir() + "/sample/video/video-001.jpeg");
  CHECK(Compare(original) == CoefficientOutcome::kNotHandled);
  auto t = TranscodeToScanGroups(original, *BuiltinScanScript("libjpeg"));
  REQUIRE(t.ok());
  ProgressiveCoefficientDecoder d;
  const auto outcome = d.Open(t->AtFidelity(10));
  CHECK(outcome.kind == CoefficientOutcome::kNotHandled);
  CHECK(outcome.message == "successive approximation");
  CHECK(Compare(t->AtFidelity(10)) == CoefficientOutcome::kNotHandled);
}

TEST_CASE("restart markers reset predictions and end-of-band runs mid-row") {
  for (const std::string file : {"/sample/video/video-001.jpeg", "/sample/misc/testimggray.jpg",
                                 "/sample/video/video-001.q50.444.jpeg", "/sample/video/video-001.q50.422.jpeg"}) {
    for (unsigned interval : {1u, 2u, 7u, 13u, 100u}) {
      INFO(file << " restart interval " << interval);
      const Bytes jpeg = WithRestarts(ReadFile(DataDir() + file), interval);
      REQUIRE_FALSE(jpeg.empty());
      CHECK(Compare(jpeg) == CoefficientOutcome::kOk);
    }
  }
}

TEST_CASE("a truncated file and bytes after a scan are warnings, as in libjpeg-turbo") {
  auto t = TranscodeToScanGroups(ReadFile(DataDir() + "/sample/video/video-001.jpeg"), *BuiltinScanScript("spectral5"));
  REQUIRE(t.ok());
  const Bytes full = t->AtFidelity(5);
  ProgressiveCoefficientDecoder d;
  LibjpegCoefficientReader libjpeg;
  {
    const Bytes cut(full.begin(), full.end() - 100);
    const auto c = CompareCoefficientDecoders(cut, d, libjpeg);
    CHECK(c.mismatch.empty());
    CHECK(c.pcr.kind == CoefficientOutcome::kWarning);
    CHECK_THAT(c.pcr.message, Catch::Contains("Premature end of JPEG file") &&
                                  Catch::Contains("scan 7, SOS at byte"));
  }
  {
    Bytes extra(full.begin(), full.end() - 2);
    extra.insert(extra.end(), 40, 0x5a);
    extra.insert(extra.end(), {0xff, 0xd9});
    const auto c = CompareCoefficientDecoders(extra, d, libjpeg);
    CHECK(c.mismatch.empty());
    CHECK(c.pcr.kind == CoefficientOutcome::kWarning);
    CHECK_THAT(c.pcr.message, Catch::Contains("extraneous bytes before marker 0xd9"));
    CHECK_THAT(c.libjpeg.message, Catch::Contains("extraneous bytes before marker 0xd9"));
  }
}

TEST_CASE("damaged data never makes the decoders disagree") {
  const Bytes original = ReadFile(DataDir() + "/sample/misc/testimggray.jpg");
  for (const Bytes& jpeg : {TranscodeToScanGroups(original, *BuiltinScanScript("spectral5"))->AtFidelity(5),
                            WithRestarts(ReadFile(DataDir() + "/sample/video/video-001.q50.422.jpeg"), 3)}) {
    ProgressiveCoefficientDecoder d;
    LibjpegCoefficientReader libjpeg;
    std::map<int, int> kinds;
    for (size_t n = 0; n < jpeg.size(); n += 7) {
      const Bytes cut(jpeg.begin(), jpeg.begin() + static_cast<ptrdiff_t>(n));
      const auto c = CompareCoefficientDecoders(cut, d, libjpeg);
      INFO("truncated to " << n << " bytes: " << c.pcr.message << " / " << c.libjpeg.message);
      CHECK(c.mismatch.empty());
      kinds[c.pcr.kind]++;
    }
    std::mt19937 rng(7);
    for (int i = 0; i < 3000; ++i) {
      Bytes bad = jpeg;
      const size_t at = 300 + rng() % (bad.size() - 300);
      bad[at] = static_cast<uint8_t>(rng());
      const auto c = CompareCoefficientDecoders(bad, d, libjpeg);
      INFO("byte " << at << " set to " << int(bad[at]) << ": " << c.pcr.message << " / " << c.libjpeg.message);
      CHECK(c.mismatch.empty());
      kinds[c.pcr.kind]++;
    }
    // The damage is found as often as it is not.
    CHECK(kinds[CoefficientOutcome::kWarning] > 100);
    CHECK(kinds[CoefficientOutcome::kOk] > 100);
  }
}

}  // namespace
}  // namespace pcr
