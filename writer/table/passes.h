// What the steps of a table conversion share (writer/table/): the input and
// its format, the shards' byte ranges and cuts, and each source's three
// passes over a shard's rows. A survey (pass 1) notes what the values are,
// a plan puts every shard's survey together into the table's features, and
// the writing pass (pass 2) writes a shard's rows as the plan says.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "format/table_shard_plan.h"
#include "pcr/convert_table.h"
#include "writer/table/type_inference.h"
#include "writer/text_input.h"

namespace pcr {

class IoEngine;
class PcrFile;
class TableFileWriter;

namespace table {

inline constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

enum class TextFormat { kCsv, kTsv, kJsonl };

// options.format, else the format the input's name tells.
Result<TextFormat> InputFormat(const TableConvertOptions& options);
// The byte between the cells of options.input: options.delimiter, else a
// tab for TSV and ',' for CSV.
Result<char> CsvDelimiter(const TableConvertOptions& options);

// A conversion's input, its format and the types it declares.
struct TableInput {
  bool csv = false;
  std::map<std::string, FeatureType> declared;
  std::unique_ptr<MappedInput> in;  // when opened
};

// `open`: the input is opened, and with `sparse` an object is fetched only
// where a step asks (MappedInput::Fetch).
Result<TableInput> TableInputOf(const TableConvertOptions& options, bool open, bool sparse = false);

// How inference treats a table conversion's values.
inline InferenceRules Rules(const TableConvertOptions& options) {
  return {.float32 = options.float32, .missing = options.on_bad_value == BadValue::kMissing};
}

inline ColumnNaming Naming(const TableConvertOptions& options) {
  return {.names = options.option_names, .error = [&input = options.input](uint64_t line, uint64_t column, const std::string& what) {
    return InputError(input, line, column, what);
  }};
}

// A shard's bytes of the input: [begin, end), cut at multiples of split.
struct ByteRange {
  uint64_t begin = 0, end = 0;
};

ByteRange ShardBytes(uint64_t size, uint64_t split, uint32_t shard, uint32_t num_shards);

// Line breaks in text[begin, end) as a reader numbers lines: CSV counts LF,
// CRLF and a bare CR, JSON Lines LF.
uint64_t LineBreaks(bool csv, std::string_view text, size_t begin, size_t end);

// The first row of a shard at `range` (after the header in shard 0): `start`
// when given, else the first after a line break at or after range.begin - 1.
void FindStart(std::string_view text, ByteRange range, size_t first_row, std::optional<uint64_t> start, bool csv,
               ShardSurvey* survey);

// Pass 1 over the rows that start in `range`; an error's lines are the
// file's. Of an object in storage, the header and the range are fetched,
// with room for the row that crosses its end, and more when the survey read
// past what was fetched.
Status Survey(const TableConvertOptions& options, const TableInput& t, ByteRange range,
              std::optional<uint64_t> start, ShardSurvey* survey);

// Puts the shards' surveys together into `plan`. A shard whose survey did
// not start where the one before it stopped (a CSV range that began inside
// a quoted line break) is added to *rescan with that offset, and planning
// stops there.
Status PlanTable(const TableConvertOptions& options, const std::map<std::string, FeatureType>& declared, bool csv,
                 const std::vector<ShardSurvey>& surveys, std::vector<std::pair<uint32_t, uint64_t>>* rescan,
                 TableConversionPlan* plan);

// A stripe never holds rows that start in two splits of the input, so that
// shards, which are whole splits, write the stripes one process writes.
class SplitCuts {
 public:
  SplitCuts(uint64_t split, uint64_t start) : split_(split), next_(Next(start)) {}
  // Ends the stripe when the row at `offset` starts a later split.
  Status AtRow(TableFileWriter* writer, uint64_t offset);

 private:
  uint64_t Next(uint64_t offset) const { return (offset / split_ + 1) * split_; }
  uint64_t split_, next_;
};

// Releases a local input's pages behind a pass, 16 MiB at a time, so that a
// pass holds little more of its input in memory than the row it reads.
class ReleaseBehind {
 public:
  ReleaseBehind(const MappedInput& in, uint64_t from) : in_(in), done_(from) {}
  void At(uint64_t pos) {
    if (pos < done_ + kStep) return;
    in_.Release(done_, pos);
    done_ = pos;
  }

 private:
  static constexpr uint64_t kStep = 16 << 20;
  const MappedInput& in_;
  uint64_t done_;
};

// Values --on-bad-value missing stored as missing, per feature, for notes.
class MissingNotes {
 public:
  explicit MissingNotes(size_t features) : count_(features), first_(features) {}
  // `text` as the message shows it: 'abc' for CSV, JSON text for JSON Lines.
  void Add(size_t f, uint64_t line, uint64_t column, const std::string& text) {
    ++count_[f];
    NoteFirst(&first_[f], line, column, text);
  }
  void Report(const std::vector<FeatureInfo>& features, TableConvertReport* report) const;

 private:
  std::vector<uint64_t> count_;
  std::vector<std::optional<ValuePlace>> first_;
};

// InvalidArgument at (line, column) unless the feature name `name` is UTF-8.
Status CheckName(const std::string& input, uint64_t line, uint64_t column, std::string_view name);

// A feature that is a column in one row and a map's feature in another, or
// of two maps.
Status MapConflict(const std::string& input, const std::string& name, MapKind was, MapKind now, uint64_t line,
                   uint64_t column);

// The passes of each source. A survey's errors in the rows go to
// survey->error, lines numbered from `line` at the shard's start; a plan
// gives each feature its type (declared, else inferred from the votes).
Status SurveyCsv(const TableConvertOptions& options, const MappedInput& in, ByteRange range,
                 std::optional<uint64_t> start, uint64_t line, ShardSurvey* survey);
Status PlanCsv(const TableConvertOptions& options, const std::map<std::string, FeatureType>& declared,
               const std::vector<SurveyedFeature>& columns, TableConversionPlan* plan);
Status WriteCsv(const TableConvertOptions& options, const std::map<std::string, FeatureType>& declared,
                const TableConversionPlan& plan, const TableConversionPlan::Shard& shard, const MappedInput& in,
                TableFileWriter* writer, MissingNotes* dropped);
Status SurveyJsonl(const TableConvertOptions& options, const MappedInput& in, ByteRange range,
                   std::optional<uint64_t> start, uint64_t line, ShardSurvey* survey);
Status PlanJsonl(const TableConvertOptions& options, const std::map<std::string, FeatureType>& declared,
                 std::vector<SurveyedFeature> features, TableConversionPlan* plan);
Status WriteJsonl(const TableConvertOptions& options, const std::map<std::string, FeatureType>& declared,
                  const TableConversionPlan& plan, const TableConversionPlan::Shard& shard, const MappedInput& in,
                  TableFileWriter* writer, MissingNotes* dropped);

// Whether `file`'s name starts with `part_prefix` (not empty): a part of a
// conversion in shards (CheckTableShards).
bool NamedAsPart(const std::string& file, std::string_view part_prefix);
// Conversions never replace a file, the input least of all.
Status CheckNewOutput(const std::string& path);
// Refuses a table at `path` in a directory read as a table now (one .pcr
// file that `is_part` does not call a part of this conversion, and no
// dataset manifest): a second one would leave it unreadable.
Status CheckTableDirectory(const std::string& path,
                           const std::function<bool(const std::string&)>& is_part = [](const std::string&) { return false; });
// A note when `order` names features but none of `schema`.
void NoteUnusedOrder(const std::vector<std::string>& order, const TableSchema& schema, const std::string& table,
                     std::vector<std::string>* notes);
// Copies the stripes of `in` into `writer` as stored, their checksums
// checked as they are read. With `decode`, every feature is decoded as a
// reader decodes it, so damage behind valid checksums is refused rather
// than copied under fresh ones.
Status CopyStripes(const PcrFile& in, IoEngine& engine, bool decode, TableFileWriter* writer);

}  // namespace table
}  // namespace pcr
