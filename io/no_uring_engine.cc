// Built without liburing: every engine reads with pread.
#include "io/io_engine_internal.h"

namespace pcr {

std::unique_ptr<IoEngine> MakeUringEngine(const IoEngineOptions&, const IoFaults&, std::string* why) {
  *why = "pcr was built without liburing";
  return nullptr;
}

}  // namespace pcr
