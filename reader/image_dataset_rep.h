// The inside of an ImageDataset, for reader/'s own units only: its files, its
// engine, where records lie, and the two halves of a record read.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "io/io_engine.h"
#include "io/pcr_file.h"
#include "io/read_executor.h"
#include "pcr/image_dataset.h"
#include "reader/inspect.h"
#include "reader/internals.h"
#include "reader/load_cache.h"

namespace pcr {

struct [[gnu::visibility("hidden")]] ImageDataset::Rep {
  // Opens `path` reading through `engine` (not owned; nullptr: an engine of
  // its own from options.io): a dataset's manifest alone, or one file.
  static Result<std::unique_ptr<ImageDataset>> Open(const std::string& path, const ImageReaderOptions& options,
                                                    IoEngine* engine);
  // An empty dataset of `path`, reading through `engine` (which `owned`,
  // when given, is); `*rep` is its inside, to fill.
  static std::unique_ptr<ImageDataset> Start(const std::string& path, const ImageReaderOptions& options,
                                             IoEngine* engine, std::unique_ptr<IoEngine> owned, Rep** rep);
  // The image file `file` alone as a dataset; an error for a file of
  // another kind.
  static Result<std::unique_ptr<ImageDataset>> FromFile(std::unique_ptr<PcrFile> file,
                                                        const ImageReaderOptions& options, IoEngine* engine,
                                                        std::unique_ptr<IoEngine> owned = nullptr);

  // A file of the dataset as the manifest lists it.
  struct FileSlot {
    std::string path;
    DatasetFileEntry entry;
    uint64_t first_record = 0;
  };
  // File `file`, its index loaded and checked against the manifest on first
  // touch (spec 10). REQUIRES: file < files.size()
  Result<std::shared_ptr<const PcrFile>> File(size_t file) const;
  // The files `wanted`, those not loaded fetched together; (*out)[i] holds
  // file wanted[i].
  Status Files(std::span<const size_t> wanted, std::vector<std::shared_ptr<const PcrFile>> * out) const;
  // The sample metadata of each record, those not cached read together.
  Status Samples(std::span<const uint64_t> records,
                 std::vector<std::shared_ptr<const std::vector<SampleMetadata>>> * out) const;
  // Record `record`'s sample metadata from its stream 0 in `file`, labels
  // checked against the class names; errors name file, stripe and offset.
  Result<std::vector<SampleMetadata>> DecodeSamples(uint64_t record, const PcrFile& file, ByteSpan stream) const;
  // Files() and Samples() hold load locks while they load; Samples() pins
  // its files before it takes its own, so no thread holds both kinds.

  // REQUIRES: record < records.size()
  const RecordLocation& record(uint64_t record) const { return records[record]; }
  Result<uint64_t> RecordBytes(uint64_t record, int fidelity) const;
  Status CheckFidelity(int fidelity) const;
  // The scan groups `fidelity` reads: all for kFullFidelity.
  int ScanGroups(int fidelity) const { return fidelity == kFullFidelity ? script.group_count() : fidelity; }
  // InvalidArgument unless 0 <= selection.fidelity <= L and every field is
  // in the field schema.
  Status CheckSelection(const RecordSelection& selection) const;
  // InvalidArgument, naming the dataset, unless record < records.size().
  Status CheckRecord(uint64_t record) const;
  // InvalidArgument, naming the dataset, unless image < num_images.
  Status CheckImage(uint64_t image) const;
  // Streams a record read of `selection` takes: the sample metadata, the
  // streams of each field, and scan groups 1..fidelity.
  size_t StreamsPerRecord(const RecordSelection& selection) const;
  // Stored bytes of those streams of record `record`.
  Result<uint64_t> SelectedBytes(uint64_t record, const RecordSelection& selection) const;
  // Reads those streams of several records in one engine call, each stream
  // checked: record i's streams start at (*out)[i * StreamsPerRecord()] ...
  Status ReadRecordStreams(std::span<const uint64_t> records, const RecordSelection& selection,
                           ReadBatch* out) const;
  // ... and cuts one record's checked streams into `batch`, checking every
  // chunk (as verify does), decoding the fields and reusing the batch's buffer.
  Status ParseRecord(uint64_t record, const RecordSelection& selection, std::span<const ByteSpan> streams,
                     RecordBatch* batch) const;
  // The record holding dataset-wide image `image`, and its index in the record.
  std::pair<uint64_t, uint64_t> Locate(uint64_t image) const;
  // How errors about an image name it: "<file>: image <image> (record <r>,
  // key <key>)", the key when its record's metadata reads.
  // REQUIRES: image < num_images
  std::string DescribeImage(uint64_t image) const;
  // The same with `sample`'s key, when given; reads nothing.
  std::string DescribeImage(uint64_t image, const SampleMetadata* sample) const;
  // A chunk that fails its checksum is an error naming the image
  // (DescribeImage), as is metadata of its record that does not decode;
  // with `failed`, (*failed)[i] holds request i's error instead and its
  // image is left empty. I/O errors end the read.
  Result<std::vector<Image>> ReadImages(std::span<const ImageRequest> requests, const CoalesceOptions& coalesce,
                                        std::vector<Status>* failed = nullptr) const;
  Result<std::vector<uint64_t>> StreamBytes() const;
  Result<DatasetCounts> counts() const;

  // The checks of spec 10 of a file against its manifest entry, the
  // dataset's records and fields.
  Status CheckFile(size_t file, const PcrFile& opened) const;
  // Calls `visit` with every file in turn, loading them in batches: for
  // what needs every file's index.
  Status ForEachFile(const std::function<Status(size_t, const PcrFile&)>& visit) const;

  std::unique_ptr<IoEngine> owned_engine;
  IoEngine* engine = nullptr;
  std::string path;           // as opened, for messages
  std::string manifest_path;  // empty for a single file
  bool remote = false;
  // The records and fields are known: CheckFile checks files against them.
  bool numbered = false;
  ScanScript script;
  TableSchema fields;
  std::vector<std::string> class_names;
  std::vector<FileSlot> files;
  // A dataset of one file keeps it open: it may be in memory alone.
  std::shared_ptr<const PcrFile> single;
  std::vector<RecordLocation> records;
  uint64_t num_images = 0;
  mutable std::unique_ptr<LoadCache> cache;
  mutable std::atomic<uint64_t> bytes_requested{0};
  mutable std::atomic<uint64_t> files_loaded{0};
};

}  // namespace pcr
