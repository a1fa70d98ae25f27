// Feature popularity: the access log a table reader appends to and the
// popularity file a table writer orders streams by (spec/pcr-format.md,
// "Popularity files").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "pcr/status.h"
#include "pcr/types.h"

namespace pcr {

struct PopularityEntry {
  std::string feature;
  uint64_t count = 0;

  bool operator==(const PopularityEntry&) const = default;
};

// One access log line: {"features":[...]} and a newline.
std::string FormatAccessLogEntry(const std::vector<std::string>& features);
// Adds one to counts[f] for every feature f of every line of an access log.
// Errors name the line.
Status CountAccessLog(std::string_view text, std::map<std::string, uint64_t>* counts);

// One {"feature":...,"count":...} line per entry, most used first, ties by name.
std::string FormatPopularity(const std::map<std::string, uint64_t>& counts);
Result<std::vector<PopularityEntry>> ParsePopularity(std::string_view text);
// Feature names by decreasing count; equal counts keep their order in the file.
std::vector<std::string> PopularityOrder(std::vector<PopularityEntry> entries);

// The order writers lay out the streams of `features` in: the indices of
// `names` first, in their order, then every other feature in schema order.
std::vector<uint32_t> StreamOrder(const std::vector<FeatureInfo>& features,
                                  const std::vector<std::string>& names);

}  // namespace pcr
