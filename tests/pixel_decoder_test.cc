// pcr's decoder to pixels against libjpeg-turbo: identical pixels for every
// sample image, scale, pixel format and a set of crops, at every fidelity of
// pcr's scan scripts, and the same outcome on damaged data.
#include "jpeg/pixel_decoder.h"

#include <jpeglib.h>

#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <filesystem>
#include <random>

#include "jpeg/avx2.h"
#include "jpeg/error_manager.h"
#include "jpeg/idct.h"
#include "jpeg/smooth.h"
#include "pcr/decode.h"
#include "tests/image_util.h"
#include "tests/simd_levels.h"
#include "writer/transcode.h"

namespace pcr {
namespace {

namespace fs = std::filesystem;
using test::DataDir;
using test::ReadFile;
using test::SampleFiles;

struct Decoded {
  Status status;
  ImageShape shape;
  std::vector<uint8_t> pixels;
};

Decoded Decode(JpegDecoder& decoder, ByteSpan jpeg, DecodeOptions o) {
  Decoded d;
  auto shape = decoder.Shape(jpeg, o);
  if (!shape.ok()) return {shape.status(), {}, {}};
  d.pixels.assign(shape->bytes(), 0xa5);
  auto r = decoder.Decode(jpeg, o, d.pixels);
  d.status = r.status();
  if (r.ok()) d.shape = *r;
  return d;
}

std::string Describe(const DecodeOptions& o) {
  const char* formats[] = {"native", "rgb", "gray"};
  return "1/" + std::to_string(o.scale_denom) + " " + formats[static_cast<int>(o.format)] + " crop " +
         std::to_string(o.crop.width) + "x" + std::to_string(o.crop.height) + "+" + std::to_string(o.crop.x) + "+" +
         std::to_string(o.crop.y);
}

// Crops at the edges, single pixels and odd offsets of a w x h image.
std::vector<Crop> CropsOf(int w, int h) {
  std::vector<Crop> crops = {{}, {0, 0, 1, 1}, {w - 1, h - 1, 1, 1}, {0, 0, w, h}};
  if (w > 8 && h > 8) {
    crops.push_back({3, 5, w / 2, h / 3});
    crops.push_back({w - 7, 0, 7, h});
    crops.push_back({0, h - 9, w, 9});
    crops.push_back({w / 2 + 1, h / 2 - 1, 1, 2});
    crops.push_back({17, 15, w - 34 > 0 ? w - 34 : 1, h - 30 > 0 ? h - 30 : 1});
  }
  // Left edges on iMCU boundaries, where libjpeg-turbo's cropped decode
  // starts two chroma blocks to the left.
  for (int x : {32, 48, 64}) {
    if (w > x + 8 && h > 40) crops.push_back({x, 32, 8, 8});
  }
  return crops;
}

// Decodes `jpeg` both ways under every option; returns how many decodes pcr
// took on itself and how many it handed to libjpeg-turbo.
std::pair<int, int> CompareAll(ByteSpan jpeg, const std::string& what, bool native = true) {
  JpegDecoder pcr_decoder, libjpeg, reference;
  for (int scale : {1, 2, 4, 8}) {
    for (PixelFormat format : {PixelFormat::kNative, PixelFormat::kRgb, PixelFormat::kGray}) {
      if (!native && format == PixelFormat::kNative) continue;
      auto whole = libjpeg.Shape(jpeg, {.scale_denom = scale, .warnings_are_errors = false});
      REQUIRE(whole.ok());
      const Decoded uncropped =
          Decode(reference, jpeg, {.scale_denom = scale, .format = format, .decoder = DecoderChoice::kLibjpeg});
      for (const Crop& crop : CropsOf(whole->width, whole->height)) {
        DecodeOptions o{.scale_denom = scale, .format = format, .crop = crop, .decoder = DecoderChoice::kLibjpeg};
        const Decoded want = Decode(libjpeg, jpeg, o);
        if (want.status.ok() && crop.width > 0) {
          // A crop is the same region of the whole image.
          const size_t n = static_cast<size_t>(want.shape.components);
          bool same = true;
          for (int y = 0; y < crop.height && same; ++y) {
            const uint8_t* a =
                uncropped.pixels.data() +
                (static_cast<size_t>(crop.y + y) * static_cast<size_t>(whole->width) + static_cast<size_t>(crop.x)) * n;
            same = std::equal(a, a + static_cast<size_t>(crop.width) * n,
                              want.pixels.data() + static_cast<size_t>(y) * static_cast<size_t>(crop.width) * n);
          }
          INFO(what << " at " << Describe(o));
          CHECK(same);
        }
        o.decoder = DecoderChoice::kPcr;
        const Decoded got = Decode(pcr_decoder, jpeg, o);
        INFO(what << " at " << Describe(o) << ": " << want.status.ToString() << " / " << got.status.ToString());
        REQUIRE(want.status.ok() == got.status.ok());
        CHECK(want.shape.width == got.shape.width);
        CHECK(want.shape.height == got.shape.height);
        CHECK(want.shape.components == got.shape.components);
        if (got.status.ok()) test::CheckSimdLevels(jpeg, o, got.pixels);
        if (want.pixels != got.pixels) {
          size_t i = 0;
          while (want.pixels[i] == got.pixels[i]) ++i;
          const size_t row = static_cast<size_t>(want.shape.width) * static_cast<size_t>(want.shape.components);
          FAIL("first difference at row " << i / row << " byte " << i % row << ": libjpeg-turbo "
                                          << int(want.pixels[i]) << ", pcr " << int(got.pixels[i]));
        }
      }
    }
  }
  const DecoderCounts c = pcr_decoder.counts();
  CHECK(c.pcr + c.libjpeg == libjpeg.counts().libjpeg);
  CHECK(c.fallbacks == c.libjpeg);
  return {static_cast<int>(c.pcr), static_cast<int>(c.fallbacks)};
}

// `jpeg` decoded by libjpeg-turbo with or without block smoothing.
std::vector<uint8_t> LibjpegPixels(ByteSpan jpeg, bool smoothing) {
  std::vector<uint8_t> pixels;
  jpeg_decompress_struct d{};
  JpegErrorManager err;
  err.Install(reinterpret_cast<j_common_ptr>(&d));
  jpeg_create_decompress(&d);
  if (setjmp(err.jump) == 0) {
    jpeg_mem_src(&d, jpeg.data(), jpeg.size());
    jpeg_read_header(&d, TRUE);
    d.do_block_smoothing = smoothing;
    jpeg_start_decompress(&d);
    const size_t stride = size_t{d.output_width} * static_cast<size_t>(d.output_components);
    pixels.resize(stride * d.output_height);
    while (d.output_scanline < d.output_height) {
      JSAMPROW row = pixels.data() + stride * d.output_scanline;
      jpeg_read_scanlines(&d, &row, 1);
    }
    jpeg_finish_decompress(&d);
  } else {
    pixels.clear();
  }
  jpeg_destroy_decompress(&d);
  return pixels;
}

// Whether libjpeg-turbo's block smoothing changes the pixels of `jpeg`.
bool Smooths(ByteSpan jpeg) {
  const std::vector<uint8_t> smoothed = LibjpegPixels(jpeg, true);
  REQUIRE_FALSE(smoothed.empty());
  return smoothed != LibjpegPixels(jpeg, false);
}

bool Outside(const fs::path& file) {
  // Luma sampled 4x1 (4:1:1 and 4:1:0) is outside pcr's decoder.
  return file.string().ends_with(".410.jpeg") || file.string().ends_with(".411.jpeg");
}

TEST_CASE("pcr's pixels equal libjpeg-turbo's for every sample at full fidelity") {
  int files = 0;
  for (const std::string name : {"spectral5", "spectral"}) {
    const ScanScript script = *BuiltinScanScript(name);
    for (const fs::path& file : SampleFiles()) {
      auto t = TranscodeToScanGroups(ReadFile(file), script);
      REQUIRE(t.ok());
      const auto [pcr, fallbacks] = CompareAll(t->AtFidelity(script.group_count()), file.string() + " " + name);
      INFO(file.string());
      if (Outside(file)) {
        CHECK(pcr == 0);
      } else {
        CHECK(fallbacks == 0);
      }
      ++files;
    }
  }
  CHECK(files >= 40);
}

// The CMYK sample re-encoded by libjpeg-turbo as YCCK (Adobe transform 2),
// Y sampled 2x2 and the rest 1x1.
Bytes AsYcck() {
  auto cmyk = DecodeJpeg(ReadFile(DataDir() + "/sample/video/video-001.cmyk.jpeg"));
  REQUIRE(cmyk.ok());
  REQUIRE(cmyk->components == 4);
  jpeg_compress_struct c{};
  JpegErrorManager err;
  err.Install(reinterpret_cast<j_common_ptr>(&c));
  jpeg_create_compress(&c);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  Bytes result;
  if (setjmp(err.jump) == 0) {
    jpeg_mem_dest(&c, &out, &size);
    c.image_width = static_cast<JDIMENSION>(cmyk->width);
    c.image_height = static_cast<JDIMENSION>(cmyk->height);
    c.input_components = 4;
    c.in_color_space = JCS_CMYK;
    jpeg_set_defaults(&c);
    jpeg_set_colorspace(&c, JCS_YCCK);
    c.comp_info[0].h_samp_factor = c.comp_info[0].v_samp_factor = 2;
    c.comp_info[3].h_samp_factor = c.comp_info[3].v_samp_factor = 1;
    jpeg_set_quality(&c, 80, TRUE);
    jpeg_start_compress(&c, TRUE);
    const size_t stride = static_cast<size_t>(cmyk->width) * 4;
    while (c.next_scanline < c.image_height) {
      JSAMPROW row = cmyk->pixels.data() + stride * c.next_scanline;
      jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    result.assign(out, out + size);
  } else {
    FAIL("libjpeg-turbo: " << err.message);
  }
  jpeg_destroy_compress(&c);
  std::free(out);
  return result;
}

TEST_CASE("YCCK, as libjpeg-turbo writes it, decodes to its pixels") {
  const Bytes ycck = AsYcck();
  auto t = TranscodeToScanGroups(ycck, *BuiltinScanScript("spectral5"));
  REQUIRE(t.ok());
  const auto [pcr, fallbacks] = CompareAll(t->AtFidelity(5), "YCCK");
  CHECK(pcr > 0);
  CHECK(fallbacks == 0);
}

TEST_CASE("every fidelity of every sample decodes through pcr's decoder to libjpeg-turbo's smoothed pixels") {
  int smoothed = 0;
  for (const std::string name : {"spectral5", "spectral"}) {
    const ScanScript script = *BuiltinScanScript(name);
    for (const fs::path& file : SampleFiles()) {
      auto t = TranscodeToScanGroups(ReadFile(file), script);
      REQUIRE(t.ok());
      for (int k = 1; k < script.group_count(); ++k) {
        const Bytes jpeg = t->AtFidelity(k);
        // RGB and gray: native is RGB's path but for CMYK, which full fidelity covers.
        const auto [pcr, fallbacks] = CompareAll(jpeg, file.string() + " " + name + " " + std::to_string(k), false);
        INFO(file.string() << " " << name << " at fidelity " << k);
        CHECK(fallbacks == (Outside(file) ? pcr + fallbacks : 0));
        smoothed += Smooths(jpeg);
      }
    }
  }
  // Most prefixes lack some of the first ten coefficients.
  CHECK(smoothed >= 100);
}

TEST_CASE("a smoothed file cut short decodes to libjpeg-turbo's pixels at every scale and format") {
  // libjpeg-turbo smooths the rows past where a scan's data ends with the
  // coefficients known before that scan, so no scan may go unread.
  const ScanScript script = *BuiltinScanScript("spectral5");
  auto t = TranscodeToScanGroups(ReadFile(DataDir() + "/sample/video/video-001.jpeg"), script);
  REQUIRE(t.ok());
  JpegDecoder pcr_decoder, libjpeg;
  int compared = 0;
  for (int k = 2; k < script.group_count(); ++k) {
    const Bytes jpeg = t->AtFidelity(k);
    size_t last_sos = 0;
    for (size_t i = 0; i + 1 < jpeg.size(); ++i) {
      if (jpeg[i] == 0xff && jpeg[i + 1] == 0xda) last_sos = i;
    }
    for (size_t cut : {last_sos + 40, (last_sos + jpeg.size()) / 2}) {
      const Bytes cut_short(jpeg.begin(), jpeg.begin() + static_cast<ptrdiff_t>(cut));
      for (int scale : {1, 8}) {
        for (PixelFormat format : {PixelFormat::kRgb, PixelFormat::kGray}) {
          DecodeOptions o{
              .scale_denom = scale, .format = format, .warnings_are_errors = false, .decoder = DecoderChoice::kLibjpeg};
          const Decoded want = Decode(libjpeg, cut_short, o);
          o.decoder = DecoderChoice::kPcr;
          const Decoded got = Decode(pcr_decoder, cut_short, o);
          INFO("fidelity " << k << " cut at " << cut << " of " << jpeg.size() << ", " << Describe(o));
          REQUIRE(want.status.ok());
          REQUIRE(got.status.ok());
          CHECK((want.pixels == got.pixels));
          ++compared;
        }
      }
    }
  }
  CHECK(compared == 3 * 2 * 2 * 2);
}

TEST_CASE("damaged data: pcr fails where libjpeg-turbo does, and names where") {
  const Bytes jpeg =
      TranscodeToScanGroups(ReadFile(DataDir() + "/sample/video/video-001.q50.422.jpeg"), *BuiltinScanScript("spectral5"))
          ->AtFidelity(5);
  JpegDecoder pcr_decoder, libjpeg;
  std::mt19937 rng(11);
  int failed = 0, decoded = 0;
  for (int i = 0; i < 600; ++i) {
    Bytes bad = jpeg;
    const size_t at = 400 + rng() % (bad.size() - 400);
    bad[at] = static_cast<uint8_t>(rng());
    for (bool strict : {true, false}) {
      DecodeOptions o{.format = PixelFormat::kRgb, .warnings_are_errors = strict, .decoder = DecoderChoice::kLibjpeg};
      const Decoded want = Decode(libjpeg, bad, o);
      o.decoder = DecoderChoice::kPcr;
      const Decoded got = Decode(pcr_decoder, bad, o);
      INFO("byte " << at << " set to " << int(bad[at]) << ": " << want.status.ToString() << " / "
                   << got.status.ToString());
      REQUIRE(want.status.ok() == got.status.ok());
      if (!got.status.ok()) {
        CHECK(got.status.code() == StatusCode::kCorruption);
        if (pcr_decoder.counts().fallbacks == 0) CHECK_THAT(got.status.message(), Catch::Contains("SOS at byte"));
        ++failed;
      } else {
        CHECK((want.pixels == got.pixels));
        ++decoded;
      }
    }
  }
  CHECK(failed > 50);
  CHECK(decoded > 50);
}

TEST_CASE("a reused decoder never lends an image the tables of the one before") {
  const Bytes jpeg = TranscodeToScanGroups(ReadFile(DataDir() + "/sample/video/video-001.jpeg"),
                                           *BuiltinScanScript("spectral5"))
                         ->AtFidelity(5);
  // The same file without its DQT segments.
  Bytes bare(jpeg.begin(), jpeg.begin() + 2);
  for (size_t pos = 2; pos + 4 <= jpeg.size() && jpeg[pos] == 0xff && jpeg[pos + 1] != 0xda;) {
    const size_t length = static_cast<size_t>(jpeg[pos + 2]) << 8 | jpeg[pos + 3];
    if (jpeg[pos + 1] != 0xdb) bare.insert(bare.end(), jpeg.begin() + pos, jpeg.begin() + pos + 2 + length);
    pos += 2 + length;
    if (jpeg[pos + 1] == 0xda) bare.insert(bare.end(), jpeg.begin() + pos, jpeg.end());
  }
  REQUIRE(bare.size() < jpeg.size());
  for (DecoderChoice choice : {DecoderChoice::kLibjpeg, DecoderChoice::kPcr}) {
    JpegDecoder fresh, reused;
    const DecodeOptions o{.decoder = choice};
    const Decoded alone = Decode(fresh, bare, o);
    REQUIRE_FALSE(alone.status.ok());
    REQUIRE(Decode(reused, jpeg, o).status.ok());
    const Decoded after = Decode(reused, bare, o);
    CHECK(after.status.ToString() == alone.status.ToString());
  }
}

// The sample's video frame (4:2:0) at full fidelity.
Bytes FullVideoFrame() {
  auto t = TranscodeToScanGroups(ReadFile(DataDir() + "/sample/video/video-001.jpeg"), *BuiltinScanScript("spectral5"));
  REQUIRE(t.ok());
  return t->AtFidelity(5);
}

// `jpeg` with a few bytes of the scan data from `from` to `to` changed so
// that libjpeg-turbo refuses it under `o`.
Bytes DamagedScan(const Bytes& jpeg, size_t from, size_t to, DecodeOptions o) {
  JpegDecoder decoder;
  o.decoder = DecoderChoice::kLibjpeg;
  std::mt19937 rng(5);
  for (int attempt = 0; attempt < 500; ++attempt) {
    Bytes b = jpeg;
    for (int i = 0; i < 4; ++i) b[from + rng() % (to - from)] = static_cast<uint8_t>(rng() % 255);
    if (!Decode(decoder, b, o).status.ok()) return b;
  }
  return {};
}

TEST_CASE("YCbCr to gray does not read the chroma scans") {
  const Bytes jpeg = FullVideoFrame();
  // The last scan holds chroma only: damage its data.
  size_t last_sos = 0;
  for (size_t i = 0; i + 1 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xff && jpeg[i + 1] == 0xda) last_sos = i;
  }
  REQUIRE(last_sos > 0);
  const Bytes bad = DamagedScan(jpeg, last_sos + 20, jpeg.size() - 4, {.format = PixelFormat::kRgb});
  REQUIRE_FALSE(bad.empty());
  JpegDecoder decoder;
  const Decoded gray = Decode(decoder, bad, {.format = PixelFormat::kGray, .decoder = DecoderChoice::kPcr});
  CHECK(gray.status.ok());
  const Decoded rgb = Decode(decoder, bad, {.format = PixelFormat::kRgb, .decoder = DecoderChoice::kPcr});
  CHECK(rgb.status.code() == StatusCode::kCorruption);
  const Decoded reference = Decode(decoder, jpeg, {.format = PixelFormat::kGray, .decoder = DecoderChoice::kLibjpeg});
  CHECK((gray.pixels == reference.pixels));
}

TEST_CASE("at 1/8 the luma AC scans of a 4:2:0 image are not read") {
  const Bytes jpeg = FullVideoFrame();
  // The first scan of one component (the first component's id) from coefficient 1 on.
  size_t luma_ac = 0;
  for (size_t i = 0; i + 8 < jpeg.size() && luma_ac == 0; ++i) {
    if (jpeg[i] == 0xff && jpeg[i + 1] == 0xda && jpeg[i + 4] == 1 && jpeg[i + 7] > 0) luma_ac = i;
  }
  REQUIRE(luma_ac > 0);
  const Bytes bad = DamagedScan(jpeg, luma_ac + 20, luma_ac + 220, {.scale_denom = 8});
  REQUIRE_FALSE(bad.empty());
  JpegDecoder decoder;
  const Decoded small = Decode(decoder, bad, {.scale_denom = 8, .format = PixelFormat::kRgb});
  CHECK(small.status.ok());
  const Decoded reference = Decode(decoder, jpeg, {.scale_denom = 8, .format = PixelFormat::kRgb,
                                                   .decoder = DecoderChoice::kLibjpeg});
  CHECK((small.pixels == reference.pixels));
  CHECK(Decode(decoder, bad, {.format = PixelFormat::kRgb}).status.code() == StatusCode::kCorruption);
}

TEST_CASE("the range limit clamps and wraps as libjpeg-turbo's table does") {
  // A DC alone: the output is DC * q / 8 + 128, through the 10-bit table.
  int16_t coef[64] = {};
  int32_t quant[64];
  std::fill_n(quant, 64, 1);
  uint8_t out[64];
  for (const auto& [dc, want] : std::vector<std::pair<int, int>>{
           {0, 128}, {8, 129}, {-1024, 0}, {1016, 255}, {4088, 255}, {-4096, 0}, {4096, 0}, {8184, 127}}) {
    coef[0] = static_cast<int16_t>(dc);
    for (auto idct : {IdctIslow8x8, Idct4x4, Idct2x2, Idct1x1}) {
      const bool in_range = idct(coef, quant, out, 8);
      INFO("DC " << dc);
      CHECK(int(out[0]) == want);
      // Where libjpeg-turbo's SIMD code could give other samples, pcr says so.
      if (std::abs(dc) <= 1024) CHECK(in_range);
      if (std::abs(dc) > 1024 && idct != Idct1x1) CHECK_FALSE(in_range);
    }
  }
}

TEST_CASE("the SIMD 8x8 inverse DCTs give the reference's samples, and refuse what it refuses") {
  std::mt19937 rng(7);
  int agreed = 0, refused = 0;
  for (int trial = 0; trial < 200000; ++trial) {
    // Coefficients as images have them (small, mostly zero), near and past
    // the lanes' limits, and DC alone; steps of baseline and 16-bit tables.
    const int kind = trial % 5;
    int16_t coef[64] = {};
    int32_t quant[64];
    const int qmax = kind == 4 ? 65535 : 255;
    for (int k = 0; k < 64; ++k) quant[k] = std::uniform_int_distribution<int>(kind == 3 ? 0 : 1, qmax)(rng);
    const int span = kind == 0 ? 4 : kind == 1 ? 64 : 2048;
    for (int k = 0; k < 64; ++k) {
      if (kind == 2 && k > 0) break;
      if (k > 0 && std::uniform_int_distribution<int>(0, 3)(rng) != 0) continue;
      coef[k] = static_cast<int16_t>(std::uniform_int_distribution<int>(-span, span)(rng));
    }
    // Every other trial, coefficients only in rows and columns 0..3, as
    // block smoothing leaves a block of DC alone.
    const bool low = trial % 2 == 1;
    if (low) {
      for (int k = 0; k < 64; ++k) coef[k] = k / 8 < 4 && k % 8 < 4 ? coef[k] : 0;
    }
    uint8_t want[64], got[64];
    const IdctSteps steps = PrepareIdctSteps(quant);
    const bool ok_want = IdctIslow8x8(coef, quant, want, 8);
    const bool ok_got = IdctIslow8x8Simd(coef, steps, got, 8);
    INFO("trial " << trial);
    REQUIRE(ok_got == ok_want);
    if (ok_want) {
      REQUIRE(std::equal(want, want + 64, got));
      ++agreed;
    } else {
      ++refused;
    }
#if defined(__x86_64__)
    if (low) {
      uint8_t got_low[64];
      REQUIRE(IdctIslow8x8LowSse2(coef, steps, got_low, 8) == ok_want);
      if (ok_want) REQUIRE(std::equal(want, want + 64, got_low));
    }
#endif
#if defined(__x86_64__)
    uint8_t want4[16], got4[16];
    const bool ok_want4 = Idct4x4(coef, quant, want4, 4);
    REQUIRE(Idct4x4Sse2(coef, steps, got4, 4) == ok_want4);
    if (ok_want4) REQUIRE(std::equal(want4, want4 + 16, got4));
    uint8_t want2[4], got2[4];
    const bool ok_want2 = Idct2x2(coef, quant, want2, 2);
    REQUIRE(Idct2x2Sse2(coef, steps, got2, 2) == ok_want2);
    if (ok_want2) REQUIRE(std::equal(want2, want2 + 4, got2));
#endif
#if defined(__x86_64__)
    if (BestSimdLevel() == SimdLevel::kAvx2) {
      // With the previous trial's block beside it (same steps).
      static int16_t previous[64] = {};
      alignas(16) int16_t pair[128];
      std::copy_n(coef, 64, pair);
      std::copy_n(previous, 64, pair + 64);
      std::copy_n(coef, 64, previous);
      uint8_t other[64], both[16 * 8];
      // With a low block, the previous trial's cut to rows and columns 0..3.
      if (low) {
        for (int k = 64; k < 128; ++k) pair[k] = (k - 64) / 8 < 4 && (k - 64) % 8 < 4 ? pair[k] : 0;
      }
      const bool ok_other = IdctIslow8x8(pair + 64, quant, other, 8);
      const auto transform = low ? IdctIslow8x8LowPairAvx2 : IdctIslow8x8PairAvx2;
      REQUIRE(transform(pair, steps, both, 16) == (ok_want && ok_other));
      for (int r = 0; ok_want && ok_other && r < 8; ++r) {
        REQUIRE(std::equal(want + 8 * r, want + 8 * r + 8, both + 16 * r));
        REQUIRE(std::equal(other + 8 * r, other + 8 * r + 8, both + 16 * r + 8));
      }
      uint8_t other4[16], both4[8 * 4];
      const bool ok_other4 = Idct4x4(pair + 64, quant, other4, 4);
      REQUIRE(Idct4x4PairAvx2(pair, steps, both4, 8) == (ok_want4 && ok_other4));
      for (int r = 0; ok_want4 && ok_other4 && r < 4; ++r) {
        REQUIRE(std::equal(want4 + 4 * r, want4 + 4 * r + 4, both4 + 8 * r));
        REQUIRE(std::equal(other4 + 4 * r, other4 + 4 * r + 4, both4 + 8 * r + 4));
      }
    }
#endif
  }
  CHECK(agreed > 20000);
  CHECK(refused > 1000);
}

#if defined(__x86_64__)
TEST_CASE("block smoothing in AVX2 equals the taps' sums, in float and in double") {
  if (BestSimdLevel() != SimdLevel::kAvx2) {
    WARN("SKIP: no AVX2 on this CPU");
    return;
  }
  std::mt19937 rng(11);
  int compared = 0, float_path = 0, double_path = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    // DC values as images have them, then up to 16 bits; steps of 8-bit
    // tables, of 16-bit ones, and a DC step far above the others, for the
    // largest quotients.
    const int kind = trial % 5;
    const int span = kind < 2 ? 2047 : 32767, qmax = kind == 4 ? 3 : kind % 2 == 0 ? 255 : 65535;
    const int n = std::uniform_int_distribution<int>(3, 40)(rng);
    std::array<uint16_t, 64> quant{};
    for (auto& q : quant) q = static_cast<uint16_t>(std::uniform_int_distribution<int>(1, qmax)(rng));
    if (kind == 4) quant[0] = 65535;
    // All ten estimates, or those of a component with some of 1..5.
    const bool dc_only = trial % 3 != 0;
    std::vector<SmoothEstimate> estimates;
    for (int k = dc_only ? 0 : 1; k < (dc_only ? 10 : 6); ++k) {
      if (dc_only || std::uniform_int_distribution<int>(0, 1)(rng) == 1) {
        estimates.push_back(MakeSmoothEstimate(k, dc_only, quant.data()));
      }
    }
    if (estimates.empty()) continue;
    // Rows padded as the decoder pads them: edges repeated, 8 more blocks.
    std::vector<std::vector<float>> rows(5, std::vector<float>(static_cast<size_t>(n) + 12));
    const float* row_ptrs[5];
    for (int r = 0; r < 5; ++r) {
      auto& row = rows[static_cast<size_t>(r)];
      for (int b = 0; b < n; ++b)
        row[static_cast<size_t>(b) + 2] = static_cast<float>(std::uniform_int_distribution<int>(-span, span)(rng));
      row[0] = row[1] = row[2];
      row[static_cast<size_t>(n) + 2] = row[static_cast<size_t>(n) + 3] = row[static_cast<size_t>(n) + 1];
      row_ptrs[r] = row.data() + 2;
    }
    std::vector<int16_t> blocks(static_cast<size_t>(n) * 64, 0);
    SmoothRowAvx2(row_ptrs, n, estimates.data(), static_cast<int>(estimates.size()), blocks.data());
    for (const SmoothEstimate& e : estimates) {
      for (int b = 0; b < n; ++b) {
        float sum = 0;
        for (int t = 0; t < e.num_taps; ++t) {
          const SmoothTap& tap = e.taps[t];
          sum += tap.weight * row_ptrs[tap.row][std::clamp(b + tap.dx, 0, n - 1)];
        }
        const double scaled = e.times * std::fabs(static_cast<double>(sum)) + e.round;
        if (e.k != 0) ++(scaled < kSmoothFloatLimit ? float_path : double_path);
        INFO("trial " << trial << " k " << e.k << " block " << b);
        REQUIRE(blocks[static_cast<size_t>(b) * 64 + static_cast<size_t>(e.position)] ==
                static_cast<int16_t>(SmoothValue(e, sum)));
        ++compared;
      }
    }
  }
  CHECK(compared > 100000);
  CHECK(float_path > 10000);
  CHECK(double_path > 10000);
}
#endif

#if defined(__x86_64__)
TEST_CASE("YCbCr to RGB in AVX2 equals jdcolor.c's tables for every Cb, Cr and Y") {
  if (BestSimdLevel() != SimdLevel::kAvx2) {
    WARN("SKIP: no AVX2 on this CPU");
    return;
  }
  // build_ycc_rgb_table: FIX(x) at 16 bits, ONE_HALF rounding.
  auto shift = [](int64_t v) { return static_cast<int>((v + (1 << 15)) >> 16); };
  std::vector<uint8_t> y(256), cb(256), cr(256), rgb(3 * 256);
  int checked = 0;
  for (int luma = 0; luma < 256; ++luma) {
    for (int red = 0; red < 256; ++red) {
      for (int i = 0; i < 256; ++i) {
        y[static_cast<size_t>(i)] = static_cast<uint8_t>(luma);
        cb[static_cast<size_t>(i)] = static_cast<uint8_t>(i);
        cr[static_cast<size_t>(i)] = static_cast<uint8_t>(red);
      }
      REQUIRE(YccToRgbRowAvx2(y.data(), cb.data(), cr.data(), rgb.data(), 256) == 256);
      const int r_x = red - 128;
      for (int i = 0; i < 256; ++i) {
        const int b_x = i - 128;
        const int want[3] = {luma + shift(91881 * r_x), luma + shift(-22554 * b_x - 46802 * r_x),
                             luma + shift(116130 * b_x)};
        for (int c = 0; c < 3; ++c) {
          const int got = rgb[static_cast<size_t>(3 * i + c)];
          if (got != std::clamp(want[c], 0, 255)) {
            INFO("y " << luma << " cb " << i << " cr " << red << " channel " << c);
            REQUIRE(got == std::clamp(want[c], 0, 255));
          }
          ++checked;
        }
      }
    }
  }
  CHECK(checked == 3 * 256 * 256 * 256);
}
#endif

}  // namespace
}  // namespace pcr
