// A table conversion in shards, its steps run one after another in this
// process as pcr.dask.convert_table runs them on a cluster: survey every
// shard, plan (surveying again where the plan says), convert each shard into
// a part under `parts`, merge. What tests and fuzzing hold against
// ConvertTable.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "pcr/convert.h"

namespace pcr {

struct ShardedConversion {
  Status status;
  int rescans = 0;  // shards surveyed again from the offset the plan gave
};

inline ShardedConversion ConvertTableInShards(const TableConvertOptions& options, uint32_t num_shards,
                               const std::filesystem::path& parts) {
  ShardedConversion out;
  auto fail = [&](const Status& s) {
    out.status = s;
    return out;
  };
  std::vector<std::string> surveys;
  for (uint32_t i = 0; i < num_shards; ++i) {
    Result<std::string> survey = SurveyTableShard(options, i, num_shards);
    if (!survey.ok()) return fail(survey.status());
    surveys.push_back(*survey);
  }
  Result<TableShardPlan> plan = PlanTableShards(options, surveys);
  for (; plan.ok() && !plan->rescan.empty(); plan = PlanTableShards(options, surveys)) {
    for (const auto& [shard, start] : plan->rescan) {
      Result<std::string> survey = SurveyTableShard(options, shard, num_shards, start);
      if (!survey.ok()) return fail(survey.status());
      surveys[shard] = *survey;
      ++out.rescans;
    }
  }
  if (!plan.ok()) return fail(plan.status());
  std::vector<std::string> paths;
  std::filesystem::create_directories(parts);
  for (uint32_t i = 0; i < num_shards; ++i) {
    paths.push_back((parts / ("part-" + std::to_string(i) + ".pcr")).string());
    Result<TableConvertReport> part = ConvertTableShard(options, plan->plan, i, paths.back());
    if (!part.ok()) return fail(part.status());
  }
  Result<TableConvertReport> merged = MergeTableParts(options, paths);
  if (!merged.ok()) return fail(merged.status());
  return out;
}

}  // namespace pcr
