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
  std::vector<std::pair<uint32_t, ColumnValue>> values;
};

bool ExactDouble(int64_t i) {
  const double d = static_cast<double>(i);
  return IntegerLiteralIsExact(std::to_string(i), d);
}

class FieldsReader {
 public:
  FieldsReader(const std::string& path, const std::string& key_column,
               const std::map<std::string, FeatureType>& declared, bool float32, const RemoteOptions& remote,
               const OptionNames& names)
      : path_(path),
        remote_(remote),
        key_column_(key_column),
        declared_(declared),
        names_(names),
        types_(declared, float32, names, [this](uint64_t line, uint64_t column, const std::string& what) {
          return Error(line, column, what);
        }) {}

  Result<FieldsFile> Read() {
    PCR_ASSIGN_OR_RETURN(auto in, MappedInput::Open(path_, remote_));
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
        if (raw.kind == ColumnValue::kNull) continue;
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
      list[c] = declared != declared_.end() && IsColumnListType(declared->second);
    }
    if (key == SIZE_MAX) {
      return Status::InvalidArgument(path_ + ": no '" + key_column_ + "' column naming each image (" + names_(Option::kFieldsKey) + ")");
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
        ColumnValue v{.line = cells[c].line, .column = cells[c].column};
        if (!cells[c].missing()) PCR_RETURN_IF_ERROR(CsvValue(field_of[c], list[c], cells[c], &v));
        row.values.emplace_back(field_of[c], std::move(v));
      }
      PCR_RETURN_IF_ERROR(AddRow(std::move(row), cells[key].column));
    }
    return Status::OK();
  }

  // A cell as a value: a JSON array of numbers in a list field, else a
  // number or string.
  Status CsvValue(uint32_t f, bool list, const CsvCell& cell, ColumnValue* v) {
    if (list) {
      v->s = cell.text;
      JsonCursor json(cell.text);
      std::string error;
      if (json.Peek() != JsonCursor::Kind::kArray || !ParseJsonValue(json, false, v, &error) || !json.End()) {
        return Error(cell.line, cell.column,
                     "field '" + types_.features()[f].name + "': " + (error.empty() ? json.error() : error) +
                         " (a list cell is a JSON array of numbers)");
      }
      types_.Note(f, *v);
    } else {
      *v = CellValue(cell.text, false, cell.line, cell.column);
      types_.NoteCell(f, *v);
    }
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
        ColumnValue v{.line = number, .column = column};
        std::string what;
        if (!ParseJsonValue(json, false, &v, &what)) {
          return error(what.empty() ? "" : "field '" + name + "': " + what);
        }
        types_.Note(f, v);
        row.values.emplace_back(f, std::move(v));
      }
      if (!json.error().empty() || !json.End()) return error("");
      if (!has_key) return Error(number, 1, "no '" + key_column_ + "' member naming the image (" + names_(Option::kFieldsKey) + ")");
      return AddRow(std::move(row), key_column);
    });
  }

  const std::string& path_;
  const RemoteOptions& remote_;
  const std::string& key_column_;
  const std::map<std::string, FeatureType>& declared_;
  const OptionNames& names_;
  FieldInference types_;
  std::unordered_set<std::string> keys_;
  std::vector<RawRow> rows_;
};

}  // namespace

Result<uint32_t> FieldInference::Field(const std::string& name, uint64_t line, uint64_t column) {
  auto [it, added] = index_.emplace(name, static_cast<uint32_t>(features_.size()));
  if (added) {
    if (name.empty()) return naming_.error(line, column, "a field has an empty name");
    features_.push_back({.name = name, .type = FeatureType::kString});
    votes_.emplace_back(rules_.typed);
    cells_.push_back(false);
  }
  return it->second;
}

void FieldInference::NoteCell(uint32_t f, const ColumnValue& cell) {
  votes_[f].NoteCell(cell);
  cells_[f] = true;
}

Status FieldInference::Infer() {
  for (const auto& [name, type] : declared_) {
    if (!index_.count(name)) {
      return Status::InvalidArgument(naming_.Name(Option::kFieldType) + " names '" + name + "', which is not a field");
    }
  }
  for (size_t f = 0; f < features_.size(); ++f) {
    const auto user = declared_.find(features_[f].name);
    const auto fallback = defaults_.find(features_[f].name);
    if (user != declared_.end() || fallback != defaults_.end()) {
      features_[f].type = user != declared_.end() ? user->second : fallback->second;
      continue;
    }
    const std::string& name = features_[f].name;
    PCR_ASSIGN_OR_RETURN(features_[f].type, cells_[f] ? votes_[f].CellsType(rules_, naming_, name)
                                                      : votes_[f].ValuesType(rules_, naming_, name));
  }
  return Status::OK();
}

Result<FieldValue> FieldInference::Convert(uint32_t f, ColumnValue raw) const {
  const FeatureInfo& info = features_[f];
  FieldValue v{.field = f};
  auto wrong = [&](const std::string& want) {
    return naming_.error(raw.line, raw.column,
                  "field '" + info.name + "' is " + FeatureTypeName(info.type) + ": expected " + want);
  };
  auto inexact = [&]() {
    return naming_.error(raw.line, raw.column,
                  "field '" + info.name + "': integer has no exact double in a " + FeatureTypeName(info.type) +
                      " field (declare it float32 to round)");
  };
  const bool is_int = raw.kind == ColumnValue::kInt || raw.kind == ColumnValue::kBool;  // booleans are 0 and 1
  switch (info.type) {
    case FeatureType::kInt64:
      if (!is_int) return wrong("an integer");
      v.i = raw.i;
      return v;
    case FeatureType::kFloat32:
    case FeatureType::kFloat64:
      if (is_int) {
        if (info.type == FeatureType::kFloat64 && !ExactDouble(raw.i)) return inexact();
        v.d = static_cast<double>(raw.i);
        return v;
      }
      if (raw.kind != ColumnValue::kFloat) return wrong("a number");
      if (info.type == FeatureType::kFloat64 && !raw.exact) return inexact();
      v.d = raw.d;
      return v;
    case FeatureType::kString:
    case FeatureType::kBytes:
      if (raw.kind == ColumnValue::kList || (raw.s.empty() && raw.kind != ColumnValue::kString)) return wrong("a string");
      if (raw.s.size() > UINT32_MAX) return wrong("a value below 4 GiB");
      v.s = std::move(raw.s);
      return v;
    case FeatureType::kIdList:
      if (raw.kind != ColumnValue::kList || !raw.list.all_int) return wrong("an array of integers");
      v.ids = std::move(raw.list.ints);
      return v;
    case FeatureType::kFloat32List:
    case FeatureType::kFloat64List:
      if (raw.kind != ColumnValue::kList) return wrong("an array of numbers");
      if (info.type == FeatureType::kFloat64List && !raw.list.exact) return inexact();
      v.floats = std::move(raw.list.values);
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
                                  const std::map<std::string, FeatureType>& declared, bool float32,
                                  const RemoteOptions& remote, const OptionNames& names) {
  return FieldsReader(path, key_column, declared, float32, remote, names).Read();
}

}  // namespace pcr
