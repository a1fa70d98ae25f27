// The CSV (and TSV) source of a table conversion: its three passes over a
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

// A blank line in a CSV of several columns, which can be no row of it, is
// skipped, as pandas and DuckDB skip it; with one column it is a missing cell.
bool BlankLine(const std::vector<CsvCell>& cells, size_t count, size_t columns) {
  return columns > 1 && count == 1 && cells[0].text.empty() && !cells[0].quoted;
}

}  // namespace

// Pass 1 over a shard of a CSV: the header, then the kind of values in each
// column.
Status SurveyCsv(const TableConvertOptions& options, const MappedInput& in, ByteRange range,
               std::optional<uint64_t> start, uint64_t line, ShardSurvey* survey) {
  const std::string& input = options.input;
  const std::string_view text = in.text();
  std::vector<CsvCell> cells;
  size_t count = 0;
  PCR_ASSIGN_OR_RETURN(const char delimiter, CsvDelimiter(options));
  CsvReader header(text, input, text.starts_with(kByteOrderMark) ? kByteOrderMark.size() : 0, 1, delimiter);
  PCR_ASSIGN_OR_RETURN(const bool has_header, header.Next(&cells, &count));
  if (!has_header) return Status::InvalidArgument(input + ": empty file, expected a header row");
  const size_t columns = count;
  std::unordered_map<std::string, size_t> names;
  for (size_t c = 0; c < columns; ++c) {
    if (!names.emplace(cells[c].text, c).second) {
      return InputError(input, cells[c].line, cells[c].column, "duplicate column name '" + Shown(cells[c].text) + "'");
    }
    PCR_RETURN_IF_ERROR(CheckName(input, cells[c].line, cells[c].column, cells[c].text));
    survey->features.push_back({.name = cells[c].text});
  }
  FindStart(text, range, header.pos(), start, true, survey);
  survey->start_line = survey->start == header.pos() ? header.line() : line;
  CsvReader csv(text, input, survey->start, survey->start_line, delimiter);
  ReleaseBehind behind(in, survey->start);
  std::vector<ColumnVotes> votes(columns);
  Status error;
  while (csv.pos() < range.end) {
    Result<bool> more = csv.Next(&cells, &count);
    if (!more.ok() || !*more) {
      error = more.status();
      break;
    }
    behind.At(csv.pos());
    if (BlankLine(cells, count, columns)) continue;
    error = csv.CheckCellCount(cells, count, columns);
    if (!error.ok()) break;
    ++survey->rows;
    for (size_t c = 0; c < columns; ++c) {
      if (!cells[c].missing()) votes[c].NoteCell(cells[c].text, cells[c].line, cells[c].column);
    }
  }
  survey->stop = csv.pos();
  survey->lines = csv.line() - survey->start_line;
  survey->error = error.message();
  for (size_t c = 0; c < columns; ++c) survey->features[c].votes = votes[c].counts();
  return Status::OK();
}

// The types of a CSV's columns: declared, else what most of a column's
// cells are (numbers, bools, times); with no such kind, string.
Status PlanCsv(const TableConvertOptions& options, const std::map<std::string, FeatureType>& declared,
               const std::vector<SurveyedFeature>& columns, TableConversionPlan* plan) {
  const std::string& input = options.input;
  for (const auto& [name, type] : declared) {
    if (std::none_of(columns.begin(), columns.end(), [&name = name](const SurveyedFeature& c) { return c.name == name; })) {
      std::string list;
      for (size_t c = 0; c < std::min<size_t>(columns.size(), 10); ++c) list += (c ? ", " : "") + columns[c].name;
      if (columns.size() > 10) list += ", ... (" + std::to_string(columns.size()) + " columns)";
      return Status::InvalidArgument(input + ": a declared type names '" + name + "', not a column (the columns: " +
                                     list + "): remove it from " + (*options.option_names)(Option::kSchema) + " or " +
                                     (*options.option_names)(Option::kColumnType));
    }
    if (!IsScalarType(type) && type != FeatureType::kString && type != FeatureType::kBytes &&
        !IsColumnListType(type)) {
      return Status::InvalidArgument(std::string("column '") + name + "' declared " + FeatureTypeName(type) +
                                     ": a CSV column is bool, int64, uint64, float32, float64, timestamp, string, "
                                     "bytes, id_list, uint64_id_list, float32_list or float64_list (map features, "
                                     "scored lists "
                                     "among them, are JSON Lines input: pcr-dump cat --format jsonl writes it)");
    }
  }
  const InferenceRules rules = Rules(options);
  const ColumnNaming naming = Naming(options);
  for (const SurveyedFeature& column : columns) {
    const std::string& name = column.name;
    const ColumnVotes votes(column.votes);
    FeatureInfo info{.name = name};
    const auto d = declared.find(name);
    if (d != declared.end()) {
      info.type = d->second;
    } else {
      if (votes.present() == 0) {
        plan->notes.push_back("column '" + name + "' has no values: stored as string (" +
                              naming.Declare(name, "TYPE") + " declares another type)");
      }
      if (options.strings) {
        info.type = FeatureType::kString;
      } else {
        PCR_ASSIGN_OR_RETURN(info.type, votes.CellsType(rules, naming, name));
      }
    }
    plan->features.push_back(std::move(info));
    plan->maps.push_back(MapKind::kColumn);
    plan->first_float.push_back(votes.first_float());
  }
  return Status::OK();
}

// Pass 2 over a shard of a CSV: its rows into `writer`.
Status WriteCsv(const TableConvertOptions& options, const std::map<std::string, FeatureType>& declared,
                const TableConversionPlan& plan, const TableConversionPlan::Shard& shard, const MappedInput& in,
                TableFileWriter* writer, MissingNotes* dropped) {
  const std::string& input = options.input;
  const OptionNames& names = *options.option_names;
  const std::vector<FeatureInfo>& features = plan.features;
  const size_t columns = features.size();
  std::vector<CsvCell> cells;
  size_t count = 0;
  NumberList list;
  SplitCuts cuts(plan.split_bytes, shard.start);
  PCR_ASSIGN_OR_RETURN(const char delimiter, CsvDelimiter(options));
  CsvReader csv(in.text(), input, shard.start, shard.line, delimiter);
  ReleaseBehind behind(in, shard.start);
  while (csv.pos() < shard.stop) {
    PCR_RETURN_IF_ERROR(cuts.AtRow(writer, csv.pos()));
    PCR_ASSIGN_OR_RETURN(const bool more, csv.Next(&cells, &count));
    if (!more) break;
    behind.At(csv.pos());
    if (BlankLine(cells, count, columns)) continue;
    PCR_RETURN_IF_ERROR(csv.CheckCellCount(cells, count, columns));
    for (size_t c = 0; c < columns; ++c) {
      const CsvCell& cell = cells[c];
      if (cell.missing()) continue;
      const std::string& t = cell.text;
      const FeatureType type = features[c].type;
      const std::string& name = features[c].name;
      if (type == FeatureType::kString || type == FeatureType::kBytes) {
        if (const std::string why = type == FeatureType::kString ? NotUtf8(t) : ""; !why.empty()) {
          if (options.on_bad_value == BadValue::kMissing) {
            dropped->Add(c, cell.line, cell.column, "'" + Shown(t) + "'");
            continue;
          }
          return InputError(input, cell.line, cell.column,
                            "'" + Shown(t) + "' in column '" + name + "' " + why + " (the column is string): declare " +
                            names(Option::kColumnType, {name, "bytes"}) + " to keep its bytes, or pass " +
                            names(Option::kOnBadValueMissing) + " to store such cells as missing");
        }
        writer->AddString(c, t);
        continue;
      }
      if (IsColumnListType(type)) {  // a JSON array of numbers, as pcr-dump cat prints lists
        JsonCursor json(t);
        std::string why;
        std::string unfit;
        const bool read = ReadNumberList(json, &list, &why) && json.End();
        if (read && WriteList(writer, c, type, list, &unfit)) continue;
        if (options.on_bad_value == BadValue::kMissing) {
          dropped->Add(c, cell.line, cell.column, "'" + t + "'");
          continue;
        }
        return InputError(input, cell.line, cell.column,
                          "'" + Shown(t) + "' in column '" + name + "' is not " +
                              ListMismatch(names, type, read ? &list : nullptr, unfit, "a JSON array", name, "cells"));
      }
      int64_t i = 0;
      double d = 0;
      if (!ParseCell(type, t, declared.count(name) != 0, &i, &d)) {
        if (options.on_bad_value == BadValue::kMissing) {
          dropped->Add(c, cell.line, cell.column, "'" + t + "'");
          continue;
        }
        return InputError(input, cell.line, cell.column,
                          "'" + Shown(t) + "' in column '" + name + "' " + WhyNot(type, t) + " (the column is " +
                              FeatureTypeName(type) + "): pass " + names(Option::kOnBadValueMissing) +
                              " to store such cells as missing, or declare another type with " +
                              names(Option::kColumnType, {name, "TYPE"}));
      }
      if (type == FeatureType::kFloat64 && IsIntegerLiteral(NumberText(t)) && !IntegerLiteralIsExact(NumberText(t), d)) {
        if (options.on_bad_value == BadValue::kMissing) {
          dropped->Add(c, cell.line, cell.column, "'" + t + "'");
          continue;
        }
        const std::string why = "column '" + name + "'" + FloatBecause(plan.first_float[c], cell.line, cell.column);
        return InexactInteger(input, cell.line, cell.column, t, why,
                              names(Option::kColumnType, {name, "string"}) + " keeps every digit, " +
                                  names(Option::kOnBadValueMissing) + " stores such cells as missing");
      }
      Write(writer, c, type, i, d);
    }
    FreeHugeCells(&cells);
    PCR_RETURN_IF_ERROR(writer->EndRow());
  }
  return Status::OK();
}

}  // namespace pcr::table
