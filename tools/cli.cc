#include "tools/cli.h"

#include <cstdlib>

#include <unistd.h>

#include <charconv>
#include <utility>

#include "format/json.h"

namespace pcr::cli {

Result<IoEngineOptions> IoOptionsFromEnvironment() {
  IoEngineOptions io;
  const char* env = std::getenv("PCR_IO_ENGINE");
  if (env != nullptr && *env != '\0') {
    auto kind = ParseIoEngineKind(env);
    if (!kind.ok()) return kind.status().WithPrefix("PCR_IO_ENGINE");
    io.kind = *kind;
  }
  struct Knob {
    const char* name;
    unsigned* value;
    uint64_t min, max;
  };
  for (const Knob& k : {Knob{"PCR_REMOTE_CONCURRENCY", &io.remote.concurrency, 1, 1024},
                        Knob{"PCR_REMOTE_RETRIES", &io.remote.retries, 0, 100},
                        Knob{"PCR_REMOTE_TIMEOUT_MS", &io.remote.timeout_ms, 1, 3600000},
                        Knob{"PCR_REMOTE_ANSWER_TIMEOUT_MS", &io.remote.answer_timeout_ms, 0, 3600000},
                        Knob{"PCR_REMOTE_LIST_PAGE_SIZE", &io.remote.list_page_size, 1, 1000}}) {
    const char* v = std::getenv(k.name);
    if (v == nullptr || *v == '\0') continue;
    uint64_t n = 0;
    if (!ParseUint(v, &n) || n < k.min || n > k.max) {
      return Status::InvalidArgument(std::string(k.name) + "='" + v + "': expected " + std::to_string(k.min) + ".." +
                                     std::to_string(k.max));
    }
    *k.value = static_cast<unsigned>(n);
  }
  if (const char* v = std::getenv("PCR_REMOTE_ETAG_IS_MD5"); v != nullptr && *v != '\0') {
    const std::string flag(v);
    if (flag != "0" && flag != "1") return Status::InvalidArgument("PCR_REMOTE_ETAG_IS_MD5='" + flag + "': expected 0 or 1");
    io.remote.etag_is_md5 = flag == "1";
  }
  for (auto [name, value] : {std::pair{"PCR_REMOTE_HOLE_LIMIT", &io.remote.hole_limit},
                             std::pair{"PCR_REMOTE_MAX_READ", &io.remote.max_read},
                             std::pair{"PCR_REMOTE_MAX_BYTES_IN_FLIGHT", &io.remote.max_bytes_in_flight}}) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') continue;
    if (!ParseUint(v, value)) return Status::InvalidArgument(std::string(name) + "='" + v + "': expected a byte count");
  }
  return io;
}

bool ParseUint(const std::string& s, uint64_t* out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size() && !s.empty();
}

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> out;
  for (size_t start = 0;;) {
    const size_t comma = s.find(',', start);
    out.push_back(s.substr(start, comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

int ReportError(const char* tool, const Status& status) {
  std::fprintf(stderr, "%s: %s\n", tool, status.ToString().c_str());
  return kExitBadInput;
}

std::string FormatBytes(uint64_t bytes) {
  char buf[32];
  const double b = static_cast<double>(bytes);
  if (bytes >= (uint64_t{1} << 30)) {
    std::snprintf(buf, sizeof(buf), "%.2f GiB", b / (1 << 30));
  } else if (bytes >= (uint64_t{1} << 20)) {
    std::snprintf(buf, sizeof(buf), "%.1f MiB", b / (1 << 20));
  } else {
    std::snprintf(buf, sizeof(buf), "%.0f KiB", b / (1 << 10));
  }
  return buf;
}

std::string FormatDuration(double seconds) {
  if (!(seconds >= 0) || seconds > 1e9) return "?";
  const auto s = static_cast<uint64_t>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof(buf), "%lluh%02llum", static_cast<unsigned long long>(s / 3600),
                  static_cast<unsigned long long>(s / 60 % 60));
  } else if (s >= 60) {
    std::snprintf(buf, sizeof(buf), "%llum%02llus", static_cast<unsigned long long>(s / 60),
                  static_cast<unsigned long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof(buf), "%llus", static_cast<unsigned long long>(s));
  }
  return buf;
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
  AppendJsonString(s, &out_);
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
