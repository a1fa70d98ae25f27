// Table files (kind kTable): the schema, the streams a feature is flattened
// into, and their encodings (spec/pcr-format.md, "Table files").
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "format/coding.h"
#include "format/status.h"

namespace pcr {

// Values are frozen: they are stored in files.
enum class FeatureType : uint8_t {
  kInt64 = 1,            // one int64 per row
  kFloat64 = 2,          // one IEEE double per row
  kFloat32 = 3,          // one IEEE float per row
  kString = 4,           // one byte string per row
  kIdList = 5,           // a list of int64 ids per row
  kScoredIdList64 = 6,   // a list of (int64 id, double score) per row
  kScoredIdList32 = 7,   // a list of (int64 id, float score) per row
};
inline constexpr uint8_t kMaxFeatureType = 7;

enum class StreamRole : uint8_t {
  kPresence = 0,  // bitmap of the rows holding the feature; empty when all do
  kLengths = 1,   // uint32 per present row: list length or string byte length
  kValues = 2,    // the values of present rows, back to back
  kScores = 3,    // one score per list element
};
inline constexpr uint8_t kRoleCount = 4;

enum class StreamCodec : uint8_t {
  kNone = 0,
  kZstd = 1,  // one zstd frame holding its content size
};

const char* FeatureTypeName(FeatureType type);
const char* StreamRoleName(StreamRole role);
bool IsListType(FeatureType type);
// Streams of a feature of this type, in the order a writer stores them.
std::span<const StreamRole> RolesOf(FeatureType type);
// Bytes of one element of the raw values stream: 8 (int64, float64, list
// ids), 4 (float32) or 1 (string bytes).
size_t RawValueBytes(FeatureType type);

struct FeatureInfo {
  std::string name;     // unique in the schema; a map feature's name is its id in decimal
  FeatureType type = FeatureType::kInt64;
  bool has_id = false;  // a map feature (dense, sparse or scored) rather than a column
  int64_t id = 0;
  uint64_t present_count = 0;  // rows holding the feature
  uint64_t value_count = 0;    // list elements (lists), bytes (strings), else present_count

  bool operator==(const FeatureInfo&) const = default;
};

struct TableSchema {
  uint64_t row_count = 0;
  std::vector<FeatureInfo> features;

  bool operator==(const TableSchema&) const = default;
  void EncodeTo(Bytes* out) const;
  // Rejects duplicate names, unknown types and counts above row_count.
  static bool DecodeFrom(Decoder* d, TableSchema* schema, std::string* error);
};

// What a table stripe's stream holds; parallel to StripeInfo::streams.
struct TableStream {
  uint32_t feature = 0;  // index into TableSchema::features
  StreamRole role = StreamRole::kValues;
  StreamCodec codec = StreamCodec::kNone;
  uint64_t raw_length = 0;  // length after decompression

  bool operator==(const TableStream&) const = default;
};

// Raw (uncompressed) streams of one feature in one stripe, being built row by row.
struct FeatureStreams {
  std::vector<uint32_t> rows;  // rows of the stripe holding the feature, increasing
  Bytes lengths;
  Bytes values;
  Bytes scores;

  void Clear();
  // Raw stream `role` of a stripe of row_count rows.
  Bytes Raw(StreamRole role, uint64_t row_count) const;
};

// A stored stream: the raw bytes compressed when that makes them smaller.
struct StoredStream {
  StreamCodec codec = StreamCodec::kNone;
  uint64_t raw_length = 0;
  Bytes bytes;
};
StoredStream CompressStream(ByteSpan raw, int zstd_level);
// Decompresses `stored` into `out` (resized to raw_length). Corruption when
// the bytes do not decode to exactly raw_length bytes.
Status DecompressStream(ByteSpan stored, StreamCodec codec, uint64_t raw_length, Bytes* out);

// Decoded values of one feature over consecutive rows. Decoding appends, so a
// column can span several stripes.
struct Column {
  FeatureType type = FeatureType::kInt64;
  uint64_t rows = 0;
  std::vector<uint8_t> present;   // per row: 1 when the row holds the feature
  std::vector<int64_t> ints;      // kInt64: per row (0 if missing); lists: the ids
  std::vector<double> doubles;    // kFloat64: per row; kScoredIdList64: per id
  std::vector<float> floats;      // kFloat32: per row; kScoredIdList32: per id
  std::vector<uint64_t> offsets;  // strings and lists: row r is [offsets[r], offsets[r + 1])
  std::string bytes;              // kString: the strings back to back

  explicit Column(FeatureType t = FeatureType::kInt64);
  std::string_view string(uint64_t row) const {
    return std::string_view(bytes).substr(offsets[row], offsets[row + 1] - offsets[row]);
  }
};

// Decodes one stripe's raw streams of a feature and appends its rows to
// `column`. Streams a type does not have are empty. Corruption names the
// stream at fault.
Status DecodeFeatureStreams(FeatureType type, uint64_t row_count, ByteSpan presence, ByteSpan lengths,
                            ByteSpan values, ByteSpan scores, Column* column);

}  // namespace pcr
