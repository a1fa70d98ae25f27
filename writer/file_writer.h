// Writing pcr files: image files record by record, and manifests.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "format/file_format.h"
#include "io/io_engine.h"
#include "pcr/status.h"
#include "writer/atomic_file.h"
#include "writer/fields.h"
#include "writer/transcode.h"

namespace pcr {

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

// Writes a kDataset manifest file atomically, stamped 0.9: its record sizes
// and fields are read from the files it lists, each of which must match its
// entry: beside it, else (when given) in `files_dir` through `engine`, which
// may be remote. A file in neither place leaves them out: the manifest is
// then stamped 0.1.
Status WriteDatasetManifest(const std::string& path, const DatasetManifest& manifest,
                            const std::string& files_dir = "", IoEngine* engine = nullptr);
// Writes a kDatasetPart manifest file atomically.
Status WritePartManifest(const std::string& path, const PartManifest& part);

}  // namespace pcr
