#include "io/s3_upload.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "io/http_client.h"
#include "io/md5.h"
#include "io/object_digest.h"
#include "io/parallel_for.h"

namespace pcr {

namespace {

constexpr uint64_t kMinPartSize = uint64_t{5} << 20;
constexpr uint64_t kMaxPartSize = uint64_t{5} << 30;
constexpr uint64_t kMaxParts = 10000;
constexpr uint64_t kTailBytes = 64 << 10;  // read back after an upload
constexpr size_t kMaxBody = 16 << 20;      // kept of an answer's body (a listing page is about 300 KiB)

// The pause before retry `attempt` (from 0): 100 ms doubling, at most 5 s.
int64_t RetryDelayMs(unsigned attempt) { return std::min<int64_t>(int64_t{100} << std::min(attempt, 16u), 5000); }

// The bytes that lowercase hex digits spell.
std::string HexBytes(std::string_view hex) {
  auto digit = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out += static_cast<char>(digit(hex[i]) * 16 + digit(hex[i + 1]));
  return out;
}

// "HTTP 403 AccessDenied: Access Denied (access denied: ...)", or why no answer came.
std::string Describe(const S3Uploader::Response& r) {
  if (r.curl_code != 0) return "request failed: " + r.curl_error;
  return DescribeHttpError(r.status, r.body, r.bucket_region);
}

size_t WriteBody(char* data, size_t size, size_t n, void* user) {
  auto* r = static_cast<S3Uploader::Response*>(user);
  if (r->body.size() < kMaxBody) r->body.append(data, size * n);
  return size * n;
}

size_t WriteHeader(char* data, size_t size, size_t n, void* user) {
  auto* r = static_cast<S3Uploader::Response*>(user);
  std::string_view line(data, size * n);
  const size_t colon = line.find(':');
  if (colon != std::string_view::npos) {
    std::string name(line.substr(0, colon));
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    std::string v(line.substr(colon + 1));
    std::erase_if(v, [](char c) { return c == '"' || c == ' ' || c == '\r' || c == '\n'; });
    if (name == "etag") r->etag = v;
    if (name == "x-amz-bucket-region") r->bucket_region = v;
    if ((name == "x-amz-server-side-encryption" && v.starts_with("aws:kms")) ||
        name == "x-amz-server-side-encryption-customer-algorithm") {
      r->etag_not_md5 = true;
    }
    if (name == "content-length") r->content_length = std::strtoull(v.c_str(), nullptr, 10);
  }
  return size * n;
}

Status ReadAt(int fd, const std::string& local, uint64_t offset, size_t n, std::string* out) {
  out->resize(n);
  size_t done = 0;
  while (done < n) {
    const ssize_t got = pread(fd, out->data() + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return Status::IOError(local + ": cannot read: " + (got < 0 ? std::strerror(errno) : "file shrank"));
    done += static_cast<size_t>(got);
  }
  return Status::OK();
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

}  // namespace

bool S3Uploader::EtagIsMd5(const Response& r) const { return remote_.etag_is_md5 && !r.etag_not_md5; }

Status CheckUploadOptions(const UploadOptions& o) {
  if (o.part_size < kMinPartSize || o.part_size > kMaxPartSize) {
    return Status::InvalidArgument("part size must be 5 MiB to 5 GiB (S3's limits), not " +
                                   std::to_string(o.part_size) + " bytes");
  }
  if (o.multipart_threshold < 1) return Status::InvalidArgument("multipart threshold must be at least 1 byte");
  if (o.concurrency < 1 || o.concurrency > 64) return Status::InvalidArgument("upload concurrency must be 1..64");
  if (o.memory < 1) return Status::InvalidArgument("upload memory must be at least 1 byte");
  return Status::OK();
}

RemoteOptions OutputRemote(const RemoteOptions& remote, const UploadOptions& upload) {
  RemoteOptions out = remote;
  if (!upload.s3_endpoint.empty()) out.s3_endpoint = upload.s3_endpoint;
  return out;
}

S3Uploader::S3Uploader(const RemoteOptions& remote, const UploadOptions& upload)
    : remote_(OutputRemote(remote, upload)), upload_(upload), signer_(S3Signer::FromOptions(remote_)) {}

// Holds `bytes` of the uploader's budget while it lives (Reserve, Release).
class S3Uploader::BodyHold {
 public:
  BodyHold(S3Uploader& uploader, uint64_t bytes) : uploader_(uploader), bytes_(bytes) { uploader_.Reserve(bytes_); }
  ~BodyHold() { uploader_.Release(bytes_); }
  BodyHold(const BodyHold&) = delete;
  BodyHold& operator=(const BodyHold&) = delete;

 private:
  S3Uploader& uploader_;
  const uint64_t bytes_;
};

void S3Uploader::Reserve(uint64_t bytes) {
  std::unique_lock lock(budget_mu_);
  budget_freed_.wait(lock, [&] {
    return bodies_ == 0 || (bodies_ < upload_.concurrency && body_bytes_ + bytes <= upload_.memory);
  });
  ++bodies_;
  body_bytes_ += bytes;
}

void S3Uploader::Release(uint64_t bytes) {
  {
    std::lock_guard lock(budget_mu_);
    --bodies_;
    body_bytes_ -= bytes;
  }
  budget_freed_.notify_all();
}

Result<std::unique_ptr<S3Uploader>> S3Uploader::Create(const RemoteOptions& remote, const UploadOptions& upload) {
  PCR_RETURN_IF_ERROR(CheckUploadOptions(upload));
  InitCurl();
  return std::unique_ptr<S3Uploader>(new S3Uploader(remote, upload));
}

S3Uploader::~S3Uploader() {
  for (void* h : idle_) curl_easy_cleanup(static_cast<CURL*>(h));
}

void* S3Uploader::TakeHandle() {
  {
    std::lock_guard lock(mu_);
    if (!idle_.empty()) {
      void* h = idle_.back();
      idle_.pop_back();
      return h;
    }
  }
  return curl_easy_init();
}

void S3Uploader::GiveHandle(void* handle) {
  std::lock_guard lock(mu_);
  idle_.push_back(handle);
}

S3Uploader::Response S3Uploader::Attempt(const std::string& method, const std::string& path, const S3Object& object,
                                         const std::string& query, std::string_view body,
                                         const std::vector<std::pair<std::string, std::string>>& headers) {
  Response r;
  auto signed_headers = signer_.Headers(path, object, method, query, headers, Sha256Hex(body));
  if (!signed_headers.ok()) {
    r.curl_code = -1;
    r.curl_error = signed_headers.status().message();
    return r;
  }
  CURL* h = static_cast<CURL*>(TakeHandle());
  if (h == nullptr) {
    r.curl_code = -1;
    r.curl_error = "cannot start libcurl";
    return r;
  }
  curl_easy_reset(h);
  const std::string url = object.url + (query.empty() ? "" : "?" + query);
  curl_slist* list = nullptr;
  for (const std::string& line : *signed_headers) list = curl_slist_append(list, line.c_str());
  list = curl_slist_append(list, "Expect:");
  list = curl_slist_append(list, "Content-Type: application/octet-stream");
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  if (!signer_.ca_bundle().empty()) curl_easy_setopt(h, CURLOPT_CAINFO, signer_.ca_bundle().c_str());
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  if (method == "HEAD") {
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  } else if (method == "GET") {
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
  } else {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method.c_str());
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  }
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, WriteBody);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &r);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, WriteHeader);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &r);
  if (remote_.timeout_ms > 0) {
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(remote_.timeout_ms));
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, static_cast<long>(std::max(1u, remote_.timeout_ms / 1000)));
  }
  char error[CURL_ERROR_SIZE] = {};
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error);
  const CURLcode code = curl_easy_perform(h);
  r.curl_code = static_cast<int>(code);
  if (code != CURLE_OK) r.curl_error = error[0] != '\0' ? error : curl_easy_strerror(code);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r.status);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, nullptr);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, nullptr);
  curl_slist_free_all(list);
  GiveHandle(h);
  return r;
}

Result<S3Uploader::Response> S3Uploader::Send(const std::string& method, const std::string& path,
                                              const std::string& query, std::string_view body,
                                              const std::vector<std::pair<std::string, std::string>>& headers,
                                              bool bucket_only) {
  PCR_ASSIGN_OR_RETURN(const S3Object object, signer_.Address(path, bucket_only));
  for (unsigned attempt = 0;; ++attempt) {
    Response r = Attempt(method, path, object, query, body, headers);
    if (r.curl_code == -1) return Status::IOError(path + ": " + r.curl_error);
    // A body the store found damaged on its way (its Content-MD5 or signed
    // SHA-256 fails) is sent again, as a network fault.
    const std::string code = r.status == 400 ? XmlValue(r.body, "Code") : "";
    const bool damaged = code == "BadDigest" || code == "XAmzContentSHA256Mismatch";
    const bool transient = r.curl_code != 0 || RetryableStatus(r.status) || damaged;
    if (!transient || attempt >= remote_.retries) return r;
    std::this_thread::sleep_for(std::chrono::milliseconds(RetryDelayMs(attempt)));
  }
}

Result<std::string> S3Uploader::Upload(const std::string& local, const std::string& path,
                                       const std::function<Status(const std::string& upload_id)>& started) {
  Fd file{open(local.c_str(), O_RDONLY | O_CLOEXEC)};
  struct stat st {};
  if (file.fd < 0 || fstat(file.fd, &st) != 0) return Status::IOError(local + ": cannot open: " + std::strerror(errno));
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < upload_.multipart_threshold) {
    std::string etag;
    {
      const BodyHold hold(*this, size);
      std::string body;
      PCR_RETURN_IF_ERROR(ReadAt(file.fd, local, 0, size, &body));
      PCR_ASSIGN_OR_RETURN(etag, Put(path, body));
    }
    PCR_RETURN_IF_ERROR(Check(local, path, size));
    return etag;
  }
  const uint64_t part_size = std::max(upload_.part_size, (size + kMaxParts - 1) / kMaxParts);
  const uint64_t parts = (size + part_size - 1) / part_size;
  PCR_ASSIGN_OR_RETURN(const Response created, Send("POST", path, "uploads=", "", {}));
  const std::string upload_id = XmlValue(created.body, "UploadId");
  if (created.curl_code != 0 || created.status != 200 || upload_id.empty()) {
    return Status::IOError(path + ": cannot start a multipart upload: " + Describe(created));
  }
  PCR_RETURN_IF_ERROR(started(upload_id));
  const std::string id_query = "uploadId=" + UriEncode(upload_id, false);
  std::vector<std::string> etags(parts);
  std::atomic<bool> md5_etags{true};  // every part's ETag is its MD5
  const Status error = ParallelFor(parts, upload_.concurrency, [&](size_t i) -> Status {
    const uint64_t offset = i * part_size, n = std::min(part_size, size - offset);
    const BodyHold hold(*this, n);  // the buffer goes before the hold
    std::string buffer;
    PCR_RETURN_IF_ERROR(ReadAt(file.fd, local, offset, n, &buffer));
    const std::string query = "partNumber=" + std::to_string(i + 1) + "&" + id_query;
    PCR_ASSIGN_OR_RETURN(const Response r, Send("PUT", path, query, buffer, {{"content-md5", Base64(Md5(buffer))}}));
    if (r.curl_code != 0 || r.status != 200) {
      return Status::IOError(path + ": part " + std::to_string(i + 1) + " of " + std::to_string(parts) +
                             " failed: " + Describe(r));
    }
    if (EtagIsMd5(r) && r.etag != Md5Hex(buffer)) {
      return Status::IOError(path + ": part " + std::to_string(i + 1) + ": the store's ETag " + r.etag +
                             " is not the MD5 of the bytes sent, " + Md5Hex(buffer));
    }
    etags[i] = r.etag;
    if (!EtagIsMd5(r)) md5_etags = false;
    return Status::OK();
  });
  if (!error.ok()) {
    (void)Abort(path, upload_id);
    return error;
  }
  std::string xml = "<CompleteMultipartUpload>";
  for (uint64_t i = 0; i < parts; ++i) {
    xml += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>\"" + etags[i] + "\"</ETag></Part>";
  }
  xml += "</CompleteMultipartUpload>";
  // S3 may answer 200 and report the failure in the body; an internal error
  // or a slow-down is retried as a 5xx would be.
  // The object's ETag, where the store gives S3's: the MD5 of the parts' MD5s, "-" and the count.
  std::string digests;
  for (const std::string& e : etags) digests += HexBytes(e);
  const std::string expected = Md5Hex(digests) + "-" + std::to_string(parts);
  Response done;
  for (unsigned attempt = 0;; ++attempt) {
    PCR_ASSIGN_OR_RETURN(done, Send("POST", path, id_query, xml, {}));
    const std::string code = XmlValue(done.body, "Code");
    const bool error = done.body.find("<Error>") != std::string::npos;
    if (done.curl_code == 0 && done.status == 200 && !error) break;
    if (code == "NoSuchUpload") {
      // An earlier attempt completed it and its answer was lost: the object tells.
      auto head = Head(path);
      if (head.ok() && head->size == size && (!md5_etags || head->etag.find('-') == std::string::npos ||
                                              head->etag == expected)) {
        PCR_RETURN_IF_ERROR(Check(local, path, size));
        return head->etag.empty() ? expected : head->etag;
      }
      return Status::IOError(path + ": cannot complete the multipart upload: " + Describe(done) +
                             (head.ok() ? "; the object holds " + std::to_string(head->size) + " bytes, ETag " + head->etag +
                                              ", not this file's " + std::to_string(size) + " bytes"
                                        : "; " + head.status().message()));
    }
    if (done.curl_code != 0 || done.status != 200 || (code != "InternalError" && code != "SlowDown") ||
        attempt >= remote_.retries) {
      (void)Abort(path, upload_id);
      return Status::IOError(path + ": cannot complete the multipart upload: " + Describe(done));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(RetryDelayMs(attempt)));
  }
  std::string etag = XmlValue(done.body, "ETag");
  for (const std::string_view quote : {"&quot;", "\""}) {
    for (size_t at = etag.find(quote); at != std::string::npos; at = etag.find(quote)) etag.erase(at, quote.size());
  }
  if (md5_etags && etag.find('-') != std::string::npos && etag != expected) {
    return Status::IOError(path + ": the store's ETag " + etag + " is not the MD5 of the parts' MD5s, " + expected);
  }
  PCR_RETURN_IF_ERROR(Check(local, path, size));
  return etag.empty() ? expected : etag;
}

Status S3Uploader::Check(const std::string& local, const std::string& path, uint64_t size) {
  const uint64_t n = std::min(size, kTailBytes);
  std::vector<std::pair<std::string, std::string>> range;
  if (n > 0) range.emplace_back("range", "bytes=" + std::to_string(size - n) + "-" + std::to_string(size - 1));
  PCR_ASSIGN_OR_RETURN(const Response r, Send("GET", path, "", "", range));
  if (r.curl_code != 0 || (r.status != 206 && r.status != 200)) {
    return Status::IOError(path + ": cannot read back the uploaded object: " + Describe(r));
  }
  Fd file{open(local.c_str(), O_RDONLY | O_CLOEXEC)};
  if (file.fd < 0) return Status::IOError(local + ": cannot open: " + std::strerror(errno));
  std::string tail;
  PCR_RETURN_IF_ERROR(ReadAt(file.fd, local, size - n, static_cast<size_t>(n), &tail));
  const std::string_view got = r.status == 200 && r.body.size() >= n
                                   ? std::string_view(r.body).substr(r.body.size() - n)
                                   : std::string_view(r.body);
  if (got != tail) return Status::IOError(path + ": the uploaded object's last " + std::to_string(n) +
                                          " bytes differ from " + local);
  return Status::OK();
}

Result<bool> S3Uploader::Exists(const std::string& path) {
  // A GET, not a HEAD: its 404 body tells a missing key from a missing bucket.
  PCR_ASSIGN_OR_RETURN(const Response r, Send("GET", path, "", "", {{"range", "bytes=0-0"}}));
  if (r.curl_code == 0 && (r.status == 200 || r.status == 206)) return true;
  if (r.curl_code == 0 && r.status == 404 && XmlValue(r.body, "Code") != "NoSuchBucket") return false;
  return Status::IOError(path + ": " + Describe(r));
}

Result<std::vector<S3Uploader::ListedObject>> S3Uploader::List(const std::string& bucket, const std::string& prefix) {
  const unsigned page_size = std::clamp(remote_.list_page_size, 1u, 1000u);
  const std::string where = "s3://" + bucket + "/" + prefix;
  std::vector<ListedObject> out;
  std::string token;
  while (true) {
    std::string query = "list-type=2&max-keys=" + std::to_string(page_size) + "&prefix=" + UriEncode(prefix, false);
    if (!token.empty()) query += "&continuation-token=" + UriEncode(token, false);
    Response r;
    for (unsigned attempt = 0;; ++attempt) {
      PCR_ASSIGN_OR_RETURN(r, Send("GET", "s3://" + bucket + "/", query, "", {}, true));
      // A page cut short still parses: only its closing tag tells.
      if (r.curl_code != 0 || r.status != 200 || r.body.find("</ListBucketResult>") != std::string::npos) break;
      if (attempt >= remote_.retries) return Status::IOError(where + ": a listing page ended before its last entry");
      std::this_thread::sleep_for(std::chrono::milliseconds(RetryDelayMs(attempt)));
    }
    if (r.curl_code != 0 || r.status != 200) {
      return Status::IOError(where + ": cannot list: " + Describe(r));
    }
    size_t at = 0;
    while (true) {
      const size_t open = r.body.find("<Contents>", at);
      if (open == std::string::npos) break;
      const size_t close = r.body.find("</Contents>", open);
      if (close == std::string::npos) break;
      const std::string entry = r.body.substr(open, close - open);
      ListedObject o{.key = XmlText(XmlValue(entry, "Key"))};
      const std::string size = XmlValue(entry, "Size");
      if (o.key.empty() || size.empty() || size.find_first_not_of("0123456789") != std::string::npos) {
        return Status::IOError(where + ": a listing entry without a key or a size");
      }
      o.size = std::stoull(size);
      o.etag = XmlText(XmlValue(entry, "ETag"));
      std::erase(o.etag, '"');
      // S3 lists keys in UTF-8 binary order, each once: anything else would
      // drop or repeat objects.
      if (!out.empty() && o.key <= out.back().key) {
        return Status::IOError(where + ": the listing gives key '" + o.key + "' after '" + out.back().key + "'" +
                               (o.key == out.back().key ? " again" : "") +
                               ": the store's listing is not in key order, each key once");
      }
      out.push_back(std::move(o));
      at = close;
    }
    if (XmlValue(r.body, "IsTruncated") != "true") break;
    const std::string next = XmlText(XmlValue(r.body, "NextContinuationToken"));
    if (next.empty() || next == token) return Status::IOError(where + ": a listing page marked truncated without a new continuation token");
    token = next;
  }
  return out;
}

Result<S3Uploader::ObjectInfo> S3Uploader::Head(const std::string& path) {
  PCR_ASSIGN_OR_RETURN(const Response r, Send("HEAD", path, "", "", {}));
  if (r.curl_code == 0 && r.status == 200) return ObjectInfo{r.content_length, r.etag};
  if (r.curl_code == 0 && r.status == 404) return Status::NotFound(path + ": not found");
  return Status::IOError(path + ": " + Describe(r));
}

Result<std::vector<S3Uploader::OpenUpload>> S3Uploader::ListUploads(const std::string& bucket,
                                                                    const std::string& prefix) {
  const std::string where = "s3://" + bucket + "/" + prefix;
  std::vector<OpenUpload> out;
  std::string key_marker, id_marker;
  while (true) {
    std::string query = "uploads=&prefix=" + UriEncode(prefix, false);
    if (!key_marker.empty()) {
      query += "&key-marker=" + UriEncode(key_marker, false) + "&upload-id-marker=" + UriEncode(id_marker, false);
    }
    PCR_ASSIGN_OR_RETURN(const Response r, Send("GET", "s3://" + bucket + "/", query, "", {}, true));
    // A store without the call, or a role without its permission
    // (s3:ListBucketMultipartUploads): none to abort.
    if (r.curl_code == 0 && r.status >= 400 && r.status < 500 && r.status != 429) return out;
    if (r.curl_code == 0 && r.status == 501) return out;
    if (r.curl_code != 0 || r.status != 200) return Status::IOError(where + ": cannot list multipart uploads: " + Describe(r));
    if (r.body.find("<ListMultipartUploadsResult") == std::string::npos) return out;
    for (size_t at = r.body.find("<Upload>"); at != std::string::npos; at = r.body.find("<Upload>", at + 1)) {
      const size_t close = r.body.find("</Upload>", at);
      if (close == std::string::npos) break;
      const std::string entry = r.body.substr(at, close - at);
      OpenUpload u{XmlText(XmlValue(entry, "Key")), XmlText(XmlValue(entry, "UploadId"))};
      if (!u.key.empty() && !u.upload_id.empty()) out.push_back(std::move(u));
    }
    if (XmlValue(r.body, "IsTruncated") != "true") return out;
    const std::string next_key = XmlText(XmlValue(r.body, "NextKeyMarker"));
    const std::string next_id = XmlText(XmlValue(r.body, "NextUploadIdMarker"));
    if (next_key.empty() || (next_key == key_marker && next_id == id_marker)) {
      return Status::IOError(where + ": a multipart upload listing marked truncated without a new marker");
    }
    key_marker = next_key;
    id_marker = next_id;
  }
}

Result<std::string> S3Uploader::Put(const std::string& path, std::string_view body) {
  PCR_ASSIGN_OR_RETURN(const Response r, Send("PUT", path, "", body, {{"content-md5", Base64(Md5(body))}}));
  if (r.curl_code != 0 || r.status != 200) return Status::IOError(path + ": upload failed: " + Describe(r));
  if (EtagIsMd5(r) && r.etag != Md5Hex(body)) {
    return Status::IOError(path + ": the store's ETag " + r.etag + " is not the MD5 of the bytes sent, " + Md5Hex(body));
  }
  return r.etag;
}

Result<std::string> S3Uploader::Copy(const std::string& from, const std::string& to, uint64_t size) {
  if (size > kMaxPartSize) {
    return Status::InvalidArgument(from + ": " + std::to_string(size) + " bytes, more than S3 copies in one request "
                                   "(5 GiB): copy it through a local directory instead");
  }
  PCR_RETURN_IF_ERROR(signer_.Address(from).status());
  const std::string bucket_key = from.substr(5);  // s3://BUCKET/KEY without the scheme
  PCR_ASSIGN_OR_RETURN(const ObjectInfo before, Head(from));
  if (before.size != size) {
    return Status::IOError(from + ": " + std::to_string(before.size) + " bytes in the store, not " +
                           std::to_string(size) + " as its manifest says");
  }
  Response r;
  for (unsigned attempt = 0;; ++attempt) {
    PCR_ASSIGN_OR_RETURN(r, Send("PUT", to, "", "", {{"x-amz-copy-source", "/" + UriEncode(bucket_key, true)}}));
    // A copy that fails after S3 started answering 200 says so in the body.
    const bool failed_late = r.curl_code == 0 && r.status == 200 && r.body.find("<CopyObjectResult") == std::string::npos;
    if (!failed_late || attempt >= remote_.retries) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(RetryDelayMs(attempt)));
  }
  if (r.curl_code != 0 || r.status != 200 || r.body.find("<CopyObjectResult") == std::string::npos) {
    return Status::IOError(to + ": cannot copy " + from + " there: " + Describe(r));
  }
  std::string etag = XmlText(XmlValue(r.body, "ETag"));
  std::erase(etag, '"');
  PCR_ASSIGN_OR_RETURN(const ObjectInfo after, Head(to));
  const bool md5s = EtagIsMd5(r) && before.etag.size() == 32 && before.etag.find('-') == std::string::npos;
  if (after.size != size || (md5s && (after.etag != before.etag || (!etag.empty() && etag != before.etag)))) {
    return Status::IOError(to + ": the copy of " + from + " is " + std::to_string(after.size) + " bytes with ETag " +
                           after.etag + ", not " + std::to_string(size) + " bytes with ETag " + before.etag);
  }
  return etag.empty() ? after.etag : etag;
}

Status S3Uploader::Delete(const std::string& path) {
  PCR_ASSIGN_OR_RETURN(const Response r, Send("DELETE", path, "", "", {}));
  if (r.curl_code == 0 && (r.status == 204 || r.status == 200 || r.status == 404)) return Status::OK();
  return Status::IOError(path + ": cannot delete: " + Describe(r));
}

Status S3Uploader::Abort(const std::string& path, const std::string& upload_id) {
  PCR_ASSIGN_OR_RETURN(const Response r, Send("DELETE", path, "uploadId=" + UriEncode(upload_id, false), "", {}));
  // 404: gone already; 405 and 501: a store without AbortMultipartUpload
  // (test servers), which keeps the parts.
  if (r.curl_code == 0 && (r.status == 204 || r.status == 200 || r.status == 404 || r.status == 405 ||
                           r.status == 501)) {
    return Status::OK();
  }
  return Status::IOError(path + ": cannot abort multipart upload " + upload_id + ": " + Describe(r));
}

}  // namespace pcr
