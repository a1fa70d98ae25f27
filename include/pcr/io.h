// How pcr reads storage: the I/O engine options shared by datasets and
// tables, their counters, and how requests are coalesced into reads.
//
// Thread safety: plain values.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <string_view>

#include "pcr/export.h"
#include "pcr/status.h"

namespace pcr {

enum class IoEngineKind {
  kAuto,   // io_uring where a ring can be created, else pread
  kPread,  // one pread() per request, in order
  kUring,  // io_uring: many reads in flight, one submit per batch; refused where no ring can be made
};

// "auto", "pread" or "uring"; InvalidArgument naming `text` otherwise.
PCR_EXPORT Result<IoEngineKind> ParseIoEngineKind(std::string_view text);

// Reading http(s):// and s3:// paths.
struct RemoteOptions {
  unsigned concurrency = 64;    // range GETs in flight at most
  // Bytes asked for by the GETs in flight at most; one GET may always start
  // (a longer one then runs alone). Many small reads overlap their round
  // trips, while large ones do not start so many flows at once that they
  // overrun the link's queue.
  uint64_t max_bytes_in_flight = 16 << 20;
  unsigned retries = 4;         // more attempts after a server error, a dropped connection, a stall or a short body
  unsigned timeout_ms = 30000;  // to connect, and for a transfer that moves no byte (a stall); 0: no stall limit
  // A request that no attempt has had an answer to (no connection, or no
  // byte of an answer) fails after this long, without further retries: an
  // endpoint that accepts connections and never answers. 0: no limit.
  unsigned answer_timeout_ms = 20000;
  // Coalescing of remote reads, where each request costs a round trip:
  // requests this close share a GET (hole_limit) while it stays at most
  // max_read long. Each widens CoalesceOptions' value for remote files;
  // a CoalesceOptions::hole_limit of 0 (never read through a gap) stays 0.
  uint64_t hole_limit = 256 << 10;
  uint64_t max_read = 64 << 20;
  // S3: the store's endpoint, such as "http://127.0.0.1:9000", addressed
  // path-style; empty: AWS_ENDPOINT_URL, else AWS itself.
  std::string s3_endpoint;
  std::string s3_region;   // empty: AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1
  bool anonymous = false;  // never sign S3 requests (public buckets)
  unsigned list_page_size = 1000;  // keys per page of an S3 listing (ListObjectsV2's max-keys, 1..1000)
  // Whether an S3 ETag of 32 hex digits is the object's MD5, as S3 makes it
  // for objects not encrypted with SSE-KMS or SSE-C (which the answer's
  // headers tell). Inputs read whole are checked against it where the
  // object has no flexible checksum; false for a store whose ETags are not.
  bool etag_is_md5 = true;
};

// Uploads to object storage: one PUT below multipart_threshold bytes, else
// a multipart upload of part_size parts (5 MiB to 5 GiB; larger where a file
// would need more than 10,000). Files go up `concurrency` at a time, and
// the PUTs in flight, of whole files and of parts, are at most `concurrency`
// (1..64) holding at most `memory` bytes of bodies together; one PUT may
// always be sent, however long.
struct UploadOptions {
  uint64_t multipart_threshold = uint64_t{64} << 20;
  uint64_t part_size = uint64_t{16} << 20;
  unsigned concurrency = 8;
  uint64_t memory = uint64_t{256} << 20;
  // The output store's endpoint, where it is not the inputs' store; empty:
  // RemoteOptions::s3_endpoint's, resolved as for reading.
  std::string s3_endpoint;
};

struct IoEngineOptions {
  IoEngineKind kind = IoEngineKind::kAuto;
  unsigned queue_depth = 64;        // io_uring: reads in flight at most (1..4096)
  bool direct = false;              // open files with O_DIRECT; buffered where refused
  uint64_t max_io_bytes = 1 << 20;  // longer requests are split into I/Os this long, in flight together
  double max_mbps = 0;              // bandwidth cap in MB/s (10^6 bytes), finite; 0: none
  RemoteOptions remote;
  // When set, once it holds true every read of the engine not yet done
  // (and so every open, which reads) returns Cancelled: checked before each
  // I/O, every 50 ms while a read waits for the bandwidth cap, and at least
  // once a second while a remote request is in flight or waits for a retry.
  // The engine (and the dataset or table it reads for) shares ownership.
  std::shared_ptr<const std::atomic<bool>> cancel;
};

struct IoCounters {
  uint64_t reads = 0;       // requests completed by storage
  uint64_t ios = 0;         // storage operations issued for them (long requests are split)
  uint64_t bytes_read = 0;  // bytes those requests asked for
  double seconds = 0;       // wall time spent reading
};

// Offset, length and buffer alignment of O_DIRECT reads.
inline constexpr uint64_t kDirectAlignment = 4096;

// A heap buffer aligned to kDirectAlignment whose bytes start undefined, so
// large read buffers cost no zero-filling. Grows, never shrinks.
// Thread safety: a value; not for concurrent mutation.
class PCR_EXPORT IoBuffer {
 public:
  IoBuffer() = default;
  explicit IoBuffer(size_t size) { Resize(size); }
  // Moving leaves the source empty.
  IoBuffer(IoBuffer&& other) noexcept
      : data_(std::move(other.data_)), size_(std::exchange(other.size_, 0)),
        capacity_(std::exchange(other.capacity_, 0)) {}
  IoBuffer& operator=(IoBuffer&& other) noexcept {
    data_ = std::move(other.data_);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
    return *this;
  }
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

// Defaults measured on the project's reference machine (virtio SSD, fio,
// O_DIRECT): a 4 KiB read costs 48 us at queue depth 1 while sequential reads
// run at 1.1-1.2 GB/s, so skipping a gap pays off only past ~57 KB; and reads
// reach full bandwidth from 1 MiB, so longer merges only delay first bytes.
struct CoalesceOptions {
  // Neighbouring requests whose gap is at most this many bytes share a read;
  // the gap is read and discarded.
  uint64_t hole_limit = 64 << 10;
  // A read grows by merging only while it stays at most this long; a single
  // request longer than this is still one read.
  uint64_t max_read = 4 << 20;
};

}  // namespace pcr
