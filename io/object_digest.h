// What a store says an object's bytes are (an S3 ETag that is an MD5, S3's
// flexible checksums, HTTP's Content-MD5, Digest and Repr-Digest), and
// checking bytes read against it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pcr {

// CRC-32C (Castagnoli), CRC-32 (ISO-HDLC, zlib's) and CRC-64/NVME, each
// continued from `crc` (0 to start).
uint32_t Crc32c(std::string_view data, uint32_t crc = 0);
uint32_t Crc32(std::string_view data, uint32_t crc = 0);
uint64_t Crc64Nvme(std::string_view data, uint64_t crc = 0);
// RFC 4648 base64, and its decoding (empty for text that is not base64).
std::string Base64(std::string_view bytes);
std::string FromBase64(std::string_view text);

struct ObjectDigest {
  enum class Kind { kNone, kCrc32c, kCrc32, kCrc64Nvme, kSha256, kMd5 };
  Kind kind = Kind::kNone;
  std::string value;   // the digest's bytes (big-endian for CRCs)
  std::string source;  // where it came from: "ETag", "x-amz-checksum-crc32c", "Content-MD5", ...

  bool empty() const { return kind == Kind::kNone; }
  // "x-amz-checksum-crc32c 4waSgw==" or "ETag 0cc1..."
  std::string Describe() const;
  // The digest of `kind` that an S3 ETag is, when it is a single part's
  // MD5 (32 hex digits); none for a multipart "md5-N" or another form.
  static ObjectDigest FromEtag(std::string_view etag);
};

// The digest to check an object's bytes against, from the headers of an
// answer for the whole object (lowercase names, values as sent), the
// cheapest first: S3's full-object flexible checksums, HTTP's Repr-Digest,
// Digest and Content-MD5, then with `etag_is_md5` an S3 ETag unless the
// object is encrypted with SSE-KMS or SSE-C (whose ETags are not MD5s).
ObjectDigest DigestFromHeaders(const std::vector<std::pair<std::string, std::string>>& headers, bool etag_is_md5);
// The digest of one answer's body alone (Content-MD5, Content-Digest), for
// a range answer (206), whose representation digests name the whole.
ObjectDigest BodyDigestFromHeaders(const std::vector<std::pair<std::string, std::string>>& headers);

// Hashes bytes given in order with a digest's algorithm.
// Thread safety: not thread-safe.
class DigestChecker {
 public:
  explicit DigestChecker(const ObjectDigest& digest);
  ~DigestChecker();
  DigestChecker(const DigestChecker&) = delete;
  DigestChecker& operator=(const DigestChecker&) = delete;
  void Update(std::string_view data);
  uint64_t bytes() const { return bytes_; }
  // Whether every byte given has the digest; the checker is then spent.
  bool Matches();
  // The digest of the bytes given, in the digest's own form (base64 or hex),
  // after Matches.
  const std::string& got() const { return got_; }

 private:
  const ObjectDigest& digest_;
  uint64_t crc_ = 0;
  uint64_t bytes_ = 0;
  void* hasher_ = nullptr;  // Md5Hasher or Sha256Hasher
  std::string got_;
};

// Whether `data` has `digest` (true when the digest is empty); `got` is set
// to the digest the bytes have.
bool DigestMatches(const ObjectDigest& digest, std::string_view data, std::string* got = nullptr);

}  // namespace pcr
