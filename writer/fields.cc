#include "writer/fields.h"

#include <bit>
#include <filesystem>
#include <unordered_set>

#include "format/checksum.h"
#include "format/json.h"
#include "writer/text_input.h"

namespace pcr {

namespace {

struct RawRow {
  std::string key;
  uint64_t line = 0;
  std::vector<std::pair<uint32_t, RawValue>> values;
};

bool IsFieldListType(FeatureType t) {
  return t == FeatureType::kIdList || t == FeatureType::kFloat32List || t == FeatureType::kFloat64List;
}

bool ExactDouble(int64_t i) {
  const double d = static_cast<double>(i);
  return IntegerLiteralIsExact(std::to_string(i), d);
}

class FieldsReader {
 public:
  FieldsReader(const std::string& path, const std::string& key_column,
               const std::map<std::string, FeatureType>& declared, bool float32)
      : path_(path),
        key_column_(key_column),
        declared_(declared),
        types_(declared, float32, [this](uint64_t line, uint64_t column, const std::string& what) {
          return Error(line, column, what);
        }) {}

  Result<FieldsFile> Read() {
    PCR_ASSIGN_OR_RETURN(auto in, MappedInput::Open(path_));
    std::string_view text = in->text();
    if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
    const bool csv = path_.ends_with(".csv");
    if (!csv && !path_.ends_with(".jsonl") && !path_.ends_with(".ndjson")) {
      return Status::InvalidArgument(path_ + ": unknown fields format (expected .csv, .jsonl or .ndjson)");
    }
    PCR_RETURN_IF_ERROR(csv ? ReadCsv(text) : ReadJsonl(text));
    PCR_RETURN_IF_ERROR(types_.Infer().WithPrefix(path_));
    FieldsFile out;
    out.schema.features = types_.features();
    for (RawRow& row : rows_) {
      FieldRow fields;
      for (auto& [f, raw] : row.values) {
        if (raw.kind == RawValue::kMissing) continue;
        PCR_ASSIGN_OR_RETURN(FieldValue v, types_.Convert(f, std::move(raw)));
        fields.push_back(std::move(v));
      }
      out.keys.push_back(row.key);
      out.lines.push_back(row.line);
      out.rows.emplace(std::move(row.key), std::move(fields));
    }
    return out;
  }

 private:
  Status Error(uint64_t line, uint64_t column, const std::string& what) const {
    return InputError(path_, line, column, what);
  }

  // The key normalized as source keys are; relative paths only.
  Status AddRow(RawRow row, uint64_t column) {
    if (row.key.empty()) return Error(row.line, column, "empty " + key_column_);
    const std::filesystem::path p(row.key);
    if (p.is_absolute()) {
      return Error(row.line, column, key_column_ + " '" + row.key + "' is not relative to the image root");
    }
    row.key = p.lexically_normal().generic_string();
    if (!keys_.insert(row.key).second) {
      return Error(row.line, column, "image '" + row.key + "' has a second row");
    }
    rows_.push_back(std::move(row));
    return Status::OK();
  }

  Status ReadCsv(std::string_view text) {
    std::vector<CsvCell> cells;
    size_t count = 0;
    CsvReader csv(text, path_);
    PCR_ASSIGN_OR_RETURN(const bool has_header, csv.Next(&cells, &count));
    if (!has_header) return Status::InvalidArgument(path_ + ": empty file, expected a header row");
    size_t key = SIZE_MAX;
    std::vector<uint32_t> field_of(count);
    std::vector<bool> list(count, false);
    std::unordered_set<std::string> names;
    for (size_t c = 0; c < count; ++c) {
      if (!names.insert(cells[c].text).second) {
        return Error(cells[c].line, cells[c].column, "duplicate column name '" + cells[c].text + "'");
      }
      if (cells[c].text == key_column_) {
        key = c;
        continue;
      }
      PCR_ASSIGN_OR_RETURN(field_of[c], types_.Field(cells[c].text, cells[c].line, cells[c].column));
      const auto declared = declared_.find(cells[c].text);
      list[c] = declared != declared_.end() && IsFieldListType(declared->second);
    }
    if (key == SIZE_MAX) {
      return Status::InvalidArgument(path_ + ": no '" + key_column_ + "' column naming each image (--fields-key)");
    }
    const size_t columns = count;
    while (true) {
      PCR_ASSIGN_OR_RETURN(const bool more, csv.Next(&cells, &count));
      if (!more) break;
      PCR_RETURN_IF_ERROR(csv.CheckCellCount(cells, count, columns));
      RawRow row{.line = csv.record_line()};
      if (cells[key].missing()) return Error(cells[key].line, cells[key].column, "missing " + key_column_);
      row.key = cells[key].text;
      for (size_t c = 0; c < columns; ++c) {
        if (c == key) continue;
        RawValue v{.line = cells[c].line, .column = cells[c].column};
        if (!cells[c].missing()) PCR_RETURN_IF_ERROR(CsvValue(field_of[c], list[c], cells[c], &v));
        row.values.emplace_back(field_of[c], std::move(v));
      }
      PCR_RETURN_IF_ERROR(AddRow(std::move(row), cells[key].column));
    }
    return Status::OK();
  }

  Status CsvValue(uint32_t f, bool list, const CsvCell& cell, RawValue* v) {
    v->s = cell.text;
    if (list) {
      JsonCursor json(cell.text);
      std::string error;
      if (json.Peek() != JsonCursor::Kind::kArray || !FieldInference::ParseJson(json, false, v, &error) ||
          !json.End()) {
        return Error(cell.line, cell.column,
                     "field '" + types_.features()[f].name + "': " + (error.empty() ? json.error() : error) +
                         " (a list cell is a JSON array of numbers)");
      }
    } else if (ParseInt(cell.text, &v->i)) {
      v->kind = RawValue::kInt;
    } else if (ParseFloat(cell.text, &v->d)) {
      v->kind = RawValue::kFloat;
      v->exact = !IsIntegerLiteral(cell.text) || IntegerLiteralIsExact(cell.text, v->d);
    } else {
      v->kind = RawValue::kString;
    }
    types_.Note(f, *v);
    return Status::OK();
  }

  Status ReadJsonl(std::string_view text) {
    return ForEachJsonLine(text, [&](std::string_view line, uint64_t number) -> Status {
      JsonCursor json(line);
      auto error = [&](const std::string& what) {
        return Error(number, json.position() + 1, what.empty() ? json.error() : what);
      };
      if (json.Peek() != JsonCursor::Kind::kObject) return error("a row must be a JSON object");
      if (!json.BeginObject()) return error("");
      RawRow row{.line = number};
      bool has_key = false, done;
      uint64_t key_column = 0;
      std::string name;
      std::unordered_set<uint32_t> in_row;
      while (json.NextMember(&name, &done) && !done) {
        json.Peek();
        const uint64_t column = json.position() + 1;
        if (name == key_column_) {
          if (json.Peek() != JsonCursor::Kind::kString || !json.String(&row.key)) {
            return error("'" + key_column_ + "' must be a string");
          }
          has_key = true;
          key_column = column;
          continue;
        }
        PCR_ASSIGN_OR_RETURN(const uint32_t f, types_.Field(name, number, column));
        if (!in_row.insert(f).second) return error("field '" + name + "' appears twice in the row");
        RawValue v{.line = number, .column = column};
        std::string what;
        if (!FieldInference::ParseJson(json, false, &v, &what)) {
          return error(what.empty() ? "" : "field '" + name + "': " + what);
        }
        types_.Note(f, v);
        row.values.emplace_back(f, std::move(v));
      }
      if (!json.error().empty() || !json.End()) return error("");
      if (!has_key) return Error(number, 1, "no '" + key_column_ + "' member naming the image (--fields-key)");
      return AddRow(std::move(row), key_column);
    });
  }

  const std::string& path_;
  const std::string& key_column_;
  const std::map<std::string, FeatureType>& declared_;
  FieldInference types_;
  std::unordered_set<std::string> keys_;
  std::vector<RawRow> rows_;
};

}  // namespace

Result<uint32_t> FieldInference::Field(const std::string& name, uint64_t line, uint64_t column) {
  auto [it, added] = index_.emplace(name, static_cast<uint32_t>(features_.size()));
  if (added) {
    if (name.empty()) return error_(line, column, "a field has an empty name");
    features_.push_back({.name = name, .type = FeatureType::kString});
    seen_.emplace_back();
  }
  return it->second;
}

void FieldInference::Note(uint32_t f, const RawValue& v) {
  Seen& s = seen_[f];
  const bool was_scalar = s.ints || s.floats || s.strings;
  s.ints |= v.kind == RawValue::kInt;
  s.floats |= v.kind == RawValue::kFloat;
  s.strings |= v.kind == RawValue::kString;
  s.lists |= v.kind == RawValue::kList;
  for (const RawValue::Number& n : v.list) s.list_floats |= !n.is_int;
  if (s.line == 0 && ((s.strings && (s.ints || s.floats)) || (s.lists && was_scalar) ||
                      (s.lists && v.kind != RawValue::kList && v.kind != RawValue::kMissing))) {
    s.line = v.line;
    s.column = v.column;
  }
}

Status FieldInference::Infer() {
  for (const auto& [name, type] : declared_) {
    if (!index_.count(name)) return Status::InvalidArgument("--field-type names '" + name + "', which is not a field");
  }
  for (size_t f = 0; f < features_.size(); ++f) {
    const Seen& s = seen_[f];
    const auto user = declared_.find(features_[f].name);
    const auto fallback = defaults_.find(features_[f].name);
    if (user != declared_.end() || fallback != defaults_.end()) {
      features_[f].type = user != declared_.end() ? user->second : fallback->second;
      continue;
    }
    if (s.line != 0) {
      return error_(s.line, s.column,
                    "field '" + features_[f].name + "' holds values of different kinds (declare it with --field-type)");
    }
    const FeatureType real = float32_ ? FeatureType::kFloat32 : FeatureType::kFloat64;
    const FeatureType real_list = float32_ ? FeatureType::kFloat32List : FeatureType::kFloat64List;
    features_[f].type = s.lists     ? (s.list_floats ? real_list : FeatureType::kIdList)
                        : s.strings ? FeatureType::kString
                        : s.floats  ? real
                        : s.ints    ? FeatureType::kInt64
                                    : FeatureType::kString;
  }
  return Status::OK();
}

bool FieldInference::ParseJson(JsonCursor& json, bool keep_json, RawValue* v, std::string* error) {
  JsonNumber n;
  JsonCursor::Kind k;
  const size_t start = json.position();
  switch (json.Peek()) {
    case JsonCursor::Kind::kNumber:
      if (!json.Number(&n)) return false;
      v->kind = n.is_int ? RawValue::kInt : RawValue::kFloat;
      v->i = n.i;
      v->d = n.d;
      v->exact = n.exact;
      return true;
    case JsonCursor::Kind::kString:
      v->kind = RawValue::kString;
      return json.String(&v->s);
    case JsonCursor::Kind::kTrue:
    case JsonCursor::Kind::kFalse:
    case JsonCursor::Kind::kNull:
      if (!json.Literal(&k)) return false;
      v->kind = k == JsonCursor::Kind::kNull ? RawValue::kMissing : RawValue::kInt;
      v->i = k == JsonCursor::Kind::kTrue ? 1 : 0;
      return true;
    default:
      break;
  }
  if (json.Peek() == JsonCursor::Kind::kArray) {
    // Arrays of numbers are lists; with keep_json, other arrays are text.
    JsonCursor probe = json;
    bool done, numbers = probe.BeginArray();
    std::vector<RawValue::Number> list;
    while (numbers && probe.NextElement(&done) && !done) {
      if (probe.Peek() != JsonCursor::Kind::kNumber || !probe.Number(&n)) {
        numbers = false;
        break;
      }
      list.push_back({n.is_int, n.i, n.d, n.exact});
    }
    if (numbers && probe.error().empty()) {
      json = probe;
      v->kind = RawValue::kList;
      v->list = std::move(list);
      return true;
    }
    if (!keep_json) {
      *error = "a list field holds only numbers";
      return false;
    }
  } else if (!keep_json || json.Peek() != JsonCursor::Kind::kObject) {
    *error = "expected a number, string, boolean, null or array of numbers";
    return false;
  }
  if (!json.SkipValue()) return false;
  v->kind = RawValue::kString;
  v->s.assign(json.text().substr(start, json.position() - start));
  const size_t first = v->s.find_first_not_of(" \t\r\n");
  v->s.erase(0, first == std::string::npos ? v->s.size() : first);
  return true;
}

Result<FieldValue> FieldInference::Convert(uint32_t f, RawValue raw) const {
  const FeatureInfo& info = features_[f];
  FieldValue v{.field = f};
  auto wrong = [&](const std::string& want) {
    return error_(raw.line, raw.column,
                  "field '" + info.name + "' is " + FeatureTypeName(info.type) + ": expected " + want);
  };
  auto inexact = [&]() {
    return error_(raw.line, raw.column,
                  "field '" + info.name + "': integer has no exact double in a " + FeatureTypeName(info.type) +
                      " field (declare it float32 to round)");
  };
  switch (info.type) {
    case FeatureType::kInt64:
      if (raw.kind != RawValue::kInt) return wrong("an integer");
      v.i = raw.i;
      return v;
    case FeatureType::kFloat32:
    case FeatureType::kFloat64:
      if (raw.kind == RawValue::kInt) {
        if (info.type == FeatureType::kFloat64 && !ExactDouble(raw.i)) return inexact();
        v.d = static_cast<double>(raw.i);
        return v;
      }
      if (raw.kind != RawValue::kFloat) return wrong("a number");
      if (info.type == FeatureType::kFloat64 && !raw.exact) return inexact();
      v.d = raw.d;
      return v;
    case FeatureType::kString:
    case FeatureType::kBytes:
      if (raw.kind == RawValue::kList || (raw.s.empty() && raw.kind != RawValue::kString)) return wrong("a string");
      if (raw.s.size() > UINT32_MAX) return wrong("a value below 4 GiB");
      v.s = std::move(raw.s);
      return v;
    case FeatureType::kIdList:
      if (raw.kind != RawValue::kList) return wrong("an array of integers");
      for (const RawValue::Number& n : raw.list) {
        if (!n.is_int) return wrong("an array of integers");
        v.ids.push_back(n.i);
      }
      return v;
    case FeatureType::kFloat32List:
    case FeatureType::kFloat64List:
      if (raw.kind != RawValue::kList) return wrong("an array of numbers");
      for (const RawValue::Number& n : raw.list) {
        if (info.type == FeatureType::kFloat64List && !(n.is_int ? ExactDouble(n.i) : n.exact)) return inexact();
        v.floats.push_back(n.d);
      }
      return v;
    default:
      return wrong("a type fields do not take");
  }
}

Status AppendFieldRow(const TableSchema& schema, const FieldRow& row, uint32_t row_number,
                      std::vector<FeatureStreams>* streams) {
  for (const FieldValue& v : row) {
    const FeatureType type = schema.features[v.field].type;
    FeatureStreams& fs = (*streams)[v.field];
    if (!fs.rows.empty() && fs.rows.back() >= row_number) {
      return Status::InvalidArgument("field '" + schema.features[v.field].name + "' given twice for one image");
    }
    switch (type) {
      case FeatureType::kInt64:
        fs.AddInt64(row_number, v.i);
        break;
      case FeatureType::kFloat32:
      case FeatureType::kFloat64:
        fs.AddFloat(type, row_number, v.d);
        break;
      case FeatureType::kString:
      case FeatureType::kBytes:
        fs.AddString(row_number, v.s);
        break;
      case FeatureType::kFloat32List:
      case FeatureType::kFloat64List:
        fs.AddFloatList(type, row_number, v.floats);
        break;
      default:
        fs.AddIdList(type, row_number, v.ids, {});
        break;
    }
  }
  return Status::OK();
}

Result<FeatureType> ParseFieldType(const std::string& name) {
  FeatureType t;
  if (!ParseFeatureTypeName(name, &t) || t == FeatureType::kScoredIdList32 || t == FeatureType::kScoredIdList64 ||
      static_cast<uint8_t>(t) > kMaxFeatureType05) {
    return Status::InvalidArgument("unknown field type '" + name +
                                   "' (int64, float64, float32, string, bytes, id_list, float32_list, float64_list)");
  }
  return t;
}

uint64_t FieldsChecksum(const FieldsFile& fields, const std::vector<std::string>& stream_order) {
  Bytes b;
  EncodeTableSchema(fields.schema, &b);
  PutVarint64(&b, stream_order.size());
  for (const std::string& name : stream_order) PutLengthPrefixed(&b, name);
  for (const std::string& key : fields.keys) {
    PutLengthPrefixed(&b, key);
    const FieldRow& row = fields.rows.at(key);
    PutVarint64(&b, row.size());
    for (const FieldValue& v : row) {
      PutVarint64(&b, v.field);
      PutFixed64(&b, static_cast<uint64_t>(v.i));
      PutFixed64(&b, std::bit_cast<uint64_t>(v.d));
      PutLengthPrefixed(&b, v.s);
      PutVarint64(&b, v.ids.size());
      for (const int64_t id : v.ids) PutFixed64(&b, static_cast<uint64_t>(id));
      PutVarint64(&b, v.floats.size());
      for (const double d : v.floats) PutFixed64(&b, std::bit_cast<uint64_t>(d));
    }
  }
  return Checksum64(b);
}

Result<FieldsFile> ReadFieldsFile(const std::string& path, const std::string& key_column,
                                  const std::map<std::string, FeatureType>& declared, bool float32) {
  return FieldsReader(path, key_column, declared, float32).Read();
}

}  // namespace pcr
