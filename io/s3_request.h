// Addressing and signing requests to an S3-compatible store, shared by the
// reader (HttpClient) and the uploader (S3Uploader).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/sigv4.h"
#include "pcr/io.h"
#include "pcr/status.h"

namespace pcr {

// Where a request for one object goes.
struct S3Object {
  std::string url;             // to send the request to, without a query
  std::string host;            // the Host header
  std::string canonical_path;  // the path as signed
};

// The endpoint, region and credentials of RemoteOptions and the AWS_*
// environment, read once. Thread safety: const methods may be called from
// several threads at once.
class S3Signer {
 public:
  static S3Signer FromOptions(const RemoteOptions& options);

  // InvalidArgument unless `path` is s3://BUCKET/KEY, or with `bucket_only`
  // s3://BUCKET/ (a request on the bucket, such as a listing).
  Result<S3Object> Locate(std::string_view path, bool bucket_only = false) const;
  // The headers ("Name: value") of a request: Host, x-amz-content-sha256,
  // `headers` and the signature; without credentials (anonymous), all but
  // the signature. Fails, naming `path`, when credentials could not be read.
  Result<std::vector<std::string>> Headers(std::string_view path, const S3Object& object, const std::string& method,
                                           const std::string& query,
                                           const std::vector<std::pair<std::string, std::string>>& headers,
                                           const std::string& payload_sha256) const;

 private:
  std::string endpoint_;  // scheme://host[:port][/prefix], without a trailing '/'; empty: AWS
  std::string region_;
  std::optional<AwsCredentials> credentials_;
  Status credentials_status_;  // why credentials could not be loaded
};

}  // namespace pcr
