// Column type inference, one for table conversions (CSV and JSON Lines) and
// the per-sample fields of image conversions: what a column's values look
// like (ColumnVotes), and the type they decide under a conversion's rules,
// with the messages naming a value that no type holds.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "format/table_shard_plan.h"
#include "pcr/option_names.h"
#include "pcr/status.h"
#include "pcr/types.h"
#include "writer/table/values.h"

namespace pcr {

// Sets *first to the value at (line, column) unless it is set.
void NoteFirst(std::optional<ValuePlace>* first, uint64_t line, uint64_t column, std::string_view text);
// The earliest of some values, if any.
std::optional<ValuePlace> Earliest(std::initializer_list<const std::optional<ValuePlace>*> values);

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
  bool strings_option = true;  // messages may suggest Option::kStrings
};

// How messages name a column, and the error at one of its values.
struct ColumnNaming {
  std::string noun = "column";             // "column 'a'"
  Option declare = Option::kColumnType;    // the option that declares its type
  const OptionNames* names = &kLibraryOptionNames;
  bool text = true;                        // it may be declared string
  std::function<Status(uint64_t line, uint64_t column, const std::string& what)> error;
  std::function<std::string(const ValuePlace&)> at = [](const ValuePlace& w) { return w.At(); };

  // Column `name` declared `type`: "--column-type n=string".
  std::string Declare(const std::string& name, std::string_view type) const { return (*names)(declare, {name, type}); }
  // The same, again in a sentence that has just declared it: "n=int64".
  std::string DeclareAgain(const std::string& name, std::string_view type) const {
    return names->Again(declare, {name, type});
  }
  std::string Name(Option option) const { return (*names)(option); }
};

// What the present values of one column look like. Not thread-safe.
class ColumnVotes {
 public:
  ColumnVotes() = default;
  explicit ColumnVotes(bool typed) { c_.typed = typed; }
  // Votes counted before, as a shard's survey carries them.
  explicit ColumnVotes(VoteCounts counts) : c_(std::move(counts)) {}

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
  void Merge(const VoteCounts& later, uint64_t line_offset);

  const VoteCounts& counts() const { return c_; }
  uint64_t present() const { return c_.present; }
  // The first float, which made a column of numbers float64.
  const std::optional<ValuePlace>& first_float() const { return c_.first_float; }

 private:
  uint64_t numbers() const { return c_.ints + c_.uints + c_.floats; }
  void NoteNumber(bool is_int, int64_t i, std::string_view number, std::string_view shown, uint64_t line,
                  uint64_t column);
  void NoteCellKind(ColumnValue::Kind kind, int64_t i, std::string_view text, uint64_t line, uint64_t column);
  void NoteTime(std::string_view text, std::string_view shown, uint64_t line, uint64_t column);
  Result<FeatureType> NumberType(const InferenceRules& rules, const ColumnNaming& naming,
                                 const std::string& name) const;
  Result<FeatureType> TimestampType(const ColumnNaming& naming, const std::string& name) const;

  VoteCounts c_;
};

}  // namespace pcr
