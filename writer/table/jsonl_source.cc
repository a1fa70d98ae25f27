// The JSON Lines source of a table conversion, rows of columns and of the
// map features "dense", "sparse" and "scored": its three passes over a
// shard's rows (survey, plan, write).
#include <algorithm>
#include <unordered_map>

#include "format/json.h"
#include "writer/table/passes.h"
#include "writer/table/type_inference.h"
#include "writer/table/values.h"
#include "writer/table_writer.h"
#include "writer/text_input.h"

namespace pcr::table {

namespace {

// What one row holds, in the order of its text.
struct JsonRow {
  struct Item {
    MapKind map = MapKind::kColumn;
    std::string key;  // column name, or the feature id as written
    int64_t id = 0;
    uint64_t column = 0;
    ColumnValue value;             // columns and dense features
    std::vector<int64_t> ids;    // sparse and scored features
    std::vector<double> scores;  // scored features

    // Frees the buffers over kKeptBufferCapacity that a huge value left.
    void FreeHuge() {
      FreeIfHuge(&value.s);
      FreeIfHuge(&value.text);
      FreeIfHuge(&value.list.values);
      FreeIfHuge(&value.list.ints);
      FreeIfHuge(&ids);
      FreeIfHuge(&scores);
    }
  };
  std::vector<Item> items;
  size_t count = 0;

  // Before a row is stored: huge values are not held while stripes are written.
  void FreeHuge() {
    for (Item& item : items) item.FreeHuge();
  }
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
    item.FreeHuge();
    item.map = map;
    item.key = key;
    json.Peek();
    item.column = json.position() + 1;
    item.value.line = line_;
    item.value.column = item.column;
    item.value.kind = ColumnValue::kNull;
    item.ids.clear();
    item.scores.clear();
    return item;
  }

  Status Error(JsonCursor& json, const std::string& what = "") {
    return InputError(input_, line_, json.position() + 1, what.empty() ? json.error() : what);
  }

  Status Scalar(JsonCursor& json, const std::string& what, ColumnValue* v) {
    std::string why;
    if (!ParseJsonValue(json, false, v, &why)) return Error(json, why.empty() ? "" : what + ": " + why);
    return Status::OK();
  }

  // An id: an integer literal of int64, or above int64 one of uint64 (in
  // sparse features only, whose `list` notes the kinds of its ids).
  Status Id(JsonCursor& json, const std::string& what, int64_t* id, NumberList* list) {
    JsonNumber n;
    if (json.Peek() != JsonCursor::Kind::kNumber) return Error(json, what + ": expected an integer id");
    const size_t at = json.position();
    if (!json.Number(&n)) return Error(json);
    uint64_t u = 0;
    const bool big = !n.is_int && ParseBigUInt64(json.text().substr(at, json.position() - at), &u);
    if (!n.is_int && !(big && list)) {
      return InputError(input_, line_, at + 1,
                        what + (big ? ": id is above int64 (scored features hold int64 ids)"
                                    : ": id is not an integer of int64 or uint64"));
    }
    *id = big ? static_cast<int64_t>(u) : n.i;
    if (list) {
      list->all_int &= !big;
      list->all_uint64 &= big || n.i >= 0;
    }
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
    const size_t start = json.position();
    if (!json.BeginArray()) return Error(json);
    NumberList& list = item->value.list;
    list.Clear();
    while (json.NextElement(&done) && !done) {
      int64_t id;
      if (map == MapKind::kSparse) {
        PCR_RETURN_IF_ERROR(Id(json, what, &id, &list));
        item->ids.push_back(id);
        continue;
      }
      bool pair_done;
      if (json.Peek() != JsonCursor::Kind::kArray) return Error(json, what + ": expected an [id, score] pair");
      if (!json.BeginArray() || !json.NextElement(&pair_done) || pair_done) {
        return Error(json, what + ": expected an [id, score] pair");
      }
      PCR_RETURN_IF_ERROR(Id(json, what, &id, nullptr));
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
    if (map == MapKind::kSparse) {  // votes for its type, as a column's list
      item->value.kind = ColumnValue::kList;
      item->value.text = json.text().substr(start, json.position() - start);
    }
    return Status::OK();
  }

  const std::string& input_;
  uint64_t line_ = 0;
};

const char* MapName(MapKind map) {
  return map == MapKind::kDense ? "dense" : map == MapKind::kSparse ? "sparse" : map == MapKind::kScored ? "scored" : "";
}

// The type of a map feature: declared for the feature (by its id) or for its
// map, else the map's default (for sparse features, PlanJsonl infers it).
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
  if (map == MapKind::kSparse && (t == FeatureType::kIdList || t == FeatureType::kUInt64IdList)) return t;
  if (map == MapKind::kScored) {
    if (t == FeatureType::kFloat32 || t == FeatureType::kScoredIdList32) return FeatureType::kScoredIdList32;
    if (t == FeatureType::kFloat64 || t == FeatureType::kScoredIdList64) return FeatureType::kScoredIdList64;
  }
  return Status::InvalidArgument(std::string(MapName(map)) + " feature " + name + " declared " + FeatureTypeName(t) +
                                 ": dense features are float32 or float64, sparse ones id_list or uint64_id_list, and scored ones "
                                 "float32 or float64 (their scores' type)");
}

std::string FeatureName(const JsonRow::Item& item) {
  return item.map == MapKind::kColumn ? item.key : std::to_string(item.id);
}

}  // namespace

// A feature that is a column in one row and a map's feature in another, or
// of two maps.
Status MapConflict(const std::string& input, const std::string& name, MapKind was, MapKind now, uint64_t line,
                   uint64_t column) {
  auto kind = [](MapKind m) {
    return m == MapKind::kColumn ? std::string("a column") : std::string("a ") + MapName(m) + " feature";
  };
  return InputError(input, line, column, "feature '" + name + "' appears both as " + kind(was) + " and here as " +
                                             kind(now));
}

// Pass 1 over a shard of JSON Lines: its features in order of first
// appearance and what their values are.
Status SurveyJsonl(const TableConvertOptions& options, const MappedInput& in, ByteRange range,
                   std::optional<uint64_t> start, uint64_t line, ShardSurvey* survey) {
  const std::string& input = options.input;
  const std::string_view text = in.text();
  JsonlParser parser(input);
  JsonRow row;
  std::unordered_map<std::string, size_t> by_name;
  std::vector<uint64_t> last_line;
  std::vector<ColumnVotes> votes;
  FindStart(text, range, text.starts_with(kByteOrderMark) ? kByteOrderMark.size() : 0, start, false, survey);
  survey->start_line = line;
  size_t next = 0;
  ReleaseBehind behind(in, survey->start);
  Status error = ForEachJsonLineIn(text, survey->start, range.end, line, [&](std::string_view text, uint64_t number,
                                                                              size_t offset) -> Status {
    PCR_RETURN_IF_ERROR(parser.ParseLine(text, number, &row));
    behind.At(offset + text.size());
    ++survey->rows;
    for (size_t k = 0; k < row.count; ++k) {
      const JsonRow::Item& item = row.items[k];
      if (item.map == MapKind::kDense && item.value.kind == ColumnValue::kNull) continue;
      const std::string name = FeatureName(item);
      auto [it, added] = by_name.emplace(name, survey->features.size());
      if (added) {
        PCR_RETURN_IF_ERROR(CheckName(input, number, item.column, name));
        survey->features.push_back({.name = name, .map = item.map, .id = item.id, .line = number, .column = item.column});
        last_line.push_back(0);
        votes.emplace_back();
      }
      SurveyedFeature& f = survey->features[it->second];
      if (f.map != item.map) return MapConflict(input, name, f.map, item.map, number, item.column);
      if (last_line[it->second] == number) {
        return InputError(input, number, item.column,
                          "feature '" + name + "' appears twice in the row: a row holds each feature once");
      }
      last_line[it->second] = number;
      if (item.map == MapKind::kColumn || item.map == MapKind::kSparse) votes[it->second].NoteValue(item.value);
    }
    return Status::OK();
  }, &next);
  survey->stop = error.ok() ? next : 0;
  survey->lines = LineBreaks(false, text, survey->start, survey->stop);
  survey->error = error.message();
  for (size_t f = 0; f < votes.size(); ++f) survey->features[f].votes = votes[f].counts();
  return Status::OK();
}

// The types of JSON Lines features: a map's by its map (or declared per
// feature or per map), a column's declared or what its values are.
Status PlanJsonl(const TableConvertOptions& options, const std::map<std::string, FeatureType>& declared,
                 std::vector<SurveyedFeature> state, TableConversionPlan* plan) {
  const InferenceRules rules = Rules(options);
  const ColumnNaming naming = Naming(options);
  // A declared column that no row has is kept, typed and without values, so
  // that files converted with one schema have the same features.
  for (const auto& [name, type] : declared) {
    if (name == "dense" || name == "sparse" || name == "scored" ||
        std::any_of(state.begin(), state.end(), [&name = name](const SurveyedFeature& f) { return f.name == name; })) {
      continue;
    }
    state.push_back({.name = name});
    plan->notes.push_back("column '" + name + "' is declared but no row has it: stored as " +
                          FeatureTypeName(type) + " without values");
  }
  for (const SurveyedFeature& st : state) {
    FeatureInfo info{.name = st.name, .has_id = st.map != MapKind::kColumn, .id = st.id};
    const ColumnVotes votes(st.votes);
    const auto d = declared.find(info.name);
    if (st.map == MapKind::kSparse && d == declared.end() && !declared.count("sparse")) {
      // Ids of int64, or of uint64 where one is above int64.
      ColumnNaming sparse = naming;
      sparse.noun = "sparse feature";
      sparse.text = false;
      PCR_ASSIGN_OR_RETURN(info.type, votes.ValuesType(rules, sparse, info.name));
    } else if (st.map != MapKind::kColumn) {
      PCR_ASSIGN_OR_RETURN(info.type, MapFeatureType(st.map, info.name, declared, options.float32));
    } else if (d != declared.end()) {
      if (!IsScalarType(d->second) && d->second != FeatureType::kString && d->second != FeatureType::kBytes &&
          !IsColumnListType(d->second)) {
        return Status::InvalidArgument("column '" + info.name + "' declared " + FeatureTypeName(d->second) +
                                       ": a JSON Lines column is bool, int64, uint64, float32, float64, timestamp, "
                                       "string, bytes, id_list, uint64_id_list, float32_list or float64_list");
      }
      info.type = d->second;
    } else if (options.strings) {
      info.type = FeatureType::kString;
    } else {
      PCR_ASSIGN_OR_RETURN(info.type, votes.ValuesType(rules, naming, info.name));
      if (votes.present() == 0) {
        plan->notes.push_back("column '" + info.name + "' has only nulls: stored as string (" +
                              naming.Declare(info.name, "TYPE") + " declares another type)");
      }
    }
    plan->features.push_back(std::move(info));
    plan->maps.push_back(st.map);
    plan->first_float.push_back(votes.first_float());
  }
  return Status::OK();
}

// Pass 2 over a shard of JSON Lines: its rows into `writer`.
Status WriteJsonl(const TableConvertOptions& options, const std::map<std::string, FeatureType>& declared,
                  const TableConversionPlan& plan, const TableConversionPlan::Shard& shard, const MappedInput& in,
                  TableFileWriter* writer, MissingNotes* dropped) {
  const std::string& input = options.input;
  const OptionNames& names = *options.option_names;
  const std::vector<FeatureInfo>& features = plan.features;
  std::unordered_map<std::string, size_t> by_name;
  for (size_t f = 0; f < features.size(); ++f) by_name.emplace(features[f].name, f);
  JsonlParser parser(input);
  JsonRow row;
  std::string json_text;
  std::string_view s;
  SplitCuts cuts(plan.split_bytes, shard.start);
  ReleaseBehind behind(in, shard.start);
  return ForEachJsonLineIn(in.text(), shard.start, shard.stop, shard.line, [&](std::string_view line,
                                                                                uint64_t number, size_t offset) -> Status {
    PCR_RETURN_IF_ERROR(cuts.AtRow(writer, offset));
    PCR_RETURN_IF_ERROR(parser.ParseLine(line, number, &row));
    behind.At(offset + line.size());
    for (size_t k = 0; k < row.count; ++k) {
      const JsonRow::Item& item = row.items[k];
      if (item.value.kind == ColumnValue::kNull && (item.map == MapKind::kColumn || item.map == MapKind::kDense)) {
        continue;
      }
      const auto known = by_name.find(FeatureName(item));
      if (known == by_name.end() || plan.maps[known->second] != item.map) {
        return InputError(input, number, item.column, "the input changed since its first pass: convert again");
      }
      const size_t f = known->second;
      const FeatureInfo& info = features[f];
      if (item.map == MapKind::kSparse || item.map == MapKind::kScored) {
        if (item.map == MapKind::kScored ||
            (info.type == FeatureType::kIdList ? item.value.list.all_int : item.value.list.all_uint64)) {
          writer->AddIdList(f, item.ids, item.scores);
          continue;
        }
        if (options.on_bad_value == BadValue::kMissing) {
          dropped->Add(f, number, item.column, item.value.text);
          continue;
        }
        return InputError(input, number, item.column,
                          Shown(item.value.text) + " in sparse feature " + item.key + " is not " +
                              ListMismatch(names, info.type, &item.value.list, "", "an array", info.name, "values",
                                           "the feature"));
      }
      const std::string what = item.map == MapKind::kColumn ? "column '" + item.key + "'" : "dense feature " + item.key;
      const char* whose = item.map == MapKind::kColumn ? "the column" : "the feature";
      if (IsColumnListType(info.type)) {
        std::string unfit;
        if (item.value.kind == ColumnValue::kList && WriteList(writer, f, info.type, item.value.list, &unfit)) {
          continue;
        }
        if (options.on_bad_value == BadValue::kMissing) {
          dropped->Add(f, number, item.column, JsonText(item.value));
          continue;
        }
        return InputError(input, number, item.column,
                          Shown(JsonText(item.value)) + " in " + what + " is not " +
                              ListMismatch(names, info.type,
                                           item.value.kind == ColumnValue::kList ? &item.value.list : nullptr, unfit,
                                           "an array", info.name, "values"));
      }
      int64_t i = 0;
      double d = 0;
      const bool lenient = declared.count(info.name) != 0 || options.strings;
      if (!JsonCell(info.type, item.value, lenient, &i, &d, &json_text, &s)) {
        if (options.on_bad_value == BadValue::kMissing) {
          dropped->Add(f, number, item.column, JsonText(item.value));
          continue;
        }
        return InputError(input, number, item.column,
                          Shown(JsonText(item.value)) + " in " + what + " " +
                              (info.type == FeatureType::kString || info.type == FeatureType::kBytes
                                   ? std::string("is not a string")
                                   : WhyNot(info.type, item.value.kind == ColumnValue::kString ? item.value.s
                                                                                                 : item.value.text)) +
                              " (" + whose + " is " +
                              FeatureTypeName(info.type) + "): pass " + names(Option::kOnBadValueMissing) +
                              " to store such values as missing, or declare another type with " +
                              names(Option::kColumnType, {info.name, "TYPE"}));
      }
      if (info.type == FeatureType::kString || info.type == FeatureType::kBytes) {
        if (const std::string why = info.type == FeatureType::kString ? NotUtf8(s) : ""; !why.empty()) {
          if (options.on_bad_value == BadValue::kMissing) {
            dropped->Add(f, number, item.column, Shown(JsonText(item.value)));
            continue;
          }
          return InputError(input, number, item.column,
                            Shown(JsonText(item.value)) + " in " + what + " " + why + " (" + whose + " is string): "
                            "declare " + names(Option::kColumnType, {info.name, "bytes"}) +
                            " to keep its bytes, or pass " + names(Option::kOnBadValueMissing) +
                            " to store such values as missing");
        }
        writer->AddString(f, s);
        continue;
      }
      if (info.type == FeatureType::kFloat64 && !item.value.exact) {
        if (options.on_bad_value == BadValue::kMissing) {
          dropped->Add(f, number, item.column, std::string(item.value.text));
          continue;
        }
        const std::string why = what + FloatBecause(plan.first_float[f], number, item.column);
        return InexactInteger(input, number, item.column, item.value.text, why,
                              item.map == MapKind::kColumn
                                  ? "declare " + names(Option::kColumnType, {info.name, "string"}) +
                                        " to keep every digit, or pass " + names(Option::kOnBadValueMissing) +
                                        " to store such values as missing"
                                  : "dense values are floats: keep such a value in a column declared string or "
                                    "uint64, or pass " + names(Option::kOnBadValueMissing) + " to store it as missing");
      }
      Write(writer, f, info.type, i, d);
    }
    row.FreeHuge();
    return writer->EndRow();
  }, nullptr);
}

}  // namespace pcr::table
