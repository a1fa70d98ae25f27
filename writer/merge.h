// pcr-convert merge: the parts of a sharded conversion joined into one dataset.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/status.h"

namespace pcr {

struct MergeSummary {
  uint64_t parts = 0;
  uint64_t files = 0;
  uint64_t images = 0;
  uint64_t skipped = 0;  // lines of the parts' skip lists
};

// Joins the parts of one sharded conversion, every shard exactly once, into
// the dataset OUT_DIR: record files are hard-linked (never copied, so OUT_DIR
// must be on the parts' filesystem), skip lists are concatenated and the
// manifest lists the files in shard order. The result equals the one-machine
// conversion of the same input and options, byte for byte. Parts are left
// as they are; an interrupted merge completes when run again.
Result<MergeSummary> MergeParts(const std::string& out_dir, const std::vector<std::string>& part_dirs);

}  // namespace pcr
