// pcr-convert table: CSV and JSON Lines into a table file, in one process or
// in shards (survey, plan, convert, merge), and the merge of a conversion's
// parts.
#include "pcr/convert_images.h"
#include "pcr/convert_table.h"

#include <algorithm>
#include <filesystem>
#include <limits>

#include "format/checksum.h"
#include "format/json.h"
#include "format/table_stripe.h"
#include "io/location.h"
#include "io/pcr_file.h"
#include "io/read_executor.h"
#include "io/s3_upload.h"
#include "writer/atomic_file.h"
#include "writer/remote_output.h"
#include "writer/table/passes.h"
#include "writer/table/values.h"
#include "writer/table_writer.h"
#include "writer/text_input.h"

namespace pcr {

namespace fs = std::filesystem;

namespace table {

Status CheckName(const std::string& input, uint64_t line, uint64_t column, std::string_view name) {
  const std::string why = NotUtf8(name);
  if (why.empty()) return Status::OK();
  return InputError(input, line, column,
                    "the name '" + Shown(name) + "' " + why + "; feature names are UTF-8 text: re-encode the input "
                    "as UTF-8 (iconv -f ENCODING -t UTF-8)");
}

void MissingNotes::Report(const std::vector<FeatureInfo>& features, TableConvertReport* report) const {
  for (size_t f = 0; f < count_.size(); ++f) {
    if (count_[f] == 0) continue;
    report->missing.push_back({.index = f,
                               .feature = features[f].name,
                               .type = features[f].type,
                               .count = count_[f],
                               .line = first_[f]->line,
                               .column = first_[f]->column,
                               .first = first_[f]->text});
    report->notes.push_back(MissingValuesNote(report->missing.back()));
  }
}

Status CheckTableDirectory(const std::string& path, const std::function<bool(const std::string&)>& is_part) {
  const fs::path parent = fs::path(path).parent_path();
  const std::string dir = parent.empty() ? "." : parent.string();
  const Result<Location> where = Locate(dir);
  if (!where.ok() || !where->directory || where->dataset_manifest || !where->list_error.ok()) return Status::OK();
  std::vector<std::string> tables;
  for (const std::string& file : where->pcr_files) {
    if (!is_part(file)) tables.push_back(file);
  }
  if (tables.size() != 1) return Status::OK();
  return Status::InvalidArgument(path + ": would be a second table in " + dir + " (beside " +
                                 fs::path(tables.front()).filename().string() +
                                 "), which readers then refuse: a table directory holds one .pcr file; write to "
                                 "another directory");
}

bool NamedAsPart(const std::string& file, std::string_view part_prefix) {
  return !part_prefix.empty() && fs::path(file).filename().string().starts_with(part_prefix);
}

Status CheckNewOutput(const std::string& path) {
  std::error_code ec;
  if (fs::exists(path, ec)) return Status::InvalidArgument(path + ": already exists");
  return Status::OK();
}

void NoteUnusedOrder(const std::vector<std::string>& order, const TableSchema& schema, const std::string& table,
                     std::vector<std::string>* notes) {
  if (order.empty()) return;
  for (const FeatureInfo& f : schema.features) {
    if (std::find(order.begin(), order.end(), f.name) != order.end()) return;
  }
  notes->push_back("the stream order names no feature of " + table + "; its streams are in schema order");
}

Status CopyStripes(const PcrFile& in, IoEngine& engine, bool decode, TableFileWriter* writer) {
  const TableSchema& schema = in.index().schema;
  Bytes scratch[kRoleCount + 1];
  ReadBatch read;
  for (size_t s = 0; s < in.index().stripes.size(); ++s) {
    const StripeInfo& stripe = in.index().stripes[s];
    std::vector<ReadRange> ranges;
    for (size_t k = 0; k < stripe.streams.size(); ++k) ranges.push_back(StreamRange(in, s, k));
    PCR_RETURN_IF_ERROR(ExecuteReads(engine, ranges, {.max_read = std::numeric_limits<uint64_t>::max()}, &read));
    std::vector<Bytes> streams(stripe.streams.size());
    for (size_t k = 0; k < streams.size(); ++k) streams[k].assign(read[k].begin(), read[k].end());
    const std::vector<size_t> stream_of = stripe.TableStreamIndex(schema.features.size());
    for (uint32_t f = 0; decode && f < schema.features.size(); ++f) {
      ByteSpan stored[kRoleCount];
      for (const StreamRole role : RolesOf(schema.features[f].type)) {
        stored[static_cast<size_t>(role)] = streams[stream_of[f * kRoleCount + static_cast<size_t>(role)]];
      }
      Column column(schema.features[f].type);
      PCR_RETURN_IF_ERROR(DecodeStoredFeature(in.path(), schema, stripe, s, stream_of, f, stored, scratch, &column));
    }
    PCR_RETURN_IF_ERROR(writer->AddStoredStripe(stripe, std::move(streams)));
  }
  return Status::OK();
}

}  // namespace table

namespace {

// The table a conversion writes: out_dir/<input stem>.pcr.
std::string TablePathIn(const TableConvertOptions& options) {
  return (fs::path(options.out_dir) / (InputStem(options.input) + ".pcr")).string();
}

// Pass 2 over shard `shard` of `plan` into a table file at `path`.
Status WriteShard(const TableConvertOptions& options, const table::TableInput& t, const TableConversionPlan& plan, size_t shard,
                  const std::string& path, TableConvertReport* report) {
  PCR_RETURN_IF_ERROR(t.in->Fetch(plan.shards[shard].start, plan.shards[shard].stop + 2));
  PCR_ASSIGN_OR_RETURN(auto writer, TableFileWriter::Create(path, plan.features, options.writer));
  table::MissingNotes dropped(plan.features.size());
  PCR_RETURN_IF_ERROR((plan.csv ? table::WriteCsv : table::WriteJsonl)(options, t.declared, plan, plan.shards[shard], *t.in,
                                                         writer.get(), &dropped));
  dropped.Report(plan.features, report);
  PCR_ASSIGN_OR_RETURN(report->schema, writer->Finish());
  report->stripes = writer->stripe_count();
  report->input_bytes = plan.shards[shard].stop - plan.shards[shard].start;
  std::error_code ec;
  report->output_bytes = fs::file_size(path, ec);
  return Status::OK();
}

}  // namespace

std::string MissingValuesNote(const MissingValues& m) {
  return "column '" + m.feature + "': " + std::to_string(m.count) + (m.count == 1 ? " value" : " values") + " not " +
         FeatureTypeName(m.type) + " stored as missing (first " + m.first + " at " + ValuePlace{m.line, m.column}.At() + ")";
}

Result<TableConvertReport> ConvertTable(const TableConvertOptions& options) {
  if (IsObjectStoreOutput(options.out_dir)) return ConvertTableToObjectStore(options, ConvertTable);
  PCR_ASSIGN_OR_RETURN(const table::TableInput input, table::TableInputOf(options, true));
  PCR_ASSIGN_OR_RETURN(DirectoryLock lock, DirectoryLock::Take(options.out_dir));
  TableConvertReport report;
  report.path = TablePathIn(options);
  PCR_RETURN_IF_ERROR(table::CheckNewOutput(report.path));
  PCR_RETURN_IF_ERROR(table::CheckTableDirectory(report.path));
  ShardSurvey survey;
  PCR_RETURN_IF_ERROR(table::Survey(options, input, {0, input.in->text().size()}, {}, &survey));
  TableConversionPlan plan;
  std::vector<std::pair<uint32_t, uint64_t>> rescan;
  PCR_RETURN_IF_ERROR(table::PlanTable(options, input.declared, input.csv, {survey}, &rescan, &plan));
  report.notes = plan.notes;
  PCR_RETURN_IF_ERROR(WriteShard(options, input, plan, 0, report.path, &report));
  table::NoteUnusedOrder(options.writer.stream_order, report.schema, report.path, &report.notes);
  report.input_bytes = input.in->text().size();
  return report;
}

Status CheckTableShards(const TableConvertOptions& options, std::string_view part_prefix) {
  PCR_RETURN_IF_ERROR(table::TableInputOf(options, true, true).status());
  if (IsObjectStoreOutput(options.out_dir)) return Status::OK();
  std::error_code ec;
  if (fs::exists(options.out_dir, ec) && !fs::is_directory(options.out_dir, ec)) {
    return Status::InvalidArgument(options.out_dir + ": not a directory; choose another output");
  }
  const std::string path = TablePathIn(options);
  PCR_RETURN_IF_ERROR(table::CheckNewOutput(path));
  return table::CheckTableDirectory(path, [&](const std::string& file) { return table::NamedAsPart(file, part_prefix); });
}

Result<std::string> SurveyTableShard(const TableConvertOptions& options, uint32_t shard, uint32_t num_shards,
                                   std::optional<uint64_t> start) {
  if (shard >= num_shards) {
    return Status::InvalidArgument("shard " + std::to_string(shard) + " of " + std::to_string(num_shards) +
                                   ": shards are numbered from 0 to num_shards - 1");
  }
  PCR_ASSIGN_OR_RETURN(const table::TableInput input, table::TableInputOf(options, true, true));
  ShardSurvey survey;
  const table::ByteRange range = table::ShardBytes(input.in->text().size(), options.split_bytes, shard, num_shards);
  PCR_RETURN_IF_ERROR(table::Survey(options, input, range, start, &survey));
  if (survey.error.empty()) {
    const std::string_view text = input.in->text();
    survey.from = survey.start == survey.first_row ? 0 : survey.start;
    survey.checksum =
        Checksum64(ByteSpan(reinterpret_cast<const uint8_t*>(text.data()) + survey.from, survey.stop - survey.from));
  }
  return EncodeShardSurvey(survey);
}

Result<TableShardPlan> PlanTableShards(const TableConvertOptions& options, const std::vector<std::string>& surveys) {
  PCR_ASSIGN_OR_RETURN(const table::TableInput input, table::TableInputOf(options, false));
  std::vector<ShardSurvey> decoded;
  for (const std::string& bytes : surveys) {
    PCR_ASSIGN_OR_RETURN(decoded.emplace_back(), DecodeShardSurvey(bytes));
  }
  TableConversionPlan plan;
  TableShardPlan result;
  PCR_RETURN_IF_ERROR(table::PlanTable(options, input.declared, input.csv, decoded, &result.rescan, &plan));
  if (result.rescan.empty()) {
    result.plan = EncodeTableConversionPlan(plan);
    result.notes = plan.notes;
    result.input_bytes = plan.shards.empty() ? 0 : plan.shards.back().stop;
  }
  return result;
}

Result<TableConvertReport> ConvertTableShard(const TableConvertOptions& options, const std::string& plan_bytes,
                                             uint32_t shard, const std::string& part_path) {
  PCR_ASSIGN_OR_RETURN(const TableConversionPlan plan, DecodeTableConversionPlan(plan_bytes));
  if (shard >= plan.shards.size()) {
    return Status::InvalidArgument("shard " + std::to_string(shard) + ": the plan has " +
                                   std::to_string(plan.shards.size()) + " shards");
  }
  PCR_ASSIGN_OR_RETURN(const table::TableInput input, table::TableInputOf(options, true, true));
  if (plan.shards.back().stop > input.in->text().size()) {
    return Status::InvalidArgument(options.input + ": shorter than when its shards were scanned: convert again");
  }
  const TableConversionPlan::Shard& sh = plan.shards[shard];
  PCR_RETURN_IF_ERROR(input.in->Fetch(sh.from, sh.stop));
  const std::string_view text = input.in->text();
  if (Checksum64(ByteSpan(reinterpret_cast<const uint8_t*>(text.data()) + sh.from, sh.stop - sh.from)) != sh.checksum) {
    return Status::InvalidArgument(options.input + ": bytes " + std::to_string(sh.from) + " to " +
                                   std::to_string(sh.stop) + " changed since the shards were scanned: convert again");
  }
  input.in->Release(sh.from, sh.stop);
  TableConvertReport report;
  report.path = part_path;
  if (!IsObjectStoreOutput(part_path)) {
    PCR_RETURN_IF_ERROR(WriteShard(options, input, plan, shard, part_path, &report));
    return report;
  }
  // Written under the temp dir, then uploaded: a part in the store is a whole table or absent.
  PCR_RETURN_IF_ERROR(CheckUploadOptions(options.upload));
  const fs::path dir = ConversionWorkDir(part_path, "");
  const fs::path local = dir / fs::path(part_path).filename();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::IOError(dir.string() + ": cannot create directory: " + ec.message());
  fs::remove(local, ec);  // an earlier run's, killed before its upload
  Status done = WriteShard(options, input, plan, shard, local.string(), &report);
  if (done.ok()) {
    auto uploader = S3Uploader::Create(options.remote, options.upload);
    done = uploader.ok() ? (*uploader)->Upload(local.string(), part_path, [](const std::string&) { return Status::OK(); }).status()
                         : uploader.status();
  }
  fs::remove(local, ec);
  fs::remove(dir, ec);
  PCR_RETURN_IF_ERROR(done);
  return report;
}

namespace {

Result<TableConvertReport> MergeTableLocally(const TableConvertOptions& options, const std::vector<std::string>& parts,
                                             std::string_view part_prefix) {
  TableConvertReport report;
  report.path = TablePathIn(options);
  if (parts.empty()) return Status::InvalidArgument(report.path + ": no parts to merge");
  PCR_ASSIGN_OR_RETURN(DirectoryLock lock, DirectoryLock::Take(options.out_dir));
  PCR_RETURN_IF_ERROR(table::CheckNewOutput(report.path));
  PCR_RETURN_IF_ERROR(table::CheckTableDirectory(report.path, [&](const std::string& file) {
    std::error_code ec;
    return table::NamedAsPart(file, part_prefix) ||
           std::any_of(parts.begin(), parts.end(), [&](const std::string& part) { return fs::equivalent(part, file, ec); });
  }));
  // Parts in object storage are in the output's store.
  PCR_ASSIGN_OR_RETURN(auto engine, MakeIoEngine({.remote = OutputRemote(options.remote, options.upload)}));
  std::vector<std::unique_ptr<PcrFile>> files;
  std::vector<FeatureInfo> counts;
  for (const std::string& part : parts) {
    PCR_ASSIGN_OR_RETURN(files.emplace_back(), PcrFile::OpenTableFile(part, engine.get()));
    const std::vector<FeatureInfo>& features = files.back()->index().schema.features;
    if (counts.empty()) {
      counts = features;
      continue;
    }
    const bool same = std::equal(features.begin(), features.end(), counts.begin(), counts.end(),
                                 [](const FeatureInfo& a, const FeatureInfo& b) {
                                   return a.name == b.name && a.type == b.type && a.has_id == b.has_id && a.id == b.id;
                                 });
    if (!same) {
      return Status::InvalidArgument(part + ": its features differ from " + parts.front() +
                                     "'s: the parts are not of one conversion");
    }
    for (size_t f = 0; f < features.size(); ++f) {
      counts[f].present_count += features[f].present_count;
      counts[f].value_count += features[f].value_count;
    }
  }
  PCR_ASSIGN_OR_RETURN(auto writer, TableFileWriter::Create(report.path, counts, options.writer));
  for (const auto& file : files) PCR_RETURN_IF_ERROR(table::CopyStripes(*file, *engine, false, writer.get()));
  writer->SetFeatureCounts(counts);
  PCR_ASSIGN_OR_RETURN(report.schema, writer->Finish());
  report.stripes = writer->stripe_count();
  table::NoteUnusedOrder(options.writer.stream_order, report.schema, report.path, &report.notes);
  std::error_code ec;
  report.output_bytes = fs::file_size(report.path, ec);
  return report;
}

}  // namespace

Result<TableConvertReport> MergeTableParts(const TableConvertOptions& options, const std::vector<std::string>& parts,
                                           std::string_view part_prefix) {
  if (IsObjectStoreOutput(options.out_dir)) {
    return ConvertTableToObjectStore(options, [&](const TableConvertOptions& local) {
      return MergeTableLocally(local, parts, part_prefix);
    });
  }
  return MergeTableLocally(options, parts, part_prefix);
}

bool ParseTableType(std::string_view name, FeatureType* type) {
  if (name == "timestamp") {
    *type = FeatureType::kTimestampUs;
    return true;
  }
  return ParseFeatureTypeName(name, type);
}

Result<std::map<std::string, FeatureType>> ReadTableSchemaFile(const std::string& path) {
  PCR_ASSIGN_OR_RETURN(auto in, MappedInput::Open(path));
  std::string_view text = in->text();
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  JsonCursor json(text);
  std::map<std::string, FeatureType> types;
  auto fail = [&](const std::string& what) {
    return Status::InvalidArgument(path + ": at offset " + std::to_string(json.position()) + ": " +
                                   (what.empty() ? json.error() : what));
  };
  if (json.Peek() != JsonCursor::Kind::kObject || !json.BeginObject()) {
    return fail("a schema is a JSON object of column names to types, such as {\"uid\": \"uint64\"}");
  }
  std::string name, type;
  bool done;
  while (json.NextMember(&name, &done) && !done) {
    if (types.count(name)) return fail("'" + name + "' is named twice");
    if (json.Peek() != JsonCursor::Kind::kString || !json.String(&type)) return fail("'" + name + "': expected a type name");
    if (!ParseTableType(type, &types[name])) return fail("'" + name + "': unknown type '" + type + "' (" + kTableTypeNames + ")");
  }
  if (!json.error().empty() || !json.End()) return fail("");
  return types;
}

}  // namespace pcr
