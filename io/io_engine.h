// I/O engines: how the reader's planned byte ranges reach storage.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>

#include "format/coding.h"
#include "format/status.h"

namespace pcr {

// Opens `path` read-only with `flags` added, refusing anything but a regular
// file (a FIFO, device or socket would block or never end) before reading a
// byte. Errors name the path and the reason: NotFound when it does not exist,
// InvalidArgument for a non-regular file, NotSupported when `flags` hold
// O_DIRECT and the filesystem refuses it, else IOError with the errno text.
Result<int> OpenRegularFile(const std::string& path, int flags = 0);
// The whole regular file at `path`, read with OpenRegularFile.
Result<Bytes> ReadRegularFile(const std::string& path);

// An open, read-only file.
class RandomAccessFile {
 public:
  ~RandomAccessFile();
  RandomAccessFile(const RandomAccessFile&) = delete;
  RandomAccessFile& operator=(const RandomAccessFile&) = delete;

  // -1 once closed.
  int fd() const { return fd_; }
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Opened with O_DIRECT: reads must be aligned to kDirectAlignment.
  bool direct() const { return direct_; }
  // Closes the descriptor; later reads fail with an error naming the file.
  void Close();

 private:
  friend class IoEngine;
  RandomAccessFile(std::string path, int fd, uint64_t size, bool direct)
      : path_(std::move(path)), fd_(fd), size_(size), direct_(direct) {}
  std::string path_;
  int fd_;
  uint64_t size_;
  bool direct_;
};

// Offset, length and buffer alignment of O_DIRECT reads.
inline constexpr uint64_t kDirectAlignment = 4096;

// A heap buffer aligned to kDirectAlignment whose bytes start undefined, so
// large read buffers cost no zero-filling. Grows, never shrinks.
class IoBuffer {
 public:
  IoBuffer() = default;
  explicit IoBuffer(size_t size) { Resize(size); }
  // Keeps the allocation when it is large enough; contents are undefined after growing.
  void Resize(size_t size);
  uint8_t* data() { return data_.get(); }
  const uint8_t* data() const { return data_.get(); }
  size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> data_;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

// On a direct file, a request whose offset, length and buffer are aligned to
// kDirectAlignment is read in place; others go through a bounce buffer.
struct ReadRequest {
  const RandomAccessFile* file = nullptr;
  uint64_t offset = 0;
  uint64_t length = 0;
  uint8_t* out = nullptr;  // length bytes
  Status status;           // set by IoEngine::Read
};

enum class IoEngineKind {
  kAuto,   // $PCR_IO_ENGINE if set, else io_uring where a ring can be created, else pread
  kPread,  // one pread() per request, in order
  kUring,  // io_uring: many reads in flight, one submit per batch
};

// Fault injection for tests; both engines honour it.
struct IoFaults {
  uint64_t max_bytes_per_call = 0;  // > 0: each read call moves at most this many bytes
  uint32_t eagain_every = 0;        // > 0: every Nth completed call reports EAGAIN instead
  bool refuse_direct = false;       // opening with O_DIRECT fails as on a filesystem without it
  bool refuse_uring = false;        // creating a ring fails as under seccomp
};

struct IoEngineOptions {
  IoEngineKind kind = IoEngineKind::kAuto;
  unsigned queue_depth = 64;  // io_uring: reads in flight at most
  bool direct = false;        // open files with O_DIRECT; buffered where refused
  uint64_t max_io_bytes = 1 << 20;  // longer requests are split into I/Os this long, in flight together
  double max_mbps = 0;        // bandwidth cap in MB/s (10^6 bytes); 0: none
  IoFaults faults;
};

struct IoCounters {
  uint64_t reads = 0;       // requests completed by storage
  uint64_t ios = 0;         // storage operations issued for them (long requests are split)
  uint64_t bytes_read = 0;  // bytes those requests asked for
  double seconds = 0;       // wall time spent inside Read()
};

// A token bucket: Acquire(n) returns once n more bytes fit under `mbps` MB/s
// (10^6 bytes), with a bucket of kCapBurst worth of bytes. Thread-safe.
inline constexpr std::chrono::milliseconds kCapBurst{20};
class BandwidthCap {
 public:
  explicit BandwidthCap(double mbps) : mbps_(mbps) {}
  void Acquire(uint64_t bytes);

 private:
  const double mbps_;  // <= 0: no cap
  std::mutex mu_;
  std::chrono::steady_clock::time_point until_{};
};

struct IoOp;

// Engines are safe to call from several threads; io_uring serialises callers.
class IoEngine {
 public:
  explicit IoEngine(const IoEngineOptions& options) : options_(options), cap_(options.max_mbps) {}
  virtual ~IoEngine() = default;
  virtual std::string_view name() const = 0;

  // Opens `path` for reading, with O_DIRECT when options.direct and the
  // filesystem allows it; otherwise buffered, with note() saying so.
  Result<std::unique_ptr<RandomAccessFile>> Open(const std::string& path);

  // Fills every request. Each request gets its own status (a short read at
  // end of file, a closed file and I/O errors name the file and range); the
  // result is the first failing request's status, or OK.
  Status Read(std::span<ReadRequest> requests);

  IoCounters counters() const;
  const IoEngineOptions& options() const { return options_; }
  // Why the engine runs other than asked (no io_uring, no O_DIRECT); "" if not.
  std::string note() const;

 protected:
  // Performs every op, setting its status on failure. REQUIRES: ops on
  // direct files are aligned (Read() arranges it).
  virtual void DoRead(std::span<IoOp> ops) = 0;
  // Bytes the next read call of `op` asks for, `done` bytes in.
  uint64_t CallLength(const IoOp& op, uint64_t done) const;
  // Applies a read call's result (bytes, or -errno) to `op`; true when the op
  // is finished, successfully or with its status set.
  bool Advance(IoOp& op, uint64_t* done, int64_t result);
  // Blocks until `bytes` fit under the bandwidth cap.
  void Throttle(uint64_t bytes);
  // True when fault injection turns this completion into EAGAIN.
  bool InjectEagain();
  void AddNote(const std::string& note);

  IoEngineOptions options_;

 private:
  friend Result<std::unique_ptr<IoEngine>> MakeIoEngine(const IoEngineOptions& options);
  std::atomic<uint64_t> reads_{0};
  std::atomic<uint64_t> ios_{0};
  std::atomic<uint64_t> bytes_read_{0};
  std::atomic<int64_t> nanos_{0};
  std::atomic<uint64_t> completions_{0};
  mutable std::mutex mu_;  // guards note_
  std::string note_;
  BandwidthCap cap_;
};

// Creates the engine options.kind asks for. kAuto reads PCR_IO_ENGINE
// ("pread" or "uring"); an explicit kUring fails where no ring can be made.
Result<std::unique_ptr<IoEngine>> MakeIoEngine(const IoEngineOptions& options = {});

}  // namespace pcr
