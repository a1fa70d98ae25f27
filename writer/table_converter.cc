// pcr-convert table: CSV and JSON Lines into a table file. Over 700 lines:
// parsing, type inference over every value, declared types and the writing
// pass share one state, kept together so the two passes agree on it.
#include "pcr/convert.h"
#include "writer/table_writer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <unordered_map>

#include "format/json.h"
#include "format/popularity.h"
#include "format/table_stripe.h"
#include "io/location.h"
#include "io/pcr_file.h"
#include "io/read_executor.h"
#include "writer/atomic_file.h"
#include "writer/column_types.h"
#include "writer/remote_output.h"
#include "writer/text_input.h"

namespace pcr {

namespace {

namespace fs = std::filesystem;

constexpr char kTableTypeNames[] =
    "bool, int64, uint64, float32, float64, timestamp (timestamp_us), timestamp_s, timestamp_ms, timestamp_ns, "
    "string, bytes, id_list, float32_list, float64_list; for maps also scored_id_list32, scored_id_list64";

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

// The value of CSV text `cell` in a column of `type`: *i for integers, bools
// and timestamps, *d for floats. False when it is not one. A declared type
// also takes integer ticks as timestamps and t, f, yes, no, 1 and 0 as bools.
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
      return "a bool (true, false, t, f, yes, no, 1, 0)";
    default:
      return "a number";
  }
}

// Why `text` is no value of `type`, for messages: "is not a number", or for
// a time, "is finer than timestamp_s holds" or "is beyond the years ...".
std::string WhyNot(FeatureType type, std::string_view text) {
  TimestampText ts;
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
// it (an id list of other than int64 literals). Sets *inexact for an integer
// a float64 list cannot hold.
bool WriteList(TableFileWriter* writer, size_t f, FeatureType type, const NumberList& list, bool* inexact) {
  *inexact = false;
  if (type == FeatureType::kIdList) {
    if (!list.all_int) return false;
    writer->AddIdList(f, list.ints, {});
    return true;
  }
  if (type == FeatureType::kFloat64List && !list.exact) {
    *inexact = true;
    return false;
  }
  writer->AddFloatList(f, list.values);
  return true;
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
      report->notes.push_back("column '" + features[f].name + "': " + std::to_string(count_[f]) +
                              (count_[f] == 1 ? " value" : " values") + " not " + FeatureTypeName(features[f].type) +
                              " stored as missing (first " + first_[f]->text + " at " + first_[f]->At() + ")");
    }
  }

 private:
  std::vector<uint64_t> count_;
  std::vector<std::optional<Where>> first_;
};

Status ConvertCsv(const TableConvertOptions& options, const std::map<std::string, FeatureType>& declared,
                  std::string_view text, const std::string& out_path, TableConvertReport* report) {
  const std::string& input = options.input;
  std::vector<CsvCell> cells;
  size_t count = 0;
  CsvReader header(text, input);
  PCR_ASSIGN_OR_RETURN(const bool has_header, header.Next(&cells, &count));
  if (!has_header) return Status::InvalidArgument(input + ": empty file, expected a header row");
  std::vector<FeatureInfo> features(count);
  std::unordered_map<std::string, size_t> names;
  for (size_t c = 0; c < count; ++c) {
    features[c].name = cells[c].text;
    if (!names.emplace(cells[c].text, c).second) {
      return InputError(input, cells[c].line, cells[c].column, "duplicate column name '" + cells[c].text + "'");
    }
  }
  const size_t columns = count;
  for (const auto& [name, type] : declared) {
    if (!names.count(name)) {
      std::string list;
      for (size_t c = 0; c < std::min<size_t>(count, 10); ++c) list += (c ? ", " : "") + features[c].name;
      if (count > 10) list += ", ... (" + std::to_string(count) + " columns)";
      return Status::InvalidArgument(input + ": a declared type names '" + name + "', not a column (the columns: " +
                                     list + "): remove it from --schema or --column-type");
    }
    if (!IsScalarType(type) && type != FeatureType::kString && type != FeatureType::kBytes &&
        !IsColumnListType(type)) {
      return Status::InvalidArgument(std::string("column '") + name + "' declared " + FeatureTypeName(type) +
                                     ": a CSV column is bool, int64, uint64, float32, float64, timestamp, string, "
                                     "bytes, id_list, float32_list or float64_list (map features, scored lists "
                                     "among them, are JSON Lines input: pcr-dump cat --format jsonl writes it)");
    }
  }

  // Pass 1: the kind of value (numbers, bools, times) that all but fewer
  // than 1% of a column's cells are, and within numbers the narrowest type;
  // the other cells are bad values. With no such kind, a string column.
  std::vector<ColumnVotes> votes(columns);
  {
    CsvReader csv = header;
    while (true) {
      PCR_ASSIGN_OR_RETURN(const bool more, csv.Next(&cells, &count));
      if (!more) break;
      if (BlankLine(cells, count, columns)) continue;
      PCR_RETURN_IF_ERROR(csv.CheckCellCount(cells, count, columns));
      for (size_t c = 0; c < columns; ++c) {
        if (!cells[c].missing()) votes[c].NoteCell(cells[c].text, cells[c].line, cells[c].column);
      }
    }
  }
  const InferenceRules rules = Rules(options);
  const ColumnNaming naming = Naming(input);
  for (size_t c = 0; c < columns; ++c) {
    const std::string& name = features[c].name;
    const auto d = declared.find(name);
    if (d != declared.end()) {
      features[c].type = d->second;
      continue;
    }
    if (votes[c].present() == 0) {
      report->notes.push_back("column '" + name + "' has no values: stored as string (--column-type " + name +
                              "=TYPE declares another type)");
    }
    if (options.strings) {
      features[c].type = FeatureType::kString;
    } else {
      PCR_ASSIGN_OR_RETURN(features[c].type, votes[c].CellsType(rules, naming, name, &report->notes));
    }
  }

  // Pass 2: write.
  PCR_ASSIGN_OR_RETURN(auto writer, TableFileWriter::Create(out_path, features, options.writer));
  MissingNotes dropped(columns);
  NumberList list;
  CsvReader csv = header;
  while (true) {
    PCR_ASSIGN_OR_RETURN(const bool more, csv.Next(&cells, &count));
    if (!more) break;
    if (BlankLine(cells, count, columns)) continue;
    PCR_RETURN_IF_ERROR(csv.CheckCellCount(cells, count, columns));
    for (size_t c = 0; c < columns; ++c) {
      const CsvCell& cell = cells[c];
      if (cell.missing()) continue;
      const std::string& t = cell.text;
      const FeatureType type = features[c].type;
      const std::string& name = features[c].name;
      if (type == FeatureType::kString || type == FeatureType::kBytes) {
        writer->AddString(c, t);
        continue;
      }
      if (IsColumnListType(type)) {  // a JSON array of numbers, as pcr-dump cat prints lists
        JsonCursor json(t);
        std::string why;
        bool inexact = false;
        if (ReadNumberList(json, &list, &why) && json.End() && WriteList(writer.get(), c, type, list, &inexact)) {
          continue;
        }
        if (options.on_bad_value == BadValue::kMissing) {
          dropped.Add(c, cell.line, cell.column, "'" + t + "'");
          continue;
        }
        return InputError(input, cell.line, cell.column,
                          "'" + Shown(t) + "' in column '" + name + "' is not " +
                              (inexact ? "a list of floats: an integer in it has no exact double"
                                       : type == FeatureType::kIdList ? "a JSON array of int64 ids"
                                                                     : "a JSON array of numbers") +
                              " (the column is " + FeatureTypeName(type) + "): pass --on-bad-value missing to "
                              "store such cells as missing, or declare another type with --column-type " + name +
                              "=TYPE");
      }
      int64_t i = 0;
      double d = 0;
      if (!ParseCell(type, t, declared.count(name) != 0, &i, &d)) {
        if (options.on_bad_value == BadValue::kMissing) {
          dropped.Add(c, cell.line, cell.column, "'" + t + "'");
          continue;
        }
        return InputError(input, cell.line, cell.column,
                          "'" + Shown(t) + "' in column '" + name + "' " + WhyNot(type, t) + " (the column is " +
                              FeatureTypeName(type) + "): pass --on-bad-value missing to store such cells as "
                              "missing, or declare another type with --column-type " + name + "=TYPE");
      }
      if (type == FeatureType::kFloat64 && IsIntegerLiteral(NumberText(t)) && !IntegerLiteralIsExact(NumberText(t), d)) {
        if (options.on_bad_value == BadValue::kMissing) {
          dropped.Add(c, cell.line, cell.column, "'" + t + "'");
          continue;
        }
        const std::string why = "column '" + name + "'" + FloatBecause(votes[c].first_float(), cell.line, cell.column);
        return InexactInteger(input, cell.line, cell.column, t, why,
                              "--column-type " + name + "=string keeps every digit, --on-bad-value missing "
                              "stores such cells as missing");
      }
      Write(writer.get(), c, type, i, d);
    }
    PCR_RETURN_IF_ERROR(writer->EndRow());
  }
  dropped.Report(features, report);
  cells = {};  // a huge last cell is not kept while the stripe is written
  PCR_ASSIGN_OR_RETURN(report->schema, writer->Finish());
  report->stripes = writer->stripe_count();
  return Status::OK();
}

// ---- JSON Lines with map features ----

enum class MapKind { kColumn, kDense, kSparse, kScored };

// A value buffer kept for the next row at most; a larger one, left by a
// huge value, is freed rather than held while the rest is converted.
constexpr size_t kKeptValueCapacity = 1 << 20;

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
  };
  std::vector<Item> items;
  size_t count = 0;
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
    for (std::string* kept : {&item.value.s, &item.value.text}) {
      if (kept->capacity() > kKeptValueCapacity) std::string().swap(*kept);  // a huge value's buffer goes
    }
    item.map = map;
    item.key = key;
    json.Peek();
    item.column = json.position() + 1;
    item.value.line = line_;
    item.value.column = item.column;
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

  Status Id(JsonCursor& json, const std::string& what, int64_t* id) {
    JsonNumber n;
    if (json.Peek() != JsonCursor::Kind::kNumber) return Error(json, what + ": expected an int64 id");
    const size_t at = json.position();
    if (!json.Number(&n)) return Error(json);
    if (!n.is_int) {
      return InputError(input_, line_, at + 1, what + ": id is not an int64");
    }
    *id = n.i;
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
    if (!json.BeginArray()) return Error(json);
    while (json.NextElement(&done) && !done) {
      int64_t id;
      if (map == MapKind::kSparse) {
        PCR_RETURN_IF_ERROR(Id(json, what, &id));
        item->ids.push_back(id);
        continue;
      }
      bool pair_done;
      if (json.Peek() != JsonCursor::Kind::kArray) return Error(json, what + ": expected an [id, score] pair");
      if (!json.BeginArray() || !json.NextElement(&pair_done) || pair_done) {
        return Error(json, what + ": expected an [id, score] pair");
      }
      PCR_RETURN_IF_ERROR(Id(json, what, &id));
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
    return Status::OK();
  }

  const std::string& input_;
  uint64_t line_ = 0;
};

// The value of JSON `v` as `type`: *i for integers, bools and timestamps, *d
// for floats, *s for strings. False when it is not one. `lenient` (a declared
// type, or --strings) also takes integer ticks as timestamps, numbers and
// booleans as their text in string columns, and strings holding numbers in
// number columns.
bool JsonCell(FeatureType type, const ColumnValue& v, bool lenient, int64_t* i, double* d, std::string* s) {
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
      return v.kind == ColumnValue::kInt || v.kind == ColumnValue::kFloat;
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
      *s = JsonText(v);
      return true;
    default: {  // timestamps
      TimestampText ts;
      if (v.kind == ColumnValue::kString) return ParseTimestamp(v.s, &ts) && TimestampTicks(ts, type, i);
      *i = v.i;
      return lenient && v.kind == ColumnValue::kInt;
    }
  }
}

struct JsonFeature {
  size_t index = 0;
  uint64_t last_line = 0;
  MapKind map = MapKind::kColumn;
  ColumnVotes votes;
};

const char* MapName(MapKind map) {
  return map == MapKind::kDense ? "dense" : map == MapKind::kSparse ? "sparse" : map == MapKind::kScored ? "scored" : "";
}

// The type of a map feature: declared for the feature (by its id) or for its
// map, else the map's default.
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
  if (map == MapKind::kSparse && t == FeatureType::kIdList) return t;
  if (map == MapKind::kScored) {
    if (t == FeatureType::kFloat32 || t == FeatureType::kScoredIdList32) return FeatureType::kScoredIdList32;
    if (t == FeatureType::kFloat64 || t == FeatureType::kScoredIdList64) return FeatureType::kScoredIdList64;
  }
  return Status::InvalidArgument(std::string(MapName(map)) + " feature " + name + " declared " + FeatureTypeName(t) +
                                 ": dense features are float32 or float64, sparse ones id_list, and scored ones "
                                 "float32 or float64 (their scores' type)");
}

Status ConvertJsonl(const TableConvertOptions& options, const std::map<std::string, FeatureType>& declared,
                    std::string_view text, const std::string& out_path, TableConvertReport* report) {
  const std::string& input = options.input;
  JsonlParser parser(input);
  JsonRow row;
  std::vector<FeatureInfo> features;
  std::vector<JsonFeature> state;
  std::unordered_map<std::string, size_t> by_name;
  auto name_of = [](const JsonRow::Item& item) {
    return item.map == MapKind::kColumn ? item.key : std::to_string(item.id);
  };

  // Pass 1: features in order of first appearance, and what their values are.
  uint64_t rows = 0;
  PCR_RETURN_IF_ERROR(ForEachJsonLine(text, [&](std::string_view line, uint64_t number) -> Status {
    PCR_RETURN_IF_ERROR(parser.ParseLine(line, number, &row));
    ++rows;
    for (size_t k = 0; k < row.count; ++k) {
      const JsonRow::Item& item = row.items[k];
      if (item.map == MapKind::kDense && item.value.kind == ColumnValue::kNull) continue;
      const std::string name = name_of(item);
      auto [it, added] = by_name.emplace(name, features.size());
      if (added) {
        features.push_back({.name = name, .has_id = item.map != MapKind::kColumn, .id = item.id});
        state.push_back({.index = features.size() - 1, .map = item.map});
      }
      JsonFeature& st = state[it->second];
      if (st.map != item.map) {
        return InputError(input, number, item.column,
                          "feature '" + name + "' appears both as " +
                              (st.map == MapKind::kColumn ? std::string("a column")
                                                          : std::string("a ") + MapName(st.map) + " feature") +
                              " and here as " +
                              (item.map == MapKind::kColumn ? std::string("a column")
                                                            : std::string("a ") + MapName(item.map) + " feature"));
      }
      if (st.last_line == number) {
        return InputError(input, number, item.column,
                          "feature '" + name + "' appears twice in the row: a row holds each feature once");
      }
      st.last_line = number;
      if (item.map != MapKind::kColumn || item.value.kind == ColumnValue::kNull) continue;
      st.votes.NoteValue(item.value);
    }
    return Status::OK();
  }));
  if (rows == 0) return Status::InvalidArgument(input + ": empty file, expected one JSON object per line");

  const InferenceRules rules = Rules(options);
  const ColumnNaming naming = Naming(input);
  // A declared column that no row has is kept, typed and without values, so
  // that files converted with one schema have the same features.
  for (const auto& [name, type] : declared) {
    if (by_name.count(name) || name == "dense" || name == "sparse" || name == "scored") continue;
    by_name.emplace(name, features.size());
    features.push_back({.name = name});
    state.push_back({.index = features.size() - 1});
    report->notes.push_back("column '" + name + "' is declared but no row has it: stored as " +
                            FeatureTypeName(type) + " without values");
  }
  for (size_t f = 0; f < features.size(); ++f) {
    const JsonFeature& st = state[f];
    FeatureInfo& info = features[f];
    if (st.map != MapKind::kColumn) {
      PCR_ASSIGN_OR_RETURN(info.type, MapFeatureType(st.map, info.name, declared, options.float32));
      continue;
    }
    const auto d = declared.find(info.name);
    if (d != declared.end()) {
      if (!IsScalarType(d->second) && d->second != FeatureType::kString && d->second != FeatureType::kBytes &&
          !IsColumnListType(d->second)) {
        return Status::InvalidArgument("column '" + info.name + "' declared " + FeatureTypeName(d->second) +
                                       ": a JSON Lines column is bool, int64, uint64, float32, float64, timestamp, "
                                       "string, bytes, id_list, float32_list or float64_list");
      }
      info.type = d->second;
    } else if (options.strings) {
      info.type = FeatureType::kString;
    } else {
      PCR_ASSIGN_OR_RETURN(info.type, st.votes.ValuesType(rules, naming, info.name, &report->notes));
      if (st.votes.present() == 0) {
        report->notes.push_back("column '" + info.name + "' has only nulls: stored as string (--column-type " +
                                info.name + "=TYPE declares another type)");
      }
    }
  }

  // Pass 2: write.
  PCR_ASSIGN_OR_RETURN(auto writer, TableFileWriter::Create(out_path, features, options.writer));
  MissingNotes dropped(features.size());
  std::string s;
  PCR_RETURN_IF_ERROR(ForEachJsonLine(text, [&](std::string_view line, uint64_t number) -> Status {
    PCR_RETURN_IF_ERROR(parser.ParseLine(line, number, &row));
    for (size_t k = 0; k < row.count; ++k) {
      const JsonRow::Item& item = row.items[k];
      if (item.value.kind == ColumnValue::kNull && (item.map == MapKind::kColumn || item.map == MapKind::kDense)) {
        continue;
      }
      const size_t f = by_name.at(name_of(item));
      const FeatureInfo& info = features[f];
      if (item.map == MapKind::kSparse || item.map == MapKind::kScored) {
        writer->AddIdList(f, item.ids, item.scores);
        continue;
      }
      const std::string what = item.map == MapKind::kColumn ? "column '" + item.key + "'" : "dense feature " + item.key;
      const char* whose = item.map == MapKind::kColumn ? "the column" : "the feature";
      if (IsColumnListType(info.type)) {
        bool inexact = false;
        if (item.value.kind == ColumnValue::kList && WriteList(writer.get(), f, info.type, item.value.list, &inexact)) {
          continue;
        }
        if (options.on_bad_value == BadValue::kMissing) {
          dropped.Add(f, number, item.column, JsonText(item.value));
          continue;
        }
        return InputError(input, number, item.column,
                          Shown(JsonText(item.value)) + " in " + what + " is not " +
                              (inexact ? "a list of floats: an integer in it has no exact double"
                                       : info.type == FeatureType::kIdList ? "an array of int64 ids"
                                                                          : "an array of numbers") +
                              " (" + whose + " is " +
                              FeatureTypeName(info.type) + "): pass --on-bad-value missing to store "
                              "such values as missing, or declare another type with --column-type " + info.name +
                              "=TYPE");
      }
      int64_t i = 0;
      double d = 0;
      const bool lenient = declared.count(info.name) != 0 || options.strings;
      if (!JsonCell(info.type, item.value, lenient, &i, &d, &s)) {
        if (options.on_bad_value == BadValue::kMissing) {
          dropped.Add(f, number, item.column, JsonText(item.value));
          continue;
        }
        return InputError(input, number, item.column,
                          Shown(JsonText(item.value)) + " in " + what + " " +
                              (info.type == FeatureType::kString || info.type == FeatureType::kBytes
                                   ? std::string("is not a string")
                                   : WhyNot(info.type, item.value.kind == ColumnValue::kString ? item.value.s : "")) +
                              " (" + whose + " is " +
                              FeatureTypeName(info.type) + "): pass --on-bad-value missing to store "
                              "such values as missing, or declare another type with --column-type " + info.name +
                              "=TYPE");
      }
      if (info.type == FeatureType::kString || info.type == FeatureType::kBytes) {
        writer->AddString(f, s);
        continue;
      }
      if (info.type == FeatureType::kFloat64 && !item.value.exact) {
        if (options.on_bad_value == BadValue::kMissing) {
          dropped.Add(f, number, item.column, std::string(item.value.text));
          continue;
        }
        const std::string why = what + FloatBecause(state[f].votes.first_float(), number, item.column);
        return InexactInteger(input, number, item.column, item.value.text, why,
                              item.map == MapKind::kColumn
                                  ? "declare --column-type " + info.name + "=string to keep every digit, or pass "
                                    "--on-bad-value missing to store such values as missing"
                                  : "dense values are floats: keep such a value in a column declared string or "
                                    "uint64, or pass --on-bad-value missing to store it as missing");
      }
      Write(writer.get(), f, info.type, i, d);
    }
    return writer->EndRow();
  }));
  dropped.Report(features, report);
  row = {};  // a huge last value is not kept while the stripe is written
  s = {};
  PCR_ASSIGN_OR_RETURN(report->schema, writer->Finish());
  report->stripes = writer->stripe_count();
  return Status::OK();
}

// Refuses a reordered table at `path` in a directory read as a table now
// (one .pcr file and no dataset manifest): a second one would leave it
// unreadable.
Status CheckTableDirectory(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  const std::string dir = parent.empty() ? "." : parent.string();
  const Result<Location> where = Locate(dir);
  if (!where.ok() || where->dataset_manifest || !where->TableFile().ok()) return Status::OK();
  return Status::InvalidArgument(path + ": would be a second table in " + dir + " (beside " +
                                 fs::path(where->pcr_files.front()).filename().string() +
                                 "), which readers then refuse: a table directory holds one .pcr file; write to "
                                 "another directory");
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

}  // namespace

Result<TableConvertReport> ConvertTable(const TableConvertOptions& options) {
  if (IsObjectStoreOutput(options.out_dir)) return ConvertTableToObjectStore(options, ConvertTable);
  const bool csv = EndsWith(options.input, ".csv");
  const bool jsonl = EndsWith(options.input, ".jsonl") || EndsWith(options.input, ".ndjson");
  if (!csv && !jsonl) {
    return Status::InvalidArgument(options.input + ": unknown table format (expected .csv, .jsonl or .ndjson)");
  }
  PCR_ASSIGN_OR_RETURN(auto in, MappedInput::Open(options.input, options.remote));
  PCR_ASSIGN_OR_RETURN(DirectoryLock lock, DirectoryLock::Take(options.out_dir));
  std::error_code ec;
  TableConvertReport report;
  report.path = (fs::path(options.out_dir) / (fs::path(options.input).stem().string() + ".pcr")).string();
  PCR_RETURN_IF_ERROR(CheckNewOutput(report.path));
  report.input_bytes = in->text().size();
  std::string_view text = in->text();
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // a UTF-8 byte order mark
  std::map<std::string, FeatureType> declared;
  if (!options.schema_file.empty()) {
    PCR_ASSIGN_OR_RETURN(declared, ReadTableSchemaFile(options.schema_file));
  }
  for (const auto& [name, type] : options.column_types) declared[name] = type;
  PCR_RETURN_IF_ERROR(csv ? ConvertCsv(options, declared, text, report.path, &report)
                          : ConvertJsonl(options, declared, text, report.path, &report));
  NoteUnusedOrder(options.writer.stream_order, report.schema, report.path, &report.notes);
  report.output_bytes = fs::file_size(report.path, ec);
  return report;
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
  if (!counted_on.empty() && counted_on != TableContentId(schema)) {
    return Status::InvalidArgument(input_file + ": the stream order was counted on another table (content id " +
                                   counted_on + ", this one's " + TableContentId(schema) +
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
  PCR_ASSIGN_OR_RETURN(DirectoryLock lock, DirectoryLock::Take(dir.empty() ? "." : dir));
  PCR_RETURN_IF_ERROR(CheckNewOutput(report.path));
  PCR_RETURN_IF_ERROR(CheckTableDirectory(report.path));
  // Streams are copied as stored: a file with encodings stays 0.5.
  TableWriterOptions options{.stream_encoding = in.header().version_minor >= kEncodingsVersionMinor ? "auto" : "plain",
                             .stream_order = stream_order};
  PCR_ASSIGN_OR_RETURN(auto writer, TableFileWriter::Create(report.path, schema.features, options));
  Bytes scratch[kRoleCount + 1];
  ReadBatch read;
  for (size_t s = 0; s < in.index().stripes.size(); ++s) {
    const StripeInfo& stripe = in.index().stripes[s];
    std::vector<ReadRange> ranges;
    for (size_t k = 0; k < stripe.streams.size(); ++k) ranges.push_back(StreamRange(in, s, k));
    PCR_RETURN_IF_ERROR(ExecuteReads(*engine, ranges, {.max_read = std::numeric_limits<uint64_t>::max()}, &read));
    std::vector<Bytes> streams(stripe.streams.size());
    for (size_t k = 0; k < streams.size(); ++k) streams[k].assign(read[k].begin(), read[k].end());
    // Every feature is decoded as a reader decodes it, so damage behind valid
    // checksums is refused rather than copied under fresh ones.
    const std::vector<size_t> stream_of = stripe.TableStreamIndex(schema.features.size());
    for (uint32_t f = 0; f < schema.features.size(); ++f) {
      ByteSpan stored[kRoleCount];
      for (const StreamRole role : RolesOf(schema.features[f].type)) {
        stored[static_cast<size_t>(role)] = streams[stream_of[f * kRoleCount + static_cast<size_t>(role)]];
      }
      Column column(schema.features[f].type);
      PCR_RETURN_IF_ERROR(DecodeStoredFeature(in.path(), schema, stripe, s, stream_of, f, stored, scratch, &column));
    }
    PCR_RETURN_IF_ERROR(writer->AddStoredStripe(stripe, std::move(streams)));
  }
  writer->SetFeatureCounts(schema.features);
  PCR_ASSIGN_OR_RETURN(report.schema, writer->Finish());
  report.stripes = writer->stripe_count();
  report.input_bytes = in.size();
  report.output_bytes = fs::file_size(report.path, ec);
  return report;
}

}  // namespace pcr
