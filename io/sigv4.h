// AWS Signature Version 4 for S3-compatible object stores: SHA-256, HMAC,
// the canonical request and the Authorization header, and credentials from
// the standard AWS environment variables and shared credentials file.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pcr/status.h"

namespace pcr {

// SHA-256 of bytes given in pieces. Thread safety: not thread-safe.
class Sha256Hasher {
 public:
  void Update(std::string_view data);
  // The 32-byte digest of every byte given; the hasher is then spent.
  std::string Finish();

 private:
  uint32_t h_[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  uint8_t block_[64] = {};
  size_t buffered_ = 0;
  uint64_t total_ = 0;
};

// SHA-256 (FIPS 180-4) of `data`, as 32 bytes and as 64 lowercase hex digits.
std::string Sha256(std::string_view data);
std::string Sha256Hex(std::string_view data);
// HMAC-SHA256 (RFC 2104) of `data` under `key`, as 32 bytes.
std::string HmacSha256(std::string_view key, std::string_view data);
// RFC 3986 percent-encoding of everything but unreserved characters, and
// '/' too unless `keep_slash`: how SigV4 encodes paths and query strings.
std::string UriEncode(std::string_view s, bool keep_slash);

struct AwsCredentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // empty without one
  int64_t expires = 0;        // Unix time they expire at; 0: never
};

struct SigV4Request {
  std::string method = "GET";
  std::string host;            // the Host header: name[:port]
  std::string path = "/";      // the URI path as sent, already URI-encoded
  std::string query;           // the query string as sent, without '?': name=value&...
  // Headers to sign besides host, x-amz-date and x-amz-security-token; names
  // in any case.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string payload_sha256;  // hex SHA-256 of the body, or "UNSIGNED-PAYLOAD"
};

// The headers that sign `request` for `service` in `region` at `amz_date`
// (YYYYMMDD'T'HHMMSS'Z', UTC): x-amz-date, x-amz-security-token (with a
// session token) and Authorization, in that order.
std::vector<std::pair<std::string, std::string>> SignV4(const SigV4Request& request, const AwsCredentials& credentials,
                                                        std::string_view region, std::string_view service,
                                                        std::string_view amz_date);

// The x-amz-date of a Unix time.
std::string AmzDate(int64_t unix_seconds);

// The profile AWS_PROFILE names (else "default") in the shared files AWS's
// tools read: AWS_SHARED_CREDENTIALS_FILE (~/.aws/credentials, sections
// [NAME]) and AWS_CONFIG_FILE (~/.aws/config, sections [default] and
// [profile NAME], and [services NAME] for the s3 endpoint_url of a profile's
// `services`).
struct AwsProfile {
  std::string name;
  bool named = false;  // by AWS_PROFILE
  bool found = false;  // a section of it in either file
  std::map<std::string, std::string> values;  // the credentials file's first, then the config file's
  std::string s3_endpoint_url;                // of its services section
  std::string files;                          // the files read, for messages
};
// InvalidArgument naming the file and line for a malformed file.
Result<AwsProfile> LoadAwsProfile();

// Credentials as the AWS SDKs find them: AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN; else the profile's
// aws_access_key_id, aws_secret_access_key and aws_session_token, or the
// JSON its credential_process prints; else a container's
// (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI on 169.254.170.2, or
// AWS_CONTAINER_CREDENTIALS_FULL_URI, with AWS_CONTAINER_AUTHORIZATION_TOKEN
// or _TOKEN_FILE); else an EC2 instance role's through IMDSv2
// (AWS_EC2_METADATA_SERVICE_ENDPOINT, default http://169.254.169.254; not
// with AWS_EC2_METADATA_DISABLED=true), given up after a second without an
// answer. nullopt when none holds a key pair (anonymous access).
// InvalidArgument for a malformed file, for a profile AWS_PROFILE names that
// neither file holds, and for a credential_process or container endpoint
// that fails or gives no key pair.
Result<std::optional<AwsCredentials>> LoadAwsCredentials();

}  // namespace pcr
