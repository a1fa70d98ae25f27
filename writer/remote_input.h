// Inputs of conversions on HTTP(S) servers and S3-compatible stores: files
// and objects read at offsets (objects front to back in ranged GETs of a
// bounded size, read ahead), and byte ranges fetched ahead of a conversion
// that asks for them by source index.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "format/coding.h"
#include "io/http_client.h"
#include "pcr/status.h"

namespace pcr {

// Bytes read at offsets from a local file or an object.
// Thread safety: not thread-safe.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  const std::string& name() const { return name_; }
  uint64_t size() const { return size_; }
  // `length` bytes at `offset`: Corruption past the end, IOError (or
  // NotFound) naming the file or object, the range and the cause.
  virtual Status ReadAt(uint64_t offset, size_t length, uint8_t* out) = 0;
  // For an object: a checksum (CRC-64/NVME) of [offset, offset + length) as
  // read in the stream of the whole object, to compare with the same bytes
  // read again later; none for a local file or bytes no longer held.
  virtual Result<std::optional<uint64_t>> StreamChecksum(uint64_t, uint64_t) { return std::optional<uint64_t>(); }
  // For an object with a digest: reads what the stream has not reached and
  // checks every byte against the digest. DataLoss naming the object on a
  // mismatch; OK for a local file or an object without a digest.
  virtual Status Verify() { return Status::OK(); }
  // The bytes the stream has read so far, and their CRC-64/NVME, to tell
  // two reads of an object that has no digest apart; 0 and 0 for a file.
  virtual std::pair<uint64_t, uint64_t> streamed() const { return {0, 0}; }
  // The digest the object's bytes are checked against, for messages; empty
  // for none.
  virtual std::string digest() const { return ""; }

 protected:
  ByteSource(std::string name, uint64_t size) : name_(std::move(name)), size_(size) {}

 private:
  const std::string name_;
  const uint64_t size_;
};

// The local file `path`, or, for an http(s):// or s3:// path, the object
// read through `client` (which must outlive it) front to back, in windows of
// `window` bytes fetched as two ranged GETs at once: a read past the last
// window's end fetches every window up to it, so that the whole stream is
// checked against the object's digest (its size and digest come from a HEAD
// request); the previous window is kept, and a read before it is fetched
// alone.
Result<std::unique_ptr<ByteSource>> OpenByteSource(const std::string& path, HttpClient* client,
                                                   uint64_t window = uint64_t{16} << 20);

// The whole object at the http(s):// or s3:// `path`, in ranged GETs of 8
// MiB, many in flight, checked against the object's digest (HttpClient::
// Stat) and read again on a mismatch, up to RemoteOptions::retries times;
// then DataLoss naming the object and both digests.
Result<Bytes> ReadWholeObject(const std::string& path, HttpClient& client);
// [offset, offset + length) of that object, of `object_size` bytes, into
// out, in the same GETs (unchecked: a part has no digest).
Status ReadObjectRange(const std::string& path, HttpClient& client, uint64_t object_size, uint64_t offset,
                       uint64_t length, uint8_t* out);

// "in 3 attempts", for a DataLoss message.
std::string Attempts(unsigned n);

// One byte range of an object.
struct ObjectRange {
  std::string path;
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t object_size = 0;  // 0: not checked
  // For a range of the whole object: its digest, as a listing gives it (an
  // ETag). Bytes that fail it are checked against the object's HEAD (which
  // tells an ETag that is no MD5) and fetched again, up to the retries.
  ObjectDigest digest;
};

// Fetches the ranges of sources 0..count-1 in index order, from the first
// one asked for, on threads of its own (started then) (batches of GETs in flight together, several batches at once, so that
// one batch's last answers do not leave the link idle), up to max_ahead
// bytes ahead of the callers, while they ask for
// them (in about increasing order, as a conversion's jobs do). A source
// asked for far ahead moves the fetching there; one already passed is
// fetched alone.
// Thread safety: Get may be called from several threads at once; `client`
// and `range` must outlive the prefetcher.
class RangePrefetcher {
 public:
  RangePrefetcher(HttpClient& client, std::function<ObjectRange(uint64_t)> range, uint64_t count,
                  uint64_t max_ahead = uint64_t{64} << 20);
  ~RangePrefetcher();
  RangePrefetcher(const RangePrefetcher&) = delete;
  RangePrefetcher& operator=(const RangePrefetcher&) = delete;

  // The bytes of source `index`, or the error of their GET.
  Result<Bytes> Get(uint64_t index);
  // Source `index` fetched again, now, by itself.
  Result<Bytes> Refetch(uint64_t index) { return FetchAlone(index); }

 private:
  struct Entry {
    bool ready = false;
    uint64_t length = 0;
    Status status;
    Bytes data;
  };
  void Loop();
  Result<Bytes> FetchAlone(uint64_t index);

  HttpClient& client_;
  const std::function<ObjectRange(uint64_t)> range_;
  const uint64_t count_;
  const uint64_t max_ahead_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::map<uint64_t, Entry> entries_;  // guarded by mu_: fetched or in flight
  uint64_t next_ = 0;                  // guarded by mu_: the next index to fetch
  uint64_t buffered_ = 0;              // guarded by mu_: bytes of entries_
  unsigned waiting_ = 0;               // guarded by mu_: callers waiting for an index not yet fetched
  bool stop_ = false;                  // guarded by mu_
  bool started_ = false;               // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace pcr
