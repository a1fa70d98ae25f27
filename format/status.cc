#include "pcr/status.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string_view>

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
    case StatusCode::kDataLoss: return "Data loss";
    case StatusCode::kOutOfMemory: return "Out of memory";
  }
  return "Unknown";
}
}  // namespace

std::string RedactSecrets(std::string text) {
  static constexpr std::string_view kSecretParams[] = {"x-amz-signature", "x-amz-credential", "x-amz-security-token",
                                                       "signature",       "awsaccesskeyid",   "sig",
                                                       "token",           "access_token",     "x-goog-signature",
                                                       "x-goog-credential"};
  auto url_end = [&](size_t from) {
    size_t e = from;
    while (e < text.size() && !std::isspace(static_cast<unsigned char>(text[e])) && text[e] != '\'' && text[e] != '"') ++e;
    return e;
  };
  for (size_t scheme = text.find("://"); scheme != std::string::npos; scheme = text.find("://", scheme + 3)) {
    const size_t host = scheme + 3;
    size_t end = url_end(host);
    // user:password@ before the host: the password goes.
    const size_t authority_end = std::min(end, text.find_first_of("/?#", host));
    const size_t at = text.rfind('@', authority_end == std::string::npos ? end : authority_end);
    if (at != std::string::npos && at >= host && at < authority_end) {
      const size_t colon = text.find(':', host);
      if (colon < at) {
        text.replace(colon + 1, at - colon - 1, "***");
        end = url_end(host);
      }
    }
    // Signing parameters of the query string.
    size_t q = text.find('?', host);
    if (q >= end) continue;
    for (size_t p = q + 1; p < end;) {
      size_t amp = text.find('&', p);
      if (amp == std::string::npos || amp > end) amp = end;
      const size_t eq = text.find('=', p);
      if (eq < amp) {
        std::string name = text.substr(p, eq - p);
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (std::find(std::begin(kSecretParams), std::end(kSecretParams), name) != std::end(kSecretParams) &&
            amp > eq + 1) {
          text.replace(eq + 1, amp - eq - 1, "***");
          end = url_end(host);
          amp = eq + 4;
        }
      }
      p = amp + 1;
    }
  }
  return text;
}

Status::Status(StatusCode code, std::string msg) : code_(code), message_(RedactSecrets(std::move(msg))) {}

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
