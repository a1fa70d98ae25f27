#include "tools/cli.h"

#include <unistd.h>

#include <charconv>

namespace pcr::cli {

bool ParseUint(const std::string& s, uint64_t* out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size() && !s.empty();
}

int ReportError(const char* tool, const Status& status) {
  std::fprintf(stderr, "%s: %s\n", tool, status.ToString().c_str());
  return status.code() == StatusCode::kInvalidArgument && status.message().starts_with("usage")
             ? kExitUsage
             : kExitBadInput;
}

Progress::Progress() : enabled_(isatty(STDERR_FILENO) == 1) {}

void Progress::Update(const std::string& text) {
  if (!enabled_) return;
  std::fprintf(stderr, "\r%s", text.c_str());
  std::fflush(stderr);
  shown_ = true;
}

void Progress::Finish() {
  if (shown_) std::fputc('\n', stderr);
  shown_ = false;
}

}  // namespace pcr::cli
