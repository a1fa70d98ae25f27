// Paths of objects on HTTP(S) servers and S3-compatible stores.
#pragma once

#include <string>
#include <string_view>

namespace pcr {

// True for "http://", "https://" and "s3://" paths.
bool IsRemotePath(std::string_view path);
// True for "s3://" paths, objects and prefixes in an S3-compatible store.
bool IsS3Path(std::string_view path);

// s3://BUCKET/REST split at the first '/' after the bucket: false unless
// `path` is an s3:// path with a bucket. `rest` (a key or a key prefix) is
// empty for s3://BUCKET and s3://BUCKET/; `slash` says whether a '/'
// followed the bucket.
struct S3PathParts {
  std::string_view bucket, rest;
  bool slash = false;
};
bool SplitS3Path(std::string_view path, S3PathParts* parts);
// `base` joined with `name` by one '/'.
std::string JoinRemotePath(std::string_view base, std::string_view name);

}  // namespace pcr
