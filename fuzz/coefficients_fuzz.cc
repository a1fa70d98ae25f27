// Differential: pcr's progressive entropy decoder against libjpeg-turbo's
// jpeg_read_coefficients. The first byte chooses how the rest is used: as it
// is, or transcoded with a built-in scan script and cut to a prefix of its
// scan groups. Every block must match wherever pcr's decoder succeeds, and
// each decoder must fail where, and only where, the other does.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "jpeg/coefficients.h"
#include "pcr/decode.h"
#include "writer/transcode.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static const pcr::ScanScript scripts[] = {*pcr::BuiltinScanScript("spectral5"),
                                            *pcr::BuiltinScanScript("spectral")};
  const uint8_t mode = data[0];
  pcr::ByteSpan jpeg(data + 1, size - 1);
  pcr::Bytes transcoded;
  if (mode & 1) {
    const pcr::ScanScript& script = scripts[(mode >> 1) & 1];
    const pcr::TranscodeOptions options{.max_memory_bytes = size_t{256} << 20, .max_input_scans = 100,
                                        .max_pixels = uint64_t{1} << 22};
    auto t = pcr::TranscodeToScanGroups(jpeg, script, options);
    if (!t.ok()) return 0;
    transcoded = t->AtFidelity(1 + (mode >> 2) % script.group_count());
    jpeg = transcoded;
  }
  // Bound the work: libjpeg-turbo, and the comparison, hold the whole
  // frame's coefficients, of the frame each decoder reads.
  constexpr uint64_t kMaxPixels = uint64_t{1} << 22;
  pcr::JpegDecoder header;
  auto shape = header.Shape(jpeg, {.warnings_are_errors = false});
  if (shape.ok() && uint64_t(shape->width) * shape->height > kMaxPixels) return 0;
  static pcr::ProgressiveCoefficientDecoder pcr_decoder;
  static pcr::LibjpegCoefficientReader libjpeg;
  if (pcr_decoder.Open(jpeg).ok() && uint64_t(pcr_decoder.frame().width) * pcr_decoder.frame().height > kMaxPixels) {
    return 0;
  }
  const pcr::CoefficientComparison c = pcr::CompareCoefficientDecoders(jpeg, pcr_decoder, libjpeg);
  if (!c.mismatch.empty()) {
    std::fprintf(stderr, "%s\npcr: %s\nlibjpeg-turbo: %s\n", c.mismatch.c_str(), c.pcr.message.c_str(),
                 c.libjpeg.message.c_str());
    std::abort();
  }
  return 0;
}
