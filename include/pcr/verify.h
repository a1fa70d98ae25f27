// Full verification of a pcr file or dataset: every checksum, every structure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pcr/export.h"
#include "pcr/io.h"
#include "pcr/status.h"

namespace pcr {

struct VerifyReport {
  uint64_t files = 0;
  uint64_t stripes = 0;
  uint64_t streams = 0;
  uint64_t chunks = 0;
  uint64_t bytes = 0;               // bytes checked
  std::vector<std::string> errors;  // one line each; empty when all holds
};

// Opens `path` (a dataset directory, one image file or a table) and checks
// header, footer, index, manifest consistency, the checksum of every stream
// and chunk, and decodes every table stripe. Open failures and corrupt
// streams are reported, not returned. Thread safety: may be called from
// several threads at once.
PCR_EXPORT VerifyReport VerifyPath(const std::string& path, const IoEngineOptions& io = {});

}  // namespace pcr
