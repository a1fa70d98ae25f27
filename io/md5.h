// MD5 (RFC 1321): what S3 returns as the ETag of a single PUT and of each
// part of a multipart upload, so an upload can be checked against the bytes
// sent. Not for security.
#pragma once

#include <string>
#include <string_view>

namespace pcr {

// The 16-byte digest of `data`, and as 32 lowercase hex digits.
std::string Md5(std::string_view data);
std::string Md5Hex(std::string_view data);

}  // namespace pcr
