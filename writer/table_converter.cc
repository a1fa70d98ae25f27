// pcr-convert table: CSV and JSON Lines into a table file, in one process or
// in shards (scan, plan, convert, merge). Over 700 lines: parsing, type
// inference over every value, declared types and the writing pass share one
// state, kept together so the passes agree on it.
#include "pcr/convert.h"
#include "writer/table_writer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <unordered_map>

#include "format/checksum.h"
#include "format/json.h"
#include "format/popularity.h"
#include "format/table_stripe.h"
#include "io/location.h"
#include "io/pcr_file.h"
#include "io/read_executor.h"
#include "io/s3_upload.h"
#include "writer/atomic_file.h"
#include "writer/column_types.h"
#include "writer/remote_output.h"
#include "writer/text_input.h"

namespace pcr {

namespace {

namespace fs = std::filesystem;

constexpr char kTableTypeNames[] =
    "bool, int64, uint64, float32, float64, timestamp (timestamp_us), timestamp_s, timestamp_ms, timestamp_ns, "
    "string, bytes, id_list, uint64_id_list, float32_list, float64_list; for maps also scored_id_list32, "
    "scored_id_list64";

FeatureType FloatType(bool float32) { return float32 ? FeatureType::kFloat32 : FeatureType::kFloat64; }

bool IsTimestamp(FeatureType t) { return TicksPerSecond(t) != 0; }

// A blank line in a CSV of several columns, which can be no row of it, is
// skipped, as pandas and DuckDB skip it; with one column it is a missing cell.
bool BlankLine(const std::vector<CsvCell>& cells, size_t count, size_t columns) {
  return columns > 1 && count == 1 && cells[0].text.empty() && !cells[0].quoted;
}

// Why an inexact integer's column at (line, column) is float64, for messages.
std::string FloatBecause(const std::optional<Where>& first_float, uint64_t line, uint64_t column) {
  if (!first_float) return "";
  const Where& w = *first_float;
  if (w.line == line && w.column == column) return " (float64 because no integer type holds it)";
  return " (float64 because of " + w.text + " at " + w.At() + ")";
}

// Whether float32 holds `d` (rounded), as it holds infinities and NaN.
bool FitsFloat32(double d) { return !std::isfinite(d) || std::isfinite(static_cast<float>(d)); }
constexpr char kFloat32Range[] = "at most 3.4028235e38 in magnitude";

// The value of CSV text `cell` in a column of `type`: *i for integers, bools
// and timestamps, *d for floats. False when it is not one (a float beyond
// float32's range for float32). A declared type also takes integer ticks as
// timestamps and t, f, yes, no, y, n, on, off, 1 and 0 as bools.
bool ParseCell(FeatureType type, std::string_view cell, bool declared, int64_t* i, double* d) {
  const std::string_view t = type == FeatureType::kBool || IsTimestamp(type) ? Trim(cell) : NumberText(cell);
  switch (type) {
    case FeatureType::kInt64:
      return ParseInt(t, i);
    case FeatureType::kUInt64: {
      uint64_t u;
      if (ParseInt(t, i)) return *i >= 0;
      if (!ParseBigUInt64(t, &u)) return false;
      *i = static_cast<int64_t>(u);
      return true;
    }
    case FeatureType::kFloat32:
      return ParseFloat(t, d) && FitsFloat32(*d);
    case FeatureType::kFloat64:
      return ParseFloat(t, d);
    case FeatureType::kBool: {
      bool b;
      if (!ParseBool(t, declared, &b)) return false;
      *i = b ? 1 : 0;
      return true;
    }
    default: {  // timestamps: ISO 8601 text, or integer ticks
      TimestampText ts;
      if (ParseTimestamp(t, &ts)) return TimestampTicks(ts, type, i);
      return declared && ParseInt(NumberText(t), i);
    }
  }
}

// What a declared or inferred type expects, for messages.
std::string Expected(FeatureType type) {
  if (IsTimestamp(type)) {
    return std::string("an ISO 8601 time (or integer ticks) that ") + FeatureTypeName(type) + " holds";
  }
  switch (type) {
    case FeatureType::kInt64:
      return "an int64";
    case FeatureType::kUInt64:
      return "a uint64";
    case FeatureType::kBool:
      return "a bool (true, false, t, f, yes, no, y, n, on, off, 1, 0)";
    default:
      return "a number";
  }
}

// Why `text` is no value of `type`, for messages: "is not a number", or for
// a time, "is finer than timestamp_s holds" or "is beyond the years ...".
std::string WhyNot(FeatureType type, std::string_view text) {
  TimestampText ts;
  double d;
  if (type == FeatureType::kFloat32 && ParseFloat(NumberText(text), &d) && !FitsFloat32(d)) {
    return "is beyond float32 (" + std::string(kFloat32Range) + ")";
  }
  if (IsTimestamp(type) && ParseTimestamp(Trim(text), &ts)) {
    if (ts.nanos % (1000000000 / TicksPerSecond(type)) != 0) {
      return std::string("has more fraction digits than ") + FeatureTypeName(type) + " holds";
    }
    return std::string("is beyond the years ") + FeatureTypeName(type) + " holds";
  }
  return "is not " + Expected(type);
}

void Write(TableFileWriter* writer, size_t f, FeatureType type, int64_t i, double d) {
  if (type == FeatureType::kFloat32 || type == FeatureType::kFloat64) {
    writer->AddFloat(f, d);
  } else if (type == FeatureType::kBool) {
    writer->AddBool(f, i != 0);
  } else {
    writer->AddInt64(f, i);
  }
}

// How inference treats a table conversion's values.
InferenceRules Rules(const TableConvertOptions& options) {
  return {.float32 = options.float32, .missing = options.on_bad_value == BadValue::kMissing};
}

ColumnNaming Naming(const std::string& input) {
  return {.error = [&input](uint64_t line, uint64_t column, const std::string& what) {
    return InputError(input, line, column, what);
  }};
}

// Writes `list` to a list feature of `type`; false when the list does not fit
// it: an id list of other than int64 literals, or with *why set, an integer
// a float64 list cannot hold or a float beyond float32.
bool WriteList(TableFileWriter* writer, size_t f, FeatureType type, const NumberList& list, std::string* why) {
  why->clear();
  if (type == FeatureType::kIdList || type == FeatureType::kUInt64IdList) {
    if (!(type == FeatureType::kIdList ? list.all_int : list.all_uint64)) return false;
    writer->AddIdList(f, list.ints, {});
    return true;
  }
  if (type == FeatureType::kFloat64List && !list.exact) {
    *why = "a list of floats: an integer in it has no exact double";
    return false;
  }
  if (type == FeatureType::kFloat32List && !std::all_of(list.values.begin(), list.values.end(), FitsFloat32)) {
    *why = "a list of float32: a value in it is beyond float32 (" + std::string(kFloat32Range) + ")";
    return false;
  }
  writer->AddFloatList(f, list.values);
  return true;
}

// The rest of the message for a value that is not one of list column
// `name`'s `type`: what it is not, and the declared type that keeps it, if
// any. `list` is the value read as a list (null if it is not one), `unfit`
// WriteList's reason, `array` "a JSON array" or "an array", `whose` the
// column or the (map) feature.
std::string ListMismatch(FeatureType type, const NumberList* list, const std::string& unfit, const char* array,
                         const std::string& name, const char* values, const char* whose = "the column") {
  const bool ids = type == FeatureType::kIdList || type == FeatureType::kUInt64IdList;
  const char* keeps = !list || !ids                                      ? nullptr
                      : type == FeatureType::kIdList && list->all_uint64 ? "uint64_id_list"
                      : type == FeatureType::kUInt64IdList && list->all_int ? "id_list"
                                                                             : nullptr;
  const std::string what = !unfit.empty() ? unfit
                           : !ids         ? std::string(array) + " of numbers"
                                          : std::string(array) + " of " +
                                    (type == FeatureType::kIdList ? "int64 ids (-2^63 to 2^63 - 1)"
                                                                  : "uint64 ids (0 to 2^64 - 1)");
  const std::string is = " (" + std::string(whose) + " is " + FeatureTypeName(type) + "): ";
  if (keeps) {
    return what + is + "declare --column-type " + name + "=" + keeps + " to keep every id, or pass --on-bad-value "
           "missing to store such " + values + " as missing";
  }
  return what + is + "pass --on-bad-value missing to store such " + values + " as missing, or declare another type "
         "with --column-type " + name + "=TYPE";
}

// Values --on-bad-value missing stored as missing, per feature, for notes.
class MissingNotes {
 public:
  explicit MissingNotes(size_t features) : count_(features), first_(features) {}
  // `text` as the message shows it: 'abc' for CSV, JSON text for JSON Lines.
  void Add(size_t f, uint64_t line, uint64_t column, const std::string& text) {
    ++count_[f];
    NoteFirst(&first_[f], line, column, text);
  }
  void Report(const std::vector<FeatureInfo>& features, TableConvertReport* report) const {
    for (size_t f = 0; f < count_.size(); ++f) {
      if (count_[f] == 0) continue;
      report->missing.push_back({.index = f,
                                 .feature = features[f].name,
                                 .type = features[f].type,
                                 .count = count_[f],
                                 .line = first_[f]->line,
                                 .column = first_[f]->column,
                                 .first = first_[f]->text});
      report->notes.push_back(MissingValuesNote(report->missing.back()));
    }
  }

 private:
  std::vector<uint64_t> count_;
  std::vector<std::optional<Where>> first_;
};

// ---- JSON Lines with map features ----

enum class MapKind { kColumn, kDense, kSparse, kScored };

// What one row holds, in the order of its text.
struct JsonRow {
  struct Item {
    MapKind map = MapKind::kColumn;
    std::string key;  // column name, or the feature id as written
    int64_t id = 0;
    uint64_t column = 0;
    ColumnValue value;             // columns and dense features
    std::vector<int64_t> ids;    // sparse and scored features
    std::vector<double> scores;  // scored features

    // Frees the buffers over kKeptBufferCapacity that a huge value left.
    void FreeHuge() {
      FreeIfHuge(&value.s);
      FreeIfHuge(&value.text);
      FreeIfHuge(&value.list.values);
      FreeIfHuge(&value.list.ints);
      FreeIfHuge(&ids);
      FreeIfHuge(&scores);
    }
  };
  std::vector<Item> items;
  size_t count = 0;

  // Before a row is stored: huge values are not held while stripes are written.
  void FreeHuge() {
    for (Item& item : items) item.FreeHuge();
  }
};

class JsonlParser {
 public:
  explicit JsonlParser(const std::string& input) : input_(input) {}

  // Parses one line into row->items[0, row->count).
  Status ParseLine(std::string_view line, uint64_t number, JsonRow* row) {
    JsonCursor json(line);
    line_ = number;
    row->count = 0;
    std::string key;
    bool done;
    if (json.Peek() != JsonCursor::Kind::kObject) return Error(json, "a row must be a JSON object");
    if (!json.BeginObject()) return Error(json);
    while (json.NextMember(&key, &done) && !done) {
      const MapKind map = key == "dense"    ? MapKind::kDense
                          : key == "sparse" ? MapKind::kSparse
                          : key == "scored" ? MapKind::kScored
                                            : MapKind::kColumn;
      if (map == MapKind::kColumn) {
        JsonRow::Item& item = Add(row, map, key, json);
        PCR_RETURN_IF_ERROR(Scalar(json, "column '" + key + "'", &item.value));
        continue;
      }
      if (json.Peek() == JsonCursor::Kind::kNull) {
        JsonCursor::Kind k;
        json.Literal(&k);
        continue;
      }
      if (json.Peek() != JsonCursor::Kind::kObject) return Error(json, "'" + key + "' must be an object");
      const std::string map_name = key;
      if (!json.BeginObject()) return Error(json);
      while (json.NextMember(&key, &done) && !done) {
        JsonRow::Item& item = Add(row, map, key, json);
        const std::string what = map_name + " feature " + key;
        if (!ParseId(key, &item.id)) return Error(json, what + ": key is not an int64 feature id");
        PCR_RETURN_IF_ERROR(MapValue(json, map, what, &item));
      }
      if (!json.error().empty()) return Error(json);
    }
    if (!json.error().empty() || !json.End()) return Error(json);
    return Status::OK();
  }

 private:
  static bool ParseId(const std::string& key, int64_t* id) { return ParseInt(key, id); }

  JsonRow::Item& Add(JsonRow* row, MapKind map, const std::string& key, JsonCursor& json) {
    if (row->count == row->items.size()) row->items.emplace_back();
    JsonRow::Item& item = row->items[row->count++];
    item.FreeHuge();
    item.map = map;
    item.key = key;
    json.Peek();
    item.column = json.position() + 1;
    item.value.line = line_;
    item.value.column = item.column;
    item.value.kind = ColumnValue::kNull;
    item.ids.clear();
    item.scores.clear();
    return item;
  }

  Status Error(JsonCursor& json, const std::string& what = "") {
    return InputError(input_, line_, json.position() + 1, what.empty() ? json.error() : what);
  }

  Status Scalar(JsonCursor& json, const std::string& what, ColumnValue* v) {
    std::string why;
    if (!ParseJsonValue(json, false, v, &why)) return Error(json, why.empty() ? "" : what + ": " + why);
    return Status::OK();
  }

  // An id: an integer literal of int64, or above int64 one of uint64 (in
  // sparse features only, whose `list` notes the kinds of its ids).
  Status Id(JsonCursor& json, const std::string& what, int64_t* id, NumberList* list) {
    JsonNumber n;
    if (json.Peek() != JsonCursor::Kind::kNumber) return Error(json, what + ": expected an integer id");
    const size_t at = json.position();
    if (!json.Number(&n)) return Error(json);
    uint64_t u = 0;
    const bool big = !n.is_int && ParseBigUInt64(json.text().substr(at, json.position() - at), &u);
    if (!n.is_int && !(big && list)) {
      return InputError(input_, line_, at + 1,
                        what + (big ? ": id is above int64 (scored features hold int64 ids)"
                                    : ": id is not an integer of int64 or uint64"));
    }
    *id = big ? static_cast<int64_t>(u) : n.i;
    if (list) {
      list->all_int &= !big;
      list->all_uint64 &= big || n.i >= 0;
    }
    return Status::OK();
  }

  Status MapValue(JsonCursor& json, MapKind map, const std::string& what, JsonRow::Item* item) {
    if (map == MapKind::kDense) {
      if (json.Peek() == JsonCursor::Kind::kNull) return Scalar(json, what, &item->value);
      if (json.Peek() != JsonCursor::Kind::kNumber) return Error(json, what + ": expected a number");
      return Scalar(json, what, &item->value);
    }
    if (json.Peek() != JsonCursor::Kind::kArray) return Error(json, what + ": expected an array");
    bool done;
    const size_t start = json.position();
    if (!json.BeginArray()) return Error(json);
    NumberList& list = item->value.list;
    list.Clear();
    while (json.NextElement(&done) && !done) {
      int64_t id;
      if (map == MapKind::kSparse) {
        PCR_RETURN_IF_ERROR(Id(json, what, &id, &list));
        item->ids.push_back(id);
        continue;
      }
      bool pair_done;
      if (json.Peek() != JsonCursor::Kind::kArray) return Error(json, what + ": expected an [id, score] pair");
      if (!json.BeginArray() || !json.NextElement(&pair_done) || pair_done) {
        return Error(json, what + ": expected an [id, score] pair");
      }
      PCR_RETURN_IF_ERROR(Id(json, what, &id, nullptr));
      JsonNumber score;
      if (!json.NextElement(&pair_done) || pair_done || json.Peek() != JsonCursor::Kind::kNumber ||
          !json.Number(&score)) {
        return Error(json, what + ": expected a numeric score");
      }
      if (!json.NextElement(&pair_done) || !pair_done) return Error(json, what + ": a pair has two elements");
      item->ids.push_back(id);
      item->scores.push_back(score.d);
    }
    if (!json.error().empty()) return Error(json);
    if (map == MapKind::kSparse) {  // votes for its type, as a column's list
      item->value.kind = ColumnValue::kList;
      item->value.text = json.text().substr(start, json.position() - start);
    }
    return Status::OK();
  }

  const std::string& input_;
  uint64_t line_ = 0;
};

// The value of JSON `v` as `type`: *i for integers, bools and timestamps, *d
// for floats, *s for strings (a view of v, or of *text for a value's JSON
// text). False when it is not one. `lenient` (a declared type, or
// --strings) also takes integer ticks as timestamps, numbers and booleans as
// their text in string columns, and strings holding numbers in number
// columns.
bool JsonCell(FeatureType type, const ColumnValue& v, bool lenient, int64_t* i, double* d, std::string* text,
              std::string_view* s) {
  const bool number = type == FeatureType::kInt64 || type == FeatureType::kUInt64 || type == FeatureType::kFloat32 ||
                      type == FeatureType::kFloat64;
  if (number && lenient && v.kind == ColumnValue::kString) {  // "580", as a quoted CSV number reads
    const std::string_view t = NumberText(v.s);
    return ParseCell(type, t, true, i, d) &&
           !(type == FeatureType::kFloat64 && IsIntegerLiteral(t) && !IntegerLiteralIsExact(t, *d));
  }
  switch (type) {
    case FeatureType::kInt64:
      *i = v.i;
      return v.kind == ColumnValue::kInt;
    case FeatureType::kUInt64: {
      uint64_t u;
      *i = v.i;
      if (v.kind == ColumnValue::kInt) return v.i >= 0;
      if (v.kind != ColumnValue::kFloat || !ParseBigUInt64(v.text, &u)) return false;
      *i = static_cast<int64_t>(u);
      return true;
    }
    case FeatureType::kFloat32:
    case FeatureType::kFloat64:
      *d = v.d;
      return (v.kind == ColumnValue::kInt || v.kind == ColumnValue::kFloat) &&
             (type == FeatureType::kFloat64 || FitsFloat32(v.d));
    case FeatureType::kBool: {
      bool b = false;
      if (v.kind == ColumnValue::kBool || (lenient && v.kind == ColumnValue::kInt && (v.i == 0 || v.i == 1))) {
        *i = v.i;
        return true;
      }
      if (!lenient || v.kind != ColumnValue::kString || !ParseBool(v.s, true, &b)) return false;
      *i = b ? 1 : 0;
      return true;
    }
    case FeatureType::kString:
    case FeatureType::kBytes:
      if (v.kind == ColumnValue::kString) {
        *s = v.s;
        return true;
      }
      if (!lenient) return false;
      *text = JsonText(v);
      *s = *text;
      return true;
    default: {  // timestamps
      TimestampText ts;
      if (v.kind == ColumnValue::kString) return ParseTimestamp(v.s, &ts) && TimestampTicks(ts, type, i);
      *i = v.i;
      return lenient && v.kind == ColumnValue::kInt;
    }
  }
}

const char* MapName(MapKind map) {
  return map == MapKind::kDense ? "dense" : map == MapKind::kSparse ? "sparse" : map == MapKind::kScored ? "scored" : "";
}

// The type of a map feature: declared for the feature (by its id) or for its
// map, else the map's default (for sparse features, PlanJsonl infers it).
Result<FeatureType> MapFeatureType(MapKind map, const std::string& name, const std::map<std::string, FeatureType>& declared,
                                   bool float32) {
  auto d = declared.find(name);
  if (d == declared.end()) d = declared.find(MapName(map));
  if (d == declared.end()) {
    return map == MapKind::kDense    ? FloatType(float32)
           : map == MapKind::kSparse ? FeatureType::kIdList
           : float32                 ? FeatureType::kScoredIdList32
                                     : FeatureType::kScoredIdList64;
  }
  const FeatureType t = d->second;
  const bool is_float = t == FeatureType::kFloat32 || t == FeatureType::kFloat64;
  if (map == MapKind::kDense && is_float) return t;
  if (map == MapKind::kSparse && (t == FeatureType::kIdList || t == FeatureType::kUInt64IdList)) return t;
  if (map == MapKind::kScored) {
    if (t == FeatureType::kFloat32 || t == FeatureType::kScoredIdList32) return FeatureType::kScoredIdList32;
    if (t == FeatureType::kFloat64 || t == FeatureType::kScoredIdList64) return FeatureType::kScoredIdList64;
  }
  return Status::InvalidArgument(std::string(MapName(map)) + " feature " + name + " declared " + FeatureTypeName(t) +
                                 ": dense features are float32 or float64, sparse ones id_list or uint64_id_list, and scored ones "
                                 "float32 or float64 (their scores' type)");
}

std::string FeatureName(const JsonRow::Item& item) {
  return item.map == MapKind::kColumn ? item.key : std::to_string(item.id);
}

// A feature that is a column in one row and a map's feature in another, or
// of two maps.
Status MapConflict(const std::string& input, const std::string& name, MapKind was, MapKind now, uint64_t line,
                   uint64_t column) {
  auto kind = [](MapKind m) {
    return m == MapKind::kColumn ? std::string("a column") : std::string("a ") + MapName(m) + " feature";
  };
  return InputError(input, line, column, "feature '" + name + "' appears both as " + kind(was) + " and here as " +
                                             kind(now));
}

// ---- Shards: a conversion's passes over byte ranges of its input ----

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

// A shard's bytes of the input: [begin, end), cut at multiples of split.
struct ByteRange {
  uint64_t begin = 0, end = 0;
};

ByteRange ShardBytes(uint64_t size, uint64_t split, uint32_t shard, uint32_t num_shards) {
  const uint64_t splits = std::max<uint64_t>(1, size / split + (size % split != 0));
  // splits * i / num_shards, without overflow.
  const uint64_t q = splits / num_shards, r = splits % num_shards;
  auto at = [&](uint64_t i) {
    return i == num_shards ? size : std::min(size, (q * i + r * i / num_shards) * split);
  };
  return {at(shard), at(shard + 1)};
}

// Line breaks in text[begin, end) as a reader numbers lines: CSV counts LF,
// CRLF and a bare CR, JSON Lines LF.
uint64_t LineBreaks(bool csv, std::string_view text, size_t begin, size_t end) {
  uint64_t n = 0;
  for (size_t i = begin; i < end; ++i) {
    n += text[i] == '\n' || (csv && text[i] == '\r' && (i + 1 == text.size() || text[i + 1] != '\n'));
  }
  return n;
}

// A stripe never holds rows that start in two splits of the input, so that
// shards, which are whole splits, write the stripes one process writes.
class SplitCuts {
 public:
  SplitCuts(uint64_t split, uint64_t start) : split_(split), next_(Next(start)) {}
  // Ends the stripe when the row at `offset` starts a later split.
  Status AtRow(TableFileWriter* writer, uint64_t offset) {
    if (offset < next_) return Status::OK();
    next_ = Next(offset);
    return writer->EndStripe();
  }

 private:
  uint64_t Next(uint64_t offset) const { return (offset / split_ + 1) * split_; }
  uint64_t split_, next_;
};

// What the first pass over one shard's rows found.
struct ScanFeature {
  std::string name;
  MapKind map = MapKind::kColumn;
  int64_t id = 0;                 // map features
  uint64_t line = 0, column = 0;  // where it first appears (JSON Lines)
  ColumnVotes votes;
};

struct TableScan {
  uint64_t start = 0;       // the offset of the shard's first row
  uint64_t stop = 0;        // after its last row: the next shard's start
  bool guessed = false;     // start follows the first line break, which may be inside quotes
  uint64_t start_line = 1;  // the line at start (shard 0: the file's; others count from 1 there)
  uint64_t lines = 0;       // line breaks in [start, stop)
  uint64_t rows = 0;
  std::string error;        // the first error in the rows: lines are the file's
  std::vector<ScanFeature> features;  // CSV: the columns; JSON Lines: in order of first appearance
  uint64_t first_row = 0;   // where the file's first row can start (not passed on)
  // Checksum64 of the bytes the shard's rows depend on: [from, stop), from
  // 0 in the shard after the header (a later step checks the input is
  // unchanged).
  uint64_t from = 0, checksum = 0;
};

// The shards' scans put together: the table's features and where each
// shard's rows are.
struct TablePlan {
  bool csv = true;
  uint64_t split_bytes = 0;
  std::vector<FeatureInfo> features;
  std::vector<MapKind> maps;  // per feature
  std::vector<std::optional<Where>> first_float;
  struct Shard {
    uint64_t start = 0, stop = 0, line = 1;
    uint64_t from = 0, checksum = 0;  // as the shard's scan found them
  };
  std::vector<Shard> shards;
  std::vector<std::string> notes;
};

// The first row of a shard at `range` (after the header in shard 0): `start`
// when given, else the first after a line break at or after range.begin - 1.
void FindStart(std::string_view text, ByteRange range, size_t first_row, std::optional<uint64_t> start, bool csv,
               TableScan* scan) {
  scan->first_row = first_row;
  if (range.begin <= first_row) {
    scan->start = first_row;
  } else if (start) {
    scan->start = std::min<uint64_t>(*start, text.size());
  } else {
    const size_t p = text.find_first_of(csv ? std::string_view("\r\n") : std::string_view("\n"), range.begin - 1);
    scan->start = p == std::string_view::npos ? text.size()
                  : text[p] == '\r' && p + 1 < text.size() && text[p + 1] == '\n' ? p + 2
                                                                                   : p + 1;
    scan->guessed = csv;  // a JSON line break is never inside a value
  }
}

// Releases a local input's pages behind a pass, 16 MiB at a time, so that a
// pass holds little more of its input in memory than the row it reads.
class ReleaseBehind {
 public:
  ReleaseBehind(const MappedInput& in, uint64_t from) : in_(in), done_(from) {}
  void At(uint64_t pos) {
    if (pos < done_ + kStep) return;
    in_.Release(done_, pos);
    done_ = pos;
  }

 private:
  static constexpr uint64_t kStep = 16 << 20;
  const MappedInput& in_;
  uint64_t done_;
};

// Why a string cell or value is no UTF-8 text, or "" when it is.
std::string NotUtf8(std::string_view text) {
  const size_t bad = InvalidUtf8At(text);
  if (bad == std::string_view::npos) return "";
  return "is not UTF-8 text: byte " + std::to_string(bad) + " of it (" + EscapeInvalidUtf8(text.substr(bad, 1)) +
         ") is no UTF-8 character";
}

// InvalidArgument at (line, column) unless the feature name `name` is UTF-8.
Status CheckName(const std::string& input, uint64_t line, uint64_t column, std::string_view name) {
  const std::string why = NotUtf8(name);
  if (why.empty()) return Status::OK();
  return InputError(input, line, column,
                    "the name '" + Shown(name) + "' " + why + "; feature names are UTF-8 text: re-encode the input "
                    "as UTF-8 (iconv -f ENCODING -t UTF-8)");
}

enum class TextFormat { kCsv, kTsv, kJsonl };

// options.format, else the format the input's name tells.
Result<TextFormat> InputFormat(const TableConvertOptions& options) {
  const std::string& f = options.format;
  if (f == "csv") return TextFormat::kCsv;
  if (f == "tsv") return TextFormat::kTsv;
  if (f == "jsonl" || f == "ndjson") return TextFormat::kJsonl;
  if (!f.empty()) return Status::InvalidArgument("unknown table format '" + f + "' (csv, tsv or jsonl)");
  if (options.input == "-") {
    return Status::InvalidArgument("standard input (-) has no name to tell its format: give --format csv, tsv or "
                                   "jsonl");
  }
  std::string_view name;
  HasCompressionSuffix(options.input, &name);
  if (name.ends_with(".csv")) return TextFormat::kCsv;
  if (name.ends_with(".tsv")) return TextFormat::kTsv;
  if (name.ends_with(".jsonl") || name.ends_with(".ndjson")) return TextFormat::kJsonl;
  return Status::InvalidArgument(options.input + ": unknown table format (expected .csv, .tsv, .jsonl or .ndjson, "
                                 "each also as .gz or .zst, or --format)");
}

// The byte between the cells of options.input: options.delimiter, else a
// tab for TSV and ',' for CSV.
Result<char> CsvDelimiter(const TableConvertOptions& options) {
  PCR_ASSIGN_OR_RETURN(const TextFormat format, InputFormat(options));
  const char d = options.delimiter;
  if (d == 0) return format == TextFormat::kTsv ? '\t' : ',';
  if (format == TextFormat::kJsonl) {
    return Status::InvalidArgument(options.input + ": a delimiter separates CSV cells; JSON Lines has none");
  }
  if (d == '"' || d == '\n' || d == '\r') {
    return Status::InvalidArgument("the delimiter cannot be a quote or a line break");
  }
  return d;
}

// Pass 1 over a shard of a CSV: the header, then the kind of values in each
// column. Errors in the rows go to scan->error, lines numbered from `line`
// at the shard's start.
Status ScanCsv(const TableConvertOptions& options, const MappedInput& in, ByteRange range,
               std::optional<uint64_t> start, uint64_t line, TableScan* scan) {
  const std::string& input = options.input;
  const std::string_view text = in.text();
  std::vector<CsvCell> cells;
  size_t count = 0;
  PCR_ASSIGN_OR_RETURN(const char delimiter, CsvDelimiter(options));
  CsvReader header(text, input, text.starts_with(kByteOrderMark) ? kByteOrderMark.size() : 0, 1, delimiter);
  PCR_ASSIGN_OR_RETURN(const bool has_header, header.Next(&cells, &count));
  if (!has_header) return Status::InvalidArgument(input + ": empty file, expected a header row");
  const size_t columns = count;
  std::unordered_map<std::string, size_t> names;
  for (size_t c = 0; c < columns; ++c) {
    if (!names.emplace(cells[c].text, c).second) {
      return InputError(input, cells[c].line, cells[c].column, "duplicate column name '" + Shown(cells[c].text) + "'");
    }
    PCR_RETURN_IF_ERROR(CheckName(input, cells[c].line, cells[c].column, cells[c].text));
    scan->features.push_back({.name = cells[c].text});
  }
  FindStart(text, range, header.pos(), start, true, scan);
  scan->start_line = scan->start == header.pos() ? header.line() : line;
  CsvReader csv(text, input, scan->start, scan->start_line, delimiter);
  ReleaseBehind behind(in, scan->start);
  Status error;
  while (csv.pos() < range.end) {
    Result<bool> more = csv.Next(&cells, &count);
    if (!more.ok() || !*more) {
      error = more.status();
      break;
    }
    behind.At(csv.pos());
    if (BlankLine(cells, count, columns)) continue;
    error = csv.CheckCellCount(cells, count, columns);
    if (!error.ok()) break;
    ++scan->rows;
    for (size_t c = 0; c < columns; ++c) {
      if (!cells[c].missing()) scan->features[c].votes.NoteCell(cells[c].text, cells[c].line, cells[c].column);
    }
  }
  scan->stop = csv.pos();
  scan->lines = csv.line() - scan->start_line;
  scan->error = error.message();
  return Status::OK();
}

// The types of a CSV's columns: declared, else what most of a column's
// cells are (numbers, bools, times); with no such kind, string.
Status PlanCsv(const TableConvertOptions& options, const std::map<std::string, FeatureType>& declared,
               std::vector<ScanFeature> columns, TablePlan* plan) {
  const std::string& input = options.input;
  for (const auto& [name, type] : declared) {
    if (std::none_of(columns.begin(), columns.end(), [&name = name](const ScanFeature& c) { return c.name == name; })) {
      std::string list;
      for (size_t c = 0; c < std::min<size_t>(columns.size(), 10); ++c) list += (c ? ", " : "") + columns[c].name;
      if (columns.size() > 10) list += ", ... (" + std::to_string(columns.size()) + " columns)";
      return Status::InvalidArgument(input + ": a declared type names '" + name + "', not a column (the columns: " +
                                     list + "): remove it from --schema or --column-type");
    }
    if (!IsScalarType(type) && type != FeatureType::kString && type != FeatureType::kBytes &&
        !IsColumnListType(type)) {
      return Status::InvalidArgument(std::string("column '") + name + "' declared " + FeatureTypeName(type) +
                                     ": a CSV column is bool, int64, uint64, float32, float64, timestamp, string, "
                                     "bytes, id_list, uint64_id_list, float32_list or float64_list (map features, "
                                     "scored lists "
                                     "among them, are JSON Lines input: pcr-dump cat --format jsonl writes it)");
    }
  }
  const InferenceRules rules = Rules(options);
  const ColumnNaming naming = Naming(input);
  for (const ScanFeature& column : columns) {
    const std::string& name = column.name;
    FeatureInfo info{.name = name};
    const auto d = declared.find(name);
    if (d != declared.end()) {
      info.type = d->second;
    } else {
      if (column.votes.present() == 0) {
        plan->notes.push_back("column '" + name + "' has no values: stored as string (--column-type " + name +
                              "=TYPE declares another type)");
      }
      if (options.strings) {
        info.type = FeatureType::kString;
      } else {
        PCR_ASSIGN_OR_RETURN(info.type, column.votes.CellsType(rules, naming, name));
      }
    }
    plan->features.push_back(std::move(info));
    plan->maps.push_back(MapKind::kColumn);
    plan->first_float.push_back(column.votes.first_float());
  }
  return Status::OK();
}

// Pass 2 over a shard of a CSV: its rows into `writer`.
Status WriteCsv(const TableConvertOptions& options, const std::map<std::string, FeatureType>& declared,
                const TablePlan& plan, const TablePlan::Shard& shard, const MappedInput& in,
                TableFileWriter* writer, MissingNotes* dropped) {
  const std::string& input = options.input;
  const std::vector<FeatureInfo>& features = plan.features;
  const size_t columns = features.size();
  std::vector<CsvCell> cells;
  size_t count = 0;
  NumberList list;
  SplitCuts cuts(plan.split_bytes, shard.start);
  PCR_ASSIGN_OR_RETURN(const char delimiter, CsvDelimiter(options));
  CsvReader csv(in.text(), input, shard.start, shard.line, delimiter);
  ReleaseBehind behind(in, shard.start);
  while (csv.pos() < shard.stop) {
    PCR_RETURN_IF_ERROR(cuts.AtRow(writer, csv.pos()));
    PCR_ASSIGN_OR_RETURN(const bool more, csv.Next(&cells, &count));
    if (!more) break;
    behind.At(csv.pos());
    if (BlankLine(cells, count, columns)) continue;
    PCR_RETURN_IF_ERROR(csv.CheckCellCount(cells, count, columns));
    for (size_t c = 0; c < columns; ++c) {
      const CsvCell& cell = cells[c];
      if (cell.missing()) continue;
      const std::string& t = cell.text;
      const FeatureType type = features[c].type;
      const std::string& name = features[c].name;
      if (type == FeatureType::kString || type == FeatureType::kBytes) {
        if (const std::string why = type == FeatureType::kString ? NotUtf8(t) : ""; !why.empty()) {
          if (options.on_bad_value == BadValue::kMissing) {
            dropped->Add(c, cell.line, cell.column, "'" + Shown(t) + "'");
            continue;
          }
          return InputError(input, cell.line, cell.column,
                            "'" + Shown(t) + "' in column '" + name + "' " + why + " (the column is string): declare "
                            "--column-type " + name + "=bytes to keep its bytes, or pass --on-bad-value missing to "
                            "store such cells as missing");
        }
        writer->AddString(c, t);
        continue;
      }
      if (IsColumnListType(type)) {  // a JSON array of numbers, as pcr-dump cat prints lists
        JsonCursor json(t);
        std::string why;
        std::string unfit;
        const bool read = ReadNumberList(json, &list, &why) && json.End();
        if (read && WriteList(writer, c, type, list, &unfit)) continue;
        if (options.on_bad_value == BadValue::kMissing) {
          dropped->Add(c, cell.line, cell.column, "'" + t + "'");
          continue;
        }
        return InputError(input, cell.line, cell.column,
                          "'" + Shown(t) + "' in column '" + name + "' is not " +
                              ListMismatch(type, read ? &list : nullptr, unfit, "a JSON array", name, "cells"));
      }
      int64_t i = 0;
      double d = 0;
      if (!ParseCell(type, t, declared.count(name) != 0, &i, &d)) {
        if (options.on_bad_value == BadValue::kMissing) {
          dropped->Add(c, cell.line, cell.column, "'" + t + "'");
          continue;
        }
        return InputError(input, cell.line, cell.column,
                          "'" + Shown(t) + "' in column '" + name + "' " + WhyNot(type, t) + " (the column is " +
                              FeatureTypeName(type) + "): pass --on-bad-value missing to store such cells as "
                              "missing, or declare another type with --column-type " + name + "=TYPE");
      }
      if (type == FeatureType::kFloat64 && IsIntegerLiteral(NumberText(t)) && !IntegerLiteralIsExact(NumberText(t), d)) {
        if (options.on_bad_value == BadValue::kMissing) {
          dropped->Add(c, cell.line, cell.column, "'" + t + "'");
          continue;
        }
        const std::string why = "column '" + name + "'" + FloatBecause(plan.first_float[c], cell.line, cell.column);
        return InexactInteger(input, cell.line, cell.column, t, why,
                              "--column-type " + name + "=string keeps every digit, --on-bad-value missing "
                              "stores such cells as missing");
      }
      Write(writer, c, type, i, d);
    }
    FreeHugeCells(&cells);
    PCR_RETURN_IF_ERROR(writer->EndRow());
  }
  return Status::OK();
}

// Pass 1 over a shard of JSON Lines: its features in order of first
// appearance and what their values are. Errors in the rows go to
// scan->error, lines numbered from `line` at the shard's start.
Status ScanJsonl(const TableConvertOptions& options, const MappedInput& in, ByteRange range,
                 std::optional<uint64_t> start, uint64_t line, TableScan* scan) {
  const std::string& input = options.input;
  const std::string_view text = in.text();
  JsonlParser parser(input);
  JsonRow row;
  std::unordered_map<std::string, size_t> by_name;
  std::vector<uint64_t> last_line;
  FindStart(text, range, text.starts_with(kByteOrderMark) ? kByteOrderMark.size() : 0, start, false, scan);
  scan->start_line = line;
  size_t next = 0;
  ReleaseBehind behind(in, scan->start);
  Status error = ForEachJsonLineIn(text, scan->start, range.end, line, [&](std::string_view text, uint64_t number,
                                                                              size_t offset) -> Status {
    PCR_RETURN_IF_ERROR(parser.ParseLine(text, number, &row));
    behind.At(offset + text.size());
    ++scan->rows;
    for (size_t k = 0; k < row.count; ++k) {
      const JsonRow::Item& item = row.items[k];
      if (item.map == MapKind::kDense && item.value.kind == ColumnValue::kNull) continue;
      const std::string name = FeatureName(item);
      auto [it, added] = by_name.emplace(name, scan->features.size());
      if (added) {
        PCR_RETURN_IF_ERROR(CheckName(input, number, item.column, name));
        scan->features.push_back({.name = name, .map = item.map, .id = item.id, .line = number, .column = item.column});
        last_line.push_back(0);
      }
      ScanFeature& f = scan->features[it->second];
      if (f.map != item.map) return MapConflict(input, name, f.map, item.map, number, item.column);
      if (last_line[it->second] == number) {
        return InputError(input, number, item.column,
                          "feature '" + name + "' appears twice in the row: a row holds each feature once");
      }
      last_line[it->second] = number;
      if (item.map == MapKind::kColumn || item.map == MapKind::kSparse) f.votes.NoteValue(item.value);
    }
    return Status::OK();
  }, &next);
  scan->stop = error.ok() ? next : 0;
  scan->lines = LineBreaks(false, text, scan->start, scan->stop);
  scan->error = error.message();
  return Status::OK();
}

// The types of JSON Lines features: a map's by its map (or declared per
// feature or per map), a column's declared or what its values are.
Status PlanJsonl(const TableConvertOptions& options, const std::map<std::string, FeatureType>& declared,
                 std::vector<ScanFeature> state, TablePlan* plan) {
  const InferenceRules rules = Rules(options);
  const ColumnNaming naming = Naming(options.input);
  // A declared column that no row has is kept, typed and without values, so
  // that files converted with one schema have the same features.
  for (const auto& [name, type] : declared) {
    if (name == "dense" || name == "sparse" || name == "scored" ||
        std::any_of(state.begin(), state.end(), [&name = name](const ScanFeature& f) { return f.name == name; })) {
      continue;
    }
    state.push_back({.name = name});
    plan->notes.push_back("column '" + name + "' is declared but no row has it: stored as " +
                          FeatureTypeName(type) + " without values");
  }
  for (const ScanFeature& st : state) {
    FeatureInfo info{.name = st.name, .has_id = st.map != MapKind::kColumn, .id = st.id};
    const auto d = declared.find(info.name);
    if (st.map == MapKind::kSparse && d == declared.end() && !declared.count("sparse")) {
      // Ids of int64, or of uint64 where one is above int64.
      ColumnNaming sparse = naming;
      sparse.noun = "sparse feature";
      sparse.text = false;
      PCR_ASSIGN_OR_RETURN(info.type, st.votes.ValuesType(rules, sparse, info.name));
    } else if (st.map != MapKind::kColumn) {
      PCR_ASSIGN_OR_RETURN(info.type, MapFeatureType(st.map, info.name, declared, options.float32));
    } else if (d != declared.end()) {
      if (!IsScalarType(d->second) && d->second != FeatureType::kString && d->second != FeatureType::kBytes &&
          !IsColumnListType(d->second)) {
        return Status::InvalidArgument("column '" + info.name + "' declared " + FeatureTypeName(d->second) +
                                       ": a JSON Lines column is bool, int64, uint64, float32, float64, timestamp, "
                                       "string, bytes, id_list, uint64_id_list, float32_list or float64_list");
      }
      info.type = d->second;
    } else if (options.strings) {
      info.type = FeatureType::kString;
    } else {
      PCR_ASSIGN_OR_RETURN(info.type, st.votes.ValuesType(rules, naming, info.name));
      if (st.votes.present() == 0) {
        plan->notes.push_back("column '" + info.name + "' has only nulls: stored as string (--column-type " +
                              info.name + "=TYPE declares another type)");
      }
    }
    plan->features.push_back(std::move(info));
    plan->maps.push_back(st.map);
    plan->first_float.push_back(st.votes.first_float());
  }
  return Status::OK();
}

// Pass 2 over a shard of JSON Lines: its rows into `writer`.
Status WriteJsonl(const TableConvertOptions& options, const std::map<std::string, FeatureType>& declared,
                  const TablePlan& plan, const TablePlan::Shard& shard, const MappedInput& in,
                  TableFileWriter* writer, MissingNotes* dropped) {
  const std::string& input = options.input;
  const std::vector<FeatureInfo>& features = plan.features;
  std::unordered_map<std::string, size_t> by_name;
  for (size_t f = 0; f < features.size(); ++f) by_name.emplace(features[f].name, f);
  JsonlParser parser(input);
  JsonRow row;
  std::string json_text;
  std::string_view s;
  SplitCuts cuts(plan.split_bytes, shard.start);
  ReleaseBehind behind(in, shard.start);
  return ForEachJsonLineIn(in.text(), shard.start, shard.stop, shard.line, [&](std::string_view line,
                                                                                uint64_t number, size_t offset) -> Status {
    PCR_RETURN_IF_ERROR(cuts.AtRow(writer, offset));
    PCR_RETURN_IF_ERROR(parser.ParseLine(line, number, &row));
    behind.At(offset + line.size());
    for (size_t k = 0; k < row.count; ++k) {
      const JsonRow::Item& item = row.items[k];
      if (item.value.kind == ColumnValue::kNull && (item.map == MapKind::kColumn || item.map == MapKind::kDense)) {
        continue;
      }
      const auto known = by_name.find(FeatureName(item));
      if (known == by_name.end() || plan.maps[known->second] != item.map) {
        return InputError(input, number, item.column, "the input changed since its first pass: convert again");
      }
      const size_t f = known->second;
      const FeatureInfo& info = features[f];
      if (item.map == MapKind::kSparse || item.map == MapKind::kScored) {
        if (item.map == MapKind::kScored ||
            (info.type == FeatureType::kIdList ? item.value.list.all_int : item.value.list.all_uint64)) {
          writer->AddIdList(f, item.ids, item.scores);
          continue;
        }
        if (options.on_bad_value == BadValue::kMissing) {
          dropped->Add(f, number, item.column, item.value.text);
          continue;
        }
        return InputError(input, number, item.column,
                          Shown(item.value.text) + " in sparse feature " + item.key + " is not " +
                              ListMismatch(info.type, &item.value.list, "", "an array", info.name, "values",
                                           "the feature"));
      }
      const std::string what = item.map == MapKind::kColumn ? "column '" + item.key + "'" : "dense feature " + item.key;
      const char* whose = item.map == MapKind::kColumn ? "the column" : "the feature";
      if (IsColumnListType(info.type)) {
        std::string unfit;
        if (item.value.kind == ColumnValue::kList && WriteList(writer, f, info.type, item.value.list, &unfit)) {
          continue;
        }
        if (options.on_bad_value == BadValue::kMissing) {
          dropped->Add(f, number, item.column, JsonText(item.value));
          continue;
        }
        return InputError(input, number, item.column,
                          Shown(JsonText(item.value)) + " in " + what + " is not " +
                              ListMismatch(info.type, item.value.kind == ColumnValue::kList ? &item.value.list : nullptr,
                                           unfit, "an array", info.name, "values"));
      }
      int64_t i = 0;
      double d = 0;
      const bool lenient = declared.count(info.name) != 0 || options.strings;
      if (!JsonCell(info.type, item.value, lenient, &i, &d, &json_text, &s)) {
        if (options.on_bad_value == BadValue::kMissing) {
          dropped->Add(f, number, item.column, JsonText(item.value));
          continue;
        }
        return InputError(input, number, item.column,
                          Shown(JsonText(item.value)) + " in " + what + " " +
                              (info.type == FeatureType::kString || info.type == FeatureType::kBytes
                                   ? std::string("is not a string")
                                   : WhyNot(info.type, item.value.kind == ColumnValue::kString ? item.value.s
                                                                                                 : item.value.text)) +
                              " (" + whose + " is " +
                              FeatureTypeName(info.type) + "): pass --on-bad-value missing to store "
                              "such values as missing, or declare another type with --column-type " + info.name +
                              "=TYPE");
      }
      if (info.type == FeatureType::kString || info.type == FeatureType::kBytes) {
        if (const std::string why = info.type == FeatureType::kString ? NotUtf8(s) : ""; !why.empty()) {
          if (options.on_bad_value == BadValue::kMissing) {
            dropped->Add(f, number, item.column, Shown(JsonText(item.value)));
            continue;
          }
          return InputError(input, number, item.column,
                            Shown(JsonText(item.value)) + " in " + what + " " + why + " (" + whose + " is string): "
                            "declare --column-type " + info.name + "=bytes to keep its bytes, or pass --on-bad-value "
                            "missing to store such values as missing");
        }
        writer->AddString(f, s);
        continue;
      }
      if (info.type == FeatureType::kFloat64 && !item.value.exact) {
        if (options.on_bad_value == BadValue::kMissing) {
          dropped->Add(f, number, item.column, std::string(item.value.text));
          continue;
        }
        const std::string why = what + FloatBecause(plan.first_float[f], number, item.column);
        return InexactInteger(input, number, item.column, item.value.text, why,
                              item.map == MapKind::kColumn
                                  ? "declare --column-type " + info.name + "=string to keep every digit, or pass "
                                    "--on-bad-value missing to store such values as missing"
                                  : "dense values are floats: keep such a value in a column declared string or "
                                    "uint64, or pass --on-bad-value missing to store it as missing");
      }
      Write(writer, f, info.type, i, d);
    }
    row.FreeHuge();
    return writer->EndRow();
  }, nullptr);
}

// Refuses a table at `path` in a directory read as a table now (one .pcr
// file, not one of `parts`, and no dataset manifest): a second one would
// leave it unreadable.
Status CheckTableDirectory(const std::string& path, const std::vector<std::string>& parts = {}) {
  const fs::path parent = fs::path(path).parent_path();
  const std::string dir = parent.empty() ? "." : parent.string();
  const Result<Location> where = Locate(dir);
  if (!where.ok() || where->dataset_manifest || !where->TableFile().ok()) return Status::OK();
  std::error_code ec;
  for (const std::string& part : parts) {
    if (fs::equivalent(part, *where->TableFile(), ec)) return Status::OK();
  }
  return Status::InvalidArgument(path + ": would be a second table in " + dir + " (beside " +
                                 fs::path(where->pcr_files.front()).filename().string() +
                                 "), which readers then refuse: a table directory holds one .pcr file; write to "
                                 "another directory");
}

// The table a conversion writes: out_dir/<input stem>.pcr.
std::string TablePathIn(const TableConvertOptions& options) {
  return (fs::path(options.out_dir) / (InputStem(options.input) + ".pcr")).string();
}

// Conversions never replace a file, the input least of all.
Status CheckNewOutput(const std::string& path) {
  std::error_code ec;
  if (fs::exists(path, ec)) return Status::InvalidArgument(path + ": already exists");
  return Status::OK();
}

// A note when `order` names features but none of `schema`.
void NoteUnusedOrder(const std::vector<std::string>& order, const TableSchema& schema, const std::string& table,
                     std::vector<std::string>* notes) {
  if (order.empty()) return;
  for (const FeatureInfo& f : schema.features) {
    if (std::find(order.begin(), order.end(), f.name) != order.end()) return;
  }
  notes->push_back("the stream order names no feature of " + table + "; its streams are in schema order");
}

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}


// Puts the shards' scans together into `plan`. A shard whose scan did not
// start where the one before it stopped (a CSV range that began inside a
// quoted line break) is added to *rescan with that offset, and planning
// stops there.
Status PlanTable(const TableConvertOptions& options, const std::map<std::string, FeatureType>& declared, bool csv,
                 const std::vector<TableScan>& scans, std::vector<std::pair<uint32_t, uint64_t>>* rescan,
                 TablePlan* plan) {
  plan->csv = csv;
  plan->split_bytes = options.split_bytes;
  std::vector<ScanFeature> merged;
  std::unordered_map<std::string, size_t> by_name;
  uint64_t line = scans.empty() ? 1 : scans[0].start_line, rows = 0;
  for (size_t i = 0; i < scans.size(); ++i) {
    const TableScan& s = scans[i];
    if (i > 0 && s.start != scans[i - 1].stop) {
      rescan->emplace_back(i, scans[i - 1].stop);
      return Status::OK();
    }
    if (!s.error.empty()) return Status::InvalidArgument(s.error);
    const uint64_t offset = line - s.start_line;
    plan->shards.push_back({s.start, s.stop, line, s.from, s.checksum});
    line += s.lines;
    rows += s.rows;
    for (size_t k = 0; k < s.features.size(); ++k) {
      const ScanFeature& f = s.features[k];
      auto [it, added] = by_name.emplace(f.name, merged.size());
      if (added) {
        merged.push_back({.name = f.name, .map = f.map, .id = f.id, .line = f.line + offset, .column = f.column});
      }
      ScanFeature& m = merged[it->second];
      if (m.map != f.map) return MapConflict(options.input, f.name, m.map, f.map, f.line + offset, f.column);
      m.votes.Merge(f.votes, offset);
    }
  }
  if (!csv && rows == 0) {
    return Status::InvalidArgument(options.input + ": empty file, expected one JSON object per line");
  }
  return csv ? PlanCsv(options, declared, std::move(merged), plan)
             : PlanJsonl(options, declared, std::move(merged), plan);
}

// Scans and plans pass between processes as these bytes.
constexpr std::string_view kScanMagic = "pcr table scan 1\n", kPlanMagic = "pcr table plan 1\n";
constexpr size_t kMaxName = size_t{1} << 30;  // a feature's name, as long as a header cell can be

std::string ToString(const Bytes& b) { return std::string(b.begin(), b.end()); }

Decoder FromString(std::string_view s, std::string_view magic, bool* ok) {
  *ok = s.starts_with(magic);
  const size_t skip = *ok ? magic.size() : s.size();
  return Decoder(ByteSpan(reinterpret_cast<const uint8_t*>(s.data()) + skip, s.size() - skip));
}

std::string EncodeScan(const TableScan& s) {
  Bytes out(kScanMagic.begin(), kScanMagic.end());
  for (const uint64_t n : {s.start, s.stop, uint64_t{s.guessed}, s.start_line, s.lines, s.rows, s.from, s.checksum}) {
    PutVarint64(&out, n);
  }
  PutLengthPrefixed(&out, s.error);
  PutVarint64(&out, s.features.size());
  for (const ScanFeature& f : s.features) {
    PutLengthPrefixed(&out, f.name);
    PutFixed8(&out, static_cast<uint8_t>(f.map));
    PutVarsint64(&out, f.id);
    PutVarint64(&out, f.line);
    PutVarint64(&out, f.column);
    f.votes.EncodeTo(&out);
  }
  return ToString(out);
}

Result<TableScan> DecodeScan(std::string_view bytes) {
  bool ok = false;
  Decoder in = FromString(bytes, kScanMagic, &ok);
  TableScan s;
  uint64_t guessed = 0, features = 0;
  ok = ok && in.GetVarint64(&s.start) && in.GetVarint64(&s.stop) && in.GetVarintAtMost(1, &guessed) &&
       in.GetVarint64(&s.start_line) && in.GetVarint64(&s.lines) && in.GetVarint64(&s.rows) &&
       in.GetVarint64(&s.from) && in.GetVarint64(&s.checksum) && in.GetLengthPrefixed(1 << 24, &s.error) &&
       in.GetVarintAtMost(in.remaining(), &features);
  s.guessed = guessed;
  for (uint64_t k = 0; ok && k < features; ++k) {
    ScanFeature& f = s.features.emplace_back();
    uint8_t map = 0;
    ok = in.GetLengthPrefixed(kMaxName, &f.name) && in.GetFixed8(&map) &&
         map <= static_cast<uint8_t>(MapKind::kScored) &&
         in.GetVarsint64(&f.id) && in.GetVarint64(&f.line) && in.GetVarint64(&f.column) && f.votes.DecodeFrom(in);
    f.map = static_cast<MapKind>(map);
  }
  if (!ok || !in.done()) return Status::InvalidArgument("not a table shard's scan (ScanTableShard's bytes)");
  return s;
}

std::string EncodePlan(const TablePlan& p) {
  Bytes out(kPlanMagic.begin(), kPlanMagic.end());
  PutFixed8(&out, p.csv);
  PutVarint64(&out, p.split_bytes);
  PutVarint64(&out, p.features.size());
  for (size_t f = 0; f < p.features.size(); ++f) {
    PutLengthPrefixed(&out, p.features[f].name);
    PutFixed8(&out, static_cast<uint8_t>(p.features[f].type));
    PutFixed8(&out, p.features[f].has_id);
    PutVarsint64(&out, p.features[f].id);
    PutFixed8(&out, static_cast<uint8_t>(p.maps[f]));
    const std::optional<Where>& w = p.first_float[f];
    PutFixed8(&out, w.has_value());
    if (w) {
      PutVarint64(&out, w->line);
      PutVarint64(&out, w->column);
      PutLengthPrefixed(&out, w->text);
    }
  }
  PutVarint64(&out, p.shards.size());
  for (const TablePlan::Shard& s : p.shards) {
    for (const uint64_t n : {s.start, s.stop, s.line, s.from, s.checksum}) PutVarint64(&out, n);
  }
  PutVarint64(&out, p.notes.size());
  for (const std::string& note : p.notes) PutLengthPrefixed(&out, note);
  return ToString(out);
}

Result<TablePlan> DecodePlan(std::string_view bytes) {
  bool ok = false;
  Decoder in = FromString(bytes, kPlanMagic, &ok);
  TablePlan p;
  uint8_t csv = 0;
  uint64_t n = 0;
  ok = ok && in.GetFixed8(&csv) && csv <= 1 && in.GetVarint64(&p.split_bytes) && p.split_bytes > 0 &&
       in.GetVarintAtMost(in.remaining(), &n);
  p.csv = csv;
  for (uint64_t k = 0; ok && k < n; ++k) {
    FeatureInfo& f = p.features.emplace_back();
    uint8_t type = 0, has_id = 0, map = 0, has_float = 0;
    ok = in.GetLengthPrefixed(kMaxName, &f.name) && in.GetFixed8(&type) && type >= 1 && type <= kMaxFeatureType &&
         in.GetFixed8(&has_id) && has_id <= 1 && in.GetVarsint64(&f.id) && in.GetFixed8(&map) &&
         map <= static_cast<uint8_t>(MapKind::kScored) && in.GetFixed8(&has_float) && has_float <= 1;
    f.type = static_cast<FeatureType>(type);
    f.has_id = has_id;
    p.maps.push_back(static_cast<MapKind>(map));
    std::optional<Where>& w = p.first_float.emplace_back();
    if (ok && has_float) {
      w.emplace();
      ok = in.GetVarint64(&w->line) && in.GetVarint64(&w->column) && in.GetLengthPrefixed(1 << 20, &w->text);
    }
  }
  ok = ok && in.GetVarintAtMost(in.remaining(), &n);
  for (uint64_t k = 0; ok && k < n; ++k) {
    TablePlan::Shard& s = p.shards.emplace_back();
    ok = in.GetVarint64(&s.start) && in.GetVarint64(&s.stop) && in.GetVarint64(&s.line) && in.GetVarint64(&s.from) &&
         in.GetVarint64(&s.checksum) && s.from <= s.start && s.start <= s.stop;
  }
  ok = ok && in.GetVarintAtMost(in.remaining(), &n);
  for (uint64_t k = 0; ok && k < n; ++k) ok = in.GetLengthPrefixed(1 << 24, &p.notes.emplace_back());
  if (!ok || !in.done()) return Status::InvalidArgument("not a table conversion's plan (PlanTableShards' bytes)");
  return p;
}

// A conversion's input, its format and the types it declares.
struct TableInput {
  bool csv = false;
  std::map<std::string, FeatureType> declared;
  std::unique_ptr<MappedInput> in;  // when opened
};

// `open`: the input is opened, and with `sparse` an object is fetched only
// where a step asks (MappedInput::Fetch).
Result<TableInput> TableInputOf(const TableConvertOptions& options, bool open, bool sparse = false) {
  TableInput t;
  PCR_ASSIGN_OR_RETURN(const TextFormat format, InputFormat(options));
  t.csv = format != TextFormat::kJsonl;
  PCR_RETURN_IF_ERROR(CsvDelimiter(options).status());
  if (options.split_bytes == 0) return Status::InvalidArgument("split_bytes must be positive");
  if (options.on_bad_value != BadValue::kError && options.on_bad_value != BadValue::kMissing) {
    return Status::InvalidArgument("on_bad_value must be BadValue::kError or kMissing, not " +
                                   std::to_string(static_cast<int>(options.on_bad_value)));
  }
  if (!options.schema_file.empty()) {
    PCR_ASSIGN_OR_RETURN(t.declared, ReadTableSchemaFile(options.schema_file));
  }
  for (const auto& [name, type] : options.column_types) t.declared[name] = type;
  if (open) {
    PCR_ASSIGN_OR_RETURN(t.in, MappedInput::Open(options.input, options.remote, sparse));
  }
  return t;
}

// Pass 1 over the rows that start in `range`; an error's lines are the
// file's. Of an object in storage, the header and the range are fetched,
// with room for the row that crosses its end, and more when the scan read
// past what was fetched.
Status Scan(const TableConvertOptions& options, const TableInput& t, ByteRange range, std::optional<uint64_t> start,
            TableScan* scan) {
  MappedInput& in = *t.in;
  const std::string_view text = in.text();
  auto scan_from = [&](uint64_t line) {
    *scan = {};
    return t.csv ? ScanCsv(options, in, range, start, line, scan) : ScanJsonl(options, in, range, start, line, scan);
  };
  const uint64_t from = std::min(range.begin > 0 ? range.begin - 1 : 0, start.value_or(range.begin));
  for (uint64_t room = 1 << 20;; room *= 16) {
    PCR_RETURN_IF_ERROR(in.Fetch(0, room));
    PCR_RETURN_IF_ERROR(in.Fetch(from, std::max(range.end, start.value_or(0)) + room));
    // A header error past what was fetched may be zeros read, not the input's.
    if (Status header = scan_from(1); !header.ok()) {
      if (room >= text.size()) return header;
      continue;
    }
    // A row's end is read up to two bytes on (CRLF); an error's place is not known.
    const uint64_t read = scan->error.empty() ? scan->stop + 2 : text.size();
    if (in.Has(0, scan->first_row + 2) && in.Has(from, read)) break;
    if (!scan->error.empty()) PCR_RETURN_IF_ERROR(in.Fetch(from, text.size()));
  }
  if (scan->error.empty()) return Status::OK();
  PCR_RETURN_IF_ERROR(in.Fetch(0, scan->start));
  const uint64_t line = 1 + LineBreaks(t.csv, text, 0, scan->start);
  return line == scan->start_line ? Status::OK() : scan_from(line);
}

// Pass 2 over shard `shard` of `plan` into a table file at `path`.
Status WriteShard(const TableConvertOptions& options, const TableInput& t, const TablePlan& plan, size_t shard,
                  const std::string& path, TableConvertReport* report) {
  PCR_RETURN_IF_ERROR(t.in->Fetch(plan.shards[shard].start, plan.shards[shard].stop + 2));
  PCR_ASSIGN_OR_RETURN(auto writer, TableFileWriter::Create(path, plan.features, options.writer));
  MissingNotes dropped(plan.features.size());
  PCR_RETURN_IF_ERROR((plan.csv ? WriteCsv : WriteJsonl)(options, t.declared, plan, plan.shards[shard], *t.in,
                                                         writer.get(), &dropped));
  dropped.Report(plan.features, report);
  PCR_ASSIGN_OR_RETURN(report->schema, writer->Finish());
  report->stripes = writer->stripe_count();
  report->input_bytes = plan.shards[shard].stop - plan.shards[shard].start;
  std::error_code ec;
  report->output_bytes = fs::file_size(path, ec);
  return Status::OK();
}

// Copies the stripes of `in` into `writer` as stored, their checksums
// checked as they are read. With `decode`, every feature is decoded as a
// reader decodes it, so damage behind valid checksums is refused rather
// than copied under fresh ones.
Status CopyStripes(const PcrFile& in, IoEngine& engine, bool decode, TableFileWriter* writer) {
  const TableSchema& schema = in.index().schema;
  Bytes scratch[kRoleCount + 1];
  ReadBatch read;
  for (size_t s = 0; s < in.index().stripes.size(); ++s) {
    const StripeInfo& stripe = in.index().stripes[s];
    std::vector<ReadRange> ranges;
    for (size_t k = 0; k < stripe.streams.size(); ++k) ranges.push_back(StreamRange(in, s, k));
    PCR_RETURN_IF_ERROR(ExecuteReads(engine, ranges, {.max_read = std::numeric_limits<uint64_t>::max()}, &read));
    std::vector<Bytes> streams(stripe.streams.size());
    for (size_t k = 0; k < streams.size(); ++k) streams[k].assign(read[k].begin(), read[k].end());
    const std::vector<size_t> stream_of = stripe.TableStreamIndex(schema.features.size());
    for (uint32_t f = 0; decode && f < schema.features.size(); ++f) {
      ByteSpan stored[kRoleCount];
      for (const StreamRole role : RolesOf(schema.features[f].type)) {
        stored[static_cast<size_t>(role)] = streams[stream_of[f * kRoleCount + static_cast<size_t>(role)]];
      }
      Column column(schema.features[f].type);
      PCR_RETURN_IF_ERROR(DecodeStoredFeature(in.path(), schema, stripe, s, stream_of, f, stored, scratch, &column));
    }
    PCR_RETURN_IF_ERROR(writer->AddStoredStripe(stripe, std::move(streams)));
  }
  return Status::OK();
}

}  // namespace

std::string MissingValuesNote(const MissingValues& m) {
  return "column '" + m.feature + "': " + std::to_string(m.count) + (m.count == 1 ? " value" : " values") + " not " +
         FeatureTypeName(m.type) + " stored as missing (first " + m.first + " at " + Where{m.line, m.column}.At() + ")";
}

Result<TableConvertReport> ConvertTable(const TableConvertOptions& options) {
  if (IsObjectStoreOutput(options.out_dir)) return ConvertTableToObjectStore(options, ConvertTable);
  PCR_ASSIGN_OR_RETURN(const TableInput input, TableInputOf(options, true));
  PCR_ASSIGN_OR_RETURN(DirectoryLock lock, DirectoryLock::Take(options.out_dir));
  TableConvertReport report;
  report.path = TablePathIn(options);
  PCR_RETURN_IF_ERROR(CheckNewOutput(report.path));
  PCR_RETURN_IF_ERROR(CheckTableDirectory(report.path));
  TableScan scan;
  PCR_RETURN_IF_ERROR(Scan(options, input, {0, input.in->text().size()}, {}, &scan));
  TablePlan plan;
  std::vector<std::pair<uint32_t, uint64_t>> rescan;
  PCR_RETURN_IF_ERROR(PlanTable(options, input.declared, input.csv, {scan}, &rescan, &plan));
  report.notes = plan.notes;
  PCR_RETURN_IF_ERROR(WriteShard(options, input, plan, 0, report.path, &report));
  NoteUnusedOrder(options.writer.stream_order, report.schema, report.path, &report.notes);
  report.input_bytes = input.in->text().size();
  return report;
}

Result<std::string> ScanTableShard(const TableConvertOptions& options, uint32_t shard, uint32_t num_shards,
                                   std::optional<uint64_t> start) {
  if (shard >= num_shards) {
    return Status::InvalidArgument("shard " + std::to_string(shard) + " of " + std::to_string(num_shards) +
                                   ": shards are numbered from 0 to num_shards - 1");
  }
  PCR_ASSIGN_OR_RETURN(const TableInput input, TableInputOf(options, true, true));
  TableScan scan;
  const ByteRange range = ShardBytes(input.in->text().size(), options.split_bytes, shard, num_shards);
  PCR_RETURN_IF_ERROR(Scan(options, input, range, start, &scan));
  if (scan.error.empty()) {
    const std::string_view text = input.in->text();
    scan.from = scan.start == scan.first_row ? 0 : scan.start;
    scan.checksum =
        Checksum64(ByteSpan(reinterpret_cast<const uint8_t*>(text.data()) + scan.from, scan.stop - scan.from));
  }
  return EncodeScan(scan);
}

Result<TableShardPlan> PlanTableShards(const TableConvertOptions& options, const std::vector<std::string>& scans) {
  PCR_ASSIGN_OR_RETURN(const TableInput input, TableInputOf(options, false));
  std::vector<TableScan> decoded;
  for (const std::string& bytes : scans) {
    PCR_ASSIGN_OR_RETURN(decoded.emplace_back(), DecodeScan(bytes));
  }
  TablePlan plan;
  TableShardPlan result;
  PCR_RETURN_IF_ERROR(PlanTable(options, input.declared, input.csv, decoded, &result.rescan, &plan));
  if (result.rescan.empty()) {
    result.plan = EncodePlan(plan);
    result.notes = plan.notes;
    result.input_bytes = plan.shards.empty() ? 0 : plan.shards.back().stop;
  }
  return result;
}

Result<TableConvertReport> ConvertTableShard(const TableConvertOptions& options, const std::string& plan_bytes,
                                             uint32_t shard, const std::string& part_path) {
  PCR_ASSIGN_OR_RETURN(const TablePlan plan, DecodePlan(plan_bytes));
  if (shard >= plan.shards.size()) {
    return Status::InvalidArgument("shard " + std::to_string(shard) + ": the plan has " +
                                   std::to_string(plan.shards.size()) + " shards");
  }
  PCR_ASSIGN_OR_RETURN(const TableInput input, TableInputOf(options, true, true));
  if (plan.shards.back().stop > input.in->text().size()) {
    return Status::InvalidArgument(options.input + ": shorter than when its shards were scanned: convert again");
  }
  const TablePlan::Shard& sh = plan.shards[shard];
  PCR_RETURN_IF_ERROR(input.in->Fetch(sh.from, sh.stop));
  const std::string_view text = input.in->text();
  if (Checksum64(ByteSpan(reinterpret_cast<const uint8_t*>(text.data()) + sh.from, sh.stop - sh.from)) != sh.checksum) {
    return Status::InvalidArgument(options.input + ": bytes " + std::to_string(sh.from) + " to " +
                                   std::to_string(sh.stop) + " changed since the shards were scanned: convert again");
  }
  input.in->Release(sh.from, sh.stop);
  TableConvertReport report;
  report.path = part_path;
  if (!IsObjectStoreOutput(part_path)) {
    PCR_RETURN_IF_ERROR(WriteShard(options, input, plan, shard, part_path, &report));
    return report;
  }
  // Written under the temp dir, then uploaded: a part in the store is a whole table or absent.
  PCR_RETURN_IF_ERROR(CheckUploadOptions(options.upload));
  const fs::path dir = ConversionWorkDir(part_path, "");
  const fs::path local = dir / fs::path(part_path).filename();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::IOError(dir.string() + ": cannot create directory: " + ec.message());
  fs::remove(local, ec);  // an earlier run's, killed before its upload
  Status done = WriteShard(options, input, plan, shard, local.string(), &report);
  if (done.ok()) {
    auto uploader = S3Uploader::Create(options.remote, options.upload);
    done = uploader.ok() ? (*uploader)->Upload(local.string(), part_path, [](const std::string&) { return Status::OK(); }).status()
                         : uploader.status();
  }
  fs::remove(local, ec);
  fs::remove(dir, ec);
  PCR_RETURN_IF_ERROR(done);
  return report;
}

namespace {

Result<TableConvertReport> MergeTableLocally(const TableConvertOptions& options,
                                             const std::vector<std::string>& parts) {
  TableConvertReport report;
  report.path = TablePathIn(options);
  if (parts.empty()) return Status::InvalidArgument(report.path + ": no parts to merge");
  PCR_ASSIGN_OR_RETURN(DirectoryLock lock, DirectoryLock::Take(options.out_dir));
  PCR_RETURN_IF_ERROR(CheckNewOutput(report.path));
  PCR_RETURN_IF_ERROR(CheckTableDirectory(report.path, parts));
  // Parts in object storage are in the output's store.
  PCR_ASSIGN_OR_RETURN(auto engine, MakeIoEngine({.remote = OutputRemote(options.remote, options.upload)}));
  std::vector<std::unique_ptr<PcrFile>> files;
  std::vector<FeatureInfo> counts;
  for (const std::string& part : parts) {
    PCR_ASSIGN_OR_RETURN(files.emplace_back(), PcrFile::OpenTable(part, engine.get()));
    const std::vector<FeatureInfo>& features = files.back()->index().schema.features;
    if (counts.empty()) {
      counts = features;
      continue;
    }
    const bool same = std::equal(features.begin(), features.end(), counts.begin(), counts.end(),
                                 [](const FeatureInfo& a, const FeatureInfo& b) {
                                   return a.name == b.name && a.type == b.type && a.has_id == b.has_id && a.id == b.id;
                                 });
    if (!same) {
      return Status::InvalidArgument(part + ": its features differ from " + parts.front() +
                                     "'s: the parts are not of one conversion");
    }
    for (size_t f = 0; f < features.size(); ++f) {
      counts[f].present_count += features[f].present_count;
      counts[f].value_count += features[f].value_count;
    }
  }
  PCR_ASSIGN_OR_RETURN(auto writer, TableFileWriter::Create(report.path, counts, options.writer));
  for (const auto& file : files) PCR_RETURN_IF_ERROR(CopyStripes(*file, *engine, false, writer.get()));
  writer->SetFeatureCounts(counts);
  PCR_ASSIGN_OR_RETURN(report.schema, writer->Finish());
  report.stripes = writer->stripe_count();
  NoteUnusedOrder(options.writer.stream_order, report.schema, report.path, &report.notes);
  std::error_code ec;
  report.output_bytes = fs::file_size(report.path, ec);
  return report;
}

}  // namespace

Result<TableConvertReport> MergeTableParts(const TableConvertOptions& options, const std::vector<std::string>& parts) {
  if (IsObjectStoreOutput(options.out_dir)) {
    return ConvertTableToObjectStore(options, [&](const TableConvertOptions& local) {
      return MergeTableLocally(local, parts);
    });
  }
  return MergeTableLocally(options, parts);
}

bool ParseTableType(std::string_view name, FeatureType* type) {
  if (name == "timestamp") {
    *type = FeatureType::kTimestampUs;
    return true;
  }
  return ParseFeatureTypeName(name, type);
}

Result<std::map<std::string, FeatureType>> ReadTableSchemaFile(const std::string& path) {
  PCR_ASSIGN_OR_RETURN(auto in, MappedInput::Open(path));
  std::string_view text = in->text();
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  JsonCursor json(text);
  std::map<std::string, FeatureType> types;
  auto fail = [&](const std::string& what) {
    return Status::InvalidArgument(path + ": at offset " + std::to_string(json.position()) + ": " +
                                   (what.empty() ? json.error() : what));
  };
  if (json.Peek() != JsonCursor::Kind::kObject || !json.BeginObject()) {
    return fail("a schema is a JSON object of column names to types, such as {\"uid\": \"uint64\"}");
  }
  std::string name, type;
  bool done;
  while (json.NextMember(&name, &done) && !done) {
    if (types.count(name)) return fail("'" + name + "' is named twice");
    if (json.Peek() != JsonCursor::Kind::kString || !json.String(&type)) return fail("'" + name + "': expected a type name");
    if (!ParseTableType(type, &types[name])) return fail("'" + name + "': unknown type '" + type + "' (" + kTableTypeNames + ")");
  }
  if (!json.error().empty() || !json.End()) return fail("");
  return types;
}

}  // namespace pcr

namespace pcr {

Result<TableConvertReport> ReorderTable(const std::string& input, const std::string& output,
                                        const std::vector<std::string>& stream_order, const IoEngineOptions& io,
                                        const std::string& counted_on) {
  PCR_ASSIGN_OR_RETURN(auto engine, MakeIoEngine(io));
  PCR_ASSIGN_OR_RETURN(auto file, PcrFile::OpenTable(input, engine.get()));
  const PcrFile& in = *file;
  const std::string& input_file = in.path();
  const TableSchema& schema = in.index().schema;
  if (!counted_on.empty() && counted_on != TableContentId(in.index())) {
    return Status::InvalidArgument(input_file + ": the stream order was counted on another table (content id " +
                                   counted_on + ", this one's " + TableContentId(in.index()) +
                                   "); count this table's access logs with pcr-dump popularity --table");
  }
  TableConvertReport report;
  report.path = output;
  NoteUnusedOrder(stream_order, schema, input_file, &report.notes);
  std::error_code ec;
  if (!EndsWith(output, kRecordFileExtension)) {
    report.path = (fs::path(output) / fs::path(in.path()).filename()).string();
  }
  const std::string dir = fs::path(report.path).parent_path().string();
  if (fs::is_directory(input, ec)) {
    auto slashed = [&ec](const fs::path& p) {
      std::string s = fs::weakly_canonical(fs::absolute(p), ec).string();
      while (s.ends_with('/')) s.pop_back();
      return s + "/";
    };
    if (slashed(dir.empty() ? "." : dir).starts_with(slashed(input))) {
      return Status::InvalidArgument(output + ": inside " + input + ", the table directory it reorders, which "
                                     "must hold its one table alone: write the reordered table to a directory "
                                     "beside it");
    }
  }
  PCR_ASSIGN_OR_RETURN(DirectoryLock lock, DirectoryLock::Take(dir.empty() ? "." : dir));
  PCR_RETURN_IF_ERROR(CheckNewOutput(report.path));
  PCR_RETURN_IF_ERROR(CheckTableDirectory(report.path));
  // Streams are copied as stored: a file with encodings stays 0.5.
  TableWriterOptions options{.stream_encoding = in.header().version_minor >= kEncodingsVersionMinor ? "auto" : "plain",
                             .stream_order = stream_order};
  PCR_ASSIGN_OR_RETURN(auto writer, TableFileWriter::Create(report.path, schema.features, options));
  PCR_RETURN_IF_ERROR(CopyStripes(in, *engine, true, writer.get()));
  writer->SetFeatureCounts(schema.features);
  PCR_ASSIGN_OR_RETURN(report.schema, writer->Finish());
  report.stripes = writer->stripe_count();
  report.input_bytes = in.size();
  report.output_bytes = fs::file_size(report.path, ec);
  return report;
}

}  // namespace pcr
