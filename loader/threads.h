// The decoding thread counts the loader's classes take.
#pragma once

#include <string>

#include "pcr/status.h"

namespace pcr {

inline constexpr int kMaxThreads = 1024;

// InvalidArgument unless `threads` is 0 (one per core) .. kMaxThreads.
inline Status CheckThreads(int threads) {
  if (threads < 0 || threads > kMaxThreads) {
    return Status::InvalidArgument("threads must be 0.." + std::to_string(kMaxThreads) + " (0: one per core), not " +
                                   std::to_string(threads));
  }
  return Status::OK();
}

}  // namespace pcr
