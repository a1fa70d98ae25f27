#include "tools/cli.h"

#include <unistd.h>

#include <charconv>

namespace pcr::cli {

bool ParseUint(const std::string& s, uint64_t* out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size() && !s.empty();
}

int ReportError(const char* tool, const Status& status) {
  std::fprintf(stderr, "%s: %s\n", tool, status.message().c_str());
  return kExitBadInput;
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

void Json::Separate() {
  if (need_comma_) out_ += ',';
  need_comma_ = false;
}

Json& Json::BeginObject() {
  Separate();
  out_ += '{';
  return *this;
}

Json& Json::EndObject() {
  out_ += '}';
  need_comma_ = true;
  return *this;
}

Json& Json::BeginArray() {
  Separate();
  out_ += '[';
  return *this;
}

Json& Json::EndArray() {
  out_ += ']';
  need_comma_ = true;
  return *this;
}

Json& Json::Key(const std::string& key) {
  String(key);
  out_ += ':';
  need_comma_ = false;
  return *this;
}

Json& Json::String(const std::string& s) {
  Separate();
  out_ += '"';
  for (const unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out_ += '\\';
      out_ += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out_ += buf;
    } else {
      out_ += static_cast<char>(c);
    }
  }
  out_ += '"';
  need_comma_ = true;
  return *this;
}

Json& Json::Uint(uint64_t v) {
  Separate();
  out_ += std::to_string(v);
  need_comma_ = true;
  return *this;
}

Json& Json::Int(int64_t v) {
  Separate();
  out_ += std::to_string(v);
  need_comma_ = true;
  return *this;
}

Json& Json::Double(double v) {
  Separate();
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  out_ += buf;
  need_comma_ = true;
  return *this;
}

}  // namespace pcr::cli
