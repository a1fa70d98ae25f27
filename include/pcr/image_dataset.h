// Reading image datasets at a chosen fidelity: a record (one contiguous
// read), many records, or single images, every byte checked.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pcr/bytes.h"
#include "pcr/export.h"
#include "pcr/io.h"
#include "pcr/status.h"
#include "pcr/types.h"

namespace pcr {

struct ImageReaderOptions {
  IoEngineOptions io;  // the dataset's own engine
  // Memory for the files' indexes and the records' sample metadata read so
  // far, least recently used dropped first. What reads in progress hold
  // stays until they end, however small the bound.
  uint64_t index_cache_bytes = 64 << 20;
};

// Fidelity, wherever pcr takes one: k in 1..num_scan_groups() reads scan
// groups 1..k; kFullFidelity reads them all (the original pixels); and,
// where a read of fields alone is allowed, kFieldsOnly reads no image bytes.
inline constexpr int kFullFidelity = -1;
inline constexpr int kFieldsOnly = 0;

// A fidelity as a command or a call writes it: "full" (kFullFidelity), or
// a decimal 1..num_scan_groups, and with `fields_only` also 0
// (kFieldsOnly). False for anything else, *fidelity then untouched.
PCR_EXPORT bool ParseFidelity(std::string_view text, int num_scan_groups, bool fields_only, int* fidelity);

// One image read at some fidelity.
struct Image {
  int64_t label = -1;
  std::string key;
  Bytes jpeg;  // standalone progressive JPEG: scan groups 1..fidelity and EOI
};

struct ImageRequest {
  uint64_t image = 0;  // dataset-wide index
  int fidelity = kFullFidelity;  // 1..num_scan_groups() or kFullFidelity
  // Put back the APPn and COM segments the file keeps apart from the scan
  // groups (EXIF, XMP, comments, ...): at full fidelity the JPEG then
  // carries exactly the original's segments.
  bool segments = false;
};

// An image inside a RecordBatch; valid while the batch is neither refilled
// nor destroyed.
struct ImageView {
  int64_t label = -1;
  std::string_view key;  // the dataset's, kept alive by RecordBatch::metadata
  ByteSpan jpeg;         // standalone JPEG: scan groups 1..fidelity and EOI; empty at fidelity 0
  uint64_t row = 0;      // the image's row in RecordBatch::fields (its place in the record)
};

// The images of one record, their JPEGs back to back in one buffer that is
// reused when the batch is refilled, and the fields read.
struct RecordBatch {
  uint64_t record = 0;
  std::vector<ImageView> images;
  IoBuffer data;
  // One column per field asked for, in the order asked; row r is the
  // record's image r (ImageView::row).
  std::vector<Column> fields;
  // The record's sample metadata, read with it, which the images' keys view.
  std::shared_ptr<const void> metadata;
};

// A record read runs through gaps of at most this many bytes between the
// streams it takes (the streams of fields not asked for) rather than split.
inline constexpr uint64_t kRecordHoleLimit = 64 << 10;

// What a record read takes: scan groups 1..fidelity (kFieldsOnly: no image
// bytes; kFullFidelity: all) and the streams of the fields `fields` (indices
// into the field schema).
struct RecordSelection {
  int fidelity = kFieldsOnly;
  std::vector<uint32_t> fields;
  bool segments = false;  // as ImageRequest::segments; needs fidelity >= 1
};

// What a dataset holds, from its manifest and its files' indexes.
struct DatasetCounts {
  uint64_t images = 0;
  uint64_t records = 0;
  uint64_t files = 0;
  uint64_t file_bytes = 0;  // of the record files
  ScanScript script;
  std::vector<std::string> class_names;
  std::vector<uint64_t> stream_bytes;  // [0] sample metadata, [k] scan group k
  TableSchema fields;                  // the images' fields; row_count is `images`
  std::vector<uint64_t> field_bytes;   // stored bytes of each field's streams
  uint64_t segment_bytes = 0;          // the APPn and COM segments kept apart

  // Bytes read for every image at fidelity k: metadata and groups 1..k.
  uint64_t BytesAtFidelity(int k) const {
    uint64_t n = 0;
    for (size_t s = 0; static_cast<int64_t>(s) <= k && s < stream_bytes.size(); ++s) n += stream_bytes[s];
    return n;
  }
};

// An open image dataset: a directory holding dataset.pcrd, or one .pcr file.
//
// Thread safety: after Open, every method may be called from several threads
// at once; reads share the dataset's thread-safe I/O engine.
//
// Lifetime: iterators made from a dataset, and the batches its reads fill,
// keep the open dataset (its files, engine and metadata) alive; the caller
// may destroy its ImageDataset before them.
//
// Arguments (indices, fidelities, options) are checked in every build: a
// value out of range gives InvalidArgument naming it.
class PCR_EXPORT ImageDataset {
 public:
  // Reads and checks the manifest alone (one file's header, footer and
  // index when `path` is a .pcr file). A file's header, footer and index
  // are read and checked against the manifest when a call first needs them,
  // and a record's labels and keys with the record (spec 10): errors about
  // a file come from the call that touched it. A manifest written before
  // 0.9 numbers no record, so every file is opened here, as before.
  static Result<std::unique_ptr<ImageDataset>> Open(const std::string& path,
                                                    const ImageReaderOptions& options = {});

  // The counts of the dataset at `path`, with no record read: the manifest
  // and every file's header, footer and index, checked.
  static Result<DatasetCounts> Count(const std::string& path, const ImageReaderOptions& options = {});

  ~ImageDataset();
  ImageDataset(const ImageDataset&) = delete;
  ImageDataset& operator=(const ImageDataset&) = delete;

  // Reads every file's index not in memory; an error names the first file
  // that fails its checks.
  Result<DatasetCounts> counts() const;
  uint64_t num_images() const;
  uint64_t num_records() const;
  // L: fidelity k ranges over 1..L; L is full fidelity.
  int num_scan_groups() const;
  // The scan groups `fidelity` reads: num_scan_groups() for kFullFidelity,
  // else `fidelity`.
  int ScanGroups(int fidelity) const;
  const ScanScript& scan_script() const;
  // Empty when the dataset was opened from a single file.
  const std::vector<std::string>& class_names() const;
  // 16 lowercase hex digits naming the dataset's contents: its files' sizes
  // and index checksums (which cover every stream's checksum) and its class
  // names, whatever path it was opened by. Another dataset, or this one
  // written again with other contents, has another id.
  std::string content_id() const;
  // Label and key of `image`: reads its record's sample metadata unless in
  // memory, and nothing else. InvalidArgument unless image < num_images().
  // To take every label (a class histogram, say), read the records with
  // kFieldsOnly: that reads their metadata alone.
  Result<SampleMetadata> sample(uint64_t image) const;
  // The record holding `image` and the image's place (row) in it;
  // InvalidArgument unless image < num_images().
  Result<std::pair<uint64_t, uint64_t>> LocateImage(uint64_t image) const;
  // The fields every image may hold: names, types, and counts over the
  // dataset (row_count is num_images()). Empty features when none.
  const TableSchema& field_schema() const;
  // Field indices of `names`; InvalidArgument naming the first unknown one.
  Result<std::vector<uint32_t>> ResolveFields(const std::vector<std::string>& names) const;

  // Dataset-wide bytes of each stream: [0] sample metadata, [k] scan group
  // k. Reads every file's index not in memory, as counts() does.
  Result<std::vector<uint64_t>> StreamBytes() const;
  // Bytes of record `record` up to scan group `fidelity` (kFieldsOnly: sample
  // metadata only); InvalidArgument unless record < num_records() and the
  // fidelity is kFieldsOnly or passes CheckFidelity.
  Result<uint64_t> RecordBytes(uint64_t record, int fidelity) const;
  // Reads the record's prefix up to scan group `fidelity` in one read and
  // checks every stream and chunk read.
  Result<std::vector<Image>> ReadRecord(uint64_t record, int fidelity) const;
  // Reads several records at one fidelity in one engine call (one read per
  // record, all in flight together). Result i holds records[i].
  Result<std::vector<std::vector<Image>>> ReadRecords(std::span<const uint64_t> records, int fidelity) const;
  // Reads several records, each in one engine call with the others: the
  // streams `selection` names (one read per run of them, gaps up to
  // kRecordHoleLimit read through), every stream and chunk checked, the
  // fields decoded. Result i holds records[i].
  Result<std::vector<RecordBatch>> ReadRecordBatches(std::span<const uint64_t> records,
                                                     const RecordSelection& selection) const;
  // Stored bytes ReadRecordBatches reads of record `record`;
  // InvalidArgument unless record < num_records() and CheckSelection passes.
  Result<uint64_t> SelectedBytes(uint64_t record, const RecordSelection& selection) const;
  // InvalidArgument unless the fidelity is kFieldsOnly or CheckFidelity's,
  // and every field index is below field_schema().features.size().
  Status CheckSelection(const RecordSelection& selection) const;
  // Reads one image's chunks of groups 1..fidelity (at most `fidelity` reads,
  // fewer when chunks are close) and checks each chunk.
  Result<Image> ReadImage(uint64_t image, int fidelity) const;
  // Reads many images, each at its own fidelity, in one engine call: the
  // chunks of all requests are planned together and coalesced. Result i
  // answers requests[i].
  Result<std::vector<Image>> ReadImages(std::span<const ImageRequest> requests,
                                        const CoalesceOptions& coalesce = {}) const;
  // Image `image` at `fidelity`, made with no read from `jpeg`, the same
  // image at `jpeg_fidelity` (as ReadImage gives it, fidelity <=
  // jpeg_fidelity): the prefix of `jpeg` up to scan group `fidelity`, then
  // EOI, the bytes ReadImage(image, fidelity) gives. InvalidArgument for an
  // image or fidelities out of range; Corruption when `jpeg` cannot be that
  // image at that fidelity (its length or its ends).
  Result<Bytes> LowerFidelity(uint64_t image, ByteSpan jpeg, int jpeg_fidelity, int fidelity) const;
  // InvalidArgument unless fidelity is 1..num_scan_groups() or kFullFidelity.
  Status CheckFidelity(int fidelity) const;
  // Bytes the caller asked for through Read* since Open.
  uint64_t bytes_requested() const;
  // What the dataset's engine did: reads, I/Os and bytes actually read.
  IoCounters io_counters() const;

 private:
  // reader/ holds the definition; its internal headers give pcr's own layers
  // what they need of it.
  friend struct ReaderInternals;
  struct Rep;
  explicit ImageDataset(std::shared_ptr<const Rep> rep);
  std::shared_ptr<const Rep> rep_;
};

}  // namespace pcr
