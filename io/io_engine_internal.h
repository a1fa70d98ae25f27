// Shared between the engines; not part of the reader's interface.
#pragma once

#include <memory>
#include <string>

#include "io/io_engine.h"

namespace pcr {

// One read as an engine performs it: for direct files, the aligned range
// around a request, read into a bounce buffer.
struct IoOp {
  const RandomAccessFile* file = nullptr;
  uint64_t offset = 0;
  uint64_t length = 0;  // bytes to read
  uint64_t needed = 0;  // end of file is an error before this many bytes
  uint8_t* out = nullptr;
  Status* status = nullptr;
};

// An io_uring engine, or nullptr with *why set when no ring can be created.
std::unique_ptr<IoEngine> MakeUringEngine(const IoEngineOptions& options, const IoFaults& faults, std::string* why);

}  // namespace pcr
