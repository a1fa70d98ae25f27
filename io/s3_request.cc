#include "io/s3_request.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>

namespace pcr {

namespace {

const char* Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

}  // namespace

S3Signer S3Signer::FromOptions(const RemoteOptions& options) {
  S3Signer s;
  s.endpoint_ = options.s3_endpoint;
  if (s.endpoint_.empty() && Env("AWS_ENDPOINT_URL") != nullptr) s.endpoint_ = Env("AWS_ENDPOINT_URL");
  while (s.endpoint_.ends_with('/')) s.endpoint_.pop_back();
  if (!s.endpoint_.empty() && s.endpoint_.find("://") == std::string::npos) s.endpoint_ = "https://" + s.endpoint_;
  const size_t scheme_end = s.endpoint_.find("://");
  if (scheme_end != std::string::npos) {
    std::transform(s.endpoint_.begin(), s.endpoint_.begin() + static_cast<std::ptrdiff_t>(scheme_end),
                   s.endpoint_.begin(), [](unsigned char ch) { return std::tolower(ch); });
  }
  s.region_ = !options.s3_region.empty()             ? options.s3_region
              : Env("AWS_REGION") != nullptr         ? Env("AWS_REGION")
              : Env("AWS_DEFAULT_REGION") != nullptr ? Env("AWS_DEFAULT_REGION")
                                                     : "us-east-1";
  if (!options.anonymous) {
    auto credentials = LoadAwsCredentials();
    if (credentials.ok()) {
      s.credentials_ = *credentials;
    } else {
      s.credentials_status_ = credentials.status();
    }
  }
  return s;
}

Result<S3Object> S3Signer::Locate(std::string_view path, bool bucket_only) const {
  const std::string_view rest = path.starts_with("s3://") ? path.substr(5) : std::string_view();
  const size_t slash = rest.find('/');
  if (slash == 0 || slash == std::string_view::npos || (slash + 1 == rest.size()) != bucket_only) {
    return Status::InvalidArgument(std::string(path) + (bucket_only ? ": expected s3://BUCKET/" : ": expected s3://BUCKET/KEY"));
  }
  const std::string bucket(rest.substr(0, slash));
  const std::string key = "/" + UriEncode(rest.substr(slash + 1), true);
  S3Object o;
  if (endpoint_.empty()) {
    o.host = bucket + ".s3." + region_ + ".amazonaws.com";
    o.url = "https://" + o.host + key;
    o.canonical_path = key;
    return o;
  }
  // scheme://host[:port][/prefix]: the Host header drops a default port,
  // and the path keeps the prefix, as sent.
  const size_t scheme = endpoint_.find("://");
  const std::string_view authority_and_prefix = std::string_view(endpoint_).substr(scheme + 3);
  const size_t cut = authority_and_prefix.find('/');
  o.host = std::string(authority_and_prefix.substr(0, cut));
  const std::string prefix = cut == std::string_view::npos ? "" : std::string(authority_and_prefix.substr(cut));
  const std::string default_port = endpoint_.starts_with("https://") ? ":443" : ":80";
  if (o.host.ends_with(default_port)) o.host.resize(o.host.size() - default_port.size());
  o.url = endpoint_ + "/" + bucket + key;
  o.canonical_path = prefix + "/" + bucket + key;
  return o;
}

Result<std::vector<std::string>> S3Signer::Headers(std::string_view path, const S3Object& object,
                                                   const std::string& method, const std::string& query,
                                                   const std::vector<std::pair<std::string, std::string>>& headers,
                                                   const std::string& payload_sha256) const {
  if (!credentials_status_.ok()) return credentials_status_.WithPrefix(std::string(path));
  std::vector<std::string> out;
  if (!credentials_) {
    for (const auto& [name, value] : headers) out.push_back(name + ": " + value);
    return out;  // anonymous
  }
  SigV4Request r{.method = method, .host = object.host, .path = object.canonical_path, .query = query,
                 .headers = {{"x-amz-content-sha256", payload_sha256}}, .payload_sha256 = payload_sha256};
  r.headers.insert(r.headers.end(), headers.begin(), headers.end());
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  out.push_back("Host: " + object.host);  // as signed
  for (const auto& [name, value] : r.headers) out.push_back(name + ": " + value);
  for (const auto& [name, value] : SignV4(r, *credentials_, region_, "s3", AmzDate(now))) {
    out.push_back(name + ": " + value);
  }
  return out;
}

}  // namespace pcr
