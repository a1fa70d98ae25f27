// pcr-convert reorder of a table: its streams rewritten in a new order,
// copied as stored.
#include "pcr/convert_table.h"

#include <filesystem>

#include "format/popularity.h"
#include "io/pcr_file.h"
#include "writer/atomic_file.h"
#include "writer/table/passes.h"
#include "writer/table_writer.h"

namespace pcr {

namespace fs = std::filesystem;

Result<TableConvertReport> ReorderTable(const std::string& input, const std::string& output,
                                        const std::vector<std::string>& stream_order, const IoEngineOptions& io,
                                        const std::string& counted_on, const OptionNames& names) {
  PCR_ASSIGN_OR_RETURN(auto engine, MakeIoEngine(io));
  PCR_ASSIGN_OR_RETURN(auto file, PcrFile::OpenTableFile(input, engine.get()));
  const PcrFile& in = *file;
  const std::string& input_file = in.path();
  const TableSchema& schema = in.index().schema;
  if (!counted_on.empty() && counted_on != TableContentId(in.index())) {
    return Status::InvalidArgument(input_file + ": the stream order was counted on another table (content id " +
                                   counted_on + ", this one's " + TableContentId(in.index()) +
                                   "); count this table's access logs with " + names(Option::kCountOneTable));
  }
  TableConvertReport report;
  report.path = output;
  table::NoteUnusedOrder(stream_order, schema, input_file, &report.notes);
  std::error_code ec;
  if (!output.ends_with(kRecordFileExtension)) {
    report.path = (fs::path(output) / fs::path(in.path()).filename()).string();
  }
  const std::string dir = fs::path(report.path).parent_path().string();
  if (fs::is_directory(input, ec)) {
    auto slashed = [&ec](const fs::path& p) {
      std::string s = fs::weakly_canonical(fs::absolute(p), ec).string();
      while (s.ends_with('/')) s.pop_back();
      return s + "/";
    };
    if (slashed(dir.empty() ? "." : dir).starts_with(slashed(input))) {
      return Status::InvalidArgument(output + ": inside " + input + ", the table directory it reorders, which "
                                     "must hold its one table alone: write the reordered table to a directory "
                                     "beside it");
    }
  }
  PCR_ASSIGN_OR_RETURN(DirectoryLock lock, DirectoryLock::Take(dir.empty() ? "." : dir));
  PCR_RETURN_IF_ERROR(table::CheckNewOutput(report.path));
  PCR_RETURN_IF_ERROR(table::CheckTableDirectory(report.path));
  // Streams are copied as stored: a file with encodings stays 0.5.
  TableWriterOptions options{.stream_encoding = in.header().version_minor >= kEncodingsVersionMinor ? "auto" : "plain",
                             .stream_order = stream_order};
  PCR_ASSIGN_OR_RETURN(auto writer, TableFileWriter::Create(report.path, schema.features, options));
  PCR_RETURN_IF_ERROR(table::CopyStripes(in, *engine, true, writer.get()));
  writer->SetFeatureCounts(schema.features);
  PCR_ASSIGN_OR_RETURN(report.schema, writer->Finish());
  report.stripes = writer->stripe_count();
  report.input_bytes = in.size();
  report.output_bytes = fs::file_size(report.path, ec);
  return report;
}

}  // namespace pcr
