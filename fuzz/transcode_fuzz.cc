// Transcodes arbitrary bytes as a JPEG; whatever converts must decode at
// every fidelity and be deterministic.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "pcr/decode.h"
#include "writer/transcode.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const pcr::ScanScript script = *pcr::BuiltinScanScript("spectral");
  const pcr::ByteSpan in(data, size);
  const pcr::TranscodeOptions options{.max_memory_bytes = size_t{256} << 20, .max_input_scans = 100};
  auto first = pcr::TranscodeToScanGroups(in, script, options);
  if (!first.ok()) return 0;
  auto second = pcr::TranscodeToScanGroups(in, script, options);
  if (!second.ok() || second->chunks != first->chunks) std::abort();
  for (int k = 1; k <= script.group_count(); ++k) {
    if (!pcr::DecodeJpeg(first->AtFidelity(k)).ok()) std::abort();
  }
  return 0;
}
