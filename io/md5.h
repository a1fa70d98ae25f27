// MD5 (RFC 1321): what S3 returns as the ETag of a single PUT and of each
// part of a multipart upload, so an upload can be checked against the bytes
// sent. Not for security.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace pcr {

// MD5 of bytes given in pieces. Thread safety: not thread-safe.
class Md5Hasher {
 public:
  void Update(std::string_view data);
  // The 16-byte digest of every byte given; the hasher is then spent.
  std::string Finish();

 private:
  uint32_t h_[4] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476};
  uint8_t block_[64] = {};
  size_t buffered_ = 0;
  uint64_t total_ = 0;
};

// The 16-byte digest of `data`, and as 32 lowercase hex digits.
std::string Md5(std::string_view data);
std::string Md5Hex(std::string_view data);

}  // namespace pcr
