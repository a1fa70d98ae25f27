// The decoding thread counts the loader's classes take.
#pragma once

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

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

// The threads a checked `threads` option stands for: itself, or one per core for 0.
inline int ResolveThreads(int threads) {
  return threads > 0 ? threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
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

// f(state, i) for i in 0..n on up to threads.size() threads, the calling
// one included, each with its own state (at least one); allocation failures
// become OutOfMemory. The lowest i whose call failed goes to *failed, and its
// Status is returned.
template <typename State, typename F>
Status ParallelFor(size_t n, std::vector<std::unique_ptr<State>>& states, F&& f, size_t* failed) {
  std::vector<Status> errors(n);
  std::atomic<size_t> next{0};
  auto work = [&](State& state) {
    for (size_t i = next++; i < n; i = next++) errors[i] = OutOfMemoryAsStatus("decoding", [&] { return f(state, i); });
  };
  const size_t used = std::max<size_t>(1, std::min(states.size(), n));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < used; ++t) pool.emplace_back(work, std::ref(*states[t]));
  work(*states[0]);
  for (std::thread& t : pool) t.join();
  for (size_t i = 0; i < n; ++i) {
    if (errors[i].ok()) continue;
    if (failed != nullptr) *failed = i;
    return errors[i];
  }
  return Status::OK();
}

}  // namespace pcr
