// Differential: pcr's decoder to pixels against libjpeg-turbo. The first
// byte chooses how the JPEG is used (as coefficients_fuzz: as it is, or
// transcoded with a built-in scan script and cut to a prefix of its scan
// groups), the second the scale, pixel format, strictness and whether to
// crop, the next four the crop. Both decoders must succeed or fail together
// and, where they succeed, give the same pixels; the exceptions are the
// scans pcr's decoder does not read (the chroma of YCbCr to gray, the AC
// scans that scale 1/8 does not need), whose damage it does not see.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "jpeg/coefficients.h"
#include "pcr/decode.h"
#include "writer/transcode.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 6) return 0;
  static const pcr::ScanScript scripts[] = {*pcr::BuiltinScanScript("spectral5"),
                                            *pcr::BuiltinScanScript("spectral")};
  const uint8_t mode = data[0], choice = data[1];
  pcr::ByteSpan jpeg(data + 6, size - 6);
  constexpr uint64_t kMaxPixels = uint64_t{1} << 22;
  pcr::Bytes transcoded;
  if (mode & 1) {
    const pcr::ScanScript& script = scripts[(mode >> 1) & 1];
    const pcr::TranscodeOptions options{.max_memory_bytes = size_t{256} << 20, .max_input_scans = 100,
                                        .max_pixels = kMaxPixels};
    auto t = pcr::TranscodeToScanGroups(jpeg, script, options);
    if (!t.ok()) return 0;
    transcoded = t->AtFidelity(1 + (mode >> 2) % script.group_count());
    jpeg = transcoded;
  }
  static const int kScales[] = {1, 2, 4, 8};
  static const pcr::PixelFormat kFormats[] = {pcr::PixelFormat::kNative, pcr::PixelFormat::kRgb,
                                              pcr::PixelFormat::kGray, pcr::PixelFormat::kRgb};
  pcr::DecodeOptions o{.scale_denom = kScales[choice & 3], .format = kFormats[(choice >> 2) & 3],
                       .warnings_are_errors = ((choice >> 4) & 1) != 0, .max_pixels = kMaxPixels,
                       .decoder = pcr::DecoderChoice::kLibjpeg};
  static pcr::JpegDecoder libjpeg, pcr_decoder;
  auto whole = libjpeg.Shape(jpeg, o);
  if (whole.ok() && (choice & 32)) {
    const int w = whole->width, h = whole->height;
    const int x = data[2] * w / 256, y = data[3] * h / 256;
    o.crop = {x, y, 1 + data[4] * (w - x - 1) / 255, 1 + data[5] * (h - y - 1) / 255};
  }
  auto shape = libjpeg.Shape(jpeg, o);
  const size_t bytes = shape.ok() ? shape->bytes() : 0;
  static std::vector<uint8_t> want, got;
  want.assign(bytes, 0);
  got.assign(bytes, 1);
  auto a = libjpeg.Decode(jpeg, o, want);
  o.decoder = pcr::DecoderChoice::kPcr;
  auto b = pcr_decoder.Decode(jpeg, o, got);
  if (a.ok() && b.ok()) {
    if (want != got) {
      size_t i = 0;
      while (want[i] == got[i]) ++i;
      std::fprintf(stderr, "pixels differ at byte %zu of %zu: libjpeg-turbo %d, pcr %d\n", i, bytes, want[i], got[i]);
      std::abort();
    }
    return 0;
  }
  if (a.ok() != b.ok()) {
    static pcr::ProgressiveCoefficientDecoder probe;
    // Scans pcr's decoder does not read: the chroma of YCbCr to gray, the
    // AC scans of components whose blocks become single samples at 1/8.
    const bool gray_shortcut = !a.ok() && o.format == pcr::PixelFormat::kGray && probe.Open(jpeg).ok() &&
                               probe.frame().color_space == pcr::JpegColorSpace::kYCbCr;
    // The damage must be in scans 1/8 skips: pcr's decoder at full size, which
    // reads them all, fails too.
    bool dc_shortcut = false;
    if (!a.ok() && o.scale_denom == 8) {
      pcr::DecodeOptions full = o;
      full.scale_denom = 1;
      full.crop = {};
      auto full_shape = pcr_decoder.Shape(jpeg, full);
      static std::vector<uint8_t> pixels;
      pixels.assign(full_shape.ok() ? full_shape->bytes() : 0, 0);
      dc_shortcut = full_shape.ok() && !pcr_decoder.Decode(jpeg, full, pixels).ok();
    }
    if (!gray_shortcut && !dc_shortcut) {
      std::fprintf(stderr, "libjpeg-turbo: %s\npcr: %s\n", a.status().ToString().c_str(),
                   b.status().ToString().c_str());
      std::abort();
    }
  }
  return 0;
}
