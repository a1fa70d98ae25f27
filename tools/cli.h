// Shared command-line plumbing of the pcr tools.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "pcr/io.h"
#include "pcr/status.h"

namespace pcr::cli {

// Exit statuses of every tool.
inline constexpr int kExitOk = 0;
inline constexpr int kExitBadInput = 1;  // bad input or corrupt data
inline constexpr int kExitUsage = 2;

// Arguments after the program name, consumed front to back.
class Args {
 public:
  Args(int argc, char** argv) : args_(argv + 1, argv + argc) {}
  bool empty() const { return pos_ >= args_.size(); }
  const std::string& peek() const { return args_[pos_]; }
  std::string next() { return args_[pos_++]; }
  // Whether --help or -h is among the arguments not yet read.
  bool WantsHelp() const {
    for (size_t i = pos_; i < args_.size(); ++i) {
      if (args_[i] == "--help" || args_[i] == "-h") return true;
    }
    return false;
  }

 private:
  std::vector<std::string> args_;
  size_t pos_ = 0;
};

// The I/O engine options the tools start from: the default engine, or the
// one PCR_IO_ENGINE names (auto, pread or uring), and for remote paths
// PCR_REMOTE_CONCURRENCY, PCR_REMOTE_RETRIES, PCR_REMOTE_TIMEOUT_MS,
// PCR_REMOTE_LIST_PAGE_SIZE, PCR_REMOTE_HOLE_LIMIT, PCR_REMOTE_MAX_READ and
// PCR_REMOTE_MAX_BYTES_IN_FLIGHT.
Result<IoEngineOptions> IoOptionsFromEnvironment();

// Parses a non-negative integer option value; false on anything else.
bool ParseUint(const std::string& s, uint64_t* out);

// "a,b,,c" -> {"a", "b", "", "c"}.
std::vector<std::string> SplitCommas(const std::string& s);

// Prints "<tool>: <Code>: <message>" (e.g. "pcr-dump: Corruption: f.pcr: ...";
// messages lead with the file they concern) and returns kExitBadInput.
int ReportError(const char* tool, const Status& status);

// "812 KiB", "3.6 MiB", "1.40 GiB".
std::string FormatBytes(uint64_t bytes);

// "3h05m", "12m40s", "9s"; "?" for a negative or non-finite duration.
std::string FormatDuration(double seconds);

// Writes "\r<text>" to stderr when stderr is a terminal.
class Progress {
 public:
  Progress();
  void Update(const std::string& text);
  void Finish();

 private:
  bool enabled_;
  bool shown_ = false;
};

// A minimal JSON writer: objects, arrays, strings, numbers. Commas and
// escaping are handled; the caller nests Begin/End correctly.
class Json {
 public:
  Json& BeginObject();
  Json& EndObject();
  Json& BeginArray();
  Json& EndArray();
  Json& Key(const std::string& key);
  Json& String(const std::string& s);
  Json& Uint(uint64_t v);
  Json& Int(int64_t v);
  Json& Double(double v);
  const std::string& str() const { return out_; }

 private:
  void Separate();
  std::string out_;
  bool need_comma_ = false;
};

}  // namespace pcr::cli
