#include "io/sigv4.h"

#include <curl/curl.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <mutex>
#include <set>

#include "format/json.h"
#include "io/block_feed.h"

namespace pcr {

namespace {

constexpr std::array<uint32_t, 64> kRoundConstants = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

uint32_t Rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

void Compress(uint32_t* h, const uint8_t* block) {
  uint32_t w[64];
  for (int t = 0; t < 16; ++t) {
    w[t] = uint32_t{block[4 * t]} << 24 | uint32_t{block[4 * t + 1]} << 16 | uint32_t{block[4 * t + 2]} << 8 |
           uint32_t{block[4 * t + 3]};
  }
  for (int t = 16; t < 64; ++t) {
    const uint32_t s0 = Rotr(w[t - 15], 7) ^ Rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
    const uint32_t s1 = Rotr(w[t - 2], 17) ^ Rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
    w[t] = w[t - 16] + s0 + w[t - 7] + s1;
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
  for (int t = 0; t < 64; ++t) {
    const uint32_t t1 = k + (Rotr(e, 6) ^ Rotr(e, 11) ^ Rotr(e, 25)) + ((e & f) ^ (~e & g)) + kRoundConstants[t] + w[t];
    const uint32_t t2 = (Rotr(a, 2) ^ Rotr(a, 13) ^ Rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    k = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
  h[4] += e;
  h[5] += f;
  h[6] += g;
  h[7] += k;
}

std::string Hex(std::string_view bytes) {
  std::string out;
  for (const unsigned char c : bytes) {
    out.push_back("0123456789abcdef"[c >> 4]);
    out.push_back("0123456789abcdef"[c & 15]);
  }
  return out;
}

// Decodes %XX escapes, so that a query given encoded or not is encoded once.
std::string UriDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out.push_back(static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::string CanonicalQuery(std::string_view query) {
  std::vector<std::pair<std::string, std::string>> params;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view part = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (part.empty()) continue;
    const size_t eq = part.find('=');
    params.emplace_back(UriEncode(UriDecode(part.substr(0, eq)), false),
                        eq == std::string_view::npos ? "" : UriEncode(UriDecode(part.substr(eq + 1)), false));
  }
  std::sort(params.begin(), params.end());
  std::string out;
  for (const auto& [k, v] : params) out += (out.empty() ? "" : "&") + k + "=" + v;
  return out;
}

// A header value with its ends trimmed and runs of spaces made one.
std::string TrimValue(std::string_view v) {
  std::string out;
  for (const char c : v) {
    if (c == ' ' || c == '\t') {
      if (!out.empty() && out.back() != ' ') out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string Trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r");
  return std::string(s.substr(b, e - b + 1));
}

}  // namespace

void Sha256Hasher::Update(std::string_view data) {
  FeedBlocks(data, block_, &buffered_, &total_, [this](const uint8_t* b) { Compress(h_, b); });
}

std::string Sha256Hasher::Finish() {
  uint8_t tail[128] = {};
  std::memcpy(tail, block_, buffered_);
  tail[buffered_] = 0x80;
  const size_t blocks = buffered_ + 9 <= 64 ? 1 : 2;
  const uint64_t bits = total_ * 8;
  for (int i = 0; i < 8; ++i) tail[blocks * 64 - 1 - i] = static_cast<uint8_t>(bits >> (8 * i));
  for (size_t b = 0; b < blocks; ++b) Compress(h_, tail + 64 * b);
  std::string out(32, '\0');
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 4; ++j) out[4 * i + j] = static_cast<char>(h_[i] >> (24 - 8 * j));
  }
  return out;
}

std::string Sha256(std::string_view data) {
  Sha256Hasher h;
  h.Update(data);
  return h.Finish();
}

std::string Sha256Hex(std::string_view data) { return Hex(Sha256(data)); }

std::string UriEncode(std::string_view s, bool keep_slash) {
  std::string out;
  for (const unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back("0123456789ABCDEF"[c >> 4]);
      out.push_back("0123456789ABCDEF"[c & 15]);
    }
  }
  return out;
}


std::string HmacSha256(std::string_view key, std::string_view data) {
  std::string k(key.size() > 64 ? Sha256(key) : std::string(key));
  k.resize(64, '\0');
  std::string inner(64, '\0'), outer(64, '\0');
  for (int i = 0; i < 64; ++i) {
    inner[i] = static_cast<char>(k[i] ^ 0x36);
    outer[i] = static_cast<char>(k[i] ^ 0x5c);
  }
  return Sha256(outer + Sha256(inner + std::string(data)));
}

std::vector<std::pair<std::string, std::string>> SignV4(const SigV4Request& request, const AwsCredentials& credentials,
                                                        std::string_view region, std::string_view service,
                                                        std::string_view amz_date) {
  std::vector<std::pair<std::string, std::string>> headers = {{"host", request.host},
                                                              {"x-amz-date", std::string(amz_date)}};
  if (!credentials.session_token.empty()) headers.emplace_back("x-amz-security-token", credentials.session_token);
  for (const auto& [name, value] : request.headers) {
    std::string lower(name);
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    headers.emplace_back(lower, value);
  }
  std::stable_sort(headers.begin(), headers.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string canonical_headers, signed_headers;
  for (size_t i = 0; i < headers.size(); ++i) {
    // Repeated names are one header whose values are joined by commas.
    if (i > 0 && headers[i].first == headers[i - 1].first) {
      canonical_headers.back() = ',';
      canonical_headers += TrimValue(headers[i].second);
      canonical_headers += '\n';
      continue;
    }
    canonical_headers += headers[i].first + ":" + TrimValue(headers[i].second) + "\n";
    signed_headers += (signed_headers.empty() ? "" : ";") + headers[i].first;
  }
  const std::string canonical_request = request.method + "\n" + request.path + "\n" + CanonicalQuery(request.query) +
                                        "\n" + canonical_headers + "\n" + signed_headers + "\n" +
                                        request.payload_sha256;
  const std::string date(amz_date.substr(0, 8));
  const std::string scope = date + "/" + std::string(region) + "/" + std::string(service) + "/aws4_request";
  const std::string string_to_sign =
      "AWS4-HMAC-SHA256\n" + std::string(amz_date) + "\n" + scope + "\n" + Sha256Hex(canonical_request);
  std::string key = HmacSha256("AWS4" + credentials.secret_access_key, date);
  key = HmacSha256(key, region);
  key = HmacSha256(key, service);
  key = HmacSha256(key, "aws4_request");
  const std::string signature = Hex(HmacSha256(key, string_to_sign));
  std::vector<std::pair<std::string, std::string>> out = {{"x-amz-date", std::string(amz_date)}};
  if (!credentials.session_token.empty()) out.emplace_back("x-amz-security-token", credentials.session_token);
  out.emplace_back("Authorization", "AWS4-HMAC-SHA256 Credential=" + credentials.access_key_id + "/" + scope +
                                        ", SignedHeaders=" + signed_headers + ", Signature=" + signature);
  return out;
}

std::string AmzDate(int64_t unix_seconds) {
  const time_t t = static_cast<time_t>(unix_seconds);
  struct tm utc;
  gmtime_r(&t, &utc);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%dT%H%M%SZ", &utc);
  return buf;
}

namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

// Reads the sections of an AWS shared file: `section(name)` says which
// section a header names ("" for none of interest), `take(section, key,
// value, sub)` takes a setting (sub: the key of an indented setting's
// parent, as "s3" for services). False when the file cannot be opened.
template <typename Section, typename Take>
Result<bool> ReadAwsFile(const std::string& path, const Section& section, const Take& take) {
  std::ifstream in(path);
  if (!in) return false;
  std::string line, current, parent;
  for (uint64_t number = 1; std::getline(in, line); ++number) {
    const std::string t = Trim(line);
    if (t.empty() || t[0] == '#' || t[0] == ';') continue;
    if (t[0] == '[') {
      if (t.back() != ']') {
        return Status::InvalidArgument(path + ": line " + std::to_string(number) + ": unclosed section header");
      }
      current = section(Trim(t.substr(1, t.size() - 2)));
      parent.clear();
      continue;
    }
    const size_t eq = t.find('=');
    if (eq == std::string::npos) {
      return Status::InvalidArgument(path + ": line " + std::to_string(number) + ": expected key = value");
    }
    const std::string key = Trim(t.substr(0, eq)), value = Trim(t.substr(eq + 1));
    const bool indented = line[0] == ' ' || line[0] == '\t';
    if (!indented) parent = value.empty() ? key : "";
    if (!current.empty()) take(current, key, value, indented ? parent : "");
  }
  return true;
}

// "2026-11-27T23:00:00Z" as Unix time; 0 for other text.
int64_t ParseIsoTime(const std::string& text) {
  std::tm t{};
  if (text.size() < 20 || sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d", &t.tm_year, &t.tm_mon, &t.tm_mday, &t.tm_hour,
                                 &t.tm_min, &t.tm_sec) != 6) {
    return 0;
  }
  t.tm_year -= 1900;
  t.tm_mon -= 1;
  return static_cast<int64_t>(timegm(&t));
}

// The key pair of a credentials JSON document (credential_process's,
// a container endpoint's, IMDS's), or InvalidArgument naming `where`.
Result<AwsCredentials> ParseCredentialsJson(const std::string& text, const std::string& where) {
  AwsCredentials c;
  JsonCursor json(text);
  bool done = false;
  std::string key, value;
  if (!json.BeginObject()) return Status::InvalidArgument(where + ": gives no JSON object");
  while (json.NextMember(&key, &done) && !done) {
    if (json.Peek() != JsonCursor::Kind::kString) {
      if (!json.SkipValue()) break;
      continue;
    }
    if (!json.String(&value)) break;
    if (key == "AccessKeyId") c.access_key_id = value;
    if (key == "SecretAccessKey") c.secret_access_key = value;
    if (key == "SessionToken" || key == "Token") c.session_token = value;
    if (key == "Expiration") c.expires = ParseIsoTime(value);
  }
  if (!json.error().empty() || c.access_key_id.empty() || c.secret_access_key.empty()) {
    return Status::InvalidArgument(where + ": gives no AccessKeyId and SecretAccessKey" +
                                   (json.error().empty() ? "" : " (" + json.error() + ")"));
  }
  return c;
}

size_t AppendBody(char* data, size_t size, size_t n, void* user) {
  auto* out = static_cast<std::string*>(user);
  if (out->size() < (1 << 20)) out->append(data, size * n);
  return size * n;
}

// One request to a credentials endpoint: its status (0 when no answer came
// within `timeout_ms`) and body.
std::pair<long, std::string> CredentialsRequest(const std::string& method, const std::string& url,
                                                const std::vector<std::string>& headers, long timeout_ms) {
  CURL* h = curl_easy_init();
  if (h == nullptr) return {0, ""};
  std::string body;
  curl_slist* list = nullptr;
  for (const std::string& header : headers) list = curl_slist_append(list, header.c_str());
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method.c_str());
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, AppendBody);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
  long status = 0;
  if (curl_easy_perform(h) == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(list);
  curl_easy_cleanup(h);
  return {status, body};
}

// A container's credentials, when its variables name an endpoint.
Result<std::optional<AwsCredentials>> ContainerCredentials() {
  std::string url = Env("AWS_CONTAINER_CREDENTIALS_FULL_URI");
  if (!Env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI").empty()) {
    url = "http://169.254.170.2" + Env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
  }
  if (url.empty()) return std::optional<AwsCredentials>();
  std::string token = Env("AWS_CONTAINER_AUTHORIZATION_TOKEN");
  if (const std::string file = Env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"); !file.empty()) {
    std::ifstream in(file);
    if (!in) return Status::InvalidArgument("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE=" + file + ": cannot read");
    std::getline(in, token);
    token = Trim(token);
  }
  std::vector<std::string> headers;
  if (!token.empty()) headers.push_back("Authorization: " + token);
  const std::string where = "the container credentials endpoint " + url;
  const auto [status, body] = CredentialsRequest("GET", url, headers, 5000);
  if (status != 200) {
    return Status::InvalidArgument(where + ": " + (status == 0 ? "no answer" : "HTTP " + std::to_string(status)));
  }
  PCR_ASSIGN_OR_RETURN(AwsCredentials c, ParseCredentialsJson(body, where));
  return std::optional<AwsCredentials>(c);
}

// An EC2 instance role's credentials through IMDSv2; none where no
// instance metadata service answers.
std::optional<AwsCredentials> InstanceCredentials() {
  if (Env("AWS_EC2_METADATA_DISABLED") == "true") return std::nullopt;
  std::string base = Env("AWS_EC2_METADATA_SERVICE_ENDPOINT");
  if (base.empty()) base = "http://169.254.169.254";
  while (base.ends_with('/')) base.pop_back();
  // An endpoint that did not answer is not asked again by this process.
  static std::mutex mu;
  static std::set<std::string> silent;
  {
    std::lock_guard lock(mu);
    if (silent.count(base)) return std::nullopt;
  }
  constexpr long kTimeoutMs = 1000;
  const auto [token_status, token] = CredentialsRequest(
      "PUT", base + "/latest/api/token", {"X-aws-ec2-metadata-token-ttl-seconds: 21600"}, kTimeoutMs);
  if (token_status == 0) {
    std::lock_guard lock(mu);
    silent.insert(base);
  }
  if (token_status != 200 || token.empty()) return std::nullopt;
  const std::vector<std::string> headers = {"X-aws-ec2-metadata-token: " + token};
  const std::string roles = base + "/latest/meta-data/iam/security-credentials/";
  const auto [role_status, role_list] = CredentialsRequest("GET", roles, headers, kTimeoutMs);
  const std::string role = Trim(role_list.substr(0, role_list.find('\n')));
  if (role_status != 200 || role.empty()) return std::nullopt;
  const auto [status, body] = CredentialsRequest("GET", roles + role, headers, kTimeoutMs);
  if (status != 200) return std::nullopt;
  auto c = ParseCredentialsJson(body, "the instance role " + role);
  if (!c.ok()) return std::nullopt;
  return *c;
}

// The key pair a credential_process prints (its JSON, version 1).
Result<AwsCredentials> RunCredentialProcess(const std::string& command, const std::string& profile) {
  const std::string where = "credential_process of profile " + profile;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return Status::InvalidArgument(where + ": cannot run: " + std::strerror(errno));
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), p)) > 0;) {
    if (out.size() < (1 << 20)) out.append(buf, n);  // the rest read to the end, so the process can exit
  }
  const int status = pclose(p);
  if (status != 0) return Status::InvalidArgument(where + ": exited with status " + std::to_string(status));
  return ParseCredentialsJson(out, where);
}

}  // namespace

Result<AwsProfile> LoadAwsProfile() {
  AwsProfile p;
  p.named = !Env("AWS_PROFILE").empty();
  p.name = p.named ? Env("AWS_PROFILE") : "default";
  const std::string home = Env("HOME");
  std::string credentials = Env("AWS_SHARED_CREDENTIALS_FILE"), config = Env("AWS_CONFIG_FILE");
  if (credentials.empty() && !home.empty()) credentials = home + "/.aws/credentials";
  if (config.empty() && !home.empty()) config = home + "/.aws/config";
  p.files = credentials + " or " + config;
  std::map<std::string, std::map<std::string, std::string>> services;  // section: s3 settings
  auto take = [&](const std::string&, const std::string& key, const std::string& value, const std::string& parent) {
    if (parent.empty()) p.values.emplace(key, value);
  };
  if (!credentials.empty()) {
    PCR_RETURN_IF_ERROR(ReadAwsFile(
        credentials,
        [&](const std::string& name) {
          p.found |= name == p.name;
          return name == p.name ? name : "";
        },
        take).status());
  }
  if (!config.empty()) {
    PCR_RETURN_IF_ERROR(ReadAwsFile(
        config,
        [&](const std::string& name) -> std::string {
          const bool mine = name == (p.name == "default" ? "default" : "profile " + p.name) ||
                            (p.name == "default" && name == "profile default");
          p.found |= mine;
          if (mine) return "profile";
          if (name.starts_with("services ")) return name;
          return "";
        },
        [&](const std::string& section, const std::string& key, const std::string& value, const std::string& parent) {
          if (section == "profile") {
            take(section, key, value, parent);
          } else if (parent == "s3") {
            services[section][key] = value;
          }
        }).status());
  }
  if (const auto it = p.values.find("services"); it != p.values.end()) {
    const auto s = services.find("services " + it->second);
    if (s != services.end() && s->second.count("endpoint_url")) p.s3_endpoint_url = s->second["endpoint_url"];
  }
  return p;
}

Result<std::optional<AwsCredentials>> LoadAwsCredentials() {
  AwsCredentials c{Env("AWS_ACCESS_KEY_ID"), Env("AWS_SECRET_ACCESS_KEY"), Env("AWS_SESSION_TOKEN")};
  if (!c.access_key_id.empty() && !c.secret_access_key.empty()) return std::optional<AwsCredentials>(c);
  PCR_ASSIGN_OR_RETURN(const AwsProfile p, LoadAwsProfile());
  if (p.named && !p.found) {
    return Status::InvalidArgument("AWS_PROFILE=" + p.name + ": no such profile in " + p.files);
  }
  auto value = [&](const char* key) {
    const auto it = p.values.find(key);
    return it == p.values.end() ? std::string() : it->second;
  };
  c = {value("aws_access_key_id"), value("aws_secret_access_key"), value("aws_session_token")};
  if (!c.access_key_id.empty() && !c.secret_access_key.empty()) return std::optional<AwsCredentials>(c);
  if (!value("credential_process").empty()) {
    PCR_ASSIGN_OR_RETURN(c, RunCredentialProcess(value("credential_process"), p.name));
    return std::optional<AwsCredentials>(c);
  }
  PCR_ASSIGN_OR_RETURN(std::optional<AwsCredentials> container, ContainerCredentials());
  if (container) return container;
  return InstanceCredentials();
}

}  // namespace pcr
