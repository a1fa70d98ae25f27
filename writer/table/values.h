// Values as a table's input wrote them (a CSV cell, a JSON value), before
// and after their column's type is known: parsing, trimming, and what a
// value of a type is, for the conversions' messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "format/json.h"
#include "format/table_shard_plan.h"
#include "pcr/option_names.h"
#include "pcr/types.h"

namespace pcr {

class TableFileWriter;

inline FeatureType FloatType(bool float32) { return float32 ? FeatureType::kFloat32 : FeatureType::kFloat64; }

inline bool IsTimestamp(FeatureType t) { return TicksPerSecond(t) != 0; }

// A JSON array of numbers.
struct NumberList {
  std::vector<double> values;  // every element
  // Every element's bits, while all are integer literals of int64 or all
  // of uint64.
  std::vector<int64_t> ints;
  bool all_int = true;     // every element an integer literal int64 holds
  bool all_uint64 = true;  // every element an integer literal uint64 holds
  bool exact = true;       // no integer literal that its double does not hold

  void Clear();
};

// Reads a JSON array of numbers at the cursor into `list`; false with the
// cursor's error, or `*what` set, when it is not one.
bool ReadNumberList(JsonCursor& json, NumberList* list, std::string* what);

// One value as a JSON Lines member or a CSV cell wrote it, before its
// column's type is known.
struct ColumnValue {
  enum Kind { kNull, kInt, kFloat, kBool, kString, kList } kind = kNull;
  int64_t i = 0;          // kInt; kBool: 0 or 1
  double d = 0;           // kInt and kFloat
  bool exact = true;      // d is the number as written
  std::string text;       // a number or list as written
  std::string s;          // kString; a CSV cell's text whatever it holds
  NumberList list;        // kList
  uint64_t line = 0;      // where the value is, for messages: a line, or what
  uint64_t column = 0;    // the conversion's error function makes of these
};

// Parses one JSON value at the cursor: a number, string, boolean, null or
// array of numbers. Anything else is an error (false, with the cursor's
// error or *what set), or with `keep_json` the value's JSON text as a string.
bool ParseJsonValue(JsonCursor& json, bool keep_json, ColumnValue* v, std::string* what);

// JSON text of a value, for messages.
std::string JsonText(const ColumnValue& v);

// id_list, uint64_id_list, float32_list or float64_list: a column of JSON
// arrays of numbers.
bool IsColumnListType(FeatureType t);

// A CSV cell's text without the spaces and tabs around it (" 7", as
// fixed-width exports pad), as bools and times are read; NumberText also
// drops a '+' before a digit or point, as pandas and DuckDB read numbers.
std::string_view Trim(std::string_view text);
std::string_view NumberText(std::string_view text);

// The kind of CSV text: kInt (*i), kFloat (*d), kBool with `typed` (*i), or
// kString.
ColumnValue::Kind CellKind(std::string_view text, bool typed, int64_t* i, double* d);

// A CSV cell (not missing) as a value: an integer, a float, with
// `typed` true or false, else a string. `s` is the cell's text.
ColumnValue CellValue(std::string_view text, bool typed, uint64_t line, uint64_t column);

// Whether float32 holds `d` (rounded), as it holds infinities and NaN.
bool FitsFloat32(double d);
inline constexpr char kFloat32Range[] = "at most 3.4028235e38 in magnitude";

// The value of CSV text `cell` in a column of `type`: *i for integers, bools
// and timestamps, *d for floats. False when it is not one (a float beyond
// float32's range for float32). A declared type also takes integer ticks as
// timestamps and t, f, yes, no, y, n, on, off, 1 and 0 as bools.
bool ParseCell(FeatureType type, std::string_view cell, bool declared, int64_t* i, double* d);

// The value of JSON `v` as `type`: *i for integers, bools and timestamps, *d
// for floats, *s for strings (a view of v, or of *text for a value's JSON
// text). False when it is not one. `lenient` (a declared type, or
// --strings) also takes integer ticks as timestamps, numbers and booleans as
// their text in string columns, and strings holding numbers in number
// columns.
bool JsonCell(FeatureType type, const ColumnValue& v, bool lenient, int64_t* i, double* d, std::string* text,
              std::string_view* s);

// What a declared or inferred type expects, for messages.
std::string Expected(FeatureType type);

// Why `text` is no value of `type`, for messages: "is not a number", or for
// a time, "is finer than timestamp_s holds" or "is beyond the years ...".
std::string WhyNot(FeatureType type, std::string_view text);

// Why a string cell or value is no UTF-8 text, or "" when it is.
std::string NotUtf8(std::string_view text);

// Why an inexact integer's column at (line, column) is float64, for messages.
std::string FloatBecause(const std::optional<ValuePlace>& first_float, uint64_t line, uint64_t column);

// A value of a column's type into feature `f`: i of integers, bools and
// timestamps, d of floats.
void Write(TableFileWriter* writer, size_t f, FeatureType type, int64_t i, double d);

// Writes `list` to a list feature of `type`; false when the list does not fit
// it: an id list of other than int64 literals, or with *why set, an integer
// a float64 list cannot hold or a float beyond float32.
bool WriteList(TableFileWriter* writer, size_t f, FeatureType type, const NumberList& list, std::string* why);

// The rest of the message for a value that is not one of list column
// `name`'s `type`: what it is not, and the declared type that keeps it, if
// any. `list` is the value read as a list (null if it is not one), `unfit`
// WriteList's reason, `array` "a JSON array" or "an array", `whose` the
// column or the (map) feature.
std::string ListMismatch(const OptionNames& names, FeatureType type, const NumberList* list, const std::string& unfit,
                         const char* array, const std::string& name, const char* values,
                         const char* whose = "the column");
}  // namespace pcr
