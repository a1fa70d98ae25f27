#include "io/http_client.h"

#include <curl/curl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>

namespace pcr {

using Clock = std::chrono::steady_clock;

namespace http_internal {

// One request: a range of an object into its buffer, or a HEAD for its size.
struct Transfer {
  RemoteRead read;
  bool head = false;
  HttpClient::ObjectInfo* info = nullptr;  // HEAD: the object's size and digest, on success
  uint64_t* prefix_of = nullptr;           // a prefix of an object of unknown size: that size, on success
  size_t* pending = nullptr;  // of the call that asked, guarded by the client's mu_
  CURL* handle = nullptr;
  curl_slist* headers = nullptr;
  std::string range;          // "first-last", empty for HEAD
  uint64_t received = 0;
  bool overflow = false;
  std::vector<std::pair<std::string, std::string>> answer_headers;  // of the last answer: lowercase names
  std::string error_body;     // of an answer other than 200 and 206, its start
  bool answered = false;      // some attempt had an answer's first byte
  std::chrono::milliseconds silent{0};      // spent in flight by attempts that had no answer
  std::chrono::milliseconds body_limit{0};  // the stall limit once an answer has begun
  std::string probed;         // a failed HEAD's error, while a GET asks for the error's body
  Clock::time_point attempt_start;  // of the attempt in flight
  unsigned attempt = 0;
  Clock::time_point ready;    // not before this (backoff)
  Clock::time_point moved;    // when the last byte arrived, or the attempt started
  int64_t seen = 0;           // bytes of the answer's body by then
  std::chrono::milliseconds stall_limit{0};
  bool stalled = false;       // aborted: no byte for stall_limit
  const std::atomic<bool>* cancel = nullptr;  // the client's, when set
};

}  // namespace http_internal

namespace {

using http_internal::Transfer;

size_t Write(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t bytes = size * n;
  long status = 0;
  curl_easy_getinfo(t->handle, CURLINFO_RESPONSE_CODE, &status);
  if (t->head) return bytes;
  if (status != 200 && status != 206) {  // an error's body, not data
    constexpr size_t kKept = 64 << 10;
    if (t->error_body.size() < kKept) t->error_body.append(data, std::min(bytes, kKept - t->error_body.size()));
    return bytes;
  }
  if (bytes > t->read.length - t->received) {
    t->overflow = true;
    return 0;  // more than the range: the server ignored it
  }
  std::memcpy(t->read.out + t->received, data, bytes);
  t->received += bytes;
  return bytes;
}

size_t Header(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string_view line(data, size * n);
  if (!t->answered) t->stall_limit = t->body_limit;
  t->answered = true;
  t->moved = Clock::now();
  if (line.starts_with("HTTP/")) {  // a new answer (after a 100 or a redirect)
    t->answer_headers.clear();
    return size * n;
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return size * n;
  std::string name(line.substr(0, colon));
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  std::string_view value = line.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) value.remove_suffix(1);
  t->answer_headers.emplace_back(std::move(name), std::string(value));
  return size * n;
}

std::string HeaderValue(const Transfer& t, std::string_view name) {
  for (const auto& [n, v] : t.answer_headers) {
    if (n == name) return v;
  }
  return "";
}

// Aborts a transfer that has moved no byte for its stall limit.
int Progress(void* user, curl_off_t, curl_off_t now_bytes, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  if (t->cancel != nullptr && t->cancel->load()) return 1;
  const auto now = Clock::now();
  if (now_bytes != t->seen) {
    t->seen = now_bytes;
    t->moved = now;
  } else if (t->stall_limit.count() > 0 && now - t->moved > t->stall_limit) {
    t->stalled = true;
    return 1;
  }
  return 0;
}

// Whether a failed attempt is worth another: the network or the server, not
// the request.
bool Retryable(CURLcode code, long status) {
  if (code == CURLE_OK) return RetryableStatus(status);
  switch (code) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_ABORTED_BY_CALLBACK:  // a stall
      return true;
    default:
      return false;
  }
}

std::string Describe(CURLcode code, long status, const Transfer& t) {
  if (t.stalled && !t.answered) return "no answer in " + std::to_string(t.stall_limit.count()) + " ms";
  if (t.stalled) return "stalled: no byte for " + std::to_string(t.stall_limit.count()) + " ms";
  if (code != CURLE_OK) return curl_easy_strerror(code);
  return DescribeHttpError(status, t.error_body, HeaderValue(t, "x-amz-bucket-region"));
}

}  // namespace

void InitCurl() {
  static const bool done = [] { return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK; }();
  (void)done;
}

Result<std::unique_ptr<HttpClient>> HttpClient::Create(const RemoteOptions& options,
                                                       std::shared_ptr<const std::atomic<bool>> cancel) {
  InitCurl();
  std::unique_ptr<HttpClient> c(new HttpClient(options));
  c->cancel_ = std::move(cancel);
  c->multi_ = curl_multi_init();
  if (c->multi_ == nullptr) return Status::IOError("cannot start libcurl");
  curl_multi_setopt(static_cast<CURLM*>(c->multi_), CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
  curl_multi_setopt(static_cast<CURLM*>(c->multi_), CURLMOPT_MAX_HOST_CONNECTIONS,
                    static_cast<long>(std::max(1u, options.concurrency)));
  // Keep the connections open between batches.
  curl_multi_setopt(static_cast<CURLM*>(c->multi_), CURLMOPT_MAXCONNECTS,
                    static_cast<long>(std::max(1u, options.concurrency)));
  c->signer_ = S3Signer::FromOptions(options);
  c->pid_ = getpid();
  c->loop_ = std::make_unique<std::thread>(&HttpClient::Loop, c.get());
  return c;
}

bool HttpClient::forked() const { return getpid() != pid_; }

HttpClient::~HttpClient() {
  if (forked()) {
    // The thread is the parent's and never ran here; its state and the
    // connections shared with the parent are left alone.
    (void)loop_.release();
    return;
  }
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  if (loop_) {
    curl_multi_wakeup(static_cast<CURLM*>(multi_));
    loop_->join();
  }
  for (void* h : idle_) curl_easy_cleanup(static_cast<CURL*>(h));
  if (multi_ != nullptr) curl_multi_cleanup(static_cast<CURLM*>(multi_));
}

Result<HttpClient::Target> HttpClient::Prepare(std::string_view path, const std::string& range, bool head) const {
  Target t;
  if (!path.starts_with("s3://")) {
    t.url = std::string(path);
    return t;
  }
  PCR_ASSIGN_OR_RETURN(const S3Object object, signer_.Address(path));
  t.url = object.url;
  std::vector<std::pair<std::string, std::string>> headers;
  if (!range.empty()) headers.emplace_back("range", "bytes=" + range);
  if (head) headers.emplace_back("x-amz-checksum-mode", "ENABLED");
  PCR_ASSIGN_OR_RETURN(t.headers, signer_.Headers(path, object, head ? "HEAD" : "GET", "", headers, Sha256Hex("")));
  return t;
}

Result<HttpClient::ObjectInfo> HttpClient::Stat(const std::string& path) {
  Status status;
  ObjectInfo info;
  Transfer t;
  t.read = {path, 0, 0, nullptr, &status, 0};
  t.head = true;
  t.info = &info;
  Run({&t, 1});
  if (!status.ok()) return status;
  return info;
}

Result<uint64_t> HttpClient::Size(const std::string& path) {
  PCR_ASSIGN_OR_RETURN(const ObjectInfo info, Stat(path));
  return info.size;
}

Result<uint64_t> HttpClient::FetchPrefix(const std::string& path, uint64_t length, uint8_t* out) {
  if (length == 0) return Status::InvalidArgument(path + ": a prefix of 0 bytes");
  Status status;
  uint64_t size = 0;
  Transfer t;
  t.read = {path, 0, length, out, &status, 0};
  t.range = "0-" + std::to_string(length - 1);
  t.prefix_of = &size;
  Run({&t, 1});
  if (!status.ok()) return status;
  return size;
}

void HttpClient::Fetch(std::span<RemoteRead> reads) {
  std::vector<Transfer> transfers;
  transfers.reserve(reads.size());
  for (const RemoteRead& r : reads) {
    if (r.length == 0) continue;
    Transfer& t = transfers.emplace_back();
    t.read = r;
    t.range = std::to_string(r.offset) + "-" + std::to_string(r.offset + r.length - 1);
  }
  Run(transfers);
}

void HttpClient::Run(std::span<Transfer> transfers) {
  if (transfers.empty()) return;
  if (forked()) {
    for (Transfer& t : transfers) {
      *t.read.status = Status::IOError(std::string(t.read.path) + ": the HTTP client was made in another process");
    }
    return;
  }
  size_t pending = transfers.size();
  {
    std::lock_guard lock(mu_);
    for (Transfer& t : transfers) {
      t.pending = &pending;
      t.cancel = cancel_.get();
      submitted_.push_back(&t);
    }
  }
  curl_multi_wakeup(static_cast<CURLM*>(multi_));
  std::unique_lock lock(mu_);
  finished_.wait(lock, [&] { return pending == 0; });
  for (Transfer& t : transfers) curl_slist_free_all(t.headers);
}

void HttpClient::Finish(Transfer* t, Status status) {
  if (!status.ok()) *t->read.status = std::move(status);
  std::lock_guard lock(mu_);
  if (--*t->pending == 0) finished_.notify_all();
}

void HttpClient::FinishCancelled(Transfer* t) {
  Finish(t, Status::Cancelled(std::string(t->read.path) + ": request cancelled"));
}

bool HttpClient::Start(Transfer* t) {
  const std::string path(t->read.path);
  auto target = Prepare(path, t->range, t->head);
  if (!target.ok()) {
    Finish(t, target.status());
    return false;
  }
  CURL* h = idle_.empty() ? curl_easy_init() : static_cast<CURL*>(idle_.back());
  if (!idle_.empty()) idle_.pop_back();
  if (h == nullptr) {
    Finish(t, Status::IOError(path + ": cannot start a request"));
    return false;
  }
  curl_easy_reset(h);
  t->handle = h;
  t->received = 0;
  t->overflow = false;
  t->answer_headers.clear();
  t->error_body.clear();
  t->moved = Clock::now();
  t->attempt_start = t->moved;  // of this attempt
  t->seen = 0;
  t->stall_limit = t->body_limit = std::chrono::milliseconds(options_.timeout_ms);
  if (!t->answered && options_.answer_timeout_ms > 0) {
    // Time waiting for a slot or a backoff is not the endpoint's silence.
    const auto left = std::chrono::milliseconds(options_.answer_timeout_ms) - t->silent;
    if (t->stall_limit.count() == 0 || left < t->stall_limit) t->stall_limit = std::max(left, std::chrono::milliseconds(1));
  }
  t->stalled = false;
  curl_slist_free_all(t->headers);
  t->headers = nullptr;
  for (const std::string& header : target->headers) t->headers = curl_slist_append(t->headers, header.c_str());
  curl_easy_setopt(h, CURLOPT_URL, target->url.c_str());
  if (path.starts_with("s3://") && !signer_.ca_bundle().empty()) {
    curl_easy_setopt(h, CURLOPT_CAINFO, signer_.ca_bundle().c_str());
  }
  curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L);  // the path as signed
  if (t->head) {
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  } else {
    curl_easy_setopt(h, CURLOPT_RANGE, t->range.c_str());
  }
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, Header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, t);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, t->headers);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, Write);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, t);
  curl_easy_setopt(h, CURLOPT_PRIVATE, t);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_PIPEWAIT, 1L);
  curl_easy_setopt(h, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2TLS));
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(t->stall_limit.count()));
  // Stalls are caught by Progress; curl's averaged low-speed check stays as a backstop.
  if (options_.timeout_ms > 0) {
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, static_cast<long>(std::max(1u, options_.timeout_ms / 1000)));
  }
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, Progress);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, t);
  if (curl_multi_add_handle(static_cast<CURLM*>(multi_), h) != CURLM_OK) {
    idle_.push_back(h);
    Finish(t, Status::IOError(path + ": cannot start a request"));
    return false;
  }
  requests_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void HttpClient::Complete(Transfer* t, int result, std::vector<Transfer*>* later) {
  const auto code = static_cast<CURLcode>(result);
  CURL* h = t->handle;
  long status = 0;
  curl_off_t length = -1;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_getinfo(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
  curl_multi_remove_handle(static_cast<CURLM*>(multi_), h);
  idle_.push_back(h);
  t->handle = nullptr;
  const RemoteRead& r = t->read;
  const std::string path(r.path);
  if (Cancelled()) {
    FinishCancelled(t);
    return;
  }
  const std::string tries = t->attempt > 0 ? " after " + std::to_string(t->attempt + 1) + " attempts" : "";
  if (!t->answered) t->silent += std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t->attempt_start);
  auto retry = [&] {
    if (t->attempt >= options_.retries) return false;
    const auto delay = std::chrono::milliseconds(100 << std::min(t->attempt, 6u));
    // An endpoint that never answers is not waited for past the answer timeout.
    if (!t->answered && options_.answer_timeout_ms > 0 &&
        t->silent >= std::chrono::milliseconds(options_.answer_timeout_ms)) {
      return false;
    }
    t->ready = Clock::now() + delay;
    ++t->attempt;
    later->push_back(t);
    return true;
  };
  // A 404 is NotFound, but for a missing bucket (which a GET's body tells).
  auto failure = [&](const std::string& where, const std::string& why) {
    const bool missing = code == CURLE_OK && status == 404 && XmlValue(t->error_body, "Code") != "NoSuchBucket";
    return missing ? Status::NotFound(where + ": " + why) : Status::IOError(where + ": " + why + tries);
  };
  if (!t->probed.empty()) {
    Finish(t, failure(path, code == CURLE_OK && status >= 300 ? Describe(code, status, *t) : t->probed));
    return;
  }
  if (t->head) {
    // A HEAD's error has no body: a GET of one byte asks for S3's code and message.
    if (code == CURLE_OK && status >= 300 && status < 500 && status != 429) {
      t->probed = Describe(code, status, *t);
      t->head = false;
      t->range = "0-0";
      t->ready = Clock::now();
      later->push_back(t);
      return;
    }
    if (code == CURLE_OK && status == 200 && length >= 0) {
      t->info->size = static_cast<uint64_t>(length);
      t->info->digest = DigestFromHeaders(t->answer_headers, path.starts_with("s3://") && options_.etag_is_md5);
      Finish(t, Status::OK());
    } else if (!Retryable(code, status) || !retry()) {
      Finish(t, failure(path, code == CURLE_OK && status == 200 ? "no Content-Length" : Describe(code, status, *t)));
    }
    return;
  }
  const bool whole = r.offset == 0 && status == 200;  // a server may answer a range of all bytes with 200
  const std::string content_range = HeaderValue(*t, "content-range");
  // A prefix's answer says the object's size: "bytes 0-E/SIZE", E + 1 the
  // bytes it holds, min(length, SIZE); or 200 with the whole object.
  uint64_t prefix_size = t->received;
  if (t->prefix_of != nullptr && code == CURLE_OK && status == 206) {
    const size_t slash = content_range.rfind('/');
    const char* end = content_range.data() + content_range.size();
    const bool parsed =
        slash != std::string::npos && std::from_chars(content_range.data() + slash + 1, end, prefix_size).ptr == end;
    const uint64_t expect = parsed ? std::min(r.length, prefix_size) : 0;
    if (!parsed || expect == 0 ||
        content_range != "bytes 0-" + std::to_string(expect - 1) + "/" + std::to_string(prefix_size)) {
      Finish(t, Status::IOError(path + ": bytes " + t->range + ": answered with Content-Range '" + content_range +
                                "', not a prefix of the object"));
      return;
    }
  }
  const uint64_t expected = t->prefix_of != nullptr ? std::min(r.length, prefix_size) : r.length;
  const std::string want = "bytes " + t->range + "/" + std::to_string(r.object_size);
  const bool right_range = whole || r.object_size == 0 ? true : content_range == want;
  const std::string where = path + ": bytes " + t->range;
  if (code == CURLE_OK && (status == 206 || whole) && t->received == expected && right_range) {
    // An answer with a digest of its body is checked against it.
    const ObjectDigest body = BodyDigestFromHeaders(t->answer_headers);
    std::string got;
    if (DigestMatches(body, {reinterpret_cast<const char*>(r.out), expected}, &got)) {
      if (t->prefix_of != nullptr) *t->prefix_of = prefix_size;
      Finish(t, Status::OK());
    } else if (!retry()) {
      Finish(t, Status::DataLoss(where + ": the body does not match its " + body.Describe() + " (it has " + got +
                                 ")" + tries + ": the server or the network damages it"));
    }
    return;
  }
  if (code == CURLE_OK && status == 206 && !right_range) {
    Finish(t, Status::IOError(where + ": answered with Content-Range '" + content_range + "', expected '" + want +
                              "' (the object changed?)"));
    return;
  }
  if (t->overflow || (code == CURLE_OK && status == 200)) {
    Finish(t, Status::IOError(where + ": the server ignores byte ranges (HTTP " + std::to_string(status) + ")"));
    return;
  }
  const bool short_body = code == CURLE_OK && status == 206 && t->received != expected;
  if ((short_body || Retryable(code, status)) && retry()) return;
  Finish(t, failure(where, short_body ? "body of " + std::to_string(t->received) + " bytes" : Describe(code, status, *t)));
}

void HttpClient::Loop() {
  CURLM* multi = static_cast<CURLM*>(multi_);
  const unsigned concurrency = std::max(1u, options_.concurrency);
  std::deque<Transfer*> queue;   // to start, in the order asked
  std::vector<Transfer*> later;  // to start again once ready
  size_t in_flight = 0;
  uint64_t bytes_in_flight = 0;
  while (true) {
    {
      std::lock_guard lock(mu_);
      if (stop_) return;
      queue.insert(queue.end(), submitted_.begin(), submitted_.end());
      submitted_.clear();
    }
    if (Cancelled()) {
      for (Transfer* t : queue) FinishCancelled(t);
      for (Transfer* t : later) FinishCancelled(t);
      queue.clear();
      later.clear();
    }
    const auto now = Clock::now();
    for (auto it = later.begin(); it != later.end();) {
      if ((*it)->ready <= now) {
        queue.push_front(*it);
        it = later.erase(it);
      } else {
        ++it;
      }
    }
    auto fits = [&](const Transfer* t) {
      return in_flight == 0 || (in_flight < concurrency && bytes_in_flight + t->read.length <= options_.max_bytes_in_flight);
    };
    while (!queue.empty() && fits(queue.front())) {
      Transfer* t = queue.front();
      queue.pop_front();
      if (Start(t)) {
        ++in_flight;
        bytes_in_flight += t->read.length;
      }
    }
    int running = 0;
    curl_multi_perform(multi, &running);
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi, &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      Transfer* t = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, reinterpret_cast<char**>(&t));
      const CURLcode result = msg->data.result;
      --in_flight;
      bytes_in_flight -= t->read.length;
      Complete(t, result, &later);
    }
    // Often enough to notice stalls soon after the timeout.
    int wait_ms = options_.timeout_ms == 0 ? 1000 : static_cast<int>(std::clamp(options_.timeout_ms / 8, 10u, 1000u));
    if (!later.empty()) {
      auto soonest = later.front()->ready;
      for (const Transfer* t : later) soonest = std::min(soonest, t->ready);
      const auto until = std::chrono::duration_cast<std::chrono::milliseconds>(soonest - Clock::now()).count();
      wait_ms = static_cast<int>(std::clamp<int64_t>(until, 0, wait_ms));
    }
    if (!queue.empty() && fits(queue.front())) wait_ms = 0;
    curl_multi_poll(multi, nullptr, 0, wait_ms, nullptr);
  }
}

}  // namespace pcr
