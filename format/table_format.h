// Table files (kind kTable): the schema, the streams a feature is flattened
// into, and their encodings (spec/pcr-format.md, "Table files").
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "format/coding.h"
#include "pcr/status.h"
#include "pcr/types.h"

namespace pcr {

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

const char* StreamRoleName(StreamRole role);
bool IsListType(FeatureType type);
// Streams of a feature of this type, in the order a writer stores them.
std::span<const StreamRole> RolesOf(FeatureType type);
// Bytes of one element of the raw values stream: 8 (int64, float64, list
// ids), 4 (float32) or 1 (string bytes).
size_t RawValueBytes(FeatureType type);

// TableSchema wire form (spec 13.1). DecodeTableSchema rejects duplicate
// names, unknown types and counts above row_count.
void EncodeTableSchema(const TableSchema& schema, Bytes* out);
bool DecodeTableSchema(Decoder* d, TableSchema* schema, std::string* error);

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

// Decodes one stripe's raw streams of a feature and appends its rows to
// `column`. Streams a type does not have are empty. Corruption names the
// stream at fault.
Status DecodeFeatureStreams(FeatureType type, uint64_t row_count, ByteSpan presence, ByteSpan lengths,
                            ByteSpan values, ByteSpan scores, Column* column);

}  // namespace pcr
