#include "io/sigv4.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>

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

void Compress(std::array<uint32_t, 8>* h, const uint8_t* block) {
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
  uint32_t a = (*h)[0], b = (*h)[1], c = (*h)[2], d = (*h)[3], e = (*h)[4], f = (*h)[5], g = (*h)[6], k = (*h)[7];
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
  (*h)[0] += a;
  (*h)[1] += b;
  (*h)[2] += c;
  (*h)[3] += d;
  (*h)[4] += e;
  (*h)[5] += f;
  (*h)[6] += g;
  (*h)[7] += k;
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

std::string Sha256(std::string_view data) {
  std::array<uint32_t, 8> h = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                               0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  const auto* p = reinterpret_cast<const uint8_t*>(data.data());
  size_t n = data.size();
  for (; n >= 64; n -= 64, p += 64) Compress(&h, p);
  uint8_t tail[128] = {};
  std::memcpy(tail, p, n);
  tail[n] = 0x80;
  const size_t blocks = n + 9 <= 64 ? 1 : 2;
  const uint64_t bits = static_cast<uint64_t>(data.size()) * 8;
  for (int i = 0; i < 8; ++i) tail[blocks * 64 - 1 - i] = static_cast<uint8_t>(bits >> (8 * i));
  for (size_t b = 0; b < blocks; ++b) Compress(&h, tail + 64 * b);
  std::string out(32, '\0');
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 4; ++j) out[4 * i + j] = static_cast<char>(h[i] >> (24 - 8 * j));
  }
  return out;
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

Result<std::optional<AwsCredentials>> LoadAwsCredentials() {
  auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr ? std::string(v) : std::string();
  };
  AwsCredentials c{env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY"), env("AWS_SESSION_TOKEN")};
  if (!c.access_key_id.empty() && !c.secret_access_key.empty()) return std::optional<AwsCredentials>(c);
  std::string path = env("AWS_SHARED_CREDENTIALS_FILE");
  if (path.empty()) {
    if (env("HOME").empty()) return std::optional<AwsCredentials>();
    path = env("HOME") + "/.aws/credentials";
  }
  std::ifstream in(path);
  if (!in) return std::optional<AwsCredentials>();
  const std::string profile = env("AWS_PROFILE").empty() ? "default" : env("AWS_PROFILE");
  c = {};
  std::string line, section;
  for (uint64_t number = 1; std::getline(in, line); ++number) {
    const std::string t = Trim(line);
    if (t.empty() || t[0] == '#' || t[0] == ';') continue;
    if (t[0] == '[') {
      if (t.back() != ']') {
        return Status::InvalidArgument(path + ": line " + std::to_string(number) + ": unclosed section header");
      }
      section = Trim(t.substr(1, t.size() - 2));
      continue;
    }
    const size_t eq = t.find('=');
    if (eq == std::string::npos) {
      return Status::InvalidArgument(path + ": line " + std::to_string(number) + ": expected key = value");
    }
    if (section != profile) continue;
    const std::string key = Trim(t.substr(0, eq)), value = Trim(t.substr(eq + 1));
    if (key == "aws_access_key_id") c.access_key_id = value;
    if (key == "aws_secret_access_key") c.secret_access_key = value;
    if (key == "aws_session_token") c.session_token = value;
  }
  if (c.access_key_id.empty() || c.secret_access_key.empty()) return std::optional<AwsCredentials>();
  return std::optional<AwsCredentials>(c);
}

}  // namespace pcr
