#include "io/object_digest.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "io/md5.h"
#include "io/sigv4.h"

namespace pcr {

namespace {

// Slicing-by-8 tables of a reflected CRC of polynomial `poly`.
template <typename T>
struct CrcTables {
  std::array<std::array<T, 256>, 8> t{};
  explicit CrcTables(T poly) {
    for (unsigned i = 0; i < 256; ++i) {
      T c = static_cast<T>(i);
      for (int k = 0; k < 8; ++k) c = (c & 1) != 0 ? static_cast<T>((c >> 1) ^ poly) : static_cast<T>(c >> 1);
      t[0][i] = c;
    }
    for (unsigned i = 0; i < 256; ++i) {
      for (size_t s = 1; s < 8; ++s) t[s][i] = static_cast<T>((t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff]);
    }
  }
};

template <typename T>
T ReflectedCrc(const CrcTables<T>& tables, std::string_view data, T crc) {
  const auto& t = tables.t;
  crc = static_cast<T>(~crc);
  const auto* p = reinterpret_cast<const uint8_t*>(data.data());
  size_t n = data.size();
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t word = 0;
    for (int i = 7; i >= 0; --i) word = word << 8 | p[i];
    word ^= static_cast<uint64_t>(crc);
    crc = static_cast<T>(t[7][word & 0xff] ^ t[6][(word >> 8) & 0xff] ^ t[5][(word >> 16) & 0xff] ^
                           t[4][(word >> 24) & 0xff] ^ t[3][(word >> 32) & 0xff] ^ t[2][(word >> 40) & 0xff] ^
                           t[1][(word >> 48) & 0xff] ^ t[0][(word >> 56) & 0xff]);
  }
  for (; n > 0; --n, ++p) crc = static_cast<T>((crc >> 8) ^ t[0][(crc ^ *p) & 0xff]);
  return static_cast<T>(~crc);
}

const CrcTables<uint32_t>& Crc32cTables() {
  static const CrcTables<uint32_t> tables(0x82F63B78u);
  return tables;
}
const CrcTables<uint32_t>& Crc32Tables() {
  static const CrcTables<uint32_t> tables(0xEDB88320u);
  return tables;
}
const CrcTables<uint64_t>& Crc64NvmeTables() {
  static const CrcTables<uint64_t> tables(0x9A6C9329AC4BC9B5ull);  // 0xAD93D23594C93659, reflected
  return tables;
}

std::string BigEndian(uint64_t v, int bytes) {
  std::string out;
  for (int i = bytes - 1; i >= 0; --i) out += static_cast<char>(v >> (8 * i));
  return out;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string Trimmed(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r\n\"");
  if (b == std::string_view::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r\n\"");
  return std::string(s.substr(b, e - b + 1));
}

const std::string* Find(const std::vector<std::pair<std::string, std::string>>& headers, std::string_view name) {
  for (const auto& [n, v] : headers) {
    if (n == name) return &v;
  }
  return nullptr;
}

ObjectDigest Make(ObjectDigest::Kind kind, std::string value, std::string source) {
  const size_t want = kind == ObjectDigest::Kind::kCrc32c || kind == ObjectDigest::Kind::kCrc32 ? 4
                      : kind == ObjectDigest::Kind::kCrc64Nvme                                  ? 8
                      : kind == ObjectDigest::Kind::kSha256                                     ? 32
                                                                                                : 16;
  if (value.size() != want) return {};
  return {kind, std::move(value), std::move(source)};
}

// A structured-field dictionary or RFC 3230 list of "alg=value" items: the
// value for `alg` (lowercase), its ':' delimiters removed.
std::string ListValue(std::string_view list, std::string_view alg) {
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view item = list.substr(0, comma);
    list.remove_prefix(comma == std::string_view::npos ? list.size() : comma + 1);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || Lower(Trimmed(item.substr(0, eq))) != alg) continue;
    std::string v = Trimmed(item.substr(eq + 1));
    if (v.size() >= 2 && v.front() == ':' && v.back() == ':') v = v.substr(1, v.size() - 2);
    return v;
  }
  return "";
}

}  // namespace

uint32_t Crc32c(std::string_view data, uint32_t crc) { return ReflectedCrc(Crc32cTables(), data, crc); }
uint32_t Crc32(std::string_view data, uint32_t crc) { return ReflectedCrc(Crc32Tables(), data, crc); }
uint64_t Crc64Nvme(std::string_view data, uint64_t crc) { return ReflectedCrc(Crc64NvmeTables(), data, crc); }

std::string Base64(std::string_view bytes) {
  static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = uint32_t{static_cast<uint8_t>(bytes[i])} << 16 | uint32_t{static_cast<uint8_t>(bytes[i + 1])} << 8 |
                       static_cast<uint8_t>(bytes[i + 2]);
    for (int k = 18; k >= 0; k -= 6) out += kAlphabet[(v >> k) & 63];
  }
  if (i < bytes.size()) {
    uint32_t v = uint32_t{static_cast<uint8_t>(bytes[i])} << 16;
    if (i + 1 < bytes.size()) v |= uint32_t{static_cast<uint8_t>(bytes[i + 1])} << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string FromBase64(std::string_view text) {
  std::string out;
  uint32_t v = 0;
  int bits = 0;
  size_t pad = 0;
  for (const char c : text) {
    int d;
    if (c >= 'A' && c <= 'Z') {
      d = c - 'A';
    } else if (c >= 'a' && c <= 'z') {
      d = c - 'a' + 26;
    } else if (c >= '0' && c <= '9') {
      d = c - '0' + 52;
    } else if (c == '+' || c == '-') {
      d = 62;
    } else if (c == '/' || c == '_') {
      d = 63;
    } else if (c == '=') {
      ++pad;
      continue;
    } else {
      return "";
    }
    if (pad > 0) return "";
    v = v << 6 | static_cast<uint32_t>(d);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>(v >> bits);
      v &= (1u << bits) - 1;
    }
  }
  return pad > 2 ? "" : out;
}

std::string ObjectDigest::Describe() const {
  if (empty()) return "no digest";
  static const char kHex[] = "0123456789abcdef";
  std::string text;
  if (source == "ETag") {
    for (const unsigned char c : value) {
      text += kHex[c >> 4];
      text += kHex[c & 15];
    }
  } else {
    text = Base64(value);
  }
  return source + " " + text;
}

ObjectDigest ObjectDigest::FromEtag(std::string_view etag) {
  std::string e = Trimmed(etag);
  if (e.starts_with("W/")) return {};
  e = Trimmed(e);
  if (e.size() != 32 || e.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) return {};
  std::string bytes;
  auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : std::tolower(c) - 'a' + 10; };
  for (size_t i = 0; i < 32; i += 2) bytes += static_cast<char>(digit(e[i]) * 16 + digit(e[i + 1]));
  return Make(Kind::kMd5, std::move(bytes), "ETag");
}

ObjectDigest DigestFromHeaders(const std::vector<std::pair<std::string, std::string>>& headers, bool etag_is_md5) {
  using Kind = ObjectDigest::Kind;
  const std::string* type = Find(headers, "x-amz-checksum-type");
  const bool composite = type != nullptr && Lower(Trimmed(*type)) == "composite";
  static const std::pair<const char*, Kind> kS3[] = {{"x-amz-checksum-crc32c", Kind::kCrc32c},
                                                     {"x-amz-checksum-crc64nvme", Kind::kCrc64Nvme},
                                                     {"x-amz-checksum-crc32", Kind::kCrc32},
                                                     {"x-amz-checksum-sha256", Kind::kSha256}};
  for (const auto& [name, kind] : kS3) {
    const std::string* v = Find(headers, name);
    // A multipart object's checksum of its parts' checksums ends in "-N".
    if (v == nullptr || composite || v->find('-') != std::string::npos) continue;
    ObjectDigest d = Make(kind, FromBase64(Trimmed(*v)), name);
    if (!d.empty()) return d;
  }
  if (const std::string* v = Find(headers, "repr-digest")) {
    ObjectDigest d = Make(Kind::kSha256, FromBase64(ListValue(*v, "sha-256")), "Repr-Digest sha-256");
    if (!d.empty()) return d;
  }
  if (const std::string* v = Find(headers, "digest")) {
    ObjectDigest d = Make(Kind::kSha256, FromBase64(ListValue(*v, "sha-256")), "Digest sha-256");
    if (d.empty()) d = Make(Kind::kMd5, FromBase64(ListValue(*v, "md5")), "Digest md5");
    if (!d.empty()) return d;
  }
  if (const std::string* v = Find(headers, "content-md5")) {
    ObjectDigest d = Make(Kind::kMd5, FromBase64(Trimmed(*v)), "Content-MD5");
    if (!d.empty()) return d;
  }
  if (!etag_is_md5) return {};
  const std::string* sse = Find(headers, "x-amz-server-side-encryption");
  if (sse != nullptr && Lower(Trimmed(*sse)).starts_with("aws:kms")) return {};
  if (Find(headers, "x-amz-server-side-encryption-customer-algorithm") != nullptr) return {};
  const std::string* etag = Find(headers, "etag");
  return etag == nullptr ? ObjectDigest{} : ObjectDigest::FromEtag(*etag);
}

ObjectDigest BodyDigestFromHeaders(const std::vector<std::pair<std::string, std::string>>& headers) {
  using Kind = ObjectDigest::Kind;
  if (const std::string* v = Find(headers, "content-digest")) {
    ObjectDigest d = Make(Kind::kSha256, FromBase64(ListValue(*v, "sha-256")), "Content-Digest sha-256");
    if (!d.empty()) return d;
  }
  if (const std::string* v = Find(headers, "content-md5")) return Make(Kind::kMd5, FromBase64(Trimmed(*v)), "Content-MD5");
  return {};
}

DigestChecker::DigestChecker(const ObjectDigest& digest) : digest_(digest) {
  if (digest.kind == ObjectDigest::Kind::kMd5) hasher_ = new Md5Hasher();
  if (digest.kind == ObjectDigest::Kind::kSha256) hasher_ = new Sha256Hasher();
}

DigestChecker::~DigestChecker() {
  if (digest_.kind == ObjectDigest::Kind::kMd5) delete static_cast<Md5Hasher*>(hasher_);
  if (digest_.kind == ObjectDigest::Kind::kSha256) delete static_cast<Sha256Hasher*>(hasher_);
}

void DigestChecker::Update(std::string_view data) {
  bytes_ += data.size();
  switch (digest_.kind) {
    case ObjectDigest::Kind::kNone: break;
    case ObjectDigest::Kind::kCrc32c: crc_ = Crc32c(data, static_cast<uint32_t>(crc_)); break;
    case ObjectDigest::Kind::kCrc32: crc_ = Crc32(data, static_cast<uint32_t>(crc_)); break;
    case ObjectDigest::Kind::kCrc64Nvme: crc_ = Crc64Nvme(data, crc_); break;
    case ObjectDigest::Kind::kSha256: static_cast<Sha256Hasher*>(hasher_)->Update(data); break;
    case ObjectDigest::Kind::kMd5: static_cast<Md5Hasher*>(hasher_)->Update(data); break;
  }
}

bool DigestChecker::Matches() {
  std::string raw;
  switch (digest_.kind) {
    case ObjectDigest::Kind::kNone: return true;
    case ObjectDigest::Kind::kCrc32c:
    case ObjectDigest::Kind::kCrc32: raw = BigEndian(crc_, 4); break;
    case ObjectDigest::Kind::kCrc64Nvme: raw = BigEndian(crc_, 8); break;
    case ObjectDigest::Kind::kSha256: raw = static_cast<Sha256Hasher*>(hasher_)->Finish(); break;
    case ObjectDigest::Kind::kMd5: raw = static_cast<Md5Hasher*>(hasher_)->Finish(); break;
  }
  ObjectDigest mine = digest_;
  mine.value = raw;
  got_ = mine.Describe().substr(digest_.source.size() + 1);
  return raw == digest_.value;
}

bool DigestMatches(const ObjectDigest& digest, std::string_view data, std::string* got) {
  DigestChecker checker(digest);
  checker.Update(data);
  const bool same = checker.Matches();
  if (got != nullptr) *got = checker.got();
  return same;
}

}  // namespace pcr
