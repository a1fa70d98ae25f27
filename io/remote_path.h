// Paths of objects on HTTP(S) servers and S3-compatible stores.
#pragma once

#include <string>
#include <string_view>

namespace pcr {

// True for "http://", "https://" and "s3://" paths.
bool IsRemotePath(std::string_view path);
// `base` joined with `name` by one '/'.
std::string JoinRemotePath(std::string_view base, std::string_view name);

}  // namespace pcr
