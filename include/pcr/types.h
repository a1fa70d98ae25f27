// The values stored in pcr files that the API hands out: an image's sample
// metadata, the scan script of a dataset, and the schema and decoded columns
// of a table (spec/pcr-format.md names each).
//
// Thread safety: plain values.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "pcr/export.h"

namespace pcr {

// Stream 0 of an image stripe holds one per image.
struct SampleMetadata {
  int64_t label = -1;  // class index; -1 when unlabelled
  std::string key;     // source path relative to the dataset root

  bool operator==(const SampleMetadata&) const = default;
};

// One progressive JPEG scan of a scan group.
struct ScanSpec {
  uint8_t component_mask = 0;  // bit j set: the scan codes component j
  uint8_t ss = 0;              // first coefficient, zigzag order
  uint8_t se = 0;              // last coefficient
  uint8_t ah = 0;              // previous bit position; 0 for a first scan
  uint8_t al = 0;              // point transform

  bool operator==(const ScanSpec&) const = default;
};

// How an image's coefficients are cut into scan groups: fidelity k is
// groups 1..k.
struct ScanScript {
  std::string name;                           // a built-in name or a file's name
  std::vector<std::vector<ScanSpec>> groups;  // groups[k-1] = scan group k

  bool operator==(const ScanScript&) const = default;
  int group_count() const { return static_cast<int>(groups.size()); }
};

// Values are frozen: they are stored in files.
enum class FeatureType : uint8_t {
  kInt64 = 1,           // one int64 per row
  kFloat64 = 2,         // one IEEE double per row
  kFloat32 = 3,         // one IEEE float per row
  kString = 4,          // one byte string per row
  kIdList = 5,          // a list of int64 ids per row
  kScoredIdList64 = 6,  // a list of (int64 id, double score) per row
  kScoredIdList32 = 7,  // a list of (int64 id, float score) per row
  kBytes = 8,           // one byte string per row, not text (format 0.4)
  kFloat32List = 9,     // a list of IEEE floats per row (format 0.4)
  kFloat64List = 10,    // a list of IEEE doubles per row (format 0.4)
  kBool = 11,           // false or true per row (format 0.6)
  kUInt64 = 12,         // one uint64 per row (format 0.6)
  kTimestampS = 13,     // seconds since 1970-01-01T00:00:00 UTC, an int64 per row (format 0.6)
  kTimestampMs = 14,    // the same in milliseconds (format 0.6)
  kTimestampUs = 15,    // the same in microseconds (format 0.6)
  kTimestampNs = 16,    // the same in nanoseconds (format 0.6)
  kUInt64IdList = 17,   // a list of uint64 ids per row (format 0.7)
};

// "int64", "float64", "float32", "string", "id_list", "scored_id_list64",
// "scored_id_list32", "bytes", "float32_list", "float64_list", "bool",
// "uint64", "timestamp_s", "timestamp_ms", "timestamp_us", "timestamp_ns",
// "uint64_id_list".
PCR_EXPORT const char* FeatureTypeName(FeatureType type);
// The type FeatureTypeName calls `name`; false for any other name.
PCR_EXPORT bool ParseFeatureTypeName(std::string_view name, FeatureType* type);

// One value per row (int64, float64, float32, bool, uint64, timestamps),
// rather than a string or a list.
constexpr bool IsScalarType(FeatureType t) {
  return t == FeatureType::kInt64 || t == FeatureType::kFloat64 || t == FeatureType::kFloat32 ||
         (t >= FeatureType::kBool && t <= FeatureType::kTimestampNs);
}
// Ticks per second of a timestamp type; 0 for any other type.
constexpr int64_t TicksPerSecond(FeatureType t) {
  switch (t) {
    case FeatureType::kTimestampS:
      return 1;
    case FeatureType::kTimestampMs:
      return 1000;
    case FeatureType::kTimestampUs:
      return 1000000;
    case FeatureType::kTimestampNs:
      return 1000000000;
    default:
      return 0;
  }
}

struct FeatureInfo {
  std::string name;  // unique in the schema; a map feature's name is its id in decimal
  FeatureType type = FeatureType::kInt64;
  bool has_id = false;  // a map feature (dense, sparse or scored) rather than a column
  int64_t id = 0;
  uint64_t present_count = 0;  // rows holding the feature
  uint64_t value_count = 0;    // list elements (lists), bytes (strings), else present_count

  bool operator==(const FeatureInfo&) const = default;
};

// One line of an access log (spec section 14): a projection one job read
// from one table.
struct AccessLogEntry {
  std::vector<std::string> features;  // in projection order
  std::string table;                  // the path the table was opened by
  std::string table_id;               // its content id (Table::content_id); empty in logs before 0.7
  std::string job;                    // the job that read it; empty in logs before 0.7

  bool operator==(const AccessLogEntry&) const = default;
};

struct TableSchema {
  uint64_t row_count = 0;
  std::vector<FeatureInfo> features;

  bool operator==(const TableSchema&) const = default;
};

// std::allocator, but a vector grown without a value (resize(n)) leaves
// its new elements of trivial type uninitialized instead of zero-filling
// them: decoders write every element of the memory they grow.
template <typename T>
struct UninitializedAllocator : std::allocator<T> {
  using value_type = T;
  UninitializedAllocator() = default;
  template <typename U>
  UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}
  template <typename U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    if constexpr (sizeof...(Args) == 0 && std::is_trivially_default_constructible_v<U>) {
      ::new (static_cast<void*>(p)) U;
    } else {
      ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
  }
};
template <typename T, typename U>
bool operator==(const UninitializedAllocator<T>&, const UninitializedAllocator<U>&) noexcept {
  return true;
}
// A column's values: a std::vector but for growth without zero-filling.
template <typename T>
using Buffer = std::vector<T, UninitializedAllocator<T>>;
template <typename T>
bool operator==(const Buffer<T>& a, const std::vector<T>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end());
}

// Decoded values of one feature over consecutive rows.
struct Column {
  FeatureType type = FeatureType::kInt64;
  uint64_t rows = 0;
  std::vector<uint8_t> present;   // per row: 1 when the row holds the feature
  // kInt64, kBool (0 or 1), kUInt64 (its bits), timestamps (ticks): per row
  // (0 if missing); id lists: the ids (kUInt64IdList: their bits)
  Buffer<int64_t> ints;
  Buffer<double> doubles;  // kFloat64: per row; kScoredIdList64: per id; kFloat64List: the values
  Buffer<float> floats;    // kFloat32: per row; kScoredIdList32: per id; kFloat32List: the values
  std::vector<uint64_t> offsets;  // strings, bytes and lists: row r is [offsets[r], offsets[r + 1])
  std::string bytes;              // kString, kBytes: the values back to back

  explicit Column(FeatureType t = FeatureType::kInt64) : type(t) {
    if (!IsScalarType(t)) offsets.push_back(0);
  }
  std::string_view string(uint64_t row) const {
    return std::string_view(bytes).substr(offsets[row], offsets[row + 1] - offsets[row]);
  }
};

}  // namespace pcr
