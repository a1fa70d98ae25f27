// The decoding thread counts the loader's classes take.
#pragma once

#include <mutex>
#include <new>
#include <string>
#include <thread>

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

// f(), with an allocation failure inside it returned as OutOfMemory naming
// `what` rather than thrown: no exception leaves a loader's thread. F
// returns a Status or a Result.
template <typename F>
auto OutOfMemoryAsStatus(const char* what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return Status::OutOfMemory(std::string(what) + ": out of memory");
  }
}

// A thread running rep->ReadAhead(), whose allocation failure becomes
// rep->error_ (set under rep->mu_, waking rep->changed_'s waiters) rather
// than an exception leaving the thread.
template <typename Rep>
std::thread ReadAheadThread(Rep* rep) {
  return std::thread([rep] {
    const Status failed = OutOfMemoryAsStatus("reading ahead", [rep] {
      rep->ReadAhead();
      return Status::OK();
    });
    if (failed.ok()) return;
    std::lock_guard<std::mutex> lock(rep->mu_);
    rep->error_ = failed;
    rep->changed_.notify_all();
  });
}

}  // namespace pcr
