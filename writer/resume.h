// Resuming a conversion: the journal file of finished record files, and the
// output directory made ready by keeping what a journal of the same
// conversion lists (spec section 10.2).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "format/journal.h"
#include "pcr/option_names.h"
#include "pcr/status.h"

namespace pcr {

// The lines a journal starts with.
struct JournalHeader {
  std::string first;       // FirstLine: which conversion
  std::string limits;      // LimitsLine
  JournalOptions options;  // OptionsLine: what it was run with, to name a difference
};

// The journal being written by one conversion. Not thread-safe.
class JournalWriter {
 public:
  // Starts a journal at `path` holding the header lines and `kept`,
  // replacing any journal there.
  static Result<std::unique_ptr<JournalWriter>> Create(const std::string& path, const JournalHeader& header,
                                                       const std::vector<FinishedFile>& kept);
  ~JournalWriter();
  JournalWriter(const JournalWriter&) = delete;
  JournalWriter& operator=(const JournalWriter&) = delete;

  // Appends `file`'s lines and syncs them. REQUIRES: its record file is committed.
  Status Add(const FinishedFile& file);

 private:
  JournalWriter(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_;
};

// The index checksum in the footer of the file at `path`, if it is a pcr
// file of `size` bytes whose header, footer and index check.
std::optional<uint64_t> FooterIndexChecksum(const std::string& path, uint64_t size);

// Makes OUT_DIR ready and returns the finished files to keep: those a
// journal of the same conversion (header.first) lists that are still whole
// on disk. Every other record file and skip list of a conversion is removed.
// A directory with a manifest, or with .pcr files and no journal, is
// refused; so is the journal of another conversion unless `restart`, the
// message naming the option that differs.
// REQUIRES: `dir` exists and its DirectoryLock is held.
Result<std::vector<FinishedFile>> PrepareOutDir(const std::string& dir, const JournalHeader& header,
                                                uint64_t first_file, uint64_t source_count, bool restart,
                                                const OptionNames& names = kLibraryOptionNames);

}  // namespace pcr
