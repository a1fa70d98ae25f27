#include "pcr/status.h"

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

}  // namespace pcr
