// Object digests: CRC-32C, CRC-32 and CRC-64/NVME against the check values
// of the CRC catalogue, MD5 and SHA-256 given in pieces against the
// one-shot digests, base64 against RFC 4648's examples, and which digest
// an answer's headers give.
#include <catch2/catch.hpp>

#include <string>

#include "io/md5.h"
#include "io/object_digest.h"
#include "io/sigv4.h"

namespace pcr {
namespace {

using Headers = std::vector<std::pair<std::string, std::string>>;

TEST_CASE("CRCs give the catalogue's check values, in one piece or several") {
  CHECK(Crc32c("123456789") == 0xE3069283u);
  CHECK(Crc32("123456789") == 0xCBF43926u);
  CHECK(Crc64Nvme("123456789") == 0xAE8B14860A799888ull);
  std::string text;
  for (int i = 0; i < 1000; ++i) text += static_cast<char>(i * 7 + i / 13);
  for (const size_t cut : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{500}, size_t{999}}) {
    const std::string_view a = std::string_view(text).substr(0, cut), b = std::string_view(text).substr(cut);
    CHECK(Crc32c(b, Crc32c(a)) == Crc32c(text));
    CHECK(Crc32(b, Crc32(a)) == Crc32(text));
    CHECK(Crc64Nvme(b, Crc64Nvme(a)) == Crc64Nvme(text));
  }
}

TEST_CASE("MD5 and SHA-256 given in pieces equal the one-shot digests") {
  std::string text;
  for (int i = 0; i < 300; ++i) text += static_cast<char>('a' + i % 26);
  for (const size_t step : {size_t{1}, size_t{3}, size_t{63}, size_t{64}, size_t{65}, size_t{200}}) {
    Md5Hasher md5;
    Sha256Hasher sha;
    for (size_t at = 0; at < text.size(); at += step) {
      md5.Update(std::string_view(text).substr(at, step));
      sha.Update(std::string_view(text).substr(at, step));
    }
    CHECK(md5.Finish() == Md5(text));
    CHECK(sha.Finish() == Sha256(text));
  }
  CHECK(Md5Hex("abc") == "900150983cd24fb0d6963f7d28e17f72");
}

TEST_CASE("base64 follows RFC 4648") {
  CHECK(Base64("") == "");
  CHECK(Base64("f") == "Zg==");
  CHECK(Base64("fo") == "Zm8=");
  CHECK(Base64("foobar") == "Zm9vYmFy");
  CHECK(FromBase64("Zm9vYg==") == "foob");
  CHECK(FromBase64("Zm9v YmFy").empty());
}

TEST_CASE("an answer's headers give the cheapest digest that names the whole object") {
  const std::string data = "the object's bytes";
  const std::string crc = Base64(std::string{static_cast<char>(Crc32c(data) >> 24), static_cast<char>(Crc32c(data) >> 16),
                                             static_cast<char>(Crc32c(data) >> 8), static_cast<char>(Crc32c(data))});
  const std::string etag = "\"" + Md5Hex(data) + "\"";
  ObjectDigest d = DigestFromHeaders({{"etag", etag}, {"x-amz-checksum-crc32c", crc}}, true);
  CHECK(d.kind == ObjectDigest::Kind::kCrc32c);
  CHECK(DigestMatches(d, data));
  CHECK_FALSE(DigestMatches(d, "the object's byteS"));
  // A multipart object's checksum of checksums names no bytes; its ETag is an MD5.
  d = DigestFromHeaders({{"etag", etag}, {"x-amz-checksum-crc32c", crc + "-3"}}, true);
  CHECK(d.kind == ObjectDigest::Kind::kMd5);
  CHECK(DigestMatches(d, data));
  CHECK(d.Describe() == "ETag " + Md5Hex(data));
  // SSE-KMS and SSE-C ETags are no MD5s; nor are ETags where the caller says so.
  CHECK(DigestFromHeaders({{"etag", etag}, {"x-amz-server-side-encryption", "aws:kms"}}, true).empty());
  CHECK(DigestFromHeaders({{"etag", etag}, {"x-amz-server-side-encryption-customer-algorithm", "AES256"}}, true).empty());
  CHECK(DigestFromHeaders({{"etag", etag}, {"x-amz-server-side-encryption", "AES256"}}, true).kind ==
        ObjectDigest::Kind::kMd5);
  CHECK(DigestFromHeaders({{"etag", etag}}, false).empty());
  CHECK(DigestFromHeaders({{"etag", "\"" + Md5Hex(data) + "-2\""}}, true).empty());
  // HTTP's digests.
  const std::string sha = Base64(Sha256(data)), md5 = Base64(Md5(data));
  d = DigestFromHeaders({{"repr-digest", "sha-512=:AAAA:, sha-256=:" + sha + ":"}}, false);
  CHECK(d.kind == ObjectDigest::Kind::kSha256);
  CHECK(DigestMatches(d, data));
  d = DigestFromHeaders({{"digest", "MD5=" + md5}}, false);
  CHECK(d.kind == ObjectDigest::Kind::kMd5);
  CHECK(DigestMatches(d, data));
  CHECK(DigestFromHeaders({{"content-md5", md5}}, false).kind == ObjectDigest::Kind::kMd5);
  CHECK(BodyDigestFromHeaders({{"content-digest", "sha-256=:" + sha + ":"}}).kind == ObjectDigest::Kind::kSha256);
  CHECK(BodyDigestFromHeaders({{"repr-digest", "sha-256=:" + sha + ":"}}).empty());
  // A digest of the wrong length is none.
  CHECK(DigestFromHeaders({{"x-amz-checksum-sha256", crc}}, false).empty());
}

TEST_CASE("a digest checker fed in pieces tells a match and what it got") {
  const std::string data(100000, 'x');
  for (const std::string& name : {std::string("x-amz-checksum-crc32"), std::string("x-amz-checksum-crc64nvme"),
                                  std::string("x-amz-checksum-sha256")}) {
    std::string value;
    if (name.ends_with("crc32")) {
      const uint32_t c = Crc32(data);
      value = Base64(std::string{static_cast<char>(c >> 24), static_cast<char>(c >> 16), static_cast<char>(c >> 8),
                                 static_cast<char>(c)});
    } else if (name.ends_with("crc64nvme")) {
      const uint64_t c = Crc64Nvme(data);
      std::string raw;
      for (int i = 7; i >= 0; --i) raw += static_cast<char>(c >> (8 * i));
      value = Base64(raw);
    } else {
      value = Base64(Sha256(data));
    }
    const ObjectDigest d = DigestFromHeaders({{name, value}}, false);
    REQUIRE_FALSE(d.empty());
    DigestChecker checker(d);
    for (size_t at = 0; at < data.size(); at += 4096) checker.Update(std::string_view(data).substr(at, 4096));
    CHECK(checker.Matches());
    CHECK(checker.got() == value);
    DigestChecker other(d);
    other.Update("y");
    CHECK_FALSE(other.Matches());
  }
}

}  // namespace
}  // namespace pcr
