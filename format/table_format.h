// Table files (kind kTable): the schema, the streams a feature is flattened
// into, and decoding them (spec/pcr-format.md, "Table files"); writer/
// feature_streams.h builds and stores them.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "format/coding.h"
#include "format/stream_encoding.h"
#include "pcr/status.h"
#include "pcr/types.h"

namespace pcr {

inline constexpr uint8_t kMaxFeatureType = 17;
// The highest FeatureType of files stamped before 0.7 (kUInt64IdList came
// with 0.7), before 0.6 (bool, uint64 and the timestamps) and before 0.4
// (kBytes and the float lists).
inline constexpr uint8_t kMaxFeatureType06 = 16;
inline constexpr uint8_t kMaxFeatureType05 = 10;
inline constexpr uint8_t kMaxFeatureType03 = 7;
inline constexpr uint8_t kTypesVersionMinor = 6;
inline constexpr uint8_t kUInt64IdsVersionMinor = 7;

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
// Bytes of one element of the raw values stream: 8 (int64, uint64,
// timestamps, float64, ids of id lists, float64 lists), 4 (float32, float32 lists)
// or 1 (bool, string and bytes).
size_t RawValueBytes(FeatureType type);
// kString and kBytes: values stream of string bytes, cut by a lengths stream.
bool IsStringType(FeatureType type);
// Bytes of one score: 4 (kScoredIdList32), 8 (kScoredIdList64) or 0.
size_t ScoreWidth(FeatureType type);
// The lowest version_minor of a file holding a feature of this type.
uint8_t FeatureTypeVersion(FeatureType type);
// The highest FeatureType a file stamped version_minor may hold.
uint8_t MaxFeatureType(uint8_t version_minor);

// TableSchema wire form (spec 13.1). DecodeTableSchema rejects duplicate
// names, types above max_type, map features unless allow_map, and counts
// above row_count.
void EncodeTableSchema(const TableSchema& schema, Bytes* out);
bool DecodeTableSchema(ByteCursor* d, uint8_t max_type, bool allow_map, TableSchema* schema, std::string* error);

// Whether `a` and `b` have the same features: names and types, in order.
bool SameFeatures(const TableSchema& a, const TableSchema& b);
// Adds each of `from`'s features' present and value counts to `into`'s.
// REQUIRES: SameFeatures(from, *into).
void AddFeatureCounts(const TableSchema& from, TableSchema* into);

// What a table stripe's stream holds; parallel to StripeInfo::streams.
struct TableStream {
  uint32_t feature = 0;  // index into TableSchema::features
  StreamRole role = StreamRole::kValues;
  StreamCodec codec = StreamCodec::kNone;
  uint64_t raw_length = 0;  // length after decompression and decoding
  // From 0.5 (kEncodingsVersionMinor); kPlain in older files.
  StreamEncoding encoding = StreamEncoding::kPlain;

  bool operator==(const TableStream&) const = default;
};

// What the raw bytes of stream `role` of a feature of `type` hold.
ElementKind ElementKindOf(FeatureType type, StreamRole role);

// Decompresses `stored` into `out` (resized to raw_length). Corruption when
// the bytes do not decode to exactly raw_length bytes.
Status DecompressStream(ByteSpan stored, StreamCodec codec, uint64_t raw_length, Bytes* out);
// The same into `out`, which holds raw_length bytes.
Status DecompressStreamInto(ByteSpan stored, StreamCodec codec, uint64_t raw_length, uint8_t* out);
// The raw bytes of a stored stream described by `t`, of a feature of `type`:
// decompressed into `scratch` when zstd and not plain, then decoded into
// `out`. For a kStringDictionary values stream, `string_count` is the number
// of strings and `lengths` receives the raw lengths stream. REQUIRES:
// t.encoding is not kDerivedLengths.
Status UnpackStream(ByteSpan stored, const TableStream& t, FeatureType type, Bytes* out, Bytes* scratch,
                    uint64_t string_count = 0, Bytes* lengths = nullptr);

// Corruption when t.raw_length is more than `stored` bytes of its codec and
// encoding can give: checked before memory for the raw bytes is taken.
Status CheckRawLength(uint64_t stored, const TableStream& t);
// UnpackStream of a stream of 8-byte elements into `out`, which holds
// t.raw_length bytes; `scratch` as for UnpackStream.
Status UnpackStreamInto(ByteSpan stored, const TableStream& t, FeatureType type, uint8_t* out, Bytes* scratch);

// Appends rows [first, first + count) of `from` to `to`, a column of the
// same type. REQUIRES: first + count <= from.rows
void AppendRows(const Column& from, uint64_t first, uint64_t count, Column* to);

// One row of a column, for GatherRows.
struct RowRef {
  const Column* column = nullptr;
  uint64_t row = 0;
};
// Sets `to` (a column of the rows' type) to the rows `rows`, in that order.
// REQUIRES: every row < its column's rows
void GatherRows(std::span<const RowRef> rows, Column* to);

// Decodes one stripe's raw streams of a feature and appends its rows to
// `column`. Streams a type does not have are empty. Corruption names the
// stream at fault.
Status DecodeFeatureStreams(FeatureType type, uint64_t row_count, ByteSpan presence, ByteSpan lengths,
                            ByteSpan values, ByteSpan scores, Column* column);
// DecodeFeatureStreams of a scalar feature of 8-byte values (not bool or
// float32), whose values stream of values_length raw bytes `unpack` writes
// into the column's own memory: no copy of the values is made.
Status DecodeWideScalar(FeatureType type, uint64_t row_count, ByteSpan presence, uint64_t values_length,
                        const std::function<Status(uint8_t*)>& unpack, Column* column);
// Whether DecodeWideScalar decodes features of `type`.
bool IsWideScalar(FeatureType type);

}  // namespace pcr
