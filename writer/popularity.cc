// The popularity loop's library side: access logs counted into popularity
// files (spec section 14), and popularity files read into stream orders.
#include <map>
#include <string>
#include <vector>

#include "format/popularity.h"
#include "io/io_engine.h"
#include "io/pcr_file.h"
#include "pcr/convert.h"
#include "writer/text_input.h"

namespace pcr {

Result<PopularityFile> ReadPopularityFile(const std::string& path) {
  PCR_ASSIGN_OR_RETURN(auto in, MappedInput::Open(path));
  auto entries = ParsePopularity(in->text());
  if (!entries.ok()) return entries.status().WithPrefix(path);
  PopularityFile file;
  if (!entries->empty()) {
    file.table = entries->front().table;
    file.table_id = entries->front().table_id;
  }
  file.order = PopularityOrder(std::move(entries).value());
  return file;
}

Result<PopularityCount> CountAccessLogs(const std::vector<std::string>& logs, const std::string& table,
                                        const IoEngineOptions& io, const OptionNames& names) {
  std::vector<AccessLogEntry> lines;
  for (const std::string& log : logs) {
    PCR_ASSIGN_OR_RETURN(auto in, MappedInput::Open(log));
    auto parsed = ParseAccessLog(in->text());
    if (!parsed.ok()) return parsed.status().WithPrefix(log);
    lines.insert(lines.end(), parsed->begin(), parsed->end());
  }
  PopularityCount count;
  std::map<std::string, std::string> tables;  // content id -> a path it was read by
  for (const AccessLogEntry& e : lines) {
    if (!e.table_id.empty()) tables.emplace(e.table_id, e.table);
  }
  if (!table.empty()) {
    PCR_ASSIGN_OR_RETURN(auto engine, MakeIoEngine(io));
    PCR_ASSIGN_OR_RETURN(auto opened, PcrFile::OpenTableFile(table, engine.get()));
    count.table = table;
    count.table_id = TableContentId(opened->index());
  } else if (tables.size() > 1) {
    std::string named;
    for (const auto& [id, path] : tables) named += (named.empty() ? "" : ", ") + path + " (" + id + ")";
    return Status::InvalidArgument("the access logs are of " + std::to_string(tables.size()) + " tables: " + named +
                                   "; count one table at a time (" + names(Option::kCountOneTable, {"PATH"}) + ")");
  } else if (!tables.empty()) {
    count.table_id = tables.begin()->first;
    count.table = tables.begin()->second;
  }
  std::vector<AccessLogEntry> kept;
  for (AccessLogEntry& e : lines) {
    if (e.table_id.empty() || e.table_id == count.table_id) {
      kept.push_back(std::move(e));
    } else {
      count.skipped[e.table + " (" + e.table_id + ")"]++;
    }
  }
  if (kept.empty() && !lines.empty()) {
    return Status::InvalidArgument("no line of the access logs is of " + count.table + " (" + count.table_id + ")");
  }
  count.jobs = CountJobs(kept);
  return count;
}

std::string FormatPopularityFile(const PopularityCount& count) {
  return FormatPopularity(count.jobs, count.table, count.table_id);
}

}  // namespace pcr
