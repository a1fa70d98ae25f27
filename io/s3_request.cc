#include "io/s3_request.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>

#include "io/remote_path.h"

namespace pcr {

namespace {

const char* Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

}  // namespace

// XML text with its five entities and character references decoded.
std::string XmlText(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const size_t semi = s[i] == '&' ? s.find(';', i) : std::string::npos;
    if (semi == std::string::npos) {
      out += s[i];
      continue;
    }
    const std::string name = s.substr(i + 1, semi - i - 1);
    static const std::pair<const char*, char> kEntities[] = {
        {"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}};
    bool known = false;
    for (const auto& [n, c] : kEntities) {
      if (name == n) {
        out += c;
        known = true;
      }
    }
    if (!known && name.size() > 1 && name[0] == '#') {
      const bool hex = name[1] == 'x';
      const std::string digits = name.substr(hex ? 2 : 1);
      uint32_t cp = 0;
      const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), cp, hex ? 16 : 10);
      if (ec == std::errc() && end == digits.data() + digits.size() && cp > 0 && cp < 0x110000) {
        // UTF-8 of the code point.
        if (cp < 0x80) {
          out += static_cast<char>(cp);
        } else if (cp < 0x800) {
          out += static_cast<char>(0xC0 | (cp >> 6));
          out += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
          out += static_cast<char>(0xE0 | (cp >> 12));
          out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
          out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
          out += static_cast<char>(0xF0 | (cp >> 18));
          out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
          out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
          out += static_cast<char>(0x80 | (cp & 0x3F));
        }
        known = true;
      }
    }
    if (!known) {
      out += s[i];
      continue;
    }
    i = semi;
  }
  return out;
}

// The text of the first <tag> element of an XML body, or "".
std::string XmlValue(const std::string& body, const std::string& tag) {
  const std::string open = "<" + tag + ">", close = "</" + tag + ">";
  const size_t a = body.find(open);
  if (a == std::string::npos) return "";
  const size_t b = body.find(close, a + open.size());
  return b == std::string::npos ? "" : body.substr(a + open.size(), b - a - open.size());
}

bool RetryableStatus(long status) { return status == 429 || (status >= 500 && status != 501); }

std::string DescribeHttpError(long status, const std::string& body, std::string_view bucket_region) {
  std::string out = "HTTP " + std::to_string(status);
  const std::string code = XmlText(XmlValue(body, "Code")), message = XmlText(XmlValue(body, "Message"));
  if (!code.empty()) out += " " + code;
  if (!message.empty()) out += ": " + message;
  std::string region(bucket_region);
  if (region.empty()) region = XmlText(XmlValue(body, "Region"));
  if (!region.empty() && (status == 301 || status == 400)) {
    return out + " (the bucket is in region " + region + ": set AWS_REGION=" + region + ")";
  }
  if (status == 301 || status == 307) return out + " (the bucket is in another region: set AWS_REGION to it)";
  if (status == 401 || status == 403) {
    if (code == "SignatureDoesNotMatch" || code == "InvalidAccessKeyId") {
      return out + " (access denied: check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY or the profile's keys)";
    }
    return out + " (access denied: check the credentials and the bucket's permissions)";
  }
  if (status == 404 && code == "NoSuchBucket") {
    return out + " (check the bucket's name, and AWS_ENDPOINT_URL for a store other than AWS)";
  }
  if (status == 404) return out + " (not found)";
  return out;
}

S3Signer S3Signer::FromOptions(const RemoteOptions& options) {
  S3Signer s;
  // A malformed profile fails only a request that needs its credentials
  // (LoadAwsCredentials says why); its other settings are then none.
  const Result<AwsProfile> profile = LoadAwsProfile();
  auto setting = [&](const char* key) {
    if (!profile.ok()) return std::string();
    const auto it = profile->values.find(key);
    return it == profile->values.end() ? std::string() : it->second;
  };
  // The AWS SDKs' order: the option, the service's variable, the general
  // one, then the profile's services section and the profile.
  const bool configured = Env("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS") == nullptr ||
                          std::string(Env("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")) != "true";
  s.endpoint_ = options.s3_endpoint;
  for (const char* name : {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"}) {
    if (s.endpoint_.empty() && configured && Env(name) != nullptr) s.endpoint_ = Env(name);
  }
  if (s.endpoint_.empty() && configured && profile.ok()) s.endpoint_ = profile->s3_endpoint_url;
  if (s.endpoint_.empty() && configured) s.endpoint_ = setting("endpoint_url");
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
              : !setting("region").empty()           ? setting("region")
                                                     : "us-east-1";
  s.ca_bundle_ = Env("AWS_CA_BUNDLE") != nullptr ? Env("AWS_CA_BUNDLE") : setting("ca_bundle");
  if (!options.anonymous) {
    auto credentials = LoadAwsCredentials();
    if (credentials.ok()) {
      s.credentials_->held = *credentials;
    } else {
      s.credentials_status_ = credentials.status();
    }
  }
  return s;
}

Result<S3Object> S3Signer::Address(std::string_view path, bool bucket_only) const {
  S3PathParts parts;
  if (!SplitS3Path(path, &parts) || !parts.slash || parts.rest.empty() != bucket_only) {
    return Status::InvalidArgument(std::string(path) + (bucket_only ? ": expected s3://BUCKET/" : ": expected s3://BUCKET/KEY"));
  }
  const std::string bucket(parts.bucket);
  const std::string key = "/" + UriEncode(parts.rest, true);
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
  // A request on the bucket is on /BUCKET, as the SDKs send it path-style.
  const std::string object_path = bucket_only ? "" : key;
  o.url = endpoint_ + "/" + bucket + object_path;
  o.canonical_path = prefix + "/" + bucket + object_path;
  return o;
}

Result<std::vector<std::string>> S3Signer::Headers(std::string_view path, const S3Object& object,
                                                   const std::string& method, const std::string& query,
                                                   const std::vector<std::pair<std::string, std::string>>& headers,
                                                   const std::string& payload_sha256) const {
  if (!credentials_status_.ok()) return credentials_status_.WithPrefix(std::string(path));
  std::vector<std::string> out;
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  std::optional<AwsCredentials> credentials;
  {
    std::lock_guard lock(credentials_->mu);
    std::optional<AwsCredentials>& held = credentials_->held;
    if (held && held->expires != 0 && held->expires - now < 300) {
      auto fresh = LoadAwsCredentials();
      if (fresh.ok() && fresh->has_value()) held = *fresh;  // else the old ones, while they last
    }
    credentials = held;
  }
  if (!credentials) {
    for (const auto& [name, value] : headers) out.push_back(name + ": " + value);
    return out;  // anonymous
  }
  SigV4Request r{.method = method, .host = object.host, .path = object.canonical_path, .query = query,
                 .headers = {{"x-amz-content-sha256", payload_sha256}}, .payload_sha256 = payload_sha256};
  r.headers.insert(r.headers.end(), headers.begin(), headers.end());
  out.push_back("Host: " + object.host);  // as signed
  for (const auto& [name, value] : r.headers) out.push_back(name + ": " + value);
  for (const auto& [name, value] : SignV4(r, *credentials, region_, "s3", AmzDate(now))) {
    out.push_back(name + ": " + value);
  }
  return out;
}

}  // namespace pcr
