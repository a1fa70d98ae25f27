#include "format/popularity.h"

#include <algorithm>
#include <unordered_map>

#include "format/json.h"

namespace pcr {

namespace {

Status LineError(uint64_t line, const JsonCursor& json, const std::string& what = "") {
  return Status::InvalidArgument("line " + std::to_string(line) + ", column " +
                                 std::to_string(json.position() + 1) + ": " +
                                 (what.empty() ? json.error() : what));
}

}  // namespace

std::string FormatAccessLogEntry(const std::vector<std::string>& features) {
  std::string out = "{\"features\":[";
  for (size_t i = 0; i < features.size(); ++i) {
    if (i > 0) out += ',';
    AppendJsonString(features[i], &out);
  }
  out += "]}\n";
  return out;
}

Status CountAccessLog(std::string_view text, std::map<std::string, uint64_t>* counts) {
  return ForEachJsonLine(text, [&](std::string_view line, uint64_t number) -> Status {
    JsonCursor json(line);
    std::string key, name;
    bool done;
    bool seen = false;
    if (!json.BeginObject()) return LineError(number, json);
    while (json.NextMember(&key, &done) && !done) {
      if (key != "features") {
        if (!json.SkipValue()) break;
        continue;
      }
      seen = true;
      if (!json.BeginArray()) break;
      while (json.NextElement(&done) && !done) {
        if (json.Peek() != JsonCursor::Kind::kString) return LineError(number, json, "expected a feature name");
        if (!json.String(&name)) break;
        (*counts)[name]++;
      }
    }
    if (!json.error().empty() || !json.End()) return LineError(number, json);
    if (!seen) return LineError(number, json, "no \"features\" member");
    return Status::OK();
  });
}

std::string FormatPopularity(const std::map<std::string, uint64_t>& counts) {
  std::vector<std::pair<std::string, uint64_t>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  for (const auto& [feature, count] : sorted) {
    out += "{\"feature\":";
    AppendJsonString(feature, &out);
    out += ",\"count\":" + std::to_string(count) + "}\n";
  }
  return out;
}

Result<std::vector<PopularityEntry>> ParsePopularity(std::string_view text) {
  std::vector<PopularityEntry> entries;
  Status s = ForEachJsonLine(text, [&](std::string_view line, uint64_t number) -> Status {
    JsonCursor json(line);
    PopularityEntry e;
    bool has_feature = false, has_count = false, done;
    std::string key;
    if (!json.BeginObject()) return LineError(number, json);
    while (json.NextMember(&key, &done) && !done) {
      if (key == "feature") {
        if (json.Peek() != JsonCursor::Kind::kString) return LineError(number, json, "\"feature\" must be a string");
        has_feature = json.String(&e.feature);
      } else if (key == "count") {
        JsonNumber n;
        if (json.Peek() != JsonCursor::Kind::kNumber || !json.Number(&n) || !n.is_int || n.i < 0) {
          return LineError(number, json, "\"count\" must be a non-negative integer");
        }
        e.count = static_cast<uint64_t>(n.i);
        has_count = true;
      } else if (!json.SkipValue()) {
        break;
      }
    }
    if (!json.error().empty() || !json.End()) return LineError(number, json);
    if (!has_feature || !has_count) return LineError(number, json, "needs \"feature\" and \"count\"");
    entries.push_back(std::move(e));
    return Status::OK();
  });
  if (!s.ok()) return s;
  return entries;
}

std::vector<std::string> PopularityOrder(std::vector<PopularityEntry> entries) {
  std::stable_sort(entries.begin(), entries.end(),
                   [](const PopularityEntry& a, const PopularityEntry& b) { return a.count > b.count; });
  std::vector<std::string> names;
  names.reserve(entries.size());
  for (PopularityEntry& e : entries) names.push_back(std::move(e.feature));
  return names;
}

std::vector<uint32_t> StreamOrder(const std::vector<FeatureInfo>& features,
                                  const std::vector<std::string>& names) {
  std::unordered_map<std::string_view, uint32_t> by_name;
  for (uint32_t f = 0; f < features.size(); ++f) by_name.emplace(features[f].name, f);
  std::vector<uint32_t> order;
  std::vector<bool> placed(features.size(), false);
  for (const std::string& name : names) {
    const auto it = by_name.find(name);
    if (it == by_name.end() || placed[it->second]) continue;
    placed[it->second] = true;
    order.push_back(it->second);
  }
  for (uint32_t f = 0; f < features.size(); ++f) {
    if (!placed[f]) order.push_back(f);
  }
  return order;
}

}  // namespace pcr
