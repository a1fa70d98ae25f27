// Writing pcr files: atomic creation and stripe layout.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "format/file_format.h"
#include "pcr/status.h"
#include "writer/fields.h"
#include "writer/transcode.h"

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

struct FieldWriterOptions {
  // Fields whose streams come first, in this order; the rest follow in
  // schema order.
  std::vector<std::string> stream_order;
  // How field streams are encoded; the weighing uses its zstd_level.
  EncodingChoice encoding;
};

// Writes a kImages file record by record (one stripe per record). With
// fields (names and types in `fields`), each record also holds the field
// streams of its images; with fields or with segments kept apart from any
// image, every record holds a segments stream and the file is stamped 0.4,
// else it is written as 0.1.
class ImageFileWriter {
 public:
  static Result<std::unique_ptr<ImageFileWriter>> Create(const std::string& path, ScanScript script,
                                                         std::vector<FeatureInfo> fields = {},
                                                         const FieldWriterOptions& options = {});

  // REQUIRES: samples.size() == images.size() > 0, every image has
  // script.group_count() chunks, and rows.size() is images.size() when the
  // file has fields, else 0.
  Status AddRecord(const std::vector<SampleMetadata>& samples, const std::vector<TranscodedImage>& images,
                   std::span<const FieldRow> rows = {});
  // Writes the index and footer and commits the file, never replacing one
  // already at its path. Returns its manifest entry.
  Result<DatasetFileEntry> Finish();

 private:
  ImageFileWriter(std::unique_ptr<AtomicFile> file, ScanScript script, std::vector<FeatureInfo> fields,
                  const FieldWriterOptions& options);
  Status Append(ByteSpan stream, StripeInfo* stripe);

  std::unique_ptr<AtomicFile> file_;
  FileIndex index_;
  FieldWriterOptions options_;
  std::vector<uint32_t> order_;
  std::vector<FeatureStreams> streams_;
  uint64_t image_count_ = 0;
  bool any_segments_ = false;
  bool any_encoded_ = false;
};

// Writes `text` as the file `path` atomically, replacing any file there.
Status WriteTextFile(const std::string& path, const std::string& text);
// Writes a kDataset manifest file atomically.
Status WriteDatasetManifest(const std::string& path, const DatasetManifest& manifest);
// Writes a kDatasetPart manifest file atomically.
Status WritePartManifest(const std::string& path, const PartManifest& part);

}  // namespace pcr
