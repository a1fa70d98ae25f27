#include "io/http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <thread>

namespace pcr {

namespace {

using Clock = std::chrono::steady_clock;

const char* Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

// One transfer: a range of an object into its buffer.
struct Transfer {
  RemoteRead* read = nullptr;
  CURL* handle = nullptr;
  uint64_t received = 0;
  bool overflow = false;
  std::string content_range;  // the answer's Content-Range value
  unsigned attempt = 0;
  Clock::time_point ready;  // not before this (backoff)
  curl_slist* headers = nullptr;
  std::string range;
};

size_t Write(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t bytes = size * n;
  long status = 0;
  curl_easy_getinfo(t->handle, CURLINFO_RESPONSE_CODE, &status);
  if (status != 200 && status != 206) return bytes;  // an error's body, not data
  if (bytes > t->read->length - t->received) {
    t->overflow = true;
    return 0;  // more than the range: the server ignored it
  }
  std::memcpy(t->read->out + t->received, data, bytes);
  t->received += bytes;
  return bytes;
}

size_t Discard(char*, size_t size, size_t n, void*) { return size * n; }

size_t Header(char* data, size_t size, size_t n, void* user) {
  const std::string_view line(data, size * n);
  constexpr std::string_view kName = "content-range:";
  if (line.size() > kName.size()) {
    std::string head(line.substr(0, kName.size()));
    std::transform(head.begin(), head.end(), head.begin(), [](unsigned char c) { return std::tolower(c); });
    if (head == kName) {
      std::string value(line.substr(kName.size()));
      value.erase(0, value.find_first_not_of(" \t"));
      while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) value.pop_back();
      static_cast<Transfer*>(user)->content_range = value;
    }
  }
  return size * n;
}

// Whether a failed attempt is worth another: the network or the server, not
// the request.
bool Retryable(CURLcode code, long status) {
  if (code == CURLE_OK) return status == 429 || status >= 500;
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
      return true;
    default:
      return false;
  }
}

std::string Describe(CURLcode code, long status) {
  if (code != CURLE_OK) return curl_easy_strerror(code);
  if (status == 403 || status == 401) return "access denied (HTTP " + std::to_string(status) + ")";
  if (status == 404) return "not found (HTTP 404)";
  return "HTTP " + std::to_string(status);
}

void InitCurl() {
  static const bool done = [] { return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK; }();
  (void)done;
}

}  // namespace

bool IsRemotePath(std::string_view path) {
  return path.starts_with("http://") || path.starts_with("https://") || path.starts_with("s3://");
}

std::string JoinRemotePath(std::string_view base, std::string_view name) {
  while (base.ends_with('/') && !base.ends_with("://")) base.remove_suffix(1);
  return std::string(base) + "/" + std::string(name);
}

Result<std::unique_ptr<HttpClient>> HttpClient::Create(const RemoteOptions& options) {
  InitCurl();
  std::unique_ptr<HttpClient> c(new HttpClient(options));
  c->multi_ = curl_multi_init();
  if (c->multi_ == nullptr) return Status::IOError("cannot start libcurl");
  curl_multi_setopt(static_cast<CURLM*>(c->multi_), CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
  curl_multi_setopt(static_cast<CURLM*>(c->multi_), CURLMOPT_MAX_HOST_CONNECTIONS,
                    static_cast<long>(std::max(1u, options.concurrency)));
  c->endpoint_ = options.s3_endpoint;
  if (c->endpoint_.empty() && Env("AWS_ENDPOINT_URL") != nullptr) c->endpoint_ = Env("AWS_ENDPOINT_URL");
  while (c->endpoint_.ends_with('/')) c->endpoint_.pop_back();
  c->region_ = !options.s3_region.empty()        ? options.s3_region
               : Env("AWS_REGION") != nullptr    ? Env("AWS_REGION")
               : Env("AWS_DEFAULT_REGION") != nullptr ? Env("AWS_DEFAULT_REGION")
                                                 : "us-east-1";
  if (!options.anonymous) {
    auto credentials = LoadAwsCredentials();
    if (credentials.ok()) {
      c->credentials_ = *credentials;
    } else {
      c->credentials_status_ = credentials.status();
    }
  }
  return c;
}

HttpClient::~HttpClient() {
  for (void* h : idle_) curl_easy_cleanup(static_cast<CURL*>(h));
  if (multi_ != nullptr) curl_multi_cleanup(static_cast<CURLM*>(multi_));
}

uint64_t HttpClient::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

Result<HttpClient::Target> HttpClient::Prepare(std::string_view path, const std::string& range, bool head) const {
  Target t;
  if (!path.starts_with("s3://")) {
    t.url = std::string(path);
    return t;
  }
  if (!credentials_status_.ok()) return credentials_status_.WithPrefix(std::string(path));
  const std::string_view rest = path.substr(5);
  const size_t slash = rest.find('/');
  if (slash == 0 || slash == std::string_view::npos || slash + 1 == rest.size()) {
    return Status::InvalidArgument(std::string(path) + ": expected s3://BUCKET/KEY");
  }
  const std::string bucket(rest.substr(0, slash));
  const std::string key = "/" + UriEncode(rest.substr(slash + 1), true);
  std::string host, canonical_path;
  if (endpoint_.empty()) {
    host = bucket + ".s3." + region_ + ".amazonaws.com";
    t.url = "https://" + host + key;
    canonical_path = key;
  } else {
    const size_t scheme = endpoint_.find("://");
    host = endpoint_.substr(scheme == std::string::npos ? 0 : scheme + 3);
    t.url = endpoint_ + "/" + bucket + key;
    canonical_path = "/" + bucket + key;
  }
  if (!credentials_) return t;  // anonymous
  const std::string empty_sha = Sha256Hex("");
  SigV4Request r{.method = head ? "HEAD" : "GET", .host = host, .path = canonical_path,
                 .headers = {{"x-amz-content-sha256", empty_sha}}, .payload_sha256 = empty_sha};
  if (!range.empty()) r.headers.emplace_back("range", "bytes=" + range);
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  t.headers.push_back("x-amz-content-sha256: " + empty_sha);
  for (const auto& [name, value] : SignV4(r, *credentials_, region_, "s3", AmzDate(now))) {
    t.headers.push_back(name + ": " + value);
  }
  return t;
}

Result<uint64_t> HttpClient::Size(const std::string& path) {
  PCR_ASSIGN_OR_RETURN(Target target, Prepare(path, "", true));
  std::lock_guard lock(mu_);
  CURL* h = idle_.empty() ? curl_easy_init() : static_cast<CURL*>(idle_.back());
  if (!idle_.empty()) idle_.pop_back();
  if (h == nullptr) return Status::IOError(path + ": cannot start a request");
  Status result;
  for (unsigned attempt = 0;; ++attempt) {
    curl_easy_reset(h);
    curl_slist* headers = nullptr;
    for (const std::string& header : target.headers) headers = curl_slist_append(headers, header.c_str());
    curl_easy_setopt(h, CURLOPT_URL, target.url.c_str());
    curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L);  // the path as signed
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, Discard);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.timeout_ms));
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.timeout_ms));
    ++requests_;
    const CURLcode code = curl_easy_perform(h);
    curl_slist_free_all(headers);
    long status = 0;
    curl_off_t length = -1;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
    if (code == CURLE_OK && status == 200 && length >= 0) {
      idle_.push_back(h);
      return static_cast<uint64_t>(length);
    }
    if (Retryable(code, status) && attempt < options_.retries) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100 << std::min(attempt, 6u)));
      if (!target.headers.empty()) {
        PCR_ASSIGN_OR_RETURN(target, Prepare(path, "", true));  // a fresh signature date
      }
      continue;
    }
    idle_.push_back(h);
    const std::string why = code == CURLE_OK && status == 200 ? "no Content-Length" : Describe(code, status);
    if (code == CURLE_OK && status == 404) return Status::NotFound(path + ": " + why);
    return Status::IOError(path + ": " + why + (attempt > 0 ? " after " + std::to_string(attempt + 1) + " attempts" : ""));
  }
}

void HttpClient::Fetch(std::span<RemoteRead> reads) {
  std::deque<Transfer> transfers;  // stable addresses
  std::vector<Transfer*> waiting;
  for (RemoteRead& r : reads) {
    if (r.length == 0) continue;
    Transfer& t = transfers.emplace_back();
    t.read = &r;
    t.range = std::to_string(r.offset) + "-" + std::to_string(r.offset + r.length - 1);
    waiting.push_back(&t);
  }
  std::lock_guard lock(mu_);
  CURLM* multi = static_cast<CURLM*>(multi_);
  const unsigned concurrency = std::max(1u, options_.concurrency);
  size_t in_flight = 0;
  auto fail = [](Transfer* t, const Status& s) { *t->read->status = s; };
  auto start = [&](Transfer* t) {
    auto target = Prepare(t->read->path, t->range, false);
    if (!target.ok()) {
      fail(t, target.status());
      return;
    }
    CURL* h = idle_.empty() ? curl_easy_init() : static_cast<CURL*>(idle_.back());
    if (!idle_.empty()) idle_.pop_back();
    if (h == nullptr) {
      fail(t, Status::IOError(std::string(t->read->path) + ": cannot start a request"));
      return;
    }
    curl_easy_reset(h);
    t->handle = h;
    t->received = 0;
    t->overflow = false;
    t->content_range.clear();
    curl_slist_free_all(t->headers);
    t->headers = nullptr;
    for (const std::string& header : target->headers) t->headers = curl_slist_append(t->headers, header.c_str());
    curl_easy_setopt(h, CURLOPT_URL, target->url.c_str());
    curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L);  // the path as signed
    curl_easy_setopt(h, CURLOPT_RANGE, t->range.c_str());
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, Header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, t);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, t->headers);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, Write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(h, CURLOPT_PRIVATE, t);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_PIPEWAIT, 1L);
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2TLS));
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.timeout_ms));
    // A transfer that moves no byte for the timeout has stalled.
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, static_cast<long>(std::max(1u, options_.timeout_ms / 1000)));
    if (curl_multi_add_handle(multi, h) != CURLM_OK) {
      idle_.push_back(h);
      fail(t, Status::IOError(std::string(t->read->path) + ": cannot start a request"));
      return;
    }
    ++requests_;
    ++in_flight;
  };
  std::vector<Transfer*> later;  // retries, each with its ready time
  size_t next = 0;
  while (next < waiting.size() || in_flight > 0 || !later.empty()) {
    const auto now = Clock::now();
    for (auto it = later.begin(); it != later.end() && in_flight < concurrency;) {
      if ((*it)->ready <= now) {
        start(*it);
        it = later.erase(it);
      } else {
        ++it;
      }
    }
    while (next < waiting.size() && in_flight < concurrency) start(waiting[next++]);
    int running = 0;
    curl_multi_perform(multi, &running);
    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi, &queued)) {
      if (msg->msg != CURLMSG_DONE) continue;
      CURL* h = msg->easy_handle;
      const CURLcode code = msg->data.result;
      Transfer* t = nullptr;
      curl_easy_getinfo(h, CURLINFO_PRIVATE, reinterpret_cast<char**>(&t));
      long status = 0;
      curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
      curl_multi_remove_handle(multi, h);
      idle_.push_back(h);
      --in_flight;
      const RemoteRead& r = *t->read;
      const bool whole = r.offset == 0 && status == 200;  // a server may answer a range of all bytes with 200
      const std::string want = "bytes " + t->range + "/" + std::to_string(r.object_size);
      const bool right_range = whole || r.object_size == 0 ? true : t->content_range == want;
      if (code == CURLE_OK && (status == 206 || whole) && t->received == r.length && right_range) continue;
      if (code == CURLE_OK && status == 206 && !right_range) {
        fail(t, Status::IOError(std::string(r.path) + ": bytes " + t->range + ": answered with Content-Range '" +
                                t->content_range + "', expected '" + want + "' (the object changed?)"));
        continue;
      }
      const bool ignored_range = t->overflow || (code == CURLE_OK && status == 200);
      const std::string where = std::string(r.path) + ": bytes " + t->range;
      if (ignored_range) {
        fail(t, Status::IOError(where + ": the server ignores byte ranges (HTTP " + std::to_string(status) + ")"));
        continue;
      }
      const bool short_body = code == CURLE_OK && status == 206 && t->received != r.length;
      if ((short_body || Retryable(code, status)) && t->attempt < options_.retries) {
        t->ready = Clock::now() + std::chrono::milliseconds(100 << std::min(t->attempt, 6u));
        ++t->attempt;
        later.push_back(t);
        continue;
      }
      const std::string why = short_body ? "body of " + std::to_string(t->received) + " bytes" : Describe(code, status);
      const std::string tries = t->attempt > 0 ? " after " + std::to_string(t->attempt + 1) + " attempts" : "";
      fail(t, code == CURLE_OK && status == 404 ? Status::NotFound(where + ": " + why)
                                                : Status::IOError(where + ": " + why + tries));
    }
    if (in_flight > 0) {
      curl_multi_poll(multi, nullptr, 0, 50, nullptr);
    } else if (!later.empty()) {
      auto soonest = later.front()->ready;
      for (const Transfer* t : later) soonest = std::min(soonest, t->ready);
      std::this_thread::sleep_until(soonest);
    }
  }
  for (Transfer& t : transfers) curl_slist_free_all(t.headers);
}

}  // namespace pcr
