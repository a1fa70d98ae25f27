// A table conversion's shards: their byte ranges of the input, the first
// pass over each (a survey, fetched piece by piece from object storage), and
// the plan every shard's survey makes.
#include <algorithm>
#include <unordered_map>

#include "writer/table/passes.h"
#include "writer/table_writer.h"

namespace pcr::table {

ByteRange ShardBytes(uint64_t size, uint64_t split, uint32_t shard, uint32_t num_shards) {
  const uint64_t splits = std::max<uint64_t>(1, size / split + (size % split != 0));
  // splits * i / num_shards, without overflow.
  const uint64_t q = splits / num_shards, r = splits % num_shards;
  auto at = [&](uint64_t i) {
    return i == num_shards ? size : std::min(size, (q * i + r * i / num_shards) * split);
  };
  return {at(shard), at(shard + 1)};
}

uint64_t LineBreaks(bool csv, std::string_view text, size_t begin, size_t end) {
  uint64_t n = 0;
  for (size_t i = begin; i < end; ++i) {
    n += text[i] == '\n' || (csv && text[i] == '\r' && (i + 1 == text.size() || text[i + 1] != '\n'));
  }
  return n;
}

void FindStart(std::string_view text, ByteRange range, size_t first_row, std::optional<uint64_t> start, bool csv,
               ShardSurvey* survey) {
  survey->first_row = first_row;
  if (range.begin <= first_row) {
    survey->start = first_row;
  } else if (start) {
    survey->start = std::min<uint64_t>(*start, text.size());
  } else {
    const size_t p = text.find_first_of(csv ? std::string_view("\r\n") : std::string_view("\n"), range.begin - 1);
    survey->start = p == std::string_view::npos ? text.size()
                  : text[p] == '\r' && p + 1 < text.size() && text[p + 1] == '\n' ? p + 2
                                                                                   : p + 1;
    survey->guessed = csv;  // a JSON line break is never inside a value
  }
}

Status SplitCuts::AtRow(TableFileWriter* writer, uint64_t offset) {
  if (offset < next_) return Status::OK();
  next_ = Next(offset);
  return writer->EndStripe();
}

Result<TextFormat> InputFormat(const TableConvertOptions& options) {
  const std::string& f = options.format;
  if (f == "csv") return TextFormat::kCsv;
  if (f == "tsv") return TextFormat::kTsv;
  if (f == "jsonl" || f == "ndjson") return TextFormat::kJsonl;
  if (!f.empty()) return Status::InvalidArgument("unknown table format '" + f + "' (csv, tsv or jsonl)");
  if (options.input == "-") {
    return Status::InvalidArgument("standard input (-) has no name to tell its format: give " +
                                   (*options.option_names)(Option::kFormat) + " csv, tsv or jsonl");
  }
  std::string_view name;
  HasCompressionSuffix(options.input, &name);
  if (name.ends_with(".csv")) return TextFormat::kCsv;
  if (name.ends_with(".tsv")) return TextFormat::kTsv;
  if (name.ends_with(".jsonl") || name.ends_with(".ndjson")) return TextFormat::kJsonl;
  return Status::InvalidArgument(options.input + ": unknown table format (expected .csv, .tsv, .jsonl or .ndjson, "
                                 "each also as .gz or .zst, or " + (*options.option_names)(Option::kFormat) + ")");
}

Result<char> CsvDelimiter(const TableConvertOptions& options) {
  PCR_ASSIGN_OR_RETURN(const TextFormat format, InputFormat(options));
  const char d = options.delimiter;
  if (d == 0) return format == TextFormat::kTsv ? '\t' : ',';
  if (format == TextFormat::kJsonl) {
    return Status::InvalidArgument(options.input + ": a delimiter separates CSV cells; JSON Lines has none");
  }
  if (d == '"' || d == '\n' || d == '\r') {
    return Status::InvalidArgument("the delimiter cannot be a quote or a line break");
  }
  return d;
}

Status PlanTable(const TableConvertOptions& options, const std::map<std::string, FeatureType>& declared, bool csv,
                 const std::vector<ShardSurvey>& surveys, std::vector<std::pair<uint32_t, uint64_t>>* rescan,
                 TableConversionPlan* plan) {
  plan->csv = csv;
  plan->split_bytes = options.split_bytes;
  std::vector<SurveyedFeature> merged;
  std::vector<ColumnVotes> votes;  // of merged
  std::unordered_map<std::string, size_t> by_name;
  uint64_t line = surveys.empty() ? 1 : surveys[0].start_line, rows = 0;
  for (size_t i = 0; i < surveys.size(); ++i) {
    const ShardSurvey& s = surveys[i];
    if (i > 0 && s.start != surveys[i - 1].stop) {
      rescan->emplace_back(i, surveys[i - 1].stop);
      return Status::OK();
    }
    if (!s.error.empty()) return Status::InvalidArgument(s.error);
    const uint64_t offset = line - s.start_line;
    plan->shards.push_back({s.start, s.stop, line, s.from, s.checksum});
    line += s.lines;
    rows += s.rows;
    for (size_t k = 0; k < s.features.size(); ++k) {
      const SurveyedFeature& f = s.features[k];
      auto [it, added] = by_name.emplace(f.name, merged.size());
      if (added) {
        merged.push_back({.name = f.name, .map = f.map, .id = f.id, .line = f.line + offset, .column = f.column});
        votes.emplace_back();
      }
      SurveyedFeature& m = merged[it->second];
      if (m.map != f.map) return MapConflict(options.input, f.name, m.map, f.map, f.line + offset, f.column);
      votes[it->second].Merge(f.votes, offset);
    }
  }
  for (size_t k = 0; k < merged.size(); ++k) merged[k].votes = votes[k].counts();
  if (!csv && rows == 0) {
    return Status::InvalidArgument(options.input + ": empty file, expected one JSON object per line");
  }
  return csv ? PlanCsv(options, declared, merged, plan) : PlanJsonl(options, declared, std::move(merged), plan);
}

Result<TableInput> TableInputOf(const TableConvertOptions& options, bool open, bool sparse) {
  TableInput t;
  PCR_ASSIGN_OR_RETURN(const TextFormat format, InputFormat(options));
  t.csv = format != TextFormat::kJsonl;
  PCR_RETURN_IF_ERROR(CsvDelimiter(options).status());
  if (options.split_bytes == 0) return Status::InvalidArgument("split_bytes must be positive");
  if (options.on_bad_value != BadValue::kError && options.on_bad_value != BadValue::kMissing) {
    return Status::InvalidArgument("on_bad_value must be BadValue::kError or kMissing, not " +
                                   std::to_string(static_cast<int>(options.on_bad_value)));
  }
  if (!options.schema_file.empty()) {
    PCR_ASSIGN_OR_RETURN(t.declared, ReadTableSchemaFile(options.schema_file));
  }
  for (const auto& [name, type] : options.column_types) t.declared[name] = type;
  if (open) {
    PCR_ASSIGN_OR_RETURN(t.in, MappedInput::Open(options.input, options.remote, sparse));
  }
  return t;
}

Status Survey(const TableConvertOptions& options, const TableInput& t, ByteRange range,
              std::optional<uint64_t> start, ShardSurvey* survey) {
  MappedInput& in = *t.in;
  const std::string_view text = in.text();
  auto survey_from = [&](uint64_t line) {
    *survey = {};
    return t.csv ? SurveyCsv(options, in, range, start, line, survey)
                 : SurveyJsonl(options, in, range, start, line, survey);
  };
  const uint64_t from = std::min(range.begin > 0 ? range.begin - 1 : 0, start.value_or(range.begin));
  for (uint64_t room = 1 << 20;; room *= 16) {
    PCR_RETURN_IF_ERROR(in.Fetch(0, room));
    PCR_RETURN_IF_ERROR(in.Fetch(from, std::max(range.end, start.value_or(0)) + room));
    // A header error past what was fetched may be zeros read, not the input's.
    if (Status header = survey_from(1); !header.ok()) {
      if (room >= text.size()) return header;
      continue;
    }
    // A row's end is read up to two bytes on (CRLF); an error's place is not known.
    const uint64_t read = survey->error.empty() ? survey->stop + 2 : text.size();
    if (in.Has(0, survey->first_row + 2) && in.Has(from, read)) break;
    if (!survey->error.empty()) PCR_RETURN_IF_ERROR(in.Fetch(from, text.size()));
  }
  if (survey->error.empty()) return Status::OK();
  PCR_RETURN_IF_ERROR(in.Fetch(0, survey->start));
  const uint64_t line = 1 + LineBreaks(t.csv, text, 0, survey->start);
  return line == survey->start_line ? Status::OK() : survey_from(line);
}

}  // namespace pcr::table
