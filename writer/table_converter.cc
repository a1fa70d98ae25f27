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

// A cell, for messages.
struct Where {
  uint64_t line = 0, column = 0;
  std::string text;

  bool operator<(const Where& o) const { return line != o.line ? line < o.line : column < o.column; }
  std::string At() const { return "line " + std::to_string(line) + ", column " + std::to_string(column); }
};

void Note(std::optional<Where>* first, uint64_t line, uint64_t column, std::string_view text) {
  if (!*first) *first = Where{line, column, Shown(text)};
}

// The earliest of some cells, if any.
std::optional<Where> Earliest(std::initializer_list<const std::optional<Where>*> cells) {
  std::optional<Where> best;
  for (const std::optional<Where>* c : cells) {
    if (*c && (!best || **c < *best)) best = **c;
  }
  return best;
}

// What the present values of a column look like, for inference.
struct Votes {
  uint64_t present = 0, ints = 0, uints = 0, floats = 0, bools = 0, timestamps = 0;
  int timestamp_digits = 0;  // the most fraction digits of a timestamp
  std::optional<Where> first_negative, first_uint, first_float, first_number, first_bool, first_timestamp,
      first_other;
  std::optional<Where> first_ns, first_beyond_ns;  // a time with over 6 fraction digits; one outside timestamp_ns

  // timestamp_us, or timestamp_ns for times with more than 6 fraction
  // digits; an error when some time is then beyond timestamp_ns's range.
  Result<FeatureType> TimestampOf(const std::string& input, const std::string& name) const {
    if (timestamp_digits <= 6) return FeatureType::kTimestampUs;
    if (!first_beyond_ns) return FeatureType::kTimestampNs;
    const Where& w = *first_beyond_ns;
    return InputError(input, w.line, w.column,
                      w.text + " in column '" + name + "' is beyond the years timestamp_ns holds (1677 to 2262), "
                      "which " + first_ns->text + " at " + first_ns->At() + " needs for its nanoseconds: declare "
                      "--column-type " + name + "=string to keep the text, or " + name + "=timestamp_us if no time "
                      "has more than 6 fraction digits");
  }

  uint64_t numbers() const { return ints + uints + floats; }
};

// Why an inexact integer's column at (line, column) is float64, for messages.
std::string FloatBecause(const std::optional<Where>& first_float, uint64_t line, uint64_t column) {
  if (!first_float) return "";
  const Where& w = *first_float;
  if (w.line == line && w.column == column) return " (float64 because no integer type holds it)";
  return " (float64 because of " + w.text + " at " + w.At() + ")";
}

// The type of an int-or-float column; an error when negative integers and
// integers above INT64_MAX leave no integer type.
Result<FeatureType> NumberType(const std::string& input, const std::string& what, const Votes& v, bool float32,
                               const std::string& name) {
  if (v.floats > 0) return FloatType(float32);
  if (v.uints == 0) return FeatureType::kInt64;
  if (!v.first_negative) return FeatureType::kUInt64;
  // The later of the two cells is the one that leaves no integer type.
  const bool negative_later = *v.first_uint < *v.first_negative;
  const Where& at = negative_later ? *v.first_negative : *v.first_uint;
  const Where& other = negative_later ? *v.first_uint : *v.first_negative;
  return InputError(input, at.line, at.column,
                    what + " holds " + at.text + (negative_later ? " (below uint64)" : " (above int64)") + " and " +
                        other.text + " (" + other.At() + (negative_later ? ", above int64" : ", below uint64") +
                        "), which no integer type holds both of: declare --column-type " + name +
                        "=string to keep them as text, or " + name + "=uint64 or " + name +
                        "=int64 with --on-bad-value missing to store the values the type cannot hold as missing");
}

// A CSV cell's text as a number, bool or time is read: without the spaces
// and tabs around it (" 7", as fixed-width exports pad), and for numbers
// without a '+' before a digit or point, as pandas and DuckDB read them.
std::string_view Trim(std::string_view t) {
  const size_t first = t.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return t.substr(first, t.find_last_not_of(" \t") - first + 1);
}
std::string_view NumberText(std::string_view t) {
  t = Trim(t);
  if (t.size() > 1 && t[0] == '+' && (std::isdigit(static_cast<unsigned char>(t[1])) || t[1] == '.')) {
    t.remove_prefix(1);
  }
  return t;
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

// A JSON array of numbers, as a list column's value.
struct NumberList {
  std::vector<double> values;  // every element
  std::vector<int64_t> ints;   // every element, while all are int64 literals
  bool all_int = true;
  bool exact = true;  // no integer literal that its double does not hold

  void Clear() {
    values.clear();
    ints.clear();
    all_int = exact = true;
  }
};

// Reads a JSON array of numbers at the cursor into `list`; false with the
// cursor's error, or `*what` set, when it is not one.
bool ReadNumberList(JsonCursor& json, NumberList* list, std::string* what) {
  list->Clear();
  bool done;
  if (json.Peek() != JsonCursor::Kind::kArray || !json.BeginArray()) {
    *what = "expected an array of numbers";
    return false;
  }
  while (json.NextElement(&done) && !done) {
    JsonNumber n;
    if (json.Peek() != JsonCursor::Kind::kNumber || !json.Number(&n)) {
      *what = "expected an array of numbers";
      return false;
    }
    list->values.push_back(n.d);
    list->all_int &= n.is_int;
    list->exact &= n.exact;
    if (list->all_int) list->ints.push_back(n.i);
  }
  return json.error().empty();
}

bool IsColumnListType(FeatureType t) {
  return t == FeatureType::kIdList || t == FeatureType::kFloat32List || t == FeatureType::kFloat64List;
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
    Note(&first_[f], line, column, text);
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
  std::vector<Votes> votes(columns);
  {
    CsvReader csv = header;
    while (true) {
      PCR_ASSIGN_OR_RETURN(const bool more, csv.Next(&cells, &count));
      if (!more) break;
      if (BlankLine(cells, count, columns)) continue;
      PCR_RETURN_IF_ERROR(csv.CheckCellCount(cells, count, columns));
      for (size_t c = 0; c < columns; ++c) {
        const CsvCell& cell = cells[c];
        if (cell.missing()) continue;
        Votes& v = votes[c];
        v.present++;
        int64_t i;
        uint64_t u;
        double d;
        bool b;
        TimestampText ts;
        const std::string_view t = NumberText(cell.text), trimmed = Trim(cell.text);
        if (ParseInt(t, &i)) {
          v.ints++;
          if (i < 0) Note(&v.first_negative, cell.line, cell.column, t);
        } else if (ParseBigUInt64(t, &u)) {
          v.uints++;
          Note(&v.first_uint, cell.line, cell.column, t);
        } else if (ParseFloat(t, &d)) {
          v.floats++;
          Note(&v.first_float, cell.line, cell.column, t);
        } else if (ParseBool(trimmed, false, &b)) {
          v.bools++;
          Note(&v.first_bool, cell.line, cell.column, cell.text);
          continue;
        } else if (ParseTimestamp(trimmed, &ts)) {
          v.timestamps++;
          v.timestamp_digits = std::max(v.timestamp_digits, ts.digits);
          int64_t ns;
          if (!TimestampTicks(ts, FeatureType::kTimestampNs, &ns)) {
            Note(&v.first_beyond_ns, cell.line, cell.column, cell.text);
          }
          if (ts.digits > 6) Note(&v.first_ns, cell.line, cell.column, cell.text);
          Note(&v.first_timestamp, cell.line, cell.column, cell.text);
          continue;
        } else {
          Note(&v.first_other, cell.line, cell.column, cell.text);
          continue;
        }
        Note(&v.first_number, cell.line, cell.column, cell.text);
      }
    }
  }
  for (size_t c = 0; c < columns; ++c) {
    const Votes& v = votes[c];
    const std::string& name = features[c].name;
    const auto d = declared.find(name);
    if (d != declared.end()) {
      features[c].type = d->second;
      continue;
    }
    if (v.present == 0) {
      report->notes.push_back("column '" + name + "' has no values: stored as string (--column-type " + name +
                              "=TYPE declares another type)");
    }
    const auto most = [&](uint64_t n) { return v.present > 0 && (v.present - n) * 100 < v.present; };
    std::optional<Where> bad;
    std::string kind;
    if (options.strings || v.present == 0) {
      features[c].type = FeatureType::kString;
    } else if (most(v.numbers())) {
      PCR_ASSIGN_OR_RETURN(features[c].type, NumberType(input, "column '" + name + "'", v, options.float32, name));
      bad = Earliest({&v.first_bool, &v.first_timestamp, &v.first_other});
      kind = "a number";
    } else if (most(v.bools)) {
      features[c].type = FeatureType::kBool;
      bad = Earliest({&v.first_number, &v.first_timestamp, &v.first_other});
      kind = "true or false";
    } else if (most(v.timestamps)) {
      PCR_ASSIGN_OR_RETURN(features[c].type, v.TimestampOf(input, name));
      bad = Earliest({&v.first_number, &v.first_bool, &v.first_other});
      kind = "an ISO 8601 time";
    } else {
      features[c].type = FeatureType::kString;
      const uint64_t typed = std::max({v.numbers(), v.bools, v.timestamps});
      if (typed * 2 > v.present) {
        const bool numbers = typed == v.numbers(), bools = !numbers && typed == v.bools;
        const std::optional<Where> first =
            numbers ? Earliest({&v.first_bool, &v.first_timestamp, &v.first_other})
            : bools ? Earliest({&v.first_number, &v.first_timestamp, &v.first_other})
                    : Earliest({&v.first_number, &v.first_bool, &v.first_other});
        report->notes.push_back("column '" + name + "' is stored as string: " + std::to_string(v.present - typed) +
                                " of its " + std::to_string(v.present) + " values are not " +
                                (numbers ? "numbers" : bools ? "true or false" : "times") +
                                (first ? " (first '" + first->text + "' at " + first->At() + ")" : std::string()) +
                                "; declare its type and pass --on-bad-value missing to store those as missing");
      }
    }
    if (bad && options.on_bad_value == BadValue::kError) {
      const uint64_t others = v.present - (features[c].type == FeatureType::kBool ? v.bools
                                           : IsTimestamp(features[c].type)      ? v.timestamps
                                                                                : v.numbers());
      return InputError(input, bad->line, bad->column,
                        "'" + bad->text + "' in column '" + name + "' is not " + kind + ", unlike its " +
                            std::to_string(v.present - others) + " other values (" +
                            FeatureTypeName(features[c].type) + "): declare --column-type " + name +
                            "=string to keep it as text, or pass --on-bad-value missing to store such cells as "
                            "missing (" + std::to_string(others) + " in this column)");
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
        const std::string why = "column '" + name + "'" + FloatBecause(votes[c].first_float, cell.line, cell.column);
        return InexactInteger(input, cell.line, cell.column, t, why,
                              "--column-type " + name + "=string keeps every digit, --on-bad-value missing "
                              "stores such cells as missing");
      }
      Write(writer.get(), c, type, i, d);
    }
    PCR_RETURN_IF_ERROR(writer->EndRow());
  }
  dropped.Report(features, report);
  PCR_ASSIGN_OR_RETURN(report->schema, writer->Finish());
  report->stripes = writer->stripe_count();
  return Status::OK();
}

// ---- JSON Lines with map features ----

enum class MapKind { kColumn, kDense, kSparse, kScored };

struct JsonValue {
  enum Kind { kInt, kFloat, kString, kBool, kNull, kList } kind = kNull;
  int64_t i = 0;          // kInt; kBool: 0 or 1
  double d = 0;           // kInt and kFloat
  bool exact = true;      // d is the number as written
  std::string_view text;  // a number as written; valid while its line is
  std::string s;          // kString
  NumberList list;        // kList
};

// What one row holds, in the order of its text.
struct JsonRow {
  struct Item {
    MapKind map = MapKind::kColumn;
    std::string key;  // column name, or the feature id as written
    int64_t id = 0;
    uint64_t column = 0;
    JsonValue value;             // columns and dense features
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
    item.map = map;
    item.key = key;
    json.Peek();
    item.column = json.position() + 1;
    item.ids.clear();
    item.scores.clear();
    return item;
  }

  Status Error(JsonCursor& json, const std::string& what = "") {
    return InputError(input_, line_, json.position() + 1, what.empty() ? json.error() : what);
  }

  Status Scalar(JsonCursor& json, const std::string& what, JsonValue* v) {
    JsonNumber n;
    JsonCursor::Kind k;
    switch (json.Peek()) {
      case JsonCursor::Kind::kNumber: {
        const size_t at = json.position();
        if (!json.Number(&n)) return Error(json);
        v->text = json.text().substr(at, json.position() - at);
        v->kind = n.is_int ? JsonValue::kInt : JsonValue::kFloat;
        v->i = n.i;
        v->d = n.d;
        v->exact = n.exact;
        return Status::OK();
      }
      case JsonCursor::Kind::kString:
        v->kind = JsonValue::kString;
        if (!json.String(&v->s)) return Error(json);
        return Status::OK();
      case JsonCursor::Kind::kTrue:
      case JsonCursor::Kind::kFalse:
      case JsonCursor::Kind::kNull:
        if (!json.Literal(&k)) return Error(json);
        v->kind = k == JsonCursor::Kind::kNull ? JsonValue::kNull : JsonValue::kBool;
        v->i = k == JsonCursor::Kind::kTrue ? 1 : 0;
        return Status::OK();
      case JsonCursor::Kind::kArray: {
        std::string why;
        v->kind = JsonValue::kList;
        const size_t at = json.position();
        if (!ReadNumberList(json, &v->list, &why)) return Error(json, why.empty() ? "" : what + ": " + why);
        v->text = json.text().substr(at, json.position() - at);
        return Status::OK();
      }
      default:
        return Error(json, what + ": expected a number, string, boolean, array of numbers or null");
    }
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

// JSON text of a scalar, for messages.
std::string JsonText(const JsonValue& v) {
  switch (v.kind) {
    case JsonValue::kString: {
      std::string out;
      AppendJsonString(v.s, &out);
      return out;
    }
    case JsonValue::kBool:
      return v.i ? "true" : "false";
    case JsonValue::kNull:
      return "null";
    default:
      return std::string(v.text);
  }
}

// The value of JSON `v` as `type`: *i for integers, bools and timestamps, *d
// for floats, *s for strings. False when it is not one. `lenient` (a declared
// type, or --strings) also takes integer ticks as timestamps, numbers and
// booleans as their text in string columns, and strings holding numbers in
// number columns.
bool JsonCell(FeatureType type, const JsonValue& v, bool lenient, int64_t* i, double* d, std::string* s) {
  const bool number = type == FeatureType::kInt64 || type == FeatureType::kUInt64 || type == FeatureType::kFloat32 ||
                      type == FeatureType::kFloat64;
  if (number && lenient && v.kind == JsonValue::kString) {  // "580", as a quoted CSV number reads
    const std::string_view t = NumberText(v.s);
    return ParseCell(type, t, true, i, d) &&
           !(type == FeatureType::kFloat64 && IsIntegerLiteral(t) && !IntegerLiteralIsExact(t, *d));
  }
  switch (type) {
    case FeatureType::kInt64:
      *i = v.i;
      return v.kind == JsonValue::kInt;
    case FeatureType::kUInt64: {
      uint64_t u;
      *i = v.i;
      if (v.kind == JsonValue::kInt) return v.i >= 0;
      if (v.kind != JsonValue::kFloat || !ParseBigUInt64(v.text, &u)) return false;
      *i = static_cast<int64_t>(u);
      return true;
    }
    case FeatureType::kFloat32:
    case FeatureType::kFloat64:
      *d = v.d;
      return v.kind == JsonValue::kInt || v.kind == JsonValue::kFloat;
    case FeatureType::kBool: {
      bool b = false;
      if (v.kind == JsonValue::kBool || (lenient && v.kind == JsonValue::kInt && (v.i == 0 || v.i == 1))) {
        *i = v.i;
        return true;
      }
      if (!lenient || v.kind != JsonValue::kString || !ParseBool(v.s, true, &b)) return false;
      *i = b ? 1 : 0;
      return true;
    }
    case FeatureType::kString:
    case FeatureType::kBytes:
      if (v.kind == JsonValue::kString) {
        *s = v.s;
        return true;
      }
      if (!lenient) return false;
      *s = JsonText(v);
      return true;
    default: {  // timestamps
      TimestampText ts;
      if (v.kind == JsonValue::kString) return ParseTimestamp(v.s, &ts) && TimestampTicks(ts, type, i);
      *i = v.i;
      return lenient && v.kind == JsonValue::kInt;
    }
  }
}

// Votes of a JSON Lines column, by JSON kind.
struct JsonVotes : Votes {
  uint64_t strings = 0, lists = 0;
  bool list_floats = false;  // some list element is not an int64 literal
  std::optional<Where> first_string, first_list;
};

struct JsonFeature {
  size_t index = 0;
  uint64_t last_line = 0;
  MapKind map = MapKind::kColumn;
  JsonVotes votes;
};

// The type of an undeclared JSON Lines column from its values.
Result<FeatureType> JsonColumnType(const TableConvertOptions& options, const std::string& name, const JsonVotes& v,
                                   TableConvertReport* report) {
  const std::string& input = options.input;
  const uint64_t counts[] = {v.strings, v.bools, v.numbers(), v.lists};
  const uint64_t kinds = (counts[0] > 0) + (counts[1] > 0) + (counts[2] > 0) + (counts[3] > 0);
  if (kinds > 1) {
    const std::optional<Where> firsts[] = {v.first_string, v.first_bool, v.first_number, v.first_list};
    const char* names[] = {"strings", "booleans", "numbers", "arrays"};
    const char* one[] = {"a string", "a boolean", "a number", "an array"};
    const size_t most = static_cast<size_t>(std::max_element(std::begin(counts), std::end(counts)) - counts);
    const uint64_t present = counts[0] + counts[1] + counts[2] + counts[3];
    // A few values of other kinds among many of one, as in CSV: bad values.
    if ((present - counts[most]) * 100 < present) {
      if (options.on_bad_value == BadValue::kMissing) {
        JsonVotes only = v;  // typed by the many; the few are stored as missing
        if (most != 0) only.strings = only.timestamps = 0;
        if (most != 1) only.bools = 0;
        if (most != 2) only.ints = only.uints = only.floats = 0;
        if (most != 3) only.lists = 0;
        return JsonColumnType(options, name, only, report);
      }
      size_t bad = 4;
      for (size_t k = 0; k < 4; ++k) {
        if (k != most && firsts[k] && (bad == 4 || *firsts[k] < *firsts[bad])) bad = k;
      }
      const Where& at = *firsts[bad];
      return InputError(input, at.line, at.column,
                        at.text + " in column '" + name + "' is " + one[bad] + ", unlike its " +
                            std::to_string(counts[most]) + " other values (" + names[most] +
                            "): pass --on-bad-value missing to store such values as missing, or declare "
                            "--column-type " + name + "=string (or pass --strings) to keep every value as text");
    }
    size_t a = 4, b = 4;  // the kinds first seen, in order
    for (size_t k = 0; k < 4; ++k) {
      if (!firsts[k]) continue;
      if (a == 4 || *firsts[k] < *firsts[a]) {
        b = a;
        a = k;
      } else if (b == 4 || *firsts[k] < *firsts[b]) {
        b = k;
      }
    }
    const Where& at = *firsts[b];
    return InputError(input, at.line, at.column,
                      "column '" + name + "' holds " + names[a] + " (first " + firsts[a]->text + " at " +
                          firsts[a]->At() + ") and here " + names[b] + ": declare --column-type " + name +
                          "=string (or another type) or pass --strings");
  }
  if (v.strings > 0) {
    // Times, but for fewer than 1% bad values, as in CSV.
    const uint64_t others = v.strings - v.timestamps;
    if (others == 0) return v.TimestampOf(input, name);
    if (others * 100 < v.strings) {
      if (options.on_bad_value == BadValue::kMissing) return v.TimestampOf(input, name);
      const Where& w = *v.first_other;
      return InputError(input, w.line, w.column,
                        w.text + " in column '" + name + "' is not an ISO 8601 time, unlike its " +
                            std::to_string(v.timestamps) + " other values: declare --column-type " + name +
                            "=string to keep it as text, or pass --on-bad-value missing to store such values as "
                            "missing (" + std::to_string(others) + " in this column)");
    }
    if (v.timestamps * 2 > v.strings) {
      report->notes.push_back("column '" + name + "' is stored as string: " + std::to_string(others) + " of its " +
                              std::to_string(v.strings) + " values are not times (first " + v.first_other->text +
                              " at " + v.first_other->At() + "); declare its type and pass --on-bad-value missing "
                              "to store those as missing");
    }
    return FeatureType::kString;
  }
  if (v.bools > 0) return FeatureType::kBool;
  if (v.lists > 0) {
    return !v.list_floats    ? FeatureType::kIdList
           : options.float32 ? FeatureType::kFloat32List
                             : FeatureType::kFloat64List;
  }
  if (v.numbers() > 0) return NumberType(input, "column '" + name + "'", v, options.float32, name);
  return FeatureType::kString;
}

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
      if (item.map == MapKind::kDense && item.value.kind == JsonValue::kNull) continue;
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
      if (item.map != MapKind::kColumn || item.value.kind == JsonValue::kNull) continue;
      JsonVotes& v = st.votes;
      const JsonValue& value = item.value;
      const std::string_view shown = value.kind == JsonValue::kString ? std::string_view(value.s) : value.text;
      v.present++;
      uint64_t u;
      TimestampText ts;
      switch (value.kind) {
        case JsonValue::kString:
          v.strings++;
          Note(&v.first_string, number, item.column, JsonText(value));
          if (ParseTimestamp(value.s, &ts)) {
            v.timestamps++;
            v.timestamp_digits = std::max(v.timestamp_digits, ts.digits);
            int64_t ns;
            if (!TimestampTicks(ts, FeatureType::kTimestampNs, &ns)) {
              Note(&v.first_beyond_ns, number, item.column, JsonText(value));
            }
            if (ts.digits > 6) Note(&v.first_ns, number, item.column, JsonText(value));
          } else {
            Note(&v.first_other, number, item.column, JsonText(value));
          }
          continue;
        case JsonValue::kBool:
          v.bools++;
          Note(&v.first_bool, number, item.column, JsonText(value));
          continue;
        case JsonValue::kList:
          v.lists++;
          v.list_floats |= !value.list.all_int;
          Note(&v.first_list, number, item.column, value.text);
          continue;
        case JsonValue::kInt:
          v.ints++;
          if (value.i < 0) Note(&v.first_negative, number, item.column, shown);
          break;
        default:
          if (ParseBigUInt64(value.text, &u)) {
            v.uints++;
            Note(&v.first_uint, number, item.column, shown);
          } else {
            v.floats++;
            Note(&v.first_float, number, item.column, shown);
          }
          break;
      }
      Note(&v.first_number, number, item.column, shown);
    }
    return Status::OK();
  }));
  if (rows == 0) return Status::InvalidArgument(input + ": empty file, expected one JSON object per line");

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
      PCR_ASSIGN_OR_RETURN(info.type, JsonColumnType(options, info.name, st.votes, report));
      if (st.votes.present == 0) {
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
      if (item.value.kind == JsonValue::kNull && (item.map == MapKind::kColumn || item.map == MapKind::kDense)) {
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
        if (item.value.kind == JsonValue::kList && WriteList(writer.get(), f, info.type, item.value.list, &inexact)) {
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
                                   : WhyNot(info.type, item.value.kind == JsonValue::kString ? item.value.s : "")) +
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
        const std::string why = what + FloatBecause(state[f].votes.first_float, number, item.column);
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
  PCR_ASSIGN_OR_RETURN(report->schema, writer->Finish());
  report->stripes = writer->stripe_count();
  return Status::OK();
}

// Conversions never replace a file, the input least of all.
Status CheckNewOutput(const std::string& path) {
  std::error_code ec;
  if (fs::exists(path, ec)) return Status::InvalidArgument(path + ": already exists");
  return Status::OK();
}

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

Result<TableConvertReport> ConvertTable(const TableConvertOptions& options) {
  const bool csv = EndsWith(options.input, ".csv");
  const bool jsonl = EndsWith(options.input, ".jsonl") || EndsWith(options.input, ".ndjson");
  if (!csv && !jsonl) {
    return Status::InvalidArgument(options.input + ": unknown table format (expected .csv, .jsonl or .ndjson)");
  }
  PCR_ASSIGN_OR_RETURN(auto in, MappedInput::Open(options.input));
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

Result<std::vector<std::string>> ReadPopularityFile(const std::string& path) {
  PCR_ASSIGN_OR_RETURN(auto in, MappedInput::Open(path));
  auto entries = ParsePopularity(in->text());
  if (!entries.ok()) return entries.status().WithPrefix(path);
  return PopularityOrder(std::move(entries).value());
}

}  // namespace pcr

namespace pcr {

Result<TableConvertReport> ReorderTable(const std::string& input, const std::string& output,
                                        const std::vector<std::string>& stream_order, const IoEngineOptions& io) {
  PCR_ASSIGN_OR_RETURN(auto engine, MakeIoEngine(io));
  PCR_ASSIGN_OR_RETURN(const Location where, Locate(input));
  PCR_ASSIGN_OR_RETURN(const std::string input_file, where.TableFile());
  PCR_ASSIGN_OR_RETURN(auto file, PcrFile::Open(input_file, engine.get()));
  const PcrFile& in = *file;
  if (in.header().kind != FileKind::kTable) return Status::InvalidArgument(input_file + ": not a table file");
  const TableSchema& schema = in.index().schema;
  TableConvertReport report;
  report.path = output;
  std::error_code ec;
  if (!EndsWith(output, kRecordFileExtension)) {
    report.path = (fs::path(output) / fs::path(in.path()).filename()).string();
  }
  const std::string dir = fs::path(report.path).parent_path().string();
  PCR_ASSIGN_OR_RETURN(DirectoryLock lock, DirectoryLock::Take(dir.empty() ? "." : dir));
  PCR_RETURN_IF_ERROR(CheckNewOutput(report.path));
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
