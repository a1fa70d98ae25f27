// Reading image datasets at a chosen fidelity.
#pragma once

#include <atomic>
#include <memory>
#include <span>
#include <string_view>
#include <string>
#include <vector>

#include "format/file_format.h"
#include "io/io_engine.h"
#include "io/pcr_file.h"
#include "io/read_plan.h"

namespace pcr {

struct ImageReaderOptions {
  IoEngine* engine = nullptr;  // not owned; nullptr: MakeIoEngine(io), owned by the dataset
  IoEngineOptions io;          // used when engine is nullptr
};

// One image read at some fidelity.
struct Image {
  int64_t label = -1;
  std::string key;
  Bytes jpeg;  // standalone progressive JPEG: scan groups 1..fidelity and EOI
};

struct ImageRequest {
  uint64_t image = 0;  // dataset-wide index
  int fidelity = 1;    // 1..num_scan_groups()
};

// An image inside a RecordBatch; valid while the batch is neither refilled
// nor destroyed.
struct ImageView {
  int64_t label = -1;
  std::string_view key;  // owned by the dataset
  ByteSpan jpeg;         // standalone JPEG: scan groups 1..fidelity and EOI
};

// The images of one record, their JPEGs back to back in one buffer that is
// reused when the batch is refilled.
struct RecordBatch {
  uint64_t record = 0;
  std::vector<ImageView> images;
  IoBuffer data;
};

// A record's prefix as read from storage: bytes() are the metadata and scan
// groups 1..fidelity; the buffer may hold alignment padding around them.
struct RecordPrefix {
  IoBuffer buffer;
  size_t begin = 0;
  size_t length = 0;
  ByteSpan bytes() const { return {buffer.data() + begin, length}; }
};

struct RecordLocation {
  size_t file = 0;
  size_t stripe = 0;
  uint64_t first_image = 0;  // dataset-wide index of the record's first image
  uint64_t image_count = 0;
};

// What a dataset holds, from its manifest and its files' indexes alone.
struct DatasetCounts {
  uint64_t images = 0;
  uint64_t records = 0;
  uint64_t files = 0;
  uint64_t file_bytes = 0;  // of the record files
  ScanScript script;
  std::vector<std::string> class_names;
  std::vector<uint64_t> stream_bytes;  // [0] sample metadata, [k] scan group k
  // Bytes read for every image at fidelity k: metadata and groups 1..k.
  uint64_t BytesAtFidelity(int k) const;
};

class ImageDataset {
 public:
  // `path` is a dataset directory (holding dataset.pcrd) or one .pcr file.
  // Checks every file's header, footer and index, and reads each record's
  // sample metadata (labels and keys).
  static Result<std::unique_ptr<ImageDataset>> Open(const std::string& path,
                                                    const ImageReaderOptions& options = {});

  // The counts of the dataset at `path`, with no record read: the same
  // checks of manifest, headers, footers and indexes as Open.
  static Result<DatasetCounts> Count(const std::string& path, const ImageReaderOptions& options = {});

  DatasetCounts counts() const;
  uint64_t num_images() const { return samples_.size(); }
  uint64_t num_records() const { return records_.size(); }
  // L: fidelity k ranges over 1..L; L is full fidelity.
  int num_scan_groups() const { return script_.group_count(); }
  const ScanScript& scan_script() const { return script_; }
  // Empty when the dataset was opened from a single file.
  const std::vector<std::string>& class_names() const { return class_names_; }
  // REQUIRES: image < num_images()
  const SampleMetadata& sample(uint64_t image) const { return samples_[image]; }
  // REQUIRES: record < num_records()
  const RecordLocation& record(uint64_t record) const { return records_[record]; }
  const std::vector<std::unique_ptr<PcrFile>>& files() const { return files_; }
  IoEngine& engine() const { return *engine_; }

  // Dataset-wide bytes of each stream: [0] sample metadata, [k] scan group k.
  std::vector<uint64_t> StreamBytes() const;
  // Bytes of record `record` up to scan group `fidelity` (0: sample metadata only).
  uint64_t RecordBytes(uint64_t record, int fidelity) const;
  // Reads the record's prefix up to scan group `fidelity` in one read and
  // checks every stream and chunk read. REQUIRES: 1 <= fidelity <= num_scan_groups()
  Result<std::vector<Image>> ReadRecord(uint64_t record, int fidelity) const;
  // Reads several records at one fidelity in one engine call (one read per
  // record, all in flight together). Result i holds records[i].
  Result<std::vector<std::vector<Image>>> ReadRecords(std::span<const uint64_t> records,
                                                      int fidelity) const;
  // The two halves of ReadRecords: the raw prefixes of several records, read
  // in one engine call into (*prefixes)[i], whose buffers are reused ...
  Status ReadRecordPrefixes(std::span<const uint64_t> records, int fidelity,
                            std::vector<RecordPrefix>* prefixes) const;
  // ... and one prefix checked stream by stream and chunk by chunk (as
  // verify checks) and cut into `batch`, reusing its buffer.
  Status ParseRecord(uint64_t record, int fidelity, ByteSpan prefix, RecordBatch* batch) const;
  // Reads one image's chunks of groups 1..fidelity (at most `fidelity` reads,
  // fewer when chunks are close) and checks each chunk.
  Result<Image> ReadImage(uint64_t image, int fidelity) const;
  // Reads many images, each at its own fidelity, in one engine call: the
  // chunks of all requests are planned together and coalesced. Result i
  // answers requests[i].
  Result<std::vector<Image>> ReadImages(std::span<const ImageRequest> requests,
                                        const CoalesceOptions& coalesce = {}) const;
  // InvalidArgument unless 1 <= fidelity <= num_scan_groups().
  Status CheckFidelity(int fidelity) const;
  // Bytes the caller asked for through Read* since Open (engine counters
  // give the bytes actually read and the number of reads).
  uint64_t bytes_requested() const { return bytes_requested_.load(); }
  // The record holding dataset-wide image `image`, and its index in the record.
  std::pair<uint64_t, uint64_t> Locate(uint64_t image) const;
  // How errors about an image name it: "<file>: image <image> (record <r>,
  // key <key>)". REQUIRES: image < num_images()
  std::string DescribeImage(uint64_t image) const;

 private:
  ImageDataset() = default;
  // Open without reading the sample metadata.
  static Result<std::unique_ptr<ImageDataset>> OpenIndexes(const std::string& path,
                                                           const ImageReaderOptions& options);
  // Appends the file and its records; their samples come from LoadSamples().
  void AddFile(std::unique_ptr<PcrFile> file);
  // Reads every record's sample metadata in one coalesced call.
  Status LoadSamples();

  std::unique_ptr<IoEngine> owned_engine_;
  IoEngine* engine_ = nullptr;
  ScanScript script_;
  std::vector<std::string> class_names_;
  std::vector<std::unique_ptr<PcrFile>> files_;
  std::vector<RecordLocation> records_;
  std::vector<SampleMetadata> samples_;
  mutable std::atomic<uint64_t> bytes_requested_{0};
};

}  // namespace pcr
