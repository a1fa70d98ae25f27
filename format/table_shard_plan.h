// The bytes a table conversion in shards passes between its steps (spec
// section 15): a shard's survey, the first pass over its rows, and the
// conversion's plan, which every shard's survey makes. Pure encoding and
// bounds-checked decoding; writer/table/ fills and reads them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "format/table_format.h"
#include "pcr/status.h"

namespace pcr {

// A value of the input, for messages: where it is and its text as shown.
struct ValuePlace {
  uint64_t line = 0, column = 0;
  std::string text;

  bool operator<(const ValuePlace& o) const { return line != o.line ? line < o.line : column < o.column; }
  std::string At() const { return "line " + std::to_string(line) + ", column " + std::to_string(column); }
};

// What the present values of one column look like: how many of each kind,
// and the first of each (writer/table/type_inference.h counts them).
struct VoteCounts {
  bool typed = true;  // InferenceRules::typed of the values counted
  uint64_t present = 0, ints = 0, uints = 0, floats = 0, bools = 0, timestamps = 0, strings = 0, lists = 0;
  uint64_t big_ints = 0;     // of floats: integer literals beyond int64 and uint64
  bool list_floats = false;  // some list is neither of int64 nor of uint64 literals
  int timestamp_digits = 0;  // the most fraction digits of a time
  std::optional<ValuePlace> first_negative, first_uint, first_float, first_number, first_bool, first_timestamp,
      first_other, first_string, first_list;
  std::optional<ValuePlace> first_ns, first_beyond_ns;  // a time with over 6 fraction digits; one outside timestamp_ns
  std::optional<ValuePlace> first_big, first_big_negative;  // an integer beyond int64 and uint64; one below int64
  // Lists of integers: one with an element above int64, one with a negative.
  std::optional<ValuePlace> first_big_list, first_negative_list;

  // The first_* members in their encoded order.
  template <typename Self, typename Fn>
  static void ForEachFirst(Self& v, Fn fn) {
    for (auto* first : {&v.first_negative, &v.first_uint, &v.first_float, &v.first_number, &v.first_bool,
                        &v.first_timestamp, &v.first_other, &v.first_string, &v.first_list, &v.first_ns,
                        &v.first_beyond_ns, &v.first_big, &v.first_big_negative, &v.first_big_list,
                        &v.first_negative_list}) {
      fn(*first);
    }
  }
};

// Where a JSON Lines feature sits in a row: a column, or a map's feature.
enum class MapKind : uint8_t { kColumn, kDense, kSparse, kScored };

struct SurveyedFeature {
  std::string name;
  MapKind map = MapKind::kColumn;
  int64_t id = 0;                 // map features
  uint64_t line = 0, column = 0;  // where it first appears (JSON Lines)
  VoteCounts votes;
};

// The first pass over one shard's rows.
struct ShardSurvey {
  uint64_t start = 0;       // the offset of the shard's first row
  uint64_t stop = 0;        // after its last row: the next shard's start
  bool guessed = false;     // start follows the first line break, which may be inside quotes
  uint64_t start_line = 1;  // the line at start (shard 0: the file's; others count from 1 there)
  uint64_t lines = 0;       // line breaks in [start, stop)
  uint64_t rows = 0;
  std::string error;        // the first error in the rows: lines are the file's
  std::vector<SurveyedFeature> features;  // CSV: the columns; JSON Lines: in order of first appearance
  // Checksum64 of the bytes the shard's rows depend on: [from, stop), from
  // 0 in the shard after the header (a later step checks the input is
  // unchanged).
  uint64_t from = 0, checksum = 0;
  uint64_t first_row = 0;   // where the file's first row can start (not encoded)
};

// Every shard's survey put together: the table's features and where each
// shard's rows are.
struct TableConversionPlan {
  bool csv = true;
  uint64_t split_bytes = 0;
  std::vector<FeatureInfo> features;  // name, type, has_id and id
  std::vector<MapKind> maps;          // per feature
  std::vector<std::optional<ValuePlace>> first_float;  // per feature
  struct Shard {
    uint64_t start = 0, stop = 0, line = 1;
    uint64_t from = 0, checksum = 0;  // as the shard's survey found them
  };
  std::vector<Shard> shards;
  std::vector<std::string> notes;
};

// The first line of each structure's bytes.
inline constexpr std::string_view kShardSurveyMagic = "pcr table scan 1\n";
inline constexpr std::string_view kTableConversionPlanMagic = "pcr table plan 1\n";

std::string EncodeShardSurvey(const ShardSurvey& survey);
// InvalidArgument on bytes EncodeShardSurvey did not write.
Result<ShardSurvey> DecodeShardSurvey(std::string_view bytes);
std::string EncodeTableConversionPlan(const TableConversionPlan& plan);
// InvalidArgument on bytes EncodeTableConversionPlan did not write.
Result<TableConversionPlan> DecodeTableConversionPlan(std::string_view bytes);

}  // namespace pcr
