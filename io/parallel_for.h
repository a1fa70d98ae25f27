// Running independent requests (uploads, copies, checks) a few at a time.
#pragma once

#include <cstddef>
#include <functional>

#include "pcr/status.h"

namespace pcr {

// Runs fn(0) .. fn(n - 1) on up to `threads` threads, the caller's among
// them; none starts once one has failed. Returns the first error.
Status ParallelFor(size_t n, unsigned threads, const std::function<Status(size_t)>& fn);

}  // namespace pcr
