#include "format/popularity.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <unordered_map>

#include "format/checksum.h"
#include "format/coding.h"
#include "format/json.h"
#include "format/table_format.h"

namespace pcr {

namespace {

Status LineError(uint64_t line, const JsonCursor& json, const std::string& what = "") {
  return Status::InvalidArgument("line " + std::to_string(line) + ", column " +
                                 std::to_string(json.position() + 1) + ": " +
                                 (what.empty() ? json.error() : what));
}

}  // namespace

std::string TableContentId(const FileIndex& index) {
  Bytes encoded;
  EncodeTableSchema(index.schema, &encoded);
  const size_t features = index.schema.features.size();
  for (const StripeInfo& stripe : index.stripes) {
    PutVarint64(&encoded, stripe.row_count);
    const std::vector<size_t> at = stripe.TableStreamIndex(features);
    for (size_t entry = 0; entry < at.size(); ++entry) {
      if (at[entry] == SIZE_MAX) continue;
      const StreamInfo& s = stripe.streams[stripe.first_table_stream + at[entry]];
      PutVarint64(&encoded, entry / kRoleCount);
      PutVarint64(&encoded, entry % kRoleCount);
      PutVarint64(&encoded, s.length);
      PutFixed64(&encoded, s.checksum);
    }
  }
  return ContentId(encoded);
}

std::string FormatAccessLogEntry(const AccessLogEntry& entry) {
  std::string out = "{\"features\":[";
  for (size_t i = 0; i < entry.features.size(); ++i) {
    if (i > 0) out += ',';
    AppendJsonString(entry.features[i], &out);
  }
  out += ']';
  for (const auto& [key, value] : {std::pair<const char*, const std::string*>{"table", &entry.table},
                                   {"table_id", &entry.table_id}, {"job", &entry.job}}) {
    if (value->empty()) continue;
    out += ",\"" + std::string(key) + "\":";
    AppendJsonString(*value, &out);
  }
  out += "}\n";
  return out;
}

Result<std::vector<AccessLogEntry>> ParseAccessLog(std::string_view text) {
  std::vector<AccessLogEntry> lines;
  Status s = ForEachJsonLine(text, [&](std::string_view line, uint64_t number) -> Status {
    JsonCursor json(line);
    AccessLogEntry e;
    std::string key, name;
    bool done;
    bool seen = false;
    if (!json.BeginObject()) return LineError(number, json);
    while (json.NextMember(&key, &done) && !done) {
      std::string* text_member = key == "table" ? &e.table : key == "table_id" ? &e.table_id : key == "job" ? &e.job : nullptr;
      if (text_member != nullptr) {
        if (json.Peek() != JsonCursor::Kind::kString) return LineError(number, json, "\"" + key + "\" must be a string");
        if (!json.String(text_member)) break;
        continue;
      }
      if (key != "features") {
        if (!json.SkipValue()) break;
        continue;
      }
      seen = true;
      if (!json.BeginArray()) break;
      while (json.NextElement(&done) && !done) {
        if (json.Peek() != JsonCursor::Kind::kString) return LineError(number, json, "expected a feature name");
        if (!json.String(&name)) break;
        e.features.push_back(name);
      }
    }
    if (!json.error().empty() || !json.End()) return LineError(number, json);
    if (!seen) return LineError(number, json, "no \"features\" member");
    lines.push_back(std::move(e));
    return Status::OK();
  });
  if (!s.ok()) return s;
  return lines;
}

std::map<std::string, uint64_t> CountJobs(const std::vector<AccessLogEntry>& lines) {
  std::set<std::pair<std::string_view, std::string_view>> seen;  // (feature, job)
  std::map<std::string, uint64_t> counts;
  for (const AccessLogEntry& e : lines) {
    std::set<std::string_view> named;
    for (const std::string& f : e.features) {
      if (!named.insert(f).second) continue;  // a feature named twice in a line counts once
      if (!e.job.empty() && !seen.insert({f, e.job}).second) continue;
      counts[f]++;
    }
  }
  return counts;
}

std::string FormatPopularity(const std::map<std::string, uint64_t>& counts, const std::string& table,
                             const std::string& table_id) {
  std::vector<std::pair<std::string, uint64_t>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string suffix;
  if (!table_id.empty()) {
    suffix = ",\"table\":";
    AppendJsonString(table, &suffix);
    suffix += ",\"table_id\":";
    AppendJsonString(table_id, &suffix);
  }
  std::string out;
  for (const auto& [feature, count] : sorted) {
    out += "{\"feature\":";
    AppendJsonString(feature, &out);
    out += ",\"count\":" + std::to_string(count) + suffix + "}\n";
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
      } else if (key == "table" || key == "table_id") {
        if (json.Peek() != JsonCursor::Kind::kString) return LineError(number, json, "\"" + key + "\" must be a string");
        if (!json.String(key == "table" ? &e.table : &e.table_id)) break;
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
