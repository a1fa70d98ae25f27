#include "pcr/status.h"

#include <cstdio>
#include <cstdlib>

namespace pcr {

namespace {
const char* CodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kCorruption: return "Corruption";
    case StatusCode::kInvalidArgument: return "Invalid argument";
    case StatusCode::kIOError: return "IO error";
    case StatusCode::kNotSupported: return "Not supported";
    case StatusCode::kNotFound: return "Not found";
    case StatusCode::kCancelled: return "Cancelled";
  }
  return "Unknown";
}
}  // namespace

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(CodeName(code_)) + ": " + message_;
}

Status Status::WithPrefix(const std::string& prefix) const {
  if (ok()) return *this;
  return Status(code_, prefix + ": " + message_);
}

namespace internal {

void DieOnError(const Status& status, const char* what) {
  std::fprintf(stderr, "pcr: %s on an error: %s\n", what, status.ToString().c_str());
  std::fflush(stderr);
  std::abort();
}

Status OkStatusAsResult() {
  return Status::InvalidArgument("a Result was built from an OK status, which holds no value");
}

}  // namespace internal

}  // namespace pcr
