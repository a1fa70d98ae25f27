// Transcoding source images on a fixed set of threads, batch after batch.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "format/file_format.h"
#include "writer/transcode.h"

namespace pcr {

// Its threads start once and wait between batches. Run() may be called
// from one thread at a time.
class TranscodePool {
 public:
  struct Item {
    Result<TranscodedImage> image = Status::OK();  // errors give the reason, not the file
    uint64_t input_bytes = 0;
  };

  // Transcodes files below `root` on `jobs` threads in all: jobs - 1 of its
  // own and the caller's. REQUIRES: ValidateScanScript(script).ok()
  TranscodePool(int jobs, std::string root, ScanScript script, TranscodeOptions options);
  ~TranscodePool();
  TranscodePool(const TranscodePool&) = delete;
  TranscodePool& operator=(const TranscodePool&) = delete;

  // Reads and transcodes root/key of every source; result i answers sources[i].
  std::vector<Item> Run(std::span<const SampleMetadata> sources);

 private:
  void Loop();
  void Work();

  const std::string root_;
  const ScanScript script_;
  const TranscodeOptions options_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable start_;
  std::condition_variable done_;
  uint64_t generation_ = 0;  // guarded by mu_; one more per batch
  size_t pending_ = 0;       // guarded by mu_; threads still in the batch
  bool stop_ = false;        // guarded by mu_
  // The batch: set under mu_ before generation_ changes.
  std::span<const SampleMetadata> sources_;
  std::vector<Item>* out_ = nullptr;
  std::atomic<size_t> next_{0};
};

}  // namespace pcr
