#include "writer/remote_input.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "io/io_engine.h"
#include "io/object_digest.h"
#include "io/remote_path.h"

namespace pcr {

namespace {

class LocalSource : public ByteSource {
 public:
  LocalSource(std::string path, int fd, uint64_t size) : ByteSource(std::move(path), size), fd_(fd) {}
  ~LocalSource() override { close(fd_); }

  Status ReadAt(uint64_t offset, size_t length, uint8_t* out) override {
    size_t done = 0;
    while (done < length) {
      const ssize_t n = pread(fd_, out + done, length - done, static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        return Status::IOError(name() + ": cannot read at offset " + std::to_string(offset) + ": " +
                               std::strerror(errno));
      }
      if (n == 0) return Status::Corruption(name() + ": truncated at offset " + std::to_string(offset + done));
      done += static_cast<size_t>(n);
    }
    return Status::OK();
  }

 private:
  const int fd_;
};

// Fetches [offset, offset + length) of `path` into out, as GETs of at most
// `piece` bytes in flight together.
Status FetchRange(HttpClient& client, const std::string& path, uint64_t object_size, uint64_t offset, uint64_t length,
                  uint8_t* out, uint64_t piece) {
  const size_t n = static_cast<size_t>((length + piece - 1) / piece);
  std::vector<Status> statuses(n);
  std::vector<RemoteRead> reads;
  reads.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t at = uint64_t{i} * piece;
    reads.push_back({.path = path,
                     .offset = offset + at,
                     .length = std::min(piece, length - at),
                     .out = out + at,
                     .status = &statuses[i],
                     .object_size = object_size});
  }
  client.Fetch(reads);
  for (const Status& s : statuses) PCR_RETURN_IF_ERROR(s);
  return Status::OK();
}

class RemoteSource : public ByteSource {
 public:
  RemoteSource(std::string path, HttpClient::ObjectInfo info, HttpClient& client, uint64_t window)
      : ByteSource(std::move(path), info.size),
        client_(client),
        window_(std::max<uint64_t>(window, 2)),
        digest_(std::move(info.digest)),
        checker_(std::make_unique<DigestChecker>(digest_)) {}

  Status ReadAt(uint64_t offset, size_t length, uint8_t* out) override {
    if (offset > size() || length > size() - offset) {
      return Status::Corruption(name() + ": truncated at offset " + std::to_string(std::min(offset, size())));
    }
    if (length <= window_) PCR_RETURN_IF_ERROR(StreamTo(offset + length));
    if (offset >= begin_ && offset + length <= end()) {
      std::memcpy(out, buffer_.data() + (offset - begin_), length);
      return Status::OK();
    }
    // Behind the kept windows (a member read again), or longer than a window.
    return FetchRange(client_, name(), size(), offset, length, out, window_ / 2);
  }

  Result<std::optional<uint64_t>> StreamChecksum(uint64_t offset, uint64_t length) override {
    if (offset < begin_ || offset > size() || length > size() - offset) return std::optional<uint64_t>();
    uint64_t crc = 0;
    for (uint64_t at = offset; at < offset + length;) {
      while (at >= end()) PCR_RETURN_IF_ERROR(Advance());
      const uint64_t n = std::min(offset + length, end()) - at;
      crc = Crc64Nvme({reinterpret_cast<const char*>(buffer_.data() + (at - begin_)), n}, crc);
      at += n;
    }
    return std::optional<uint64_t>(crc);
  }

  Status Verify() override {
    if (digest_.empty()) return Status::OK();
    PCR_RETURN_IF_ERROR(StreamTo(size()));
    if (checker_->Matches()) return Status::OK();
    return Status::DataLoss(name() + ": the bytes read do not match the store's " + digest_.Describe() +
                            " (they have " + checker_->got() + "): the store or the network damaged them");
  }

  std::string digest() const override { return digest_.empty() ? "" : digest_.Describe(); }
  std::pair<uint64_t, uint64_t> streamed() const override { return {end(), crc_}; }

 private:
  uint64_t end() const { return begin_ + buffer_.size(); }

  // Fetches windows until the stream has reached `until`.
  Status StreamTo(uint64_t until) {
    while (end() < until) PCR_RETURN_IF_ERROR(Advance());
    return Status::OK();
  }

  // Fetches the window after the stream's end, keeping the window before it.
  Status Advance() {
    const uint64_t n = std::min(window_, size() - end());
    if (n == 0) return Status::Corruption(name() + ": truncated at offset " + std::to_string(size()));
    Bytes next(n);
    PCR_RETURN_IF_ERROR(FetchRange(client_, name(), size(), end(), n, next.data(), (n + 1) / 2));
    checker_->Update({reinterpret_cast<const char*>(next.data()), next.size()});
    if (digest_.empty()) crc_ = Crc64Nvme({reinterpret_cast<const char*>(next.data()), next.size()}, crc_);
    const uint64_t drop = buffer_.size() > window_ ? buffer_.size() - window_ : 0;
    buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<ptrdiff_t>(drop));
    begin_ += drop;
    buffer_.insert(buffer_.end(), next.begin(), next.end());
    return Status::OK();
  }

  HttpClient& client_;
  const uint64_t window_;
  const ObjectDigest digest_;
  std::unique_ptr<DigestChecker> checker_;  // fed every byte of the stream, in order
  uint64_t crc_ = 0;                         // without a digest: of every byte of the stream
  uint64_t begin_ = 0;  // the kept windows: bytes [begin_, end())
  Bytes buffer_;
};

// Whether `data`, the whole object of `r`, has the object's digest.
Status CheckWhole(const ObjectRange& r, const Bytes& data, unsigned attempts) {
  std::string got;
  if (DigestMatches(r.digest, {reinterpret_cast<const char*>(data.data()), data.size()}, &got)) return Status::OK();
  return Status::DataLoss(r.path + ": the bytes read do not match the store's " + r.digest.Describe() +
                          " (they have " + got + ") " + Attempts(attempts) +
                          ": the store or the network damages them");
}

// Fetches the whole object `r` until its bytes have its digest. Unless
// `headed` (the digest is the object's HEAD's), the first mismatch asks the
// HEAD for it (a listing's ETag may be no MD5: SSE-KMS); then the object is
// fetched again, up to the retries.
Result<Bytes> FetchWholeChecked(HttpClient& client, ObjectRange r, Bytes data, bool headed = false) {
  const unsigned retries = client.options().retries;
  unsigned attempts = 1;
  Status checked = CheckWhole(r, data, attempts);
  while (!checked.ok()) {
    // The HEAD first, whatever the retries: it tells an ETag that is no MD5.
    if (!headed) {
      PCR_ASSIGN_OR_RETURN(const HttpClient::ObjectInfo info, client.Stat(r.path));
      if (info.size != r.object_size) {
        return Status::IOError(r.path + ": the object changed while read: " + std::to_string(info.size) +
                               " bytes, listed with " + std::to_string(r.object_size));
      }
      r.digest = info.digest;
      headed = true;
      checked = CheckWhole(r, data, attempts);
      continue;
    }
    if (attempts > retries) break;
    ++attempts;
    data.assign(r.length, 0);
    PCR_RETURN_IF_ERROR(FetchRange(client, r.path, r.object_size, 0, r.length, data.data(), uint64_t{8} << 20));
    checked = CheckWhole(r, data, attempts);
  }
  PCR_RETURN_IF_ERROR(checked);
  return data;
}

bool IsWhole(const ObjectRange& r) { return !r.digest.empty() && r.offset == 0 && r.length == r.object_size; }

}  // namespace

Result<std::unique_ptr<ByteSource>> OpenByteSource(const std::string& path, HttpClient* client, uint64_t window) {
  if (IsRemotePath(path)) {
    PCR_ASSIGN_OR_RETURN(HttpClient::ObjectInfo info, client->Stat(path));
    return std::unique_ptr<ByteSource>(new RemoteSource(path, std::move(info), *client, window));
  }
  uint64_t size = 0;
  PCR_ASSIGN_OR_RETURN(const int fd, OpenRegularFile(path, 0, &size));
  return std::unique_ptr<ByteSource>(new LocalSource(path, fd, size));
}

Result<Bytes> ReadWholeObject(const std::string& path, HttpClient& client) {
  PCR_ASSIGN_OR_RETURN(const HttpClient::ObjectInfo info, client.Stat(path));
  Bytes out(info.size);
  PCR_RETURN_IF_ERROR(ReadObjectRange(path, client, info.size, 0, info.size, out.data()));
  return FetchWholeChecked(
      client, {.path = path, .offset = 0, .length = info.size, .object_size = info.size, .digest = info.digest},
      std::move(out), true);
}

std::string Attempts(unsigned n) { return n == 1 ? "in 1 attempt" : "in " + std::to_string(n) + " attempts"; }

Status ReadObjectRange(const std::string& path, HttpClient& client, uint64_t object_size, uint64_t offset,
                       uint64_t length, uint8_t* out) {
  return FetchRange(client, path, object_size, offset, length, out, uint64_t{8} << 20);
}

RangePrefetcher::RangePrefetcher(HttpClient& client, std::function<ObjectRange(uint64_t)> range, uint64_t count,
                                 uint64_t max_ahead)
    : client_(client), range_(std::move(range)), count_(count), max_ahead_(max_ahead) {}

RangePrefetcher::~RangePrefetcher() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  changed_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void RangePrefetcher::Loop() {
  constexpr size_t kBatch = 16;
  std::unique_lock lock(mu_);
  while (true) {
    changed_.wait(lock, [&] { return stop_ || (next_ < count_ && (buffered_ < max_ahead_ || waiting_ > 0)); });
    if (stop_) return;
    // A batch of ranges from next_, their GETs in flight together.
    std::vector<uint64_t> batch;
    std::vector<ObjectRange> ranges;
    uint64_t bytes = 0;
    while (next_ < count_ && batch.size() < kBatch && (batch.empty() || bytes < max_ahead_ / 16)) {
      ObjectRange r = range_(next_);
      bytes += r.length;
      entries_[next_].length = r.length;
      batch.push_back(next_++);
      ranges.push_back(std::move(r));
    }
    buffered_ += bytes;
    lock.unlock();
    std::vector<Bytes> data(batch.size());
    std::vector<Status> statuses(batch.size());
    std::vector<RemoteRead> reads;
    for (size_t i = 0; i < batch.size(); ++i) {
      data[i].resize(ranges[i].length);
      reads.push_back({.path = ranges[i].path,
                       .offset = ranges[i].offset,
                       .length = ranges[i].length,
                       .out = data[i].data(),
                       .status = &statuses[i],
                       .object_size = ranges[i].object_size});
    }
    client_.Fetch(reads);
    for (size_t i = 0; i < batch.size(); ++i) {
      if (!statuses[i].ok() || !IsWhole(ranges[i])) continue;
      auto checked = FetchWholeChecked(client_, ranges[i], std::move(data[i]));
      if (checked.ok()) {
        data[i] = std::move(checked).value();
      } else {
        statuses[i] = checked.status();
      }
    }
    lock.lock();
    for (size_t i = 0; i < batch.size(); ++i) {
      auto it = entries_.find(batch[i]);
      if (it == entries_.end()) continue;  // dropped while in flight
      it->second.ready = true;
      it->second.status = std::move(statuses[i]);
      it->second.data = std::move(data[i]);
    }
    changed_.notify_all();
  }
}

Result<Bytes> RangePrefetcher::FetchAlone(uint64_t index) {
  const ObjectRange r = range_(index);
  Bytes out(r.length);
  Status status;
  RemoteRead read{.path = r.path,
                  .offset = r.offset,
                  .length = r.length,
                  .out = out.data(),
                  .status = &status,
                  .object_size = r.object_size};
  client_.Fetch({&read, 1});
  if (!status.ok()) return status;
  if (IsWhole(r)) return FetchWholeChecked(client_, r, std::move(out));
  return out;
}

Result<Bytes> RangePrefetcher::Get(uint64_t index) {
  // How far ahead of the fetching a caller may ask before it moves there,
  // and how far behind the callers a source is given up.
  constexpr uint64_t kJump = 256, kBehind = 256;
  if (index >= count_) return Status::InvalidArgument("source " + std::to_string(index) + " of " + std::to_string(count_));
  std::unique_lock lock(mu_);
  if (!started_) {
    started_ = true;
    next_ = index;
    for (int i = 0; i < 4; ++i) threads_.emplace_back([this] { Loop(); });
  }
  if (entries_.count(index) == 0) {
    if (index < next_) {
      lock.unlock();
      return FetchAlone(index);
    }
    for (auto e = entries_.begin(); e != entries_.end() && e->first + kBehind < index;) {
      if (e->second.ready) {
        buffered_ -= e->second.length;
        e = entries_.erase(e);
      } else {
        ++e;
      }
    }
    if (index >= next_ + kJump) next_ = index;
    ++waiting_;
    changed_.notify_all();
    changed_.wait(lock, [&] { return index < next_; });
    --waiting_;
  }
  auto found = [&] { return entries_.find(index); };
  changed_.wait(lock, [&] { return found() == entries_.end() || found()->second.ready; });
  const auto it = found();
  if (it == entries_.end()) {  // given up by a caller far ahead
    lock.unlock();
    return FetchAlone(index);
  }
  Entry entry = std::move(it->second);
  entries_.erase(it);
  buffered_ -= entry.length;
  changed_.notify_all();
  if (!entry.status.ok()) return entry.status;
  return std::move(entry.data);
}

}  // namespace pcr
