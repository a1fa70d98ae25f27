// Full verification of a pcr file or dataset: every checksum, every structure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/status.h"

namespace pcr {

struct VerifyReport {
  uint64_t files = 0;
  uint64_t stripes = 0;
  uint64_t streams = 0;
  uint64_t chunks = 0;
  uint64_t bytes = 0;               // bytes checked
  std::vector<std::string> errors;  // one line each; empty when all holds
};

// Opens `path` (a dataset directory or one file) and checks header, footer,
// index, manifest consistency and the checksum of every stream and chunk.
// Open failures and corrupt streams are reported, not returned.
VerifyReport VerifyPath(const std::string& path);

}  // namespace pcr
