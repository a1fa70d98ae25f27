#include "io/io_engine.h"

#include "io/http_client.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>
#include <vector>

#include "io/io_engine_internal.h"
#include "io/remote_path.h"

namespace pcr {

void IoBuffer::Resize(size_t size) {
  if (size > capacity_) {
    const size_t bytes = (size + kDirectAlignment - 1) / kDirectAlignment * kDirectAlignment;
    data_.reset(static_cast<uint8_t*>(std::aligned_alloc(kDirectAlignment, bytes)));
    if (!data_) throw std::bad_alloc();
    capacity_ = bytes;
  }
  size_ = size;
}

namespace {

int64_t ModifiedNs(const struct stat& st) { return int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec; }

}  // namespace

RandomAccessFile::~RandomAccessFile() { Close(); }

bool RandomAccessFile::ChangedOnDisk() const {
  struct stat st;
  if (fd_ < 0 || mtime_ns_ == 0 || fstat(fd_, &st) != 0) return false;
  return static_cast<uint64_t>(st.st_size) != size_ || ModifiedNs(st) != mtime_ns_;
}

void RandomAccessFile::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  closed_ = true;
  memory_ = Bytes();
}

namespace {

const char* FileTypeName(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

}  // namespace

Result<int> OpenRegularFile(const std::string& path, int flags, uint64_t* size) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer.
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | flags);
  if (fd < 0) {
    const int e = errno;
    if (e == ENOENT) return Status::NotFound(path + ": cannot open: " + std::strerror(e));
    if (e == EINVAL && (flags & O_DIRECT) != 0) {
      return Status::NotSupported(path + ": the filesystem refuses O_DIRECT");
    }
    return Status::IOError(path + ": cannot open: " + std::strerror(e));
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int e = errno;
    close(fd);
    return Status::IOError(path + ": cannot stat: " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return Status::InvalidArgument(path + ": not a regular file (" + FileTypeName(st.st_mode) + ")");
  }
  if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
    const int e = errno;
    close(fd);
    return Status::IOError(path + ": cannot clear O_NONBLOCK: " + std::strerror(e));
  }
  if (size != nullptr) *size = static_cast<uint64_t>(st.st_size);
  return fd;
}

Result<Bytes> ReadRegularFile(const std::string& path) {
  PCR_ASSIGN_OR_RETURN(const int fd, OpenRegularFile(path));
  Bytes data;
  uint8_t buf[1 << 16];
  while (true) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      close(fd);
      return Status::IOError(path + ": cannot read: " + std::strerror(e));
    }
    if (n == 0) break;
    data.insert(data.end(), buf, buf + n);
  }
  close(fd);
  return data;
}

std::unique_ptr<RandomAccessFile> IoEngine::OpenMemory(std::string name, Bytes bytes) {
  return std::unique_ptr<RandomAccessFile>(new RandomAccessFile(std::move(name), std::move(bytes)));
}

IoEngine::IoEngine(const IoEngineOptions& options, const IoFaults& faults)
    : options_(options), faults_(faults), cap_(options.max_mbps) {}
IoEngine::~IoEngine() = default;

Result<HttpClient*> IoEngine::Http() {
  std::lock_guard<std::mutex> lock(mu_);
  // A forked process (a DataLoader worker) gets a client of its own; the
  // parent's is left as it is.
  if (http_ && http_->forked()) (void)http_.release();
  if (!http_) {
    PCR_ASSIGN_OR_RETURN(http_, HttpClient::Create(options_.remote, options_.cancel));
  }
  return http_.get();
}

uint64_t IoEngine::remote_requests() const {
  HttpClient* http = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    http = http_.get();
  }
  return http != nullptr ? http->requests() : 0;
}

Result<Bytes> IoEngine::ReadWhole(const std::string& path, uint64_t first_bytes) {
  if (!IsRemotePath(path)) {
    PCR_ASSIGN_OR_RETURN(auto file, Open(path));
    Bytes bytes(file->size());
    ReadRequest whole{file.get(), 0, bytes.size(), bytes.data()};
    PCR_RETURN_IF_ERROR(Read({&whole, 1}));
    return bytes;
  }
  const auto start = std::chrono::steady_clock::now();
  PCR_ASSIGN_OR_RETURN(HttpClient * http, Http());
  Bytes bytes(std::max<uint64_t>(first_bytes, 1));
  PCR_ASSIGN_OR_RETURN(const uint64_t size, http->FetchPrefix(path, bytes.size(), bytes.data()));
  uint64_t requests = 1;
  if (size > bytes.size()) {
    const uint64_t have = bytes.size();
    bytes.resize(size);
    Status status;
    RemoteRead rest{path, have, size - have, bytes.data() + have, &status, size};
    http->Fetch({&rest, 1});
    PCR_RETURN_IF_ERROR(status);
    ++requests;
  }
  bytes.resize(size);
  reads_.fetch_add(requests, std::memory_order_relaxed);
  ios_.fetch_add(requests, std::memory_order_relaxed);
  bytes_read_.fetch_add(size, std::memory_order_relaxed);
  nanos_.fetch_add(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count(),
      std::memory_order_relaxed);
  return bytes;
}

Result<std::unique_ptr<RandomAccessFile>> IoEngine::OpenKnownSize(const std::string& path, uint64_t size) {
  if (IsRemotePath(path)) return std::unique_ptr<RandomAccessFile>(new RandomAccessFile(path, size));
  PCR_ASSIGN_OR_RETURN(auto file, Open(path));
  if (file->size() != size) {
    return Status::Corruption(path + ": " + std::to_string(file->size()) + " bytes, expected " +
                              std::to_string(size));
  }
  return file;
}

Result<std::unique_ptr<RandomAccessFile>> IoEngine::Open(const std::string& path) {
  if (IsRemotePath(path)) {
    PCR_ASSIGN_OR_RETURN(HttpClient* http, Http());
    PCR_ASSIGN_OR_RETURN(const uint64_t size, http->Size(path));
    return std::unique_ptr<RandomAccessFile>(new RandomAccessFile(path, size));
  }
  int fd = -1;
  bool direct = false;
  if (options_.direct) {
    Result<int> opened = faults_.refuse_direct ? Result<int>(Status::NotSupported("O_DIRECT"))
                                                        : OpenRegularFile(path, O_DIRECT);
    if (opened.ok()) {
      fd = *opened;
      direct = true;
    } else if (opened.status().code() == StatusCode::kNotSupported) {
      AddNote(path + ": the filesystem refuses O_DIRECT; reading it buffered");
    } else {
      return opened.status();
    }
  }
  if (fd < 0) {
    PCR_ASSIGN_OR_RETURN(const int buffered, OpenRegularFile(path));
    fd = buffered;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int e = errno;
    close(fd);
    return Status::IOError(path + ": cannot stat: " + std::strerror(e));
  }
  return std::unique_ptr<RandomAccessFile>(
      new RandomAccessFile(path, fd, static_cast<uint64_t>(st.st_size), direct, ModifiedNs(st)));
}

namespace {

std::string Range(const ReadRequest& r) {
  return "read of " + std::to_string(r.length) + " bytes at offset " + std::to_string(r.offset);
}

}  // namespace

Status IoEngine::Read(std::span<ReadRequest> requests) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<IoOp> ops;
  std::vector<RemoteRead> remote;
  std::vector<IoBuffer> bounce(requests.size());
  std::vector<uint64_t> bounce_offset(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    ReadRequest& r = requests[i];
    r.status = Status::OK();
    if (r.file->closed()) {
      r.status = Status::IOError(r.file->path() + ": " + Range(r) + ": the file is closed");
      continue;
    }
    if (r.offset > r.file->size() || r.length > r.file->size() - r.offset) {
      r.status = Status::Corruption(r.file->path() + ": " + Range(r) + " runs past the end of the file (" +
                                    std::to_string(r.file->size()) + " bytes)");
      continue;
    }
    if (r.length == 0) continue;
    if (r.file->in_memory()) {
      std::memcpy(r.out, r.file->memory_.data() + r.offset, r.length);
      continue;
    }
    if (r.file->remote()) {
      remote.push_back({r.file->path(), r.offset, r.length, r.out, &r.status, r.file->size()});
      continue;
    }
    IoOp op{r.file, r.offset, r.length, r.length, r.out, &r.status};
    const bool aligned = r.offset % kDirectAlignment == 0 && r.length % kDirectAlignment == 0 &&
                         reinterpret_cast<uintptr_t>(r.out) % kDirectAlignment == 0;
    if (r.file->direct() && !aligned) {
      const uint64_t begin = r.offset / kDirectAlignment * kDirectAlignment;
      const uint64_t end = (r.offset + r.length + kDirectAlignment - 1) / kDirectAlignment * kDirectAlignment;
      bounce[i].Resize(end - begin);
      // The aligned range may run past the end of the file; only the bytes
      // up to the request's end are needed.
      op = {r.file, begin, end - begin, r.offset + r.length - begin, bounce[i].data(), &r.status};
      bounce_offset[i] = r.offset - begin;
    }
    // Buffered: ask the kernel to read a long request ahead as one stream;
    // io_uring would otherwise fault in each piece from a worker thread.
    if (!r.file->direct() && r.length > options_.max_io_bytes) {
      posix_fadvise(r.file->fd(), static_cast<off_t>(r.offset), static_cast<off_t>(r.length), POSIX_FADV_WILLNEED);
    }
    // Long requests become several I/Os of at most max_io_bytes, in flight
    // together.
    const uint64_t piece = std::max<uint64_t>(
        kDirectAlignment, options_.max_io_bytes / kDirectAlignment * kDirectAlignment);
    for (uint64_t at = 0; at < op.length; at += piece) {
      const uint64_t len = std::min(piece, op.length - at);
      const uint64_t needed = op.needed > at ? std::min(len, op.needed - at) : 0;
      ops.push_back({op.file, op.offset + at, len, needed, op.out + at, op.status});
    }
  }
  ios_.fetch_add(ops.size() + remote.size(), std::memory_order_relaxed);
  DoRead(ops);
  if (!remote.empty()) {
    Result<HttpClient*> http = Http();
    if (http.ok()) {
      (*http)->Fetch(remote);
    } else {
      for (RemoteRead& r : remote) *r.status = http.status();
    }
  }
  Status first = Status::OK();
  for (size_t i = 0; i < requests.size(); ++i) {
    ReadRequest& r = requests[i];
    if (!r.status.ok()) {
      if (first.ok()) first = r.status;
      continue;
    }
    if (r.length == 0 || r.file->in_memory()) continue;  // storage reads only
    if (bounce[i].size() > 0) std::memcpy(r.out, bounce[i].data() + bounce_offset[i], r.length);
    reads_.fetch_add(1, std::memory_order_relaxed);
    bytes_read_.fetch_add(r.length, std::memory_order_relaxed);
  }
  nanos_.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::steady_clock::now() - start)
                       .count(),
                   std::memory_order_relaxed);
  return first;
}

IoCounters IoEngine::counters() const {
  return {reads_.load(), ios_.load(), bytes_read_.load(), static_cast<double>(nanos_.load()) * 1e-9};
}

std::string IoEngine::note() const {
  std::lock_guard<std::mutex> lock(mu_);
  return note_;
}

void IoEngine::AddNote(const std::string& note) {
  std::lock_guard<std::mutex> lock(mu_);
  if (note_.find(note) != std::string::npos) return;
  if (!note_.empty()) note_ += "; ";
  note_ += note;
}

bool BandwidthCap::Acquire(uint64_t bytes, const std::atomic<bool>* cancel) {
  if (mbps_ <= 0) return true;
  std::chrono::steady_clock::time_point until;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto cost = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(static_cast<double>(bytes) / (mbps_ * 1e6)));
    // Unused budget accumulates for at most kCapBurst, so time spent in I/O
    // counts against the budget instead of adding to it.
    until_ = std::max(until_, std::chrono::steady_clock::now() - kCapBurst) + cost;
    until = until_;
  }
  if (cancel == nullptr) {
    std::this_thread::sleep_until(until);
    return true;
  }
  constexpr auto kCheck = std::chrono::milliseconds(50);
  while (!cancel->load()) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= until) return true;
    std::this_thread::sleep_until(std::min(until, now + kCheck));
  }
  return false;
}

bool IoEngine::Throttle(uint64_t bytes) {
  const std::atomic<bool>* cancel = options_.cancel.get();
  if (cancel != nullptr && cancel->load()) return false;
  return cap_.Acquire(bytes, cancel);
}

Status IoEngine::CancelledRead(const IoOp& op) {
  return Status::Cancelled(op.file->path() + ": read of " + std::to_string(op.length) + " bytes at offset " +
                           std::to_string(op.offset) + " cancelled");
}

bool IoEngine::InjectEagain() {
  const uint32_t every = faults_.eagain_every;
  return every > 0 && (completions_.fetch_add(1) + 1) % every == 0;
}

uint64_t IoEngine::CallLength(const IoOp& op, uint64_t done) const {
  uint64_t want = op.length - done;
  const uint64_t cap = faults_.max_bytes_per_call;
  if (cap > 0 && want > cap) {
    want = cap;
    if (op.file->direct()) want = std::max(kDirectAlignment, want / kDirectAlignment * kDirectAlignment);
  }
  return want;
}

bool IoEngine::Advance(IoOp& op, uint64_t* done, int64_t result) {
  const ReadRequest req{op.file, op.offset, op.length, op.out, Status::OK()};
  if (!op.status->ok()) return true;  // another piece of the request failed
  if (result < 0) {
    *op.status = Status::IOError(op.file->path() + ": " + Range(req) + " failed: " +
                                 std::strerror(static_cast<int>(-result)));
    return true;
  }
  if (result == 0) {
    if (*done < op.needed) {
      *op.status = Status::Corruption(op.file->path() + ": unexpected end of file at offset " +
                                      std::to_string(op.offset + *done) + " (" + Range(req) + ")");
    }
    return true;
  }
  *done += static_cast<uint64_t>(result);
  return *done >= op.length;
}

namespace {

class PreadEngine final : public IoEngine {
 public:
  using IoEngine::IoEngine;
  std::string_view name() const override { return "pread"; }

 protected:
  void DoRead(std::span<IoOp> ops) override {
    if (faults_.in_read) faults_.in_read();
    for (IoOp& op : ops) {
      uint64_t done = 0;
      while (true) {
        const uint64_t want = CallLength(op, done);
        if (!Throttle(want)) {
          *op.status = CancelledRead(op);
          break;
        }
        const ssize_t n = pread(op.file->fd(), op.out + done, want, static_cast<off_t>(op.offset + done));
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n >= 0 && InjectEagain()) continue;
        if (Advance(op, &done, n < 0 ? -errno : n)) break;
      }
    }
  }
};

}  // namespace

Result<IoEngineKind> ParseIoEngineKind(std::string_view text) {
  if (text == "auto") return IoEngineKind::kAuto;
  if (text == "pread") return IoEngineKind::kPread;
  if (text == "uring") return IoEngineKind::kUring;
  return Status::InvalidArgument("I/O engine '" + std::string(text) + "': expected auto, pread or uring");
}

Result<std::unique_ptr<IoEngine>> MakeIoEngine(const IoEngineOptions& options, const IoFaults& faults) {
  const IoEngineOptions& o = options;
  if (static_cast<unsigned>(o.kind) > static_cast<unsigned>(IoEngineKind::kUring)) {
    return Status::InvalidArgument("kind must be IoEngineKind::kAuto, kPread or kUring, not " +
                                   std::to_string(static_cast<int>(o.kind)));
  }
  if (!(std::isfinite(o.max_mbps) && o.max_mbps >= 0)) {
    return Status::InvalidArgument("max_mbps must be a finite number of MB/s, or 0 for no cap, not " +
                                   std::to_string(o.max_mbps));
  }
  if (o.queue_depth == 0 || o.queue_depth > 4096) {
    return Status::InvalidArgument("queue depth must be 1..4096");
  }
  // io_uring takes 32-bit lengths.
  if (o.max_io_bytes < kDirectAlignment || o.max_io_bytes > (uint64_t{1} << 30)) {
    return Status::InvalidArgument("max_io_bytes must be 4 KiB..1 GiB");
  }
  if (o.kind == IoEngineKind::kPread) return std::unique_ptr<IoEngine>(new PreadEngine(o, faults));
  std::string why;
  auto uring = MakeUringEngine(o, faults, &why);
  if (uring) return uring;
  if (o.kind == IoEngineKind::kUring) return Status::NotSupported("io_uring unavailable: " + why);
  auto engine = std::unique_ptr<IoEngine>(new PreadEngine(o, faults));
  engine->AddNote("io_uring unavailable (" + why + "); using pread");
  return engine;
}

}  // namespace pcr
