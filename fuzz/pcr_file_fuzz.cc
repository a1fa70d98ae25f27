// Any bytes as a pcr file, read through the reader's own path: PcrFile::Open,
// record and single-image reads, table projections (FuzzPcrFile). Must never
// crash, over-read or give two answers for the same bytes.
#include <cstddef>
#include <cstdint>

#include "reader/fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  pcr::FuzzPcrFile(data, size);
  return 0;
}
