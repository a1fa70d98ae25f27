// Feature popularity: the access log a table reader appends to and the
// popularity file a table writer orders streams by (spec/pcr-format.md,
// "Popularity files").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "format/file_format.h"
#include "pcr/status.h"
#include "pcr/types.h"

namespace pcr {

struct PopularityEntry {
  std::string feature;
  uint64_t count = 0;
  std::string table, table_id;  // the table whose access logs were counted; empty when not known

  bool operator==(const PopularityEntry&) const = default;
};

// A table's content id (spec 14): Checksum64 of its TableSchema's encoding
// (13.1) followed by, stripe by stripe, the row count and each feature's
// streams (feature, role, length, checksum) in schema and role order, in 16
// lowercase hex digits. Reordering streams keeps it; other values change it.
std::string TableContentId(const FileIndex& index);

// One access log line: {"features":[...],"table":...,"table_id":...,"job":...}
// and a newline; table, table_id and job only when set.
std::string FormatAccessLogEntry(const AccessLogEntry& entry);
// The lines of an access log; errors name the line.
Result<std::vector<AccessLogEntry>> ParseAccessLog(std::string_view text);
// For every feature, the jobs whose lines name it, each job once; a line
// without a job is a job of its own.
std::map<std::string, uint64_t> CountJobs(const std::vector<AccessLogEntry>& lines);

// One {"feature":...,"count":...} line per entry, most used first, ties by
// name, with "table" and "table_id" when table_id is not empty.
std::string FormatPopularity(const std::map<std::string, uint64_t>& counts, const std::string& table = "",
                             const std::string& table_id = "");
Result<std::vector<PopularityEntry>> ParsePopularity(std::string_view text);
// Feature names by decreasing count; equal counts keep their order in the file.
std::vector<std::string> PopularityOrder(std::vector<PopularityEntry> entries);

// The order writers lay out the streams of `features` in: the indices of
// `names` first, in their order, then every other feature in schema order.
std::vector<uint32_t> StreamOrder(const std::vector<FeatureInfo>& features,
                                  const std::vector<std::string>& names);

}  // namespace pcr
