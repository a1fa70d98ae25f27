// Reading byte ranges of objects over HTTP(S) and from S3-compatible object
// stores: many range GETs in flight on reused connections (libcurl multi),
// retried with backoff on server errors, dropped connections, stalls and
// short bodies, S3 requests signed with SigV4.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "io/object_digest.h"
#include "io/s3_request.h"
#include "pcr/io.h"
#include "pcr/status.h"

namespace pcr {

// libcurl's global initialisation, once per process.
void InitCurl();

namespace http_internal {
struct Transfer;
}  // namespace http_internal

// One range of one object to read into `out` (length bytes).
struct RemoteRead {
  std::string_view path;
  uint64_t offset = 0;
  uint64_t length = 0;
  uint8_t* out = nullptr;
  Status* status = nullptr;  // set on failure
  uint64_t object_size = 0;  // the size the object had when opened; answers for another size fail
};

// Thread safety: every method may be called from several threads at once.
// One thread of the client's own runs every request on shared connections,
// within options.concurrency and max_bytes_in_flight over all callers, first
// asked first started (retries go first once their backoff ends).
// A process forked from the one that made the client must not use it
// (forked() says so); destroying it there leaks it rather than hang.
// A 206 answer must name the range asked for and the object's size
// (Content-Range); anything else fails, so a changed object is never mixed in.
// An answer whose body has a digest of its own (Content-MD5, Content-Digest)
// is checked against it and retried as a network fault; one that keeps
// failing is DataLoss. A request that no attempt got an answer to fails
// after RemoteOptions::answer_timeout_ms.
class HttpClient {
 public:
  // S3 credentials and region are read from the environment now. Once
  // `cancel` (when set) holds true, requests not finished fail Cancelled
  // (IoEngineOptions::cancel).
  static Result<std::unique_ptr<HttpClient>> Create(const RemoteOptions& options,
                                                    std::shared_ptr<const std::atomic<bool>> cancel = nullptr);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  struct ObjectInfo {
    uint64_t size = 0;
    // What the store says the object's bytes are (S3 flexible checksums,
    // asked for with x-amz-checksum-mode; HTTP Repr-Digest, Digest or
    // Content-MD5; an S3 ETag that is an MD5, see RemoteOptions::etag_is_md5),
    // or none.
    ObjectDigest digest;
  };
  // The object's size and digest (a HEAD request). NotFound on 404 (but for
  // S3's NoSuchBucket), IOError naming the object, the status and S3's error
  // on other failures left after the retries.
  Result<ObjectInfo> Stat(const std::string& path);
  Result<uint64_t> Size(const std::string& path);
  // Performs every read; each failed read gets a status naming the object,
  // range and cause. Returns when all have finished.
  void Fetch(std::span<RemoteRead> reads);
  // One GET of the object's first `length` bytes (fewer when it is shorter)
  // into `out`: returns the object's size, from the answer's Content-Range
  // (or its body, when a server answers 200 with the whole object).
  Result<uint64_t> FetchPrefix(const std::string& path, uint64_t length, uint8_t* out);

  const RemoteOptions& options() const { return options_; }
  // Requests sent so far, retries included.
  uint64_t requests() const { return requests_.load(std::memory_order_relaxed); }
  // True in a process forked from the one that made the client: its thread
  // and connections are the parent's.
  bool forked() const;

 private:
  struct Target {
    std::string url;
    std::vector<std::string> headers;  // "Name: value"
  };
  using Transfer = http_internal::Transfer;
  explicit HttpClient(const RemoteOptions& options) : options_(options) {}
  // The URL and headers of a request for `path` (S3: signed), with `range`
  // ("a-b") or without (HEAD).
  Result<Target> Prepare(std::string_view path, const std::string& range, bool head) const;
  // Queues `transfers` for the loop and waits until every one has finished.
  void Run(std::span<Transfer> transfers);
  // The client's thread: starts queued transfers, retries failed ones after
  // their backoff and finishes the rest.
  void Loop();
  // Adds `t` to the multi handle; false (with t's status set) if it cannot start.
  bool Start(Transfer* t);
  // Handles a completed attempt: finished, or queued again after a backoff.
  void Complete(Transfer* t, int code, std::vector<Transfer*>* later);
  void Finish(Transfer* t, Status status);
  // Finish with Cancelled naming t's path.
  void FinishCancelled(Transfer* t);
  bool Cancelled() const { return cancel_ && cancel_->load(); }

  const RemoteOptions options_;
  std::shared_ptr<const std::atomic<bool>> cancel_;
  S3Signer signer_;
  std::atomic<uint64_t> requests_{0};

  void* multi_ = nullptr;    // CURLM; curl_multi_wakeup from any thread, else the loop's only
  std::vector<void*> idle_;  // CURL easy handles kept for their connections; the loop's only
  std::mutex mu_;
  std::condition_variable finished_;
  std::vector<Transfer*> submitted_;  // guarded by mu_: not yet seen by the loop
  bool stop_ = false;                 // guarded by mu_
  std::unique_ptr<std::thread> loop_;
  int pid_ = 0;  // of the process that made the client
};

}  // namespace pcr
