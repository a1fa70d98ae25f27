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
#include "io/pcr_file.h"
#include "io/read_executor.h"
#include "writer/file_writer.h"
#include "writer/text_input.h"

namespace pcr {

namespace {

namespace fs = std::filesystem;

FeatureType FloatType(bool float32) { return float32 ? FeatureType::kFloat32 : FeatureType::kFloat64; }

Status CheckCellCount(const std::string& input, const CsvReader& csv, const std::vector<CsvCell>& cells,
                      size_t count, size_t want) {
  if (count == want) return Status::OK();
  const CsvCell& at = cells[std::min(count, want) - 1];
  return InputError(input, csv.record_line(), at.column,
                    "row has " + std::to_string(count) + " cells, the header " + std::to_string(want));
}

Status ConvertCsv(const TableConvertOptions& options, std::string_view text, const std::string& out_path,
                  TableConvertReport* report) {
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
  for (const auto& [name, type] : options.column_types) {
    if (!names.count(name)) return Status::InvalidArgument(input + ": --column-type names '" + name + "', not a column");
    if (type != FeatureType::kInt64 && type != FeatureType::kFloat64 && type != FeatureType::kFloat32 &&
        type != FeatureType::kString) {
      return Status::InvalidArgument("--column-type " + name + ": a CSV column is int64, float64, float32 or string");
    }
  }

  // Pass 1: the narrowest type holding every present cell of each column.
  // A column of numbers with fewer than 1% other cells is numeric, those
  // cells bad values; with more, it is a string column.
  struct Where {
    uint64_t line = 0, column = 0;
    std::string text;
  };
  struct Seen {
    uint64_t present = 0, numbers = 0, ints = 0;
    std::optional<Where> first_float;  // the first number that is not an int64
    std::optional<Where> first_other;  // the first cell that is not a number
  };
  std::vector<Seen> seen(columns);
  {
    CsvReader csv = header;
    while (true) {
      PCR_ASSIGN_OR_RETURN(const bool more, csv.Next(&cells, &count));
      if (!more) break;
      PCR_RETURN_IF_ERROR(CheckCellCount(input, csv, cells, count, columns));
      for (size_t c = 0; c < columns; ++c) {
        if (cells[c].missing()) continue;
        Seen& s = seen[c];
        s.present++;
        int64_t i;
        double d;
        if (ParseInt(cells[c].text, &i)) {
          s.ints++;
          s.numbers++;
        } else if (ParseFloat(cells[c].text, &d)) {
          s.numbers++;
          if (!s.first_float) s.first_float = Where{cells[c].line, cells[c].column, cells[c].text};
        } else if (!s.first_other) {
          s.first_other = Where{cells[c].line, cells[c].column, cells[c].text};
        }
      }
    }
  }
  for (size_t c = 0; c < columns; ++c) {
    const Seen& s = seen[c];
    const auto declared = options.column_types.find(features[c].name);
    if (declared != options.column_types.end()) {
      features[c].type = declared->second;
      continue;
    }
    const uint64_t others = s.present - s.numbers;
    if (s.present == 0) {
      report->notes.push_back("column '" + features[c].name + "' has no values: stored as string (--column-type " +
                              features[c].name + "=TYPE declares another type)");
    }
    if (s.present == 0 || others * 100 >= s.present) {
      features[c].type = FeatureType::kString;
      continue;
    }
    features[c].type = s.ints == s.numbers ? FeatureType::kInt64 : FloatType(options.float32);
    if (others > 0 && options.on_bad_value == BadValue::kError) {
      const Where& w = *s.first_other;
      return InputError(input, w.line, w.column,
                        "'" + w.text + "' in column '" + features[c].name + "' is not a number, and its " +
                            std::to_string(s.numbers) + " other values are: declare --column-type " +
                            features[c].name + "=string to keep it as text, or pass --on-bad-value missing to " +
                            "store such cells as missing (" + std::to_string(others) + " in this column)");
    }
  }

  // Pass 2: write.
  PCR_ASSIGN_OR_RETURN(auto writer, TableFileWriter::Create(out_path, features, options.writer));
  CsvReader csv = header;
  while (true) {
    PCR_ASSIGN_OR_RETURN(const bool more, csv.Next(&cells, &count));
    if (!more) break;
    for (size_t c = 0; c < columns; ++c) {
      if (cells[c].missing()) continue;
      const std::string& t = cells[c].text;
      int64_t i = 0;
      double d = 0;
      const FeatureType type = features[c].type;
      if (type == FeatureType::kString) {
        writer->AddString(c, t);
        continue;
      }
      const bool fits = type == FeatureType::kInt64 ? ParseInt(t, &i) : ParseFloat(t, &d);
      if (!fits) {
        if (options.on_bad_value == BadValue::kMissing) continue;
        return InputError(input, cells[c].line, cells[c].column,
                          "'" + t + "' in column '" + features[c].name + "' is not " +
                              (type == FeatureType::kInt64 ? "an int64" : "a number") +
                              ", the column's declared type: pass --on-bad-value missing to store such cells "
                              "as missing, or declare another type");
      }
      if (type == FeatureType::kInt64) {
        writer->AddInt64(c, i);
        continue;
      }
      if (type == FeatureType::kFloat64 && IsIntegerLiteral(t) && !IntegerLiteralIsExact(t, d)) {
        std::string why = "column '" + features[c].name + "'";
        if (seen[c].first_float) {
          const Where& w = *seen[c].first_float;
          why += " (float64 because of " + w.text + " at line " + std::to_string(w.line) + ", column " +
                 std::to_string(w.column) + ")";
        }
        return InexactInteger(input, cells[c].line, cells[c].column, t, why,
                              "--column-type " + features[c].name + "=string keeps every digit");
      }
      writer->AddFloat(c, d);
    }
    PCR_RETURN_IF_ERROR(writer->EndRow());
  }
  PCR_ASSIGN_OR_RETURN(report->schema, writer->Finish());
  report->stripes = writer->stripe_count();
  return Status::OK();
}

// ---- JSON Lines with map features ----

enum class MapKind { kColumn, kDense, kSparse, kScored };

struct JsonValue {
  enum Kind { kInt, kFloat, kString, kNull } kind = kNull;
  int64_t i = 0;
  double d = 0;
  bool exact = true;  // d is the number as written
  size_t length = 0;  // of the number's text
  std::string s;
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
        v->length = json.position() - at;
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
        v->kind = k == JsonCursor::Kind::kNull ? JsonValue::kNull : JsonValue::kInt;
        v->i = k == JsonCursor::Kind::kTrue ? 1 : 0;
        v->d = static_cast<double>(v->i);
        return Status::OK();
      default:
        return Error(json, what + ": expected a number, string, boolean or null");
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

struct JsonFeature {
  size_t index = 0;
  uint64_t last_line = 0;
  bool saw_int = false, saw_float = false, saw_string = false;
};

Status ConvertJsonl(const TableConvertOptions& options, std::string_view text, const std::string& out_path,
                    TableConvertReport* report) {
  const std::string& input = options.input;
  JsonlParser parser(input);
  JsonRow row;
  std::vector<FeatureInfo> features;
  std::vector<JsonFeature> state;
  std::unordered_map<std::string, size_t> by_name;
  auto name_of = [](const JsonRow::Item& item) {
    return item.map == MapKind::kColumn ? item.key : std::to_string(item.id);
  };

  // Pass 1: features in order of first appearance, and column types.
  uint64_t rows = 0;
  PCR_RETURN_IF_ERROR(ForEachJsonLine(text, [&](std::string_view line, uint64_t number) -> Status {
    PCR_RETURN_IF_ERROR(parser.ParseLine(line, number, &row));
    ++rows;
    for (size_t k = 0; k < row.count; ++k) {
      const JsonRow::Item& item = row.items[k];
      if (item.map == MapKind::kDense && item.value.kind == JsonValue::kNull) continue;
      if (item.map == MapKind::kColumn && item.value.kind == JsonValue::kNull) {
        if (!by_name.count(item.key)) {
          by_name.emplace(item.key, features.size());
          features.push_back({.name = item.key, .type = FeatureType::kString});
          state.push_back({.index = features.size() - 1});
        }
        state[by_name[item.key]].last_line = number;
        continue;
      }
      const std::string name = name_of(item);
      const FeatureType type = item.map == MapKind::kColumn   ? FeatureType::kString
                               : item.map == MapKind::kDense  ? FloatType(options.float32)
                               : item.map == MapKind::kSparse ? FeatureType::kIdList
                               : options.float32              ? FeatureType::kScoredIdList32
                                                              : FeatureType::kScoredIdList64;
      auto [it, added] = by_name.emplace(name, features.size());
      if (added) {
        features.push_back({.name = name, .type = type, .has_id = item.map != MapKind::kColumn, .id = item.id});
        state.push_back({.index = features.size() - 1});
      }
      FeatureInfo& f = features[it->second];
      JsonFeature& st = state[it->second];
      const bool column = item.map == MapKind::kColumn;
      if (f.has_id == column || (!column && f.type != type)) {
        return InputError(input, number, item.column,
                          "feature '" + name + "' appears both as " +
                              (f.has_id ? std::string("a map feature") : std::string("a column")) +
                              " of another kind and here");
      }
      if (st.last_line == number) {
        return InputError(input, number, item.column, "feature '" + name + "' appears twice in the row");
      }
      st.last_line = number;
      if (!column) continue;
      st.saw_int |= item.value.kind == JsonValue::kInt;
      st.saw_float |= item.value.kind == JsonValue::kFloat;
      st.saw_string |= item.value.kind == JsonValue::kString;
      if (st.saw_string && (st.saw_int || st.saw_float)) {
        return InputError(input, number, item.column, "column '" + name + "' holds both numbers and strings");
      }
      f.type = st.saw_string ? FeatureType::kString
               : st.saw_float ? FloatType(options.float32)
                              : FeatureType::kInt64;
    }
    return Status::OK();
  }));

  if (rows == 0) return Status::InvalidArgument(input + ": empty file, expected one JSON object per line");
  for (size_t f = 0; f < features.size(); ++f) {
    const JsonFeature& st = state[f];
    if (!features[f].has_id && !st.saw_int && !st.saw_float && !st.saw_string) {
      report->notes.push_back("column '" + features[f].name + "' has only nulls: stored as string");
    }
  }

  // Pass 2: write.
  PCR_ASSIGN_OR_RETURN(auto writer, TableFileWriter::Create(out_path, features, options.writer));
  PCR_RETURN_IF_ERROR(ForEachJsonLine(text, [&](std::string_view line, uint64_t number) -> Status {
    PCR_RETURN_IF_ERROR(parser.ParseLine(line, number, &row));
    for (size_t k = 0; k < row.count; ++k) {
      const JsonRow::Item& item = row.items[k];
      if (item.value.kind == JsonValue::kNull && (item.map == MapKind::kColumn || item.map == MapKind::kDense)) {
        continue;
      }
      const size_t f = by_name.at(name_of(item));
      switch (features[f].type) {
        case FeatureType::kInt64:
          writer->AddInt64(f, item.value.i);
          break;
        case FeatureType::kString:
          writer->AddString(f, item.value.s);
          break;
        case FeatureType::kFloat32:
        case FeatureType::kFloat64: {
          const double d = item.value.d;
          const bool exact = item.value.kind == JsonValue::kInt
                                 ? IntegerLiteralIsExact(std::to_string(item.value.i), d)
                                 : item.value.exact;
          if (features[f].type == FeatureType::kFloat64 && !exact) {
            return InexactInteger(input, number, item.column, line.substr(item.column - 1, item.value.length),
                                  (item.map == MapKind::kColumn ? "column '" + item.key + "'"
                                                                : "dense feature " + item.key) +
                                      " (float64 because some value is not an int64)",
                                  "write it as a string to keep every digit");
          }
          writer->AddFloat(f, d);
          break;
        }
        default:
          writer->AddIdList(f, item.ids, item.scores);
          break;
      }
    }
    return writer->EndRow();
  }));
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
  PCR_RETURN_IF_ERROR(csv ? ConvertCsv(options, text, report.path, &report)
                          : ConvertJsonl(options, text, report.path, &report));
  report.output_bytes = fs::file_size(report.path, ec);
  return report;
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
  PCR_ASSIGN_OR_RETURN(const std::string input_file, FindTableFile(input));
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
