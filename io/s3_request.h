// Addressing and signing requests to an S3-compatible store, shared by the
// reader (HttpClient) and the uploader (S3Uploader).
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/sigv4.h"
#include "pcr/io.h"
#include "pcr/status.h"

namespace pcr {

// XML text with its five entities and character references decoded.
std::string XmlText(const std::string& s);
// The text of the first <tag> element of an XML body, or "".
std::string XmlValue(const std::string& body, const std::string& tag);
// An error answer in one phrase, for reads and writes alike: "HTTP 403
// AccessDenied: Access Denied (access denied: check ...)", with S3's error
// code and message where the body holds them (a HEAD's has none) and a hint
// of what to do; `bucket_region` is the x-amz-bucket-region header.
std::string DescribeHttpError(long status, const std::string& body, std::string_view bucket_region = {});
// Whether an HTTP answer is worth asking again: 429 and the server's 5xx,
// but 501 (the server has no such call, on every try).
bool RetryableStatus(long status);

// Where a request for one object goes.
struct S3Object {
  std::string url;             // to send the request to, without a query
  std::string host;            // the Host header
  std::string canonical_path;  // the path as signed
};

// The endpoint, region, CA bundle and credentials of RemoteOptions, the
// AWS_* environment and the AWS profile (LoadAwsProfile), read once, in
// the AWS SDKs' order. Thread safety: const methods may be called from
// several threads at once.
class S3Signer {
 public:
  static S3Signer FromOptions(const RemoteOptions& options);

  // AWS_CA_BUNDLE, else the profile's ca_bundle: the CA certificates S3's
  // TLS is checked against; empty for the system's.
  const std::string& ca_bundle() const { return ca_bundle_; }
  // InvalidArgument unless `path` is s3://BUCKET/KEY, or with `bucket_only`
  // s3://BUCKET/ (a request on the bucket, such as a listing).
  Result<S3Object> Address(std::string_view path, bool bucket_only = false) const;
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
  std::string ca_bundle_;
  // Shared by copies; credentials that expire are loaded again five minutes
  // before they do.
  struct Credentials {
    std::mutex mu;
    std::optional<AwsCredentials> held;  // guarded by mu
  };
  std::shared_ptr<Credentials> credentials_ = std::make_shared<Credentials>();
  Status credentials_status_;  // why credentials could not be loaded
};

}  // namespace pcr
