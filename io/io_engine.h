// I/O engines: how the reader's planned byte ranges reach storage.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>

#include "format/coding.h"
#include "pcr/io.h"
#include "pcr/status.h"

namespace pcr {

// Opens `path` read-only with `flags` added, refusing anything but a regular
// file (a FIFO, device or socket would block or never end) before reading a
// byte. Errors name the path and the reason: NotFound when it does not exist,
// InvalidArgument for a non-regular file, NotSupported when `flags` hold
// O_DIRECT and the filesystem refuses it, else IOError with the errno text.
// With `size`, sets it to the file's size.
Result<int> OpenRegularFile(const std::string& path, int flags = 0, uint64_t* size = nullptr);
// The whole regular file at `path`, read with OpenRegularFile.
Result<Bytes> ReadRegularFile(const std::string& path);

// An open, read-only file: on disk, an object read over HTTP or from an S3
// store, or bytes in memory (a file already read whole, or a fuzzer's input)
// that every engine reads by copying.
class RandomAccessFile {
 public:
  ~RandomAccessFile();
  RandomAccessFile(const RandomAccessFile&) = delete;
  RandomAccessFile& operator=(const RandomAccessFile&) = delete;

  // -1 once closed, and for a file in memory or remote.
  int fd() const { return fd_; }
  bool in_memory() const { return in_memory_; }
  bool remote() const { return remote_; }
  bool closed() const { return closed_; }
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Opened with O_DIRECT: reads must be aligned to kDirectAlignment.
  bool direct() const { return direct_; }
  // Closes the descriptor; later reads fail with an error naming the file.
  void Close();
  // A file on disk whose size or modification time is no longer what it was
  // when opened (rewritten in place); false for other files, and for one
  // replaced by a rename, which the descriptor still reads as it was.
  bool ChangedOnDisk() const;

 private:
  friend class IoEngine;
  RandomAccessFile(std::string path, int fd, uint64_t size, bool direct, int64_t mtime_ns = 0)
      : path_(std::move(path)), fd_(fd), size_(size), direct_(direct), mtime_ns_(mtime_ns) {}
  RandomAccessFile(std::string path, Bytes bytes)
      : path_(std::move(path)), fd_(-1), size_(bytes.size()), direct_(false), in_memory_(true),
        memory_(std::move(bytes)) {}
  // A remote object of `size` bytes.
  RandomAccessFile(std::string path, uint64_t size)
      : path_(std::move(path)), fd_(-1), size_(size), direct_(false), remote_(true) {}
  std::string path_;
  int fd_;
  uint64_t size_;
  bool direct_;
  int64_t mtime_ns_ = 0;
  bool in_memory_ = false;
  bool remote_ = false;
  bool closed_ = false;
  Bytes memory_;
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

// Fault injection for tests; both engines honour it.
struct IoFaults {
  uint64_t max_bytes_per_call = 0;  // > 0: each read call moves at most this many bytes
  uint32_t eagain_every = 0;        // > 0: every Nth completed call reports EAGAIN instead
  bool refuse_direct = false;       // opening with O_DIRECT fails as on a filesystem without it
  bool refuse_uring = false;        // creating a ring fails as under seccomp
  // Called by each read call once it holds what it reads with (a ring), before its first I/O.
  std::function<void()> in_read;
};

// A token bucket: Acquire(n) returns once n more bytes fit under `mbps` MB/s
// (10^6 bytes), with a bucket of kCapBurst worth of bytes, or false as soon
// as `cancel` holds true. Thread-safe.
inline constexpr std::chrono::milliseconds kCapBurst{20};
class BandwidthCap {
 public:
  explicit BandwidthCap(double mbps) : mbps_(mbps) {}
  bool Acquire(uint64_t bytes, const std::atomic<bool>* cancel = nullptr);

 private:
  const double mbps_;  // <= 0: no cap
  std::mutex mu_;
  std::chrono::steady_clock::time_point until_{};
};

struct IoOp;
class HttpClient;

// Engines are safe to call from several threads at once; each io_uring read
// call takes a ring of its own. A process forked while no read was running
// (a DataLoader worker) may go on using an engine made before the fork: it
// makes rings and an HTTP client of its own, leaving the parent's alone.
class IoEngine {
 public:
  IoEngine(const IoEngineOptions& options, const IoFaults& faults);
  virtual ~IoEngine();
  virtual std::string_view name() const = 0;

  // Opens `path` for reading, with O_DIRECT when options.direct and the
  // filesystem allows it; otherwise buffered, with note() saying so.
  // http(s):// and s3:// paths are objects read with range requests; opening
  // one asks for its size.
  Result<std::unique_ptr<RandomAccessFile>> Open(const std::string& path);
  // The same where the size is known (from a manifest): a remote object is
  // then opened without a request; a local file must have that size.
  Result<std::unique_ptr<RandomAccessFile>> OpenKnownSize(const std::string& path, uint64_t size);
  // A file of `bytes` in memory, named `name` in errors.
  static std::unique_ptr<RandomAccessFile> OpenMemory(std::string name, Bytes bytes);
  // The whole file at `path`. A remote object is one GET of its first
  // `first_bytes` (the answer gives its size), and one more for the rest of a
  // longer object: no request for its size first.
  Result<Bytes> ReadWhole(const std::string& path, uint64_t first_bytes = 1 << 20);

  // Fills every request. Each request gets its own status (a short read at
  // end of file, a closed file and I/O errors name the file and range); the
  // result is the first failing request's status, or OK.
  Status Read(std::span<ReadRequest> requests);

  IoCounters counters() const;
  // HTTP requests sent for remote paths, retries included.
  uint64_t remote_requests() const;
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
  // Blocks until `bytes` fit under the bandwidth cap; false, at once, when
  // the caller cancelled (options_.cancel).
  bool Throttle(uint64_t bytes);
  // The status of a read that `Throttle` stopped.
  static Status CancelledRead(const IoOp& op);
  // True when fault injection turns this completion into EAGAIN.
  bool InjectEagain();
  void AddNote(const std::string& note);

  IoEngineOptions options_;
  IoFaults faults_;

 private:
  friend Result<std::unique_ptr<IoEngine>> MakeIoEngine(const IoEngineOptions& options, const IoFaults& faults);
  std::atomic<uint64_t> reads_{0};
  std::atomic<uint64_t> ios_{0};
  std::atomic<uint64_t> bytes_read_{0};
  std::atomic<int64_t> nanos_{0};
  std::atomic<uint64_t> completions_{0};
  // The client of remote paths, made on first use.
  Result<HttpClient*> Http();

  mutable std::mutex mu_;  // guards note_ and http_
  std::string note_;
  std::unique_ptr<HttpClient> http_;
  BandwidthCap cap_;
};

// Creates the engine options.kind asks for; an explicit kUring fails where
// no ring can be made. `faults` are for tests.
Result<std::unique_ptr<IoEngine>> MakeIoEngine(const IoEngineOptions& options = {}, const IoFaults& faults = {});

}  // namespace pcr
