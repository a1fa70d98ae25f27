// Column type inference, one for table conversions (CSV and JSON Lines) and
// the per-sample fields of image conversions: values as their input wrote
// them, what a column's values look like (ColumnVotes), and the type they
// decide under a conversion's rules, with the messages naming a value that
// no type holds.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "format/coding.h"
#include "format/json.h"
#include "pcr/status.h"
#include "pcr/types.h"

namespace pcr {

// A value, for messages: where it is and its text as shown.
struct Where {
  uint64_t line = 0, column = 0;
  std::string text;

  bool operator<(const Where& o) const { return line != o.line ? line < o.line : column < o.column; }
  std::string At() const { return "line " + std::to_string(line) + ", column " + std::to_string(column); }
};

// Sets *first to the value at (line, column) unless it is set.
void NoteFirst(std::optional<Where>* first, uint64_t line, uint64_t column, std::string_view text);
// The earliest of some values, if any.
std::optional<Where> Earliest(std::initializer_list<const std::optional<Where>*> values);

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

// The types inference chooses among, and what a value of another kind is.
struct InferenceRules {
  // bool, uint64, uint64_id_list and timestamps, which table files hold.
  // Without, booleans are the integers 0 and 1, times are strings and
  // integers beyond int64 are floats, in lists too.
  bool typed = true;
  bool float32 = false;  // floats are float32 rather than float64
  // Values of another kind than most of a column's (more than half) are
  // bad values: an error naming the first, or with `missing` stored as
  // missing. Without, any two kinds are an error.
  bool bad_values = true;
  bool missing = false;
  bool strings_option = true;  // messages may suggest --strings
};

// How messages name a column, and the error at one of its values.
struct ColumnNaming {
  std::string noun = "column";            // "column 'a'"
  std::string declare = "--column-type";  // the option that declares its type
  bool text = true;                        // it may be declared string
  std::function<Status(uint64_t line, uint64_t column, const std::string& what)> error;
  std::function<std::string(const Where&)> at = [](const Where& w) { return w.At(); };
};

// A CSV cell (not missing) as a value: an integer, a float, with
// `typed` true or false, else a string. `s` is the cell's text.
ColumnValue CellValue(std::string_view text, bool typed, uint64_t line, uint64_t column);

// What the present values of one column look like. Not thread-safe.
class ColumnVotes {
 public:
  ColumnVotes() = default;
  explicit ColumnVotes(bool typed) : typed_(typed) {}

  // A CSV cell's text: a number, true or false, an ISO 8601 time, or text.
  void NoteCell(std::string_view text, uint64_t line, uint64_t column);
  // The same for a cell CellValue already read (with this `typed`).
  void NoteCell(const ColumnValue& cell);
  // A JSON value (or a CellValue): a number, boolean, string (a time, or
  // text), or list. Nulls are not values.
  void NoteValue(const ColumnValue& v);

  // The type of a column of CSV cells: the kind (numbers, bools or times)
  // of all its values; with bad values (InferenceRules::bad_values), of most
  // of them, the others an error naming the first, or missing. A column of
  // no such kind is string. Integers beyond int64 and uint64 among integers
  // are bad values of the integer type that holds the rest, never floats.
  Result<FeatureType> CellsType(const InferenceRules& rules, const ColumnNaming& naming, const std::string& name) const;
  // The type of a column of JSON values: the kind (strings, booleans,
  // numbers or arrays) of its values, or of most of them, the others bad
  // values, as for CSV; two kinds without one holding most are an error.
  // Strings are times when all are (or most, as above), else strings. A
  // column without values is string.
  Result<FeatureType> ValuesType(const InferenceRules& rules, const ColumnNaming& naming, const std::string& name) const;

  // Adds the votes of values after these, whose lines are numbered from
  // `line_offset` + 1 (a sharded conversion's later shard).
  void Merge(const ColumnVotes& later, uint64_t line_offset);
  // For passing votes between processes; DecodeFrom is false on bytes that
  // EncodeTo did not write.
  void EncodeTo(Bytes* out) const;
  bool DecodeFrom(Decoder& in);

  uint64_t present() const { return present_; }
  // The first float, which made a column of numbers float64.
  const std::optional<Where>& first_float() const { return first_float_; }

 private:
  uint64_t numbers() const { return ints_ + uints_ + floats_; }
  // The first_* members in one order, for Merge and the encoding.
  template <typename Self, typename Fn>
  static void ForEachFirst(Self& v, Fn fn) {
    for (auto* first : {&v.first_negative_, &v.first_uint_, &v.first_float_, &v.first_number_, &v.first_bool_,
                        &v.first_timestamp_, &v.first_other_, &v.first_string_, &v.first_list_, &v.first_ns_,
                        &v.first_beyond_ns_, &v.first_big_, &v.first_big_negative_, &v.first_big_list_,
                        &v.first_negative_list_}) {
      fn(*first);
    }
  }
  void NoteNumber(bool is_int, int64_t i, std::string_view number, std::string_view shown, uint64_t line,
                  uint64_t column);
  void NoteCellKind(ColumnValue::Kind kind, int64_t i, std::string_view text, uint64_t line, uint64_t column);
  void NoteTime(std::string_view text, std::string_view shown, uint64_t line, uint64_t column);
  Result<FeatureType> NumberType(const InferenceRules& rules, const ColumnNaming& naming,
                                 const std::string& name) const;
  Result<FeatureType> TimestampType(const ColumnNaming& naming, const std::string& name) const;

  bool typed_ = true;
  uint64_t present_ = 0, ints_ = 0, uints_ = 0, floats_ = 0, bools_ = 0, timestamps_ = 0, strings_ = 0, lists_ = 0;
  uint64_t big_ints_ = 0;  // of floats_: integer literals beyond int64 and uint64
  bool list_floats_ = false;  // some list is neither of int64 nor of uint64 literals
  int timestamp_digits_ = 0;  // the most fraction digits of a time
  std::optional<Where> first_negative_, first_uint_, first_float_, first_number_, first_bool_, first_timestamp_,
      first_other_, first_string_, first_list_;
  std::optional<Where> first_ns_, first_beyond_ns_;  // a time with over 6 fraction digits; one outside timestamp_ns
  std::optional<Where> first_big_, first_big_negative_;  // an integer beyond int64 and uint64; one below int64
  // Lists of integers: one with an element above int64, one with a negative.
  std::optional<Where> first_big_list_, first_negative_list_;
};

}  // namespace pcr
