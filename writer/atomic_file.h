// Files that appear whole or not at all, and the lock a conversion holds on
// its output directory.
#pragma once

#include <memory>
#include <string>

#include "pcr/bytes.h"
#include "pcr/status.h"

namespace pcr {

// Whether AtomicFile::Commit may replace a file already at its path.
enum class Replace { kNo, kYes };

// A file that appears under `path` only after Commit(): bytes go to a
// temporary name in the same directory, which is fsynced and renamed. The
// destructor removes the temporary file when Commit() was not reached; a
// temporary file of the same path left by a process that no longer runs (a
// killed writer) is removed by Create. Not thread-safe.
class AtomicFile {
 public:
  static Result<std::unique_ptr<AtomicFile>> Create(const std::string& path, Replace replace = Replace::kNo);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  Status Append(ByteSpan data);
  // Overwrites bytes already appended. REQUIRES: offset + data.size() <= size()
  Status WriteAt(uint64_t offset, ByteSpan data);
  uint64_t size() const { return size_; }
  // Fsyncs, closes and renames to the final path; the directory is fsynced
  // too. With Replace::kNo a file that appeared at the path meanwhile is
  // kept and the commit fails.
  Status Commit();
  const std::string& path() const { return path_; }

 private:
  AtomicFile(std::string path, std::string temp_path, int fd, Replace replace)
      : path_(std::move(path)), temp_path_(std::move(temp_path)), fd_(fd), replace_(replace) {}
  std::string path_;
  std::string temp_path_;
  int fd_ = -1;
  Replace replace_;
  uint64_t size_ = 0;
};

// InvalidArgument for an output path that names a URL (s3://, http(s)://,
// or any other scheme) where only a local directory can be written, which
// would otherwise become a local directory named after it.
Status CheckLocalOutput(const std::string& dir);

// An exclusive flock on a directory, held while a conversion writes into
// it, so that two conversions never write one directory at once.
class DirectoryLock {
 public:
  // Creates `dir` if needed. Refuses a directory another conversion holds.
  static Result<DirectoryLock> Take(const std::string& dir);
  DirectoryLock(DirectoryLock&& other) noexcept;
  DirectoryLock& operator=(DirectoryLock&&) = delete;
  ~DirectoryLock();

 private:
  explicit DirectoryLock(int fd) : fd_(fd) {}
  int fd_;
};

// Writes `text` as the file `path` atomically, replacing any file there.
Status WriteTextFile(const std::string& path, const std::string& text);

}  // namespace pcr
