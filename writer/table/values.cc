#include "writer/table/values.h"

#include <cmath>

#include "writer/table_writer.h"
#include "writer/text_input.h"

namespace pcr {

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


ColumnValue CellValue(std::string_view text, bool typed, uint64_t line, uint64_t column) {
  ColumnValue v{.s = std::string(text), .line = line, .column = column};
  v.kind = CellKind(text, typed, &v.i, &v.d);
  const std::string_view t = NumberText(text);
  if (v.kind == ColumnValue::kInt) v.d = static_cast<double>(v.i);
  if (v.kind == ColumnValue::kFloat) v.exact = !IsIntegerLiteral(t) || IntegerLiteralIsExact(t, v.d);
  if (v.kind == ColumnValue::kInt || v.kind == ColumnValue::kFloat) v.text = t;
  return v;
}

bool FitsFloat32(double d) { return !std::isfinite(d) || std::isfinite(static_cast<float>(d)); }

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

std::string NotUtf8(std::string_view text) {
  const size_t bad = InvalidUtf8At(text);
  if (bad == std::string_view::npos) return "";
  return "is not UTF-8 text: byte " + std::to_string(bad) + " of it (" + EscapeInvalidUtf8(text.substr(bad, 1)) +
         ") is no UTF-8 character";
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

std::string ListMismatch(const OptionNames& names, FeatureType type, const NumberList* list, const std::string& unfit,
                         const char* array, const std::string& name, const char* values, const char* whose) {
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
    return what + is + "declare " + names(Option::kColumnType, {name, keeps}) + " to keep every id, or pass " +
           names(Option::kOnBadValueMissing) + " to store such " + values + " as missing";
  }
  return what + is + "pass " + names(Option::kOnBadValueMissing) + " to store such " + values +
         " as missing, or declare another type with " + names(Option::kColumnType, {name, "TYPE"});
}

std::string FloatBecause(const std::optional<ValuePlace>& first_float, uint64_t line, uint64_t column) {
  if (!first_float) return "";
  const ValuePlace& w = *first_float;
  if (w.line == line && w.column == column) return " (float64 because no integer type holds it)";
  return " (float64 because of " + w.text + " at " + w.At() + ")";
}

}  // namespace pcr
