// The inside of an ImageDataset, for reader/'s own units only: its files, its
// engine, where records lie, and the two halves of a record read.
#pragma once

#include <atomic>
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

namespace pcr {

struct [[gnu::visibility("hidden")]] ImageDataset::Rep {
  // Opens `path` reading through `engine` (not owned; nullptr: an engine of
  // its own from options.io). Without `samples`, no record is read.
  static Result<std::unique_ptr<ImageDataset>> Open(const std::string& path, const ImageReaderOptions& options,
                                                    IoEngine* engine, bool samples = true);
  // The image file `file` alone as a dataset, read through `engine` (which
  // `owned`, when given, is); an error for a file of another kind.
  // An empty dataset of `path`, reading through `engine` (which `owned`,
  // when given, is); `*rep` is its inside, to fill.
  static std::unique_ptr<ImageDataset> Start(const std::string& path, IoEngine* engine,
                                             std::unique_ptr<IoEngine> owned, Rep** rep);
  static Result<std::unique_ptr<ImageDataset>> FromFile(std::unique_ptr<PcrFile> file, IoEngine* engine,
                                                        std::unique_ptr<IoEngine> owned = nullptr,
                                                        bool samples = true);

  // REQUIRES: record < records.size()
  const RecordLocation& record(uint64_t record) const { return records[record]; }
  uint64_t RecordBytes(uint64_t record, int fidelity) const;
  Status CheckFidelity(int fidelity) const;
  // The scan groups `fidelity` reads: all for kFullFidelity.
  int ScanGroups(int fidelity) const { return fidelity == kFullFidelity ? script.group_count() : fidelity; }
  // InvalidArgument unless 0 <= selection.fidelity <= L and every field is
  // in the field schema.
  Status CheckSelection(const RecordSelection& selection) const;
  // InvalidArgument, naming the dataset, unless record < records.size().
  Status CheckRecord(uint64_t record) const;
  // InvalidArgument, naming the dataset, unless image < samples.size().
  Status CheckImage(uint64_t image) const;
  // Streams a record read of `selection` takes: the sample metadata, the
  // streams of each field, and scan groups 1..fidelity.
  size_t StreamsPerRecord(const RecordSelection& selection) const;
  // Stored bytes of those streams of record `record`.
  uint64_t SelectedBytes(uint64_t record, const RecordSelection& selection) const;
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
  // key <key>)". REQUIRES: image < samples.size()
  std::string DescribeImage(uint64_t image) const;
  // A chunk that fails its checksum is an error naming the image
  // (DescribeImage); with `failed`, (*failed)[i] holds request i's error
  // instead and its image is left empty. I/O errors end the read.
  Result<std::vector<Image>> ReadImages(std::span<const ImageRequest> requests, const CoalesceOptions& coalesce,
                                        std::vector<Status>* failed = nullptr) const;
  std::vector<uint64_t> StreamBytes() const;
  DatasetCounts counts() const;

  // Appends the file and its records; their samples come from LoadSamples().
  void AddFile(std::unique_ptr<PcrFile> file);
  // Reads every record's sample metadata in one coalesced call.
  Status LoadSamples();
  // Sets `fields` from the files' field schemas, which must agree in names
  // and types; its counts are their sums.
  Status JoinFieldSchemas();

  std::unique_ptr<IoEngine> owned_engine;
  IoEngine* engine = nullptr;
  std::string path;  // as opened, for messages
  ScanScript script;
  TableSchema fields;
  std::vector<std::string> class_names;
  std::vector<std::unique_ptr<PcrFile>> files;
  std::vector<RecordLocation> records;
  std::vector<SampleMetadata> samples;
  mutable std::atomic<uint64_t> bytes_requested{0};
};

}  // namespace pcr
