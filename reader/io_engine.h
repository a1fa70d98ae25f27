// I/O engines: how the reader's planned byte ranges reach storage.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "format/status.h"

namespace pcr {

// An open, read-only file.
class RandomAccessFile {
 public:
  static Result<std::unique_ptr<RandomAccessFile>> Open(const std::string& path);
  ~RandomAccessFile();
  RandomAccessFile(const RandomAccessFile&) = delete;
  RandomAccessFile& operator=(const RandomAccessFile&) = delete;

  int fd() const { return fd_; }
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  RandomAccessFile(std::string path, int fd, uint64_t size)
      : path_(std::move(path)), fd_(fd), size_(size) {}
  std::string path_;
  int fd_;
  uint64_t size_;
};

struct ReadRequest {
  const RandomAccessFile* file = nullptr;
  uint64_t offset = 0;
  uint64_t length = 0;
  uint8_t* out = nullptr;  // length bytes
};

struct IoCounters {
  uint64_t reads = 0;       // read requests issued to storage
  uint64_t bytes_read = 0;  // bytes those reads returned
};

// Engines may be called from several threads at once.
class IoEngine {
 public:
  virtual ~IoEngine() = default;
  virtual std::string_view name() const = 0;
  // Fills every request completely. A request past the end of its file is an
  // error naming the file and range.
  virtual Status Read(std::span<const ReadRequest> requests) = 0;
  IoCounters counters() const { return {reads_.load(), bytes_read_.load()}; }

 protected:
  void Count(uint64_t bytes) {
    reads_.fetch_add(1, std::memory_order_relaxed);
    bytes_read_.fetch_add(bytes, std::memory_order_relaxed);
  }

 private:
  std::atomic<uint64_t> reads_{0};
  std::atomic<uint64_t> bytes_read_{0};
};

// One pread() per request, in order, on the calling thread.
std::unique_ptr<IoEngine> MakePreadEngine();

}  // namespace pcr
