#include "io/remote_path.h"

namespace pcr {

bool IsRemotePath(std::string_view path) {
  return path.starts_with("http://") || path.starts_with("https://") || IsS3Path(path);
}

bool IsS3Path(std::string_view path) { return path.starts_with("s3://"); }

bool SplitS3Path(std::string_view path, S3PathParts* parts) {
  if (!IsS3Path(path)) return false;
  const std::string_view rest = path.substr(5);
  const size_t slash = rest.find('/');
  parts->bucket = rest.substr(0, slash);
  parts->slash = slash != std::string_view::npos;
  parts->rest = parts->slash ? rest.substr(slash + 1) : std::string_view();
  return !parts->bucket.empty();
}

std::string JoinRemotePath(std::string_view base, std::string_view name) {
  while (base.ends_with('/') && !base.ends_with("://")) base.remove_suffix(1);
  return std::string(base) + "/" + std::string(name);
}

}  // namespace pcr
