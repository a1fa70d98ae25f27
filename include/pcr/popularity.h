// Popularity: access logs counted into popularity files (spec section 14),
// which order the streams of tables and fields.
//
// Thread safety: every function may be called from several threads at once.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "pcr/export.h"
#include "pcr/io.h"
#include "pcr/option_names.h"
#include "pcr/status.h"

namespace pcr {

// A popularity file (spec section 14), as `pcr-dump popularity` writes it.
struct PopularityFile {
  std::vector<std::string> order;  // feature names, the most read first
  std::string table;               // the table whose access logs were counted, and
  std::string table_id;            // its content id; both empty when the file does not say
};
PCR_EXPORT Result<PopularityFile> ReadPopularityFile(const std::string& path);

// Access logs (spec section 14) counted for one table.
struct PopularityCount {
  std::map<std::string, uint64_t> jobs;     // per feature, the jobs whose lines name it
  std::string table, table_id;              // the table counted; empty when no line names one
  std::map<std::string, uint64_t> skipped;  // lines of other tables, by "path (content id)"
};
// Counts the lines of `table` (a table path; its content id picks the lines)
// in the access logs `logs`; with `table` empty, of the one table the logs
// name, refusing logs of several. Lines that name no table count for any.
// Errors name the log and line; InvalidArgument when no line is of the table.
PCR_EXPORT Result<PopularityCount> CountAccessLogs(const std::vector<std::string>& logs, const std::string& table = "",
                                                   const IoEngineOptions& io = {},
                                                   const OptionNames& names = kLibraryOptionNames);
// The popularity file of `count`: its lines, most read first.
PCR_EXPORT std::string FormatPopularityFile(const PopularityCount& count);

}  // namespace pcr
