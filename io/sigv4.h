// AWS Signature Version 4 for S3-compatible object stores: SHA-256, HMAC,
// the canonical request and the Authorization header, and credentials from
// the standard AWS environment variables and shared credentials file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pcr/status.h"

namespace pcr {

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

// Credentials as AWS's tools find them: AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN; else the profile AWS_PROFILE
// (default "default") of AWS_SHARED_CREDENTIALS_FILE (default
// ~/.aws/credentials). nullopt when neither holds a key pair (anonymous
// access); InvalidArgument naming the file and line for a malformed file.
Result<std::optional<AwsCredentials>> LoadAwsCredentials();

}  // namespace pcr
