#include "format/table_shard_plan.h"

#include "format/coding.h"

namespace pcr {

namespace {

constexpr size_t kMaxName = size_t{1} << 30;  // a feature's name, as long as a header cell can be
constexpr size_t kMaxPlaceText = size_t{1} << 20, kMaxMessage = size_t{1} << 24;

std::string ToString(const Bytes& b) { return std::string(b.begin(), b.end()); }

ByteCursor After(std::string_view s, std::string_view magic, bool* ok) {
  *ok = s.starts_with(magic);
  const size_t skip = *ok ? magic.size() : s.size();
  return ByteCursor(ByteSpan(reinterpret_cast<const uint8_t*>(s.data()) + skip, s.size() - skip));
}

void PutPlace(Bytes* out, const std::optional<ValuePlace>& p) {
  PutFixed8(out, p.has_value());
  if (!p) return;
  PutVarint64(out, p->line);
  PutVarint64(out, p->column);
  PutLengthPrefixed(out, p->text);
}

bool GetPlace(ByteCursor& in, std::optional<ValuePlace>* p) {
  uint8_t has = 0;
  p->reset();
  if (!in.GetFixed8(&has) || has > 1) return false;
  if (!has) return true;
  ValuePlace place;
  if (!in.GetVarint64(&place.line) || !in.GetVarint64(&place.column) ||
      !in.GetLengthPrefixed(kMaxPlaceText, &place.text)) {
    return false;
  }
  *p = std::move(place);
  return true;
}

void PutVotes(Bytes* out, const VoteCounts& v) {
  PutFixed8(out, v.typed);
  for (const uint64_t n : {v.present, v.ints, v.uints, v.floats, v.bools, v.timestamps, v.strings, v.lists,
                           v.big_ints}) {
    PutVarint64(out, n);
  }
  PutFixed8(out, v.list_floats);
  PutVarint64(out, static_cast<uint64_t>(v.timestamp_digits));
  VoteCounts::ForEachFirst(v, [&](const std::optional<ValuePlace>& p) { PutPlace(out, p); });
}

bool GetVotes(ByteCursor& in, VoteCounts* v) {
  uint8_t flag = 0;
  uint64_t digits = 0;
  if (!in.GetFixed8(&flag) || flag > 1) return false;
  v->typed = flag;
  for (uint64_t* n : {&v->present, &v->ints, &v->uints, &v->floats, &v->bools, &v->timestamps, &v->strings,
                      &v->lists, &v->big_ints}) {
    if (!in.GetVarint64(n)) return false;
  }
  if (!in.GetFixed8(&flag) || flag > 1 || !in.GetVarintAtMost(64, &digits)) return false;
  v->list_floats = flag;
  v->timestamp_digits = static_cast<int>(digits);
  bool ok = true;
  VoteCounts::ForEachFirst(*v, [&](std::optional<ValuePlace>& p) { ok = ok && GetPlace(in, &p); });
  return ok;
}

bool GetMap(ByteCursor& in, MapKind* map) {
  uint8_t m = 0;
  if (!in.GetFixed8(&m) || m > static_cast<uint8_t>(MapKind::kScored)) return false;
  *map = static_cast<MapKind>(m);
  return true;
}

}  // namespace

std::string EncodeShardSurvey(const ShardSurvey& s) {
  Bytes out(kShardSurveyMagic.begin(), kShardSurveyMagic.end());
  for (const uint64_t n : {s.start, s.stop, uint64_t{s.guessed}, s.start_line, s.lines, s.rows, s.from, s.checksum}) {
    PutVarint64(&out, n);
  }
  PutLengthPrefixed(&out, s.error);
  PutVarint64(&out, s.features.size());
  for (const SurveyedFeature& f : s.features) {
    PutLengthPrefixed(&out, f.name);
    PutFixed8(&out, static_cast<uint8_t>(f.map));
    PutVarsint64(&out, f.id);
    PutVarint64(&out, f.line);
    PutVarint64(&out, f.column);
    PutVotes(&out, f.votes);
  }
  return ToString(out);
}

Result<ShardSurvey> DecodeShardSurvey(std::string_view bytes) {
  bool ok = false;
  ByteCursor in = After(bytes, kShardSurveyMagic, &ok);
  ShardSurvey s;
  uint64_t guessed = 0, features = 0;
  ok = ok && in.GetVarint64(&s.start) && in.GetVarint64(&s.stop) && in.GetVarintAtMost(1, &guessed) &&
       in.GetVarint64(&s.start_line) && in.GetVarint64(&s.lines) && in.GetVarint64(&s.rows) &&
       in.GetVarint64(&s.from) && in.GetVarint64(&s.checksum) && in.GetLengthPrefixed(kMaxMessage, &s.error) &&
       in.GetVarintAtMost(in.remaining(), &features);
  s.guessed = guessed;
  for (uint64_t k = 0; ok && k < features; ++k) {
    SurveyedFeature& f = s.features.emplace_back();
    ok = in.GetLengthPrefixed(kMaxName, &f.name) && GetMap(in, &f.map) && in.GetVarsint64(&f.id) &&
         in.GetVarint64(&f.line) && in.GetVarint64(&f.column) && GetVotes(in, &f.votes);
  }
  if (!ok || !in.done()) return Status::InvalidArgument("not a table shard's survey (SurveyTableShard's bytes)");
  return s;
}

std::string EncodeTableConversionPlan(const TableConversionPlan& p) {
  Bytes out(kTableConversionPlanMagic.begin(), kTableConversionPlanMagic.end());
  PutFixed8(&out, p.csv);
  PutVarint64(&out, p.split_bytes);
  PutVarint64(&out, p.features.size());
  for (size_t f = 0; f < p.features.size(); ++f) {
    PutLengthPrefixed(&out, p.features[f].name);
    PutFixed8(&out, static_cast<uint8_t>(p.features[f].type));
    PutFixed8(&out, p.features[f].has_id);
    PutVarsint64(&out, p.features[f].id);
    PutFixed8(&out, static_cast<uint8_t>(p.maps[f]));
    PutPlace(&out, p.first_float[f]);
  }
  PutVarint64(&out, p.shards.size());
  for (const TableConversionPlan::Shard& s : p.shards) {
    for (const uint64_t n : {s.start, s.stop, s.line, s.from, s.checksum}) PutVarint64(&out, n);
  }
  PutVarint64(&out, p.notes.size());
  for (const std::string& note : p.notes) PutLengthPrefixed(&out, note);
  return ToString(out);
}

Result<TableConversionPlan> DecodeTableConversionPlan(std::string_view bytes) {
  bool ok = false;
  ByteCursor in = After(bytes, kTableConversionPlanMagic, &ok);
  TableConversionPlan p;
  uint8_t csv = 0;
  uint64_t n = 0;
  ok = ok && in.GetFixed8(&csv) && csv <= 1 && in.GetVarint64(&p.split_bytes) && p.split_bytes > 0 &&
       in.GetVarintAtMost(in.remaining(), &n);
  p.csv = csv;
  for (uint64_t k = 0; ok && k < n; ++k) {
    FeatureInfo& f = p.features.emplace_back();
    uint8_t type = 0, has_id = 0;
    ok = in.GetLengthPrefixed(kMaxName, &f.name) && in.GetFixed8(&type) && type >= 1 && type <= kMaxFeatureType &&
         in.GetFixed8(&has_id) && has_id <= 1 && in.GetVarsint64(&f.id) && GetMap(in, &p.maps.emplace_back()) &&
         GetPlace(in, &p.first_float.emplace_back());
    f.type = static_cast<FeatureType>(type);
    f.has_id = has_id;
  }
  ok = ok && in.GetVarintAtMost(in.remaining(), &n);
  for (uint64_t k = 0; ok && k < n; ++k) {
    TableConversionPlan::Shard& s = p.shards.emplace_back();
    ok = in.GetVarint64(&s.start) && in.GetVarint64(&s.stop) && in.GetVarint64(&s.line) && in.GetVarint64(&s.from) &&
         in.GetVarint64(&s.checksum) && s.from <= s.start && s.start <= s.stop;
  }
  ok = ok && in.GetVarintAtMost(in.remaining(), &n);
  for (uint64_t k = 0; ok && k < n; ++k) ok = in.GetLengthPrefixed(kMaxMessage, &p.notes.emplace_back());
  if (!ok || !in.done()) return Status::InvalidArgument("not a table conversion's plan (PlanTableShards' bytes)");
  return p;
}

}  // namespace pcr
