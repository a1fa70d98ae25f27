#include "writer/table/type_inference.h"

#include <algorithm>
#include <cctype>
#include <iterator>

#include "writer/text_input.h"

namespace pcr {

namespace {

// "1 other value", "2 other values", for messages.
std::string Others(uint64_t n) { return std::to_string(n) + (n == 1 ? " other value" : " other values"); }

}  // namespace

void NoteFirst(std::optional<ValuePlace>* first, uint64_t line, uint64_t column, std::string_view text) {
  if (!*first) *first = ValuePlace{line, column, Shown(text)};
}

std::optional<ValuePlace> Earliest(std::initializer_list<const std::optional<ValuePlace>*> values) {
  std::optional<ValuePlace> best;
  for (const std::optional<ValuePlace>* c : values) {
    if (*c && (!best || **c < *best)) best = **c;
  }
  return best;
}

void ColumnVotes::NoteNumber(bool is_int, int64_t i, std::string_view number, std::string_view shown,
                             uint64_t line, uint64_t column) {
  uint64_t u;
  if (is_int) {
    c_.ints++;
    if (i < 0) NoteFirst(&c_.first_negative, line, column, number);
  } else if (c_.typed && ParseBigUInt64(number, &u)) {
    c_.uints++;
    NoteFirst(&c_.first_uint, line, column, number);
  } else {
    c_.floats++;
    NoteFirst(&c_.first_float, line, column, number);
    if (c_.typed && IsIntegerLiteral(number)) {
      c_.big_ints++;
      NoteFirst(&c_.first_big, line, column, number);
      if (number.starts_with('-')) NoteFirst(&c_.first_big_negative, line, column, number);
    }
  }
  NoteFirst(&c_.first_number, line, column, shown);
}

void ColumnVotes::NoteTime(std::string_view text, std::string_view shown, uint64_t line, uint64_t column) {
  TimestampText ts;
  if (!c_.typed || !ParseTimestamp(text, &ts)) {
    NoteFirst(&c_.first_other, line, column, shown);
    return;
  }
  c_.timestamps++;
  c_.timestamp_digits = std::max(c_.timestamp_digits, ts.digits);
  int64_t ns;
  if (!TimestampTicks(ts, FeatureType::kTimestampNs, &ns)) NoteFirst(&c_.first_beyond_ns, line, column, shown);
  if (ts.digits > 6) NoteFirst(&c_.first_ns, line, column, shown);
  NoteFirst(&c_.first_timestamp, line, column, shown);
}

void ColumnVotes::NoteCell(std::string_view text, uint64_t line, uint64_t column) {
  int64_t i = 0;
  double d;
  const ColumnValue::Kind kind = CellKind(text, c_.typed, &i, &d);
  NoteCellKind(kind, i, text, line, column);
}

void ColumnVotes::NoteCell(const ColumnValue& cell) { NoteCellKind(cell.kind, cell.i, cell.s, cell.line, cell.column); }

void ColumnVotes::NoteCellKind(ColumnValue::Kind kind, int64_t i, std::string_view text, uint64_t line,
                               uint64_t column) {
  c_.present++;
  switch (kind) {
    case ColumnValue::kBool:
      c_.bools++;
      NoteFirst(&c_.first_bool, line, column, text);
      return;
    case ColumnValue::kString:
      c_.strings++;
      NoteTime(Trim(text), text, line, column);
      return;
    default:
      NoteNumber(kind == ColumnValue::kInt, i, NumberText(text), text, line, column);
  }
}

void ColumnVotes::NoteValue(const ColumnValue& v) {
  if (v.kind == ColumnValue::kNull) return;
  c_.present++;
  switch (v.kind) {
    case ColumnValue::kString: {
      const std::string shown = JsonText(v);
      c_.strings++;
      NoteFirst(&c_.first_string, v.line, v.column, shown);
      NoteTime(v.s, shown, v.line, v.column);
      return;
    }
    case ColumnValue::kBool:
      if (!c_.typed) break;
      c_.bools++;
      NoteFirst(&c_.first_bool, v.line, v.column, JsonText(v));
      return;
    case ColumnValue::kList:
      c_.lists++;
      c_.list_floats |= !v.list.all_int && !(c_.typed && v.list.all_uint64);
      if (c_.typed && !v.list.all_int && v.list.all_uint64) NoteFirst(&c_.first_big_list, v.line, v.column, v.text);
      if (v.list.all_int && !v.list.all_uint64) NoteFirst(&c_.first_negative_list, v.line, v.column, v.text);
      NoteFirst(&c_.first_list, v.line, v.column, v.text);
      return;
    default:
      break;
  }
  const std::string_view shown = v.kind == ColumnValue::kBool ? (v.i ? "true" : "false") : std::string_view(v.text);
  NoteNumber(v.kind != ColumnValue::kFloat, v.i, shown, shown, v.line, v.column);
}

Result<FeatureType> ColumnVotes::TimestampType(const ColumnNaming& naming, const std::string& name) const {
  if (c_.timestamp_digits <= 6) return FeatureType::kTimestampUs;
  if (!c_.first_beyond_ns) return FeatureType::kTimestampNs;
  const ValuePlace& w = *c_.first_beyond_ns;
  return naming.error(w.line, w.column,
                      w.text + " in " + naming.noun + " '" + name + "' is beyond the years timestamp_ns holds (1677 "
                      "to 2262), which " + c_.first_ns->text + " at " + naming.at(*c_.first_ns) + " needs for its "
                      "nanoseconds: declare " + naming.Declare(name, "string") + " to keep the text, or " +
                      naming.DeclareAgain(name, "timestamp_us") + " if no time has more than 6 fraction digits");
}

Result<FeatureType> ColumnVotes::NumberType(const InferenceRules& rules, const ColumnNaming& naming,
                                            const std::string& name) const {
  if (c_.floats > c_.big_ints) return rules.float32 ? FeatureType::kFloat32 : FeatureType::kFloat64;
  const bool negative = c_.first_negative || c_.first_big_negative;
  if (c_.big_ints > 0 && c_.big_ints == numbers()) {
    const ValuePlace& at = *c_.first_big;
    return naming.error(at.line, at.column,
                        at.text + " in " + naming.noun + " '" + name + "' is beyond int64 and uint64, as are all its "
                        "numbers: declare " + naming.Declare(name, "string") + " to keep every digit");
  }
  if (c_.big_ints > 0 && !(negative && c_.uints > 0)) {
    // Integers, some beyond the integer types: bad values of the one that
    // holds the others, never a float column that would round them.
    const FeatureType type = negative ? FeatureType::kInt64 : FeatureType::kUInt64;
    if (rules.missing) return type;
    const ValuePlace& at = *c_.first_big;
    return naming.error(at.line, at.column,
                        at.text + " in " + naming.noun + " '" + name + "' is beyond " + FeatureTypeName(type) +
                            (negative ? " (-2^63 to 2^63 - 1)" : " (0 to 2^64 - 1)") + ", unlike its " +
                            Others(numbers() - c_.big_ints) + ", integers: declare " +
                            naming.Declare(name, FeatureTypeName(type)) + " with " +
                            naming.Name(Option::kOnBadValueMissing) + " to store such values as missing (" +
                            std::to_string(c_.big_ints) + " in this " + naming.noun + ") and keep every other, or " +
                            naming.Declare(name, "string") + " to keep every digit");
  }
  if (c_.uints == 0) return FeatureType::kInt64;
  if (!negative) return FeatureType::kUInt64;
  // The later of the two values is the one that leaves no integer type.
  const ValuePlace first_negative = *Earliest({&c_.first_negative, &c_.first_big_negative});
  const bool negative_later = *c_.first_uint < first_negative;
  const ValuePlace& at = negative_later ? first_negative : *c_.first_uint;
  const ValuePlace& other = negative_later ? *c_.first_uint : first_negative;
  return naming.error(at.line, at.column,
                      naming.noun + " '" + name + "' holds " + at.text +
                          (negative_later ? " (below uint64)" : " (above int64)") + " and " + other.text + " (" +
                          naming.at(other) + (negative_later ? ", above int64" : ", below uint64") +
                          "), which no integer type holds both of: declare " + naming.Declare(name, "string") +
                          " to keep them as text, or " + naming.DeclareAgain(name, "uint64") + " or " +
                          naming.DeclareAgain(name, "int64") + " with " + naming.Name(Option::kOnBadValueMissing) +
                          " to store the values the type cannot hold as missing");
}

Result<FeatureType> ColumnVotes::CellsType(const InferenceRules& rules, const ColumnNaming& naming,
                                           const std::string& name) const {
  const auto most = [&](uint64_t n) { return c_.present > 0 && (rules.bad_values ? n * 2 > c_.present : n == c_.present); };
  std::optional<ValuePlace> bad;
  std::string kind;
  FeatureType type = FeatureType::kString;
  uint64_t typed = 0;  // values of the column's kind
  if (most(numbers())) {
    PCR_ASSIGN_OR_RETURN(type, NumberType(rules, naming, name));
    bad = Earliest({&c_.first_bool, &c_.first_timestamp, &c_.first_other});
    kind = "a number";
    typed = numbers();
  } else if (most(c_.bools)) {
    type = FeatureType::kBool;
    bad = Earliest({&c_.first_number, &c_.first_timestamp, &c_.first_other});
    kind = "true or false";
    typed = c_.bools;
  } else if (most(c_.timestamps)) {
    PCR_ASSIGN_OR_RETURN(type, TimestampType(naming, name));
    bad = Earliest({&c_.first_number, &c_.first_bool, &c_.first_other});
    kind = "an ISO 8601 time";
    typed = c_.timestamps;
  }
  if (bad && !rules.missing) {
    const uint64_t bads = c_.present - typed;
    return naming.error(bad->line, bad->column,
                        "'" + bad->text + "' in " + naming.noun + " '" + name + "' is not " + kind + ", unlike its " +
                            Others(typed) + " (" + FeatureTypeName(type) + "): declare " +
                            naming.Declare(name, "string") +
                            (rules.strings_option ? " (or pass " + naming.Name(Option::kStrings) + " for every column)"
                                                  : "") +
                            " to keep the " + naming.noun + " as text, or pass " +
                            naming.Name(Option::kOnBadValueMissing) + " to store such cells as missing (" +
                            std::to_string(bads) + " in this " + naming.noun + ")");
  }
  return type;
}

Result<FeatureType> ColumnVotes::ValuesType(const InferenceRules& rules, const ColumnNaming& naming,
                                            const std::string& name) const {
  const uint64_t counts[] = {c_.strings, c_.bools, numbers(), c_.lists};
  const uint64_t kinds = (counts[0] > 0) + (counts[1] > 0) + (counts[2] > 0) + (counts[3] > 0);
  const std::string column = naming.noun + " '" + name + "'";
  if (kinds > 1) {
    const std::optional<ValuePlace> firsts[] = {c_.first_string, c_.first_bool, c_.first_number, c_.first_list};
    const char* names[] = {"strings", "booleans", "numbers", "arrays"};
    const char* one[] = {"a string", "a boolean", "a number", "an array"};
    const size_t most = static_cast<size_t>(std::max_element(std::begin(counts), std::end(counts)) - counts);
    const uint64_t present = counts[0] + counts[1] + counts[2] + counts[3];
    const std::string strings = rules.strings_option ? " (or pass " + naming.Name(Option::kStrings) + ")" : "";
    // Values of other kinds beside most of one, as in CSV: bad values.
    if (rules.bad_values && counts[most] * 2 > present) {
      if (rules.missing) {
        ColumnVotes only = *this;  // typed by the many; the few are stored as missing
        if (most != 0) only.c_.strings = only.c_.timestamps = 0;
        if (most != 1) only.c_.bools = 0;
        if (most != 2) only.c_.ints = only.c_.uints = only.c_.floats = 0;
        if (most != 3) only.c_.lists = 0;
        return only.ValuesType(rules, naming, name);
      }
      size_t bad = 4;
      for (size_t k = 0; k < 4; ++k) {
        if (k != most && firsts[k] && (bad == 4 || *firsts[k] < *firsts[bad])) bad = k;
      }
      const ValuePlace& at = *firsts[bad];
      return naming.error(at.line, at.column,
                          at.text + " in " + column + " is " + one[bad] + ", unlike its " +
                              Others(counts[most]) + " (" + names[most] +
                              "): pass " + naming.Name(Option::kOnBadValueMissing) +
                              " to store such values as missing, or declare " + naming.Declare(name, "string") +
                              strings + " to keep every value as text");
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
    const ValuePlace& at = *firsts[b];
    return naming.error(at.line, at.column,
                        column + " holds " + names[a] + " (first " + firsts[a]->text + " at " +
                            naming.at(*firsts[a]) + ") and here " + names[b] + ": declare " +
                            naming.Declare(name, "string") + " (or another type)" +
                            (rules.strings_option ? " or pass " + naming.Name(Option::kStrings) : ""));
  }
  if (c_.strings > 0) {
    // Times, or most of them, the others bad values, as in CSV.
    const uint64_t others = c_.strings - c_.timestamps;
    if (others == 0) return TimestampType(naming, name);
    if (rules.bad_values && c_.timestamps * 2 > c_.strings) {
      if (rules.missing) return TimestampType(naming, name);
      const ValuePlace& w = *c_.first_other;
      return naming.error(w.line, w.column,
                          w.text + " in " + column + " is not an ISO 8601 time, unlike its " +
                              Others(c_.timestamps) + ": declare " + naming.Declare(name, "string") +
                              " to keep it as text, or pass " + naming.Name(Option::kOnBadValueMissing) +
                              " to store such values as missing (" + std::to_string(others) + " in this column)");
    }
    return FeatureType::kString;
  }
  if (c_.bools > 0) return FeatureType::kBool;
  if (c_.lists > 0) {
    if (c_.list_floats) return rules.float32 ? FeatureType::kFloat32List : FeatureType::kFloat64List;
    if (!c_.first_big_list) return FeatureType::kIdList;
    if (!c_.first_negative_list) return FeatureType::kUInt64IdList;
    // The later of the two lists is the one that leaves no id list type.
    const bool negative_later = *c_.first_big_list < *c_.first_negative_list;
    const ValuePlace& at = negative_later ? *c_.first_negative_list : *c_.first_big_list;
    const ValuePlace& other = negative_later ? *c_.first_big_list : *c_.first_negative_list;
    return naming.error(at.line, at.column,
                        at.text + " in " + column + " holds " + (negative_later ? "a negative id" : "an id above int64") +
                            ", and " + other.text + " (" + naming.at(other) + ") " +
                            (negative_later ? "one above int64" : "a negative one") +
                            ": no id list type holds both. Declare " +
                            (naming.text ? naming.Declare(name, "string") + " to keep every array as text, or " : "") +
                            naming.Declare(name, "uint64_id_list") + " or " + naming.Declare(name, "id_list") + " with " +
                            naming.Name(Option::kOnBadValueMissing) + " to store the arrays that type does not hold as "
                            "missing");
  }
  if (numbers() > 0) return NumberType(rules, naming, name);
  return FeatureType::kString;
}

void ColumnVotes::Merge(const VoteCounts& later, uint64_t line_offset) {
  c_.present += later.present;
  c_.ints += later.ints;
  c_.uints += later.uints;
  c_.floats += later.floats;
  c_.bools += later.bools;
  c_.timestamps += later.timestamps;
  c_.strings += later.strings;
  c_.lists += later.lists;
  c_.big_ints += later.big_ints;
  c_.list_floats = c_.list_floats || later.list_floats;
  c_.timestamp_digits = std::max(c_.timestamp_digits, later.timestamp_digits);
  std::vector<const std::optional<ValuePlace>*> theirs;
  VoteCounts::ForEachFirst(later, [&](const std::optional<ValuePlace>& w) { theirs.push_back(&w); });
  size_t k = 0;
  VoteCounts::ForEachFirst(c_, [&](std::optional<ValuePlace>& w) {
    const std::optional<ValuePlace>& t = *theirs[k++];
    if (!w && t) w = ValuePlace{t->line + line_offset, t->column, t->text};
  });
}

}  // namespace pcr
