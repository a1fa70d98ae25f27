// Uploading files to an S3-compatible store: one PUT below a size, a
// multipart upload above it (parts in parallel, each retried), every part
// and the object checked against the bytes sent.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "io/s3_request.h"
#include "pcr/io.h"
#include "pcr/status.h"

namespace pcr {

// InvalidArgument naming the option unless part_size is 5 MiB to 5 GiB,
// multipart_threshold and memory at least 1 and concurrency 1..64.
Status CheckUploadOptions(const UploadOptions& options);
// `remote` with the output endpoint of `upload` where it names one.
RemoteOptions OutputRemote(const RemoteOptions& remote, const UploadOptions& upload);

// Thread safety: every method may be called from several threads at once;
// the PUT bodies in flight of all of them share UploadOptions' concurrency
// and memory.
class S3Uploader {
 public:
  // Endpoint (UploadOptions::s3_endpoint where set), region, credentials,
  // retries and timeouts as for reading.
  static Result<std::unique_ptr<S3Uploader>> Create(const RemoteOptions& remote, const UploadOptions& upload);
  ~S3Uploader();
  S3Uploader(const S3Uploader&) = delete;
  S3Uploader& operator=(const S3Uploader&) = delete;

  // Uploads the local file `local` as the object `path` (s3://BUCKET/KEY)
  // and returns its ETag. A multipart upload calls `started(upload_id)`
  // before its first part, so that a failed run can be cleaned up (Abort).
  // Every body goes with its Content-MD5 (and, signed, its SHA-256), which
  // the store checks; where ETags are MD5s (RemoteOptions::etag_is_md5, and
  // the answer says no SSE-KMS or SSE-C), each part's ETag must be its MD5
  // and a multipart object's, where the store gives S3's form, the MD5 of
  // theirs. The object must then have the file's size and its last bytes.
  // A NoSuchUpload answer to CompleteMultipartUpload (the answer to an
  // earlier attempt lost) is accepted when the object's HEAD and last bytes
  // say it is complete. Errors name the object and the HTTP status or S3
  // error code.
  Result<std::string> Upload(const std::string& local, const std::string& path,
                             const std::function<Status(const std::string& upload_id)>& started);
  // Whether the object exists: false for NoSuchKey; a missing bucket, a
  // refusal or an unreachable store fail, naming the object and the status.
  Result<bool> Exists(const std::string& path);
  struct ObjectInfo {
    uint64_t size = 0;
    std::string etag;  // without quotes; empty where the store sends none
  };
  // The object's size and ETag; NotFound when it does not exist.
  Result<ObjectInfo> Head(const std::string& path);
  struct ListedObject {
    std::string key;  // the whole key, prefix included
    uint64_t size = 0;
    std::string etag;  // without quotes
  };
  // The objects of s3://BUCKET whose keys start with `prefix`, in key order
  // (IOError naming both keys where a page breaks it or repeats a key),
  // every page of a ListObjectsV2 listing of RemoteOptions::list_page_size
  // keys. Errors name s3://BUCKET/PREFIX and the status: a missing bucket, a
  // refusal.
  Result<std::vector<ListedObject>> List(const std::string& bucket, const std::string& prefix);
  struct OpenUpload {
    std::string key;  // the whole key
    std::string upload_id;
  };
  // The multipart uploads open under s3://BUCKET/PREFIX (every page of a
  // ListMultipartUploads); none from a store that cannot list them or a
  // role that may not (a 4xx answer, 501, or an answer that is no upload
  // listing).
  Result<std::vector<OpenUpload>> ListUploads(const std::string& bucket, const std::string& prefix);
  // Puts `body` as the object in one PUT, with its Content-MD5, and returns
  // its ETag, which must be its MD5 where ETags are (EtagIsMd5).
  Result<std::string> Put(const std::string& path, std::string_view body);
  // Copies the object `from` to `to` (s3://BUCKET/KEY, both in this
  // store) inside the store (CopyObject: no byte passes through here; at
  // most 5 GiB, S3's limit, InvalidArgument above) and returns the copy's
  // ETag. `size` is the source's expected size: the copy must have it, and
  // where ETags are MD5s and the source's is one, the source's ETag. An
  // error inside a 200 answer, as S3 may send for a long copy, is retried.
  Result<std::string> Copy(const std::string& from, const std::string& to, uint64_t size);
  // Deletes the object; one already gone counts as deleted.
  Status Delete(const std::string& path);
  // Aborts a multipart upload; one the store no longer knows counts as
  // aborted, and a store that cannot abort (405, 501) keeps its parts.
  Status Abort(const std::string& path, const std::string& upload_id);

  struct Response {
    long status = 0;
    std::string body;
    std::string etag;  // without quotes
    std::string bucket_region;  // x-amz-bucket-region
    bool etag_not_md5 = false;  // the answer says SSE-KMS or SSE-C, whose ETags are not MD5s
    uint64_t content_length = 0;
    int curl_code = 0;
    std::string curl_error;
  };

 private:
  S3Uploader(const RemoteOptions& remote, const UploadOptions& upload);
  // One request, retried on connection failures, 5xx and 429 answers.
  // `path` is s3://BUCKET/KEY, or with bucket_only s3://BUCKET/.
  Result<Response> Send(const std::string& method, const std::string& path, const std::string& query,
                        std::string_view body, const std::vector<std::pair<std::string, std::string>>& headers,
                        bool bucket_only = false);
  Response Attempt(const std::string& method, const std::string& path, const S3Object& object,
                   const std::string& query, std::string_view body,
                   const std::vector<std::pair<std::string, std::string>>& headers);
  Status Check(const std::string& local, const std::string& path, uint64_t size);
  // Whether the answer's ETag is the MD5 of the body sent.
  bool EtagIsMd5(const Response& r) const;
  void* TakeHandle();
  void GiveHandle(void* handle);
  class BodyHold;
  // Waits until a PUT body of `bytes` fits UploadOptions' concurrency and
  // memory beside those in flight (it always fits alone), then counts it
  // until Release.
  void Reserve(uint64_t bytes);
  void Release(uint64_t bytes);

  const RemoteOptions remote_;
  const UploadOptions upload_;
  S3Signer signer_;
  std::mutex mu_;
  std::vector<void*> idle_;  // CURL easy handles, guarded by mu_
  std::mutex budget_mu_;
  std::condition_variable budget_freed_;
  unsigned bodies_ = 0;      // PUT bodies held, guarded by budget_mu_
  uint64_t body_bytes_ = 0;  // their bytes, guarded by budget_mu_
};

}  // namespace pcr
