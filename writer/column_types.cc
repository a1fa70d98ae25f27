#include "writer/column_types.h"

#include <algorithm>
#include <cctype>
#include <iterator>

#include "writer/text_input.h"

namespace pcr {

void NoteFirst(std::optional<Where>* first, uint64_t line, uint64_t column, std::string_view text) {
  if (!*first) *first = Where{line, column, Shown(text)};
}

std::optional<Where> Earliest(std::initializer_list<const std::optional<Where>*> values) {
  std::optional<Where> best;
  for (const std::optional<Where>* c : values) {
    if (*c && (!best || **c < *best)) best = **c;
  }
  return best;
}

void NumberList::Clear() {
  values.clear();
  ints.clear();
  all_int = all_uint64 = exact = true;
}

bool ReadNumberList(JsonCursor& json, NumberList* list, std::string* what) {
  list->Clear();
  bool done;
  if (json.Peek() != JsonCursor::Kind::kArray || !json.BeginArray()) {
    *what = "expected an array of numbers";
    return false;
  }
  while (json.NextElement(&done) && !done) {
    JsonNumber n;
    const size_t start = json.Peek() == JsonCursor::Kind::kNumber ? json.position() : 0;
    if (json.Peek() != JsonCursor::Kind::kNumber || !json.Number(&n)) {
      *what = "expected an array of numbers";
      return false;
    }
    uint64_t u = 0;
    const bool big = !n.is_int && ParseBigUInt64(json.text().substr(start, json.position() - start), &u);
    list->values.push_back(n.d);
    list->all_int &= n.is_int;
    list->all_uint64 &= big || (n.is_int && n.i >= 0);
    list->exact &= n.exact;
    if (list->all_int || list->all_uint64) list->ints.push_back(big ? static_cast<int64_t>(u) : n.i);
  }
  return json.error().empty();
}

bool ParseJsonValue(JsonCursor& json, bool keep_json, ColumnValue* v, std::string* what) {
  JsonNumber n;
  JsonCursor::Kind k;
  const size_t start = json.position();
  switch (json.Peek()) {
    case JsonCursor::Kind::kNumber:
      if (!json.Number(&n)) return false;
      v->text = json.text().substr(start, json.position() - start);
      v->kind = n.is_int ? ColumnValue::kInt : ColumnValue::kFloat;
      v->i = n.i;
      v->d = n.d;
      v->exact = n.exact;
      return true;
    case JsonCursor::Kind::kString:
      v->kind = ColumnValue::kString;
      return json.String(&v->s);
    case JsonCursor::Kind::kTrue:
    case JsonCursor::Kind::kFalse:
    case JsonCursor::Kind::kNull:
      if (!json.Literal(&k)) return false;
      v->kind = k == JsonCursor::Kind::kNull ? ColumnValue::kNull : ColumnValue::kBool;
      v->i = k == JsonCursor::Kind::kTrue ? 1 : 0;
      return true;
    case JsonCursor::Kind::kArray: {
      // With keep_json, an array of other than numbers is text.
      JsonCursor list = json;
      if (ReadNumberList(list, &v->list, what)) {
        json = list;
        v->kind = ColumnValue::kList;
        v->text = json.text().substr(start, json.position() - start);
        return true;
      }
      if (!keep_json) {
        json = list;
        return false;
      }
      what->clear();
      break;
    }
    case JsonCursor::Kind::kObject:
      if (keep_json) break;
      [[fallthrough]];
    default:
      *what = "expected a number, string, boolean, array of numbers or null";
      return false;
  }
  if (!json.SkipValue()) return false;
  v->kind = ColumnValue::kString;
  v->s.assign(json.text().substr(start, json.position() - start));
  const size_t first = v->s.find_first_not_of(" \t\r\n");
  v->s.erase(0, first == std::string::npos ? v->s.size() : first);
  return true;
}

std::string JsonText(const ColumnValue& v) {
  switch (v.kind) {
    case ColumnValue::kString: {
      std::string out;
      AppendJsonString(v.s, &out);
      return out;
    }
    case ColumnValue::kBool:
      return v.i ? "true" : "false";
    case ColumnValue::kNull:
      return "null";
    default:
      return std::string(v.text);
  }
}

bool IsColumnListType(FeatureType t) {
  return t == FeatureType::kIdList || t == FeatureType::kUInt64IdList || t == FeatureType::kFloat32List ||
         t == FeatureType::kFloat64List;
}

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

namespace {

// "1 other value", "2 other values", for messages.
std::string Others(uint64_t n) { return std::to_string(n) + (n == 1 ? " other value" : " other values"); }

// The kind of CSV text: kInt (*i), kFloat (*d), kBool with `typed` (*i), or
// kString.
ColumnValue::Kind CellKind(std::string_view text, bool typed, int64_t* i, double* d) {
  const std::string_view t = NumberText(text);
  bool b;
  if (ParseInt(t, i)) return ColumnValue::kInt;
  if (ParseFloat(t, d)) return ColumnValue::kFloat;
  if (typed && ParseBool(Trim(text), false, &b)) {
    *i = b ? 1 : 0;
    return ColumnValue::kBool;
  }
  return ColumnValue::kString;
}

}  // namespace

ColumnValue CellValue(std::string_view text, bool typed, uint64_t line, uint64_t column) {
  ColumnValue v{.s = std::string(text), .line = line, .column = column};
  v.kind = CellKind(text, typed, &v.i, &v.d);
  const std::string_view t = NumberText(text);
  if (v.kind == ColumnValue::kInt) v.d = static_cast<double>(v.i);
  if (v.kind == ColumnValue::kFloat) v.exact = !IsIntegerLiteral(t) || IntegerLiteralIsExact(t, v.d);
  if (v.kind == ColumnValue::kInt || v.kind == ColumnValue::kFloat) v.text = t;
  return v;
}

void ColumnVotes::NoteNumber(bool is_int, int64_t i, std::string_view number, std::string_view shown,
                             uint64_t line, uint64_t column) {
  uint64_t u;
  if (is_int) {
    ints_++;
    if (i < 0) NoteFirst(&first_negative_, line, column, number);
  } else if (typed_ && ParseBigUInt64(number, &u)) {
    uints_++;
    NoteFirst(&first_uint_, line, column, number);
  } else {
    floats_++;
    NoteFirst(&first_float_, line, column, number);
    if (typed_ && IsIntegerLiteral(number)) {
      big_ints_++;
      NoteFirst(&first_big_, line, column, number);
      if (number.starts_with('-')) NoteFirst(&first_big_negative_, line, column, number);
    }
  }
  NoteFirst(&first_number_, line, column, shown);
}

void ColumnVotes::NoteTime(std::string_view text, std::string_view shown, uint64_t line, uint64_t column) {
  TimestampText ts;
  if (!typed_ || !ParseTimestamp(text, &ts)) {
    NoteFirst(&first_other_, line, column, shown);
    return;
  }
  timestamps_++;
  timestamp_digits_ = std::max(timestamp_digits_, ts.digits);
  int64_t ns;
  if (!TimestampTicks(ts, FeatureType::kTimestampNs, &ns)) NoteFirst(&first_beyond_ns_, line, column, shown);
  if (ts.digits > 6) NoteFirst(&first_ns_, line, column, shown);
  NoteFirst(&first_timestamp_, line, column, shown);
}

void ColumnVotes::NoteCell(std::string_view text, uint64_t line, uint64_t column) {
  int64_t i = 0;
  double d;
  const ColumnValue::Kind kind = CellKind(text, typed_, &i, &d);
  NoteCellKind(kind, i, text, line, column);
}

void ColumnVotes::NoteCell(const ColumnValue& cell) { NoteCellKind(cell.kind, cell.i, cell.s, cell.line, cell.column); }

void ColumnVotes::NoteCellKind(ColumnValue::Kind kind, int64_t i, std::string_view text, uint64_t line,
                               uint64_t column) {
  present_++;
  switch (kind) {
    case ColumnValue::kBool:
      bools_++;
      NoteFirst(&first_bool_, line, column, text);
      return;
    case ColumnValue::kString:
      strings_++;
      NoteTime(Trim(text), text, line, column);
      return;
    default:
      NoteNumber(kind == ColumnValue::kInt, i, NumberText(text), text, line, column);
  }
}

void ColumnVotes::NoteValue(const ColumnValue& v) {
  if (v.kind == ColumnValue::kNull) return;
  present_++;
  switch (v.kind) {
    case ColumnValue::kString: {
      const std::string shown = JsonText(v);
      strings_++;
      NoteFirst(&first_string_, v.line, v.column, shown);
      NoteTime(v.s, shown, v.line, v.column);
      return;
    }
    case ColumnValue::kBool:
      if (!typed_) break;
      bools_++;
      NoteFirst(&first_bool_, v.line, v.column, JsonText(v));
      return;
    case ColumnValue::kList:
      lists_++;
      list_floats_ |= !v.list.all_int && !(typed_ && v.list.all_uint64);
      if (typed_ && !v.list.all_int && v.list.all_uint64) NoteFirst(&first_big_list_, v.line, v.column, v.text);
      if (v.list.all_int && !v.list.all_uint64) NoteFirst(&first_negative_list_, v.line, v.column, v.text);
      NoteFirst(&first_list_, v.line, v.column, v.text);
      return;
    default:
      break;
  }
  const std::string_view shown = v.kind == ColumnValue::kBool ? (v.i ? "true" : "false") : std::string_view(v.text);
  NoteNumber(v.kind != ColumnValue::kFloat, v.i, shown, shown, v.line, v.column);
}

Result<FeatureType> ColumnVotes::TimestampType(const ColumnNaming& naming, const std::string& name) const {
  if (timestamp_digits_ <= 6) return FeatureType::kTimestampUs;
  if (!first_beyond_ns_) return FeatureType::kTimestampNs;
  const Where& w = *first_beyond_ns_;
  return naming.error(w.line, w.column,
                      w.text + " in " + naming.noun + " '" + name + "' is beyond the years timestamp_ns holds (1677 "
                      "to 2262), which " + first_ns_->text + " at " + naming.at(*first_ns_) + " needs for its "
                      "nanoseconds: declare " + naming.declare + " " + name + "=string to keep the text, or " + name +
                      "=timestamp_us if no time has more than 6 fraction digits");
}

Result<FeatureType> ColumnVotes::NumberType(const InferenceRules& rules, const ColumnNaming& naming,
                                            const std::string& name) const {
  if (floats_ > big_ints_) return rules.float32 ? FeatureType::kFloat32 : FeatureType::kFloat64;
  const bool negative = first_negative_ || first_big_negative_;
  if (big_ints_ > 0 && big_ints_ == numbers()) {
    const Where& at = *first_big_;
    return naming.error(at.line, at.column,
                        at.text + " in " + naming.noun + " '" + name + "' is beyond int64 and uint64, as are all its "
                        "numbers: declare " + naming.declare + " " + name + "=string to keep every digit");
  }
  if (big_ints_ > 0 && !(negative && uints_ > 0)) {
    // Integers, some beyond the integer types: bad values of the one that
    // holds the others, never a float column that would round them.
    const FeatureType type = negative ? FeatureType::kInt64 : FeatureType::kUInt64;
    if (rules.missing) return type;
    const Where& at = *first_big_;
    const std::string declare = naming.declare + " " + name;
    return naming.error(at.line, at.column,
                        at.text + " in " + naming.noun + " '" + name + "' is beyond " + FeatureTypeName(type) +
                            (negative ? " (-2^63 to 2^63 - 1)" : " (0 to 2^64 - 1)") + ", unlike its " +
                            Others(numbers() - big_ints_) + ", integers: declare " + declare +
                            "=" + FeatureTypeName(type) + " with --on-bad-value missing to store such values as "
                            "missing (" + std::to_string(big_ints_) + " in this " + naming.noun + ") and keep "
                            "every other, or " + declare + "=string to keep every digit");
  }
  if (uints_ == 0) return FeatureType::kInt64;
  if (!negative) return FeatureType::kUInt64;
  // The later of the two values is the one that leaves no integer type.
  const Where first_negative = *Earliest({&first_negative_, &first_big_negative_});
  const bool negative_later = *first_uint_ < first_negative;
  const Where& at = negative_later ? first_negative : *first_uint_;
  const Where& other = negative_later ? *first_uint_ : first_negative;
  const std::string declare = naming.declare + " " + name;
  return naming.error(at.line, at.column,
                      naming.noun + " '" + name + "' holds " + at.text +
                          (negative_later ? " (below uint64)" : " (above int64)") + " and " + other.text + " (" +
                          naming.at(other) + (negative_later ? ", above int64" : ", below uint64") +
                          "), which no integer type holds both of: declare " + declare +
                          "=string to keep them as text, or " + name + "=uint64 or " + name +
                          "=int64 with --on-bad-value missing to store the values the type cannot hold as missing");
}

Result<FeatureType> ColumnVotes::CellsType(const InferenceRules& rules, const ColumnNaming& naming,
                                           const std::string& name) const {
  const auto most = [&](uint64_t n) { return present_ > 0 && (rules.bad_values ? n * 2 > present_ : n == present_); };
  std::optional<Where> bad;
  std::string kind;
  FeatureType type = FeatureType::kString;
  uint64_t typed = 0;  // values of the column's kind
  if (most(numbers())) {
    PCR_ASSIGN_OR_RETURN(type, NumberType(rules, naming, name));
    bad = Earliest({&first_bool_, &first_timestamp_, &first_other_});
    kind = "a number";
    typed = numbers();
  } else if (most(bools_)) {
    type = FeatureType::kBool;
    bad = Earliest({&first_number_, &first_timestamp_, &first_other_});
    kind = "true or false";
    typed = bools_;
  } else if (most(timestamps_)) {
    PCR_ASSIGN_OR_RETURN(type, TimestampType(naming, name));
    bad = Earliest({&first_number_, &first_bool_, &first_other_});
    kind = "an ISO 8601 time";
    typed = timestamps_;
  }
  if (bad && !rules.missing) {
    const uint64_t bads = present_ - typed;
    return naming.error(bad->line, bad->column,
                        "'" + bad->text + "' in " + naming.noun + " '" + name + "' is not " + kind + ", unlike its " +
                            Others(typed) + " (" + FeatureTypeName(type) + "): declare " +
                            naming.declare + " " + name + "=string" +
                            (rules.strings_option ? " (or pass --strings for every column)" : "") +
                            " to keep the " + naming.noun + " as text, or pass --on-bad-value missing to store such "
                            "cells as missing (" + std::to_string(bads) + " in this " + naming.noun + ")");
  }
  return type;
}

Result<FeatureType> ColumnVotes::ValuesType(const InferenceRules& rules, const ColumnNaming& naming,
                                            const std::string& name) const {
  const uint64_t counts[] = {strings_, bools_, numbers(), lists_};
  const uint64_t kinds = (counts[0] > 0) + (counts[1] > 0) + (counts[2] > 0) + (counts[3] > 0);
  const std::string column = naming.noun + " '" + name + "'";
  if (kinds > 1) {
    const std::optional<Where> firsts[] = {first_string_, first_bool_, first_number_, first_list_};
    const char* names[] = {"strings", "booleans", "numbers", "arrays"};
    const char* one[] = {"a string", "a boolean", "a number", "an array"};
    const size_t most = static_cast<size_t>(std::max_element(std::begin(counts), std::end(counts)) - counts);
    const uint64_t present = counts[0] + counts[1] + counts[2] + counts[3];
    const std::string strings = rules.strings_option ? " (or pass --strings)" : "";
    // Values of other kinds beside most of one, as in CSV: bad values.
    if (rules.bad_values && counts[most] * 2 > present) {
      if (rules.missing) {
        ColumnVotes only = *this;  // typed by the many; the few are stored as missing
        if (most != 0) only.strings_ = only.timestamps_ = 0;
        if (most != 1) only.bools_ = 0;
        if (most != 2) only.ints_ = only.uints_ = only.floats_ = 0;
        if (most != 3) only.lists_ = 0;
        return only.ValuesType(rules, naming, name);
      }
      size_t bad = 4;
      for (size_t k = 0; k < 4; ++k) {
        if (k != most && firsts[k] && (bad == 4 || *firsts[k] < *firsts[bad])) bad = k;
      }
      const Where& at = *firsts[bad];
      return naming.error(at.line, at.column,
                          at.text + " in " + column + " is " + one[bad] + ", unlike its " +
                              Others(counts[most]) + " (" + names[most] +
                              "): pass --on-bad-value missing to store such values as missing, or declare " +
                              naming.declare + " " + name + "=string" + strings + " to keep every value as text");
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
    return naming.error(at.line, at.column,
                        column + " holds " + names[a] + " (first " + firsts[a]->text + " at " +
                            naming.at(*firsts[a]) + ") and here " + names[b] + ": declare " + naming.declare + " " +
                            name + "=string (or another type)" +
                            (rules.strings_option ? " or pass --strings" : ""));
  }
  if (strings_ > 0) {
    // Times, or most of them, the others bad values, as in CSV.
    const uint64_t others = strings_ - timestamps_;
    if (others == 0) return TimestampType(naming, name);
    if (rules.bad_values && timestamps_ * 2 > strings_) {
      if (rules.missing) return TimestampType(naming, name);
      const Where& w = *first_other_;
      return naming.error(w.line, w.column,
                          w.text + " in " + column + " is not an ISO 8601 time, unlike its " +
                              Others(timestamps_) + ": declare " + naming.declare + " " + name +
                              "=string to keep it as text, or pass --on-bad-value missing to store such values as "
                              "missing (" + std::to_string(others) + " in this column)");
    }
    return FeatureType::kString;
  }
  if (bools_ > 0) return FeatureType::kBool;
  if (lists_ > 0) {
    if (list_floats_) return rules.float32 ? FeatureType::kFloat32List : FeatureType::kFloat64List;
    if (!first_big_list_) return FeatureType::kIdList;
    if (!first_negative_list_) return FeatureType::kUInt64IdList;
    // The later of the two lists is the one that leaves no id list type.
    const bool negative_later = *first_big_list_ < *first_negative_list_;
    const Where& at = negative_later ? *first_negative_list_ : *first_big_list_;
    const Where& other = negative_later ? *first_big_list_ : *first_negative_list_;
    const std::string declare = naming.declare + " " + name;
    return naming.error(at.line, at.column,
                        at.text + " in " + column + " holds " + (negative_later ? "a negative id" : "an id above int64") +
                            ", and " + other.text + " (" + naming.at(other) + ") " +
                            (negative_later ? "one above int64" : "a negative one") +
                            ": no id list type holds both. Declare " +
                            (naming.text ? declare + "=string to keep every array as text, or " : "") + declare +
                            "=uint64_id_list or " + declare + "=id_list with --on-bad-value missing to store the arrays "
                            "that type does not hold as missing");
  }
  if (numbers() > 0) return NumberType(rules, naming, name);
  return FeatureType::kString;
}

void ColumnVotes::Merge(const ColumnVotes& later, uint64_t line_offset) {
  present_ += later.present_;
  ints_ += later.ints_;
  uints_ += later.uints_;
  floats_ += later.floats_;
  bools_ += later.bools_;
  timestamps_ += later.timestamps_;
  strings_ += later.strings_;
  lists_ += later.lists_;
  big_ints_ += later.big_ints_;
  list_floats_ = list_floats_ || later.list_floats_;
  timestamp_digits_ = std::max(timestamp_digits_, later.timestamp_digits_);
  std::vector<const std::optional<Where>*> theirs;
  ForEachFirst(later, [&](const std::optional<Where>& w) { theirs.push_back(&w); });
  size_t k = 0;
  ForEachFirst(*this, [&](std::optional<Where>& w) {
    const std::optional<Where>& t = *theirs[k++];
    if (!w && t) w = Where{t->line + line_offset, t->column, t->text};
  });
}

void ColumnVotes::EncodeTo(Bytes* out) const {
  PutFixed8(out, typed_);
  for (const uint64_t n : {present_, ints_, uints_, floats_, bools_, timestamps_, strings_, lists_, big_ints_}) {
    PutVarint64(out, n);
  }
  PutFixed8(out, list_floats_);
  PutVarint64(out, static_cast<uint64_t>(timestamp_digits_));
  ForEachFirst(*this, [&](const std::optional<Where>& w) {
    PutFixed8(out, w.has_value());
    if (!w) return;
    PutVarint64(out, w->line);
    PutVarint64(out, w->column);
    PutLengthPrefixed(out, w->text);
  });
}

bool ColumnVotes::DecodeFrom(Decoder& in) {
  uint8_t flag = 0;
  uint64_t digits = 0;
  if (!in.GetFixed8(&flag) || flag > 1) return false;
  typed_ = flag;
  for (uint64_t* n : {&present_, &ints_, &uints_, &floats_, &bools_, &timestamps_, &strings_, &lists_, &big_ints_}) {
    if (!in.GetVarint64(n)) return false;
  }
  if (!in.GetFixed8(&flag) || flag > 1 || !in.GetVarintAtMost(64, &digits)) return false;
  list_floats_ = flag;
  timestamp_digits_ = static_cast<int>(digits);
  bool ok = true;
  ForEachFirst(*this, [&](std::optional<Where>& w) {
    uint8_t has = 0;
    w.reset();
    if (!ok || !in.GetFixed8(&has) || has > 1) {
      ok = false;
      return;
    }
    if (!has) return;
    Where where;
    ok = in.GetVarint64(&where.line) && in.GetVarint64(&where.column) && in.GetLengthPrefixed(1 << 20, &where.text);
    if (ok) w = std::move(where);
  });
  return ok;
}

}  // namespace pcr
