// On-disk structures of a pcr file (spec/pcr-format.md; versions 0.1 to
// 0.8, kVersionMinor below).
//
//   File        := FileHeader Stripe* FileIndex Footer
//   Stripe      := Stream*                      (back to back, no padding)
//   FileIndex   := see FileIndex::EncodeTo       (varints, little-endian)
//   Footer      := 32 bytes at the end of the file
//
// A dataset directory holds pcr files plus one DatasetManifest file, which is
// a pcr file of kind kDataset with no stripes whose index is the manifest.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "format/coding.h"
#include "format/scan_script.h"
#include "pcr/status.h"
#include "format/table_format.h"

namespace pcr {

// Values are frozen: they are stored in files.
enum class FileKind : uint8_t {
  kImages = 1,   // stripes are image records
  kTable = 2,    // stripes are table stripes
  kDataset = 3,  // a dataset manifest
  kDatasetPart = 4,  // the manifest of one part of a sharded conversion
};

inline constexpr std::array<uint8_t, 8> kFileMagic = {0x89, 'P', 'C', 'R', '\r', '\n', 0x1a, '\n'};
inline constexpr uint8_t kVersionMajor = 0;
inline constexpr uint8_t kVersionMinor = 9;  // the newest minor version this code reads
// Files are stamped with the version that defined their kind: images and
// dataset manifests 0.1, tables 0.2, part manifests 0.3; image files with
// fields and table files using the feature types of 0.4 are stamped 0.4;
// table files and image files with fields whose streams may be encoded
// (every TableStream then records its encoding) are stamped 0.5; table
// files with types of 0.6 and 0.7 (FeatureTypeVersion) are stamped so;
// part manifests of conversions sharded by record, whose parts may hold
// pieces of a file, 0.8; dataset manifests that number every record's
// images and carry the fields, 0.9.
inline constexpr uint8_t kTableVersionMinor = 2;
inline constexpr uint8_t kPartVersionMinor = 3;
inline constexpr uint8_t kPiecesVersionMinor = 8;
inline constexpr uint8_t kRecordsVersionMinor = 9;
inline constexpr uint8_t kFieldsVersionMinor = 4;
inline constexpr uint8_t kEncodingsVersionMinor = 5;
inline constexpr size_t kFileHeaderSize = 16;
inline constexpr size_t kFooterSize = 32;
inline constexpr uint32_t kFooterMagic = 0x31524350;  // "PCR1" in file order
inline constexpr size_t kMinFileSize = kFileHeaderSize + kFooterSize;
inline constexpr char kDatasetManifestName[] = "dataset.pcrd";
inline constexpr char kPartManifestName[] = "part.pcrd";
inline constexpr char kRecordFileExtension[] = ".pcr";
inline constexpr size_t kMaxKeyLength = 4096;
inline constexpr size_t kMaxFileNameLength = 255;
// Appended to chunks 1..k to make an image at fidelity k a standalone JPEG.
inline constexpr std::array<uint8_t, 2> kJpegEndOfImage = {0xff, 0xd9};

struct FileHeader {
  FileKind kind = FileKind::kImages;
  uint8_t version_major = kVersionMajor;
  uint8_t version_minor = 1;

  void EncodeTo(Bytes* out) const;
  // Rejects a wrong magic or checksum, an unknown kind, and versions this
  // reader cannot read (major != 0, or minor > kVersionMinor), and table
  // files stamped older than kTableVersionMinor.
  static Result<FileHeader> DecodeFrom(ByteSpan in);
};

struct Footer {
  uint64_t index_offset = 0;
  uint64_t index_length = 0;
  uint64_t index_checksum = 0;  // Checksum64 of the FileIndex bytes

  void EncodeTo(Bytes* out) const;
  // `in` is the last kFooterSize bytes of a file of file_size bytes. Checks
  // the magic, the footer checksum and that the index lies between the
  // header and the footer.
  static Result<Footer> DecodeFrom(ByteSpan in, uint64_t file_size);
};

struct StreamInfo {
  uint64_t length = 0;
  uint64_t checksum = 0;  // Checksum64 of the stream's bytes
};

// One image's share of one scan group: a run of bytes inside the group's stream.
struct ChunkInfo {
  uint64_t length = 0;
  uint32_t checksum = 0;  // Checksum32 of the chunk's bytes
};

struct StripeInfo {
  uint64_t offset = 0;              // file offset of stream 0
  std::vector<StreamInfo> streams;  // in file order
  // Image stripes: chunks[(g - 1) * image_count + i] is image i in group g;
  // with segments, group L + 1 is the segments stream.
  uint64_t image_count = 0;
  std::vector<ChunkInfo> chunks;
  bool has_segments = false;  // image stripes of files stamped 0.4 or later
  // Table stripes, and the field streams of image stripes:
  // table_streams[k] says what streams[first_table_stream + k] holds, and
  // row_count is the rows (images) they cover.
  uint64_t row_count = 0;
  std::vector<TableStream> table_streams;
  size_t first_table_stream = 0;  // 0 in table stripes, 1 in image stripes

  uint64_t length() const;
  // Entry feature * kRoleCount + role is the index in table_streams of that
  // stream, or SIZE_MAX where the stripe has none.
  std::vector<size_t> TableStreamIndex(size_t feature_count) const;
  // File offset of stream s. REQUIRES: s <= streams.size()
  uint64_t stream_offset(size_t s) const;
  // Image stripes: the stream holding scan group `group`, after the sample
  // metadata and the field streams; group L + 1 is the segments stream.
  size_t group_stream(int group) const { return 1 + table_streams.size() + static_cast<size_t>(group - 1); }
  // REQUIRES: 1 <= group <= the script's group count, image < image_count
  const ChunkInfo& chunk(int group, uint64_t image) const {
    return chunks[(group - 1) * image_count + image];
  }
};

// Table stripes hold at most this many rows (list lengths and row numbers are 32-bit).
inline constexpr uint64_t kMaxStripeRows = 0xffffffff;

struct FileIndex {
  ScanScript script;   // image files only
  // Table files: the table's schema. Image files stamped 0.4 or later: the
  // fields of the images (row_count is the image count); empty before.
  TableSchema schema;
  std::vector<StripeInfo> stripes;

  // `version_minor` is the file's stamp: image files hold a field schema
  // from kFieldsVersionMinor on.
  void EncodeTo(FileKind kind, uint8_t version_minor, Bytes* out) const;
  // Decodes and checks the index found at file offset index_offset: stripes
  // tile the file from kFileHeaderSize to index_offset exactly, image stripes
  // have one stream per field stream and scan group after the sample
  // metadata and chunks that tile each group, table stripes and the field
  // streams of image stripes hold exactly the streams their features' types
  // need and their rows add up to the schema's.
  static Result<FileIndex> DecodeFrom(ByteSpan in, FileKind kind, uint8_t version_minor, uint64_t index_offset);
};

// The stamp of an image file: kEncodingsVersionMinor when a field stream is
// encoded, else 0.1 without fields and without segments kept apart, else
// kFieldsVersionMinor.
uint8_t ImageFileVersion(const TableSchema& fields, bool segments, bool encodings);

// Stream 0 of an image stripe: one SampleMetadata per image.
void EncodeSampleMetadata(const std::vector<SampleMetadata>& samples, Bytes* out);
// REQUIRES: count is the stripe's image_count. Rejects trailing bytes.
Result<std::vector<SampleMetadata>> DecodeSampleMetadata(ByteSpan in, uint64_t count);

struct DatasetFileEntry {
  std::string name;  // file name inside the dataset directory, no '/'
  uint64_t size = 0;
  uint64_t image_count = 0;
  uint64_t stripe_count = 0;
  uint64_t index_checksum = 0;  // the file's Footer::index_checksum

  bool operator==(const DatasetFileEntry&) const = default;
};

// The FileIndex of a kDataset file.
struct DatasetManifest {
  ScanScript script;
  std::vector<std::string> class_names;  // label i names class_names[i]
  std::vector<DatasetFileEntry> files;   // in image order
  // Since 0.9 (kRecordsVersionMinor), so that a reader numbers the records
  // and knows the fields without opening a file: with `records`,
  // record_sizes[r] is record r's image count (records in FileEntry, then
  // stripe order) and `fields` the files' field schema, its counts summed.
  bool records = false;
  std::vector<uint64_t> record_sizes;
  TableSchema fields;

  bool operator==(const DatasetManifest&) const = default;
  // The 0.9 part only with `records`.
  void EncodeTo(Bytes* out) const;
  // `records`: the manifest is stamped 0.9 or later and has the 0.9 part.
  static Result<DatasetManifest> DecodeFrom(ByteSpan in, bool records);
};

// The FileIndex of a kDatasetPart file: shard `shard_index` of a conversion
// split `shard_count` ways. `plan_checksum` identifies the conversion (its
// input list and the options that decide the output bytes); parts join only
// when it is equal. `dataset` lists the part's files.
struct PartManifest {
  uint64_t shard_index = 0;
  uint64_t shard_count = 2;
  uint64_t plan_checksum = 0;
  DatasetManifest dataset;

  bool operator==(const PartManifest&) const = default;
  void EncodeTo(Bytes* out) const;
  // Rejects shard_count < 2 and shard_index >= shard_count.
  static Result<PartManifest> DecodeFrom(ByteSpan in);
};

// The end of a file whose index starts at index_offset: the index bytes
// followed by the Footer that points at them.
Bytes EncodeIndexAndFooter(ByteSpan index, uint64_t index_offset);

// For tests and fuzzing, so that damage reaches the decoders behind the
// checksums: the index checksum in the footer and the footer's own checksum
// made to match their bytes (where the footer's offsets lie in the file) ...
void RefixIndexChecksum(Bytes* file);
// `file` with its index decoded, changed by `edit`, and written again with
// its footer; `file` unchanged when its header, footer or index does not
// decode.
Bytes RewriteIndex(ByteSpan file, const std::function<void(FileIndex*)>& edit);
// `file` with its header checksum, its index and footer checksums and every
// stream and chunk checksum its index lists made to match their bytes.
// Parts that do not decode are left as they are.
Bytes RefixChecksums(ByteSpan file);

}  // namespace pcr
