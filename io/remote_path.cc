#include "io/remote_path.h"

namespace pcr {

bool IsRemotePath(std::string_view path) {
  return path.starts_with("http://") || path.starts_with("https://") || path.starts_with("s3://");
}

std::string JoinRemotePath(std::string_view base, std::string_view name) {
  while (base.ends_with('/') && !base.ends_with("://")) base.remove_suffix(1);
  return std::string(base) + "/" + std::string(name);
}

}  // namespace pcr
