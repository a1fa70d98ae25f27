// The bytes of spec section 15, ShardSurvey and TableConversionPlan: golden
// encodings, round trips, and refusal of every truncation and bad field.
#include <catch2/catch.hpp>

#include <string>

#include "format/table_shard_plan.h"

namespace pcr {
namespace {

std::string Bytes(std::initializer_list<int> bytes) {
  std::string s;
  for (int b : bytes) s.push_back(static_cast<char>(b));
  return s;
}

ShardSurvey SmallSurvey() {
  ShardSurvey s{.start = 3, .stop = 10, .guessed = true, .start_line = 2, .lines = 4, .rows = 3, .from = 0,
                .checksum = 0x1234};
  SurveyedFeature f{.name = "a", .map = MapKind::kSparse, .id = -1, .line = 1, .column = 5};
  f.votes.present = 3;
  f.votes.ints = 2;
  f.votes.first_negative = ValuePlace{1, 5, "-1"};
  s.features.push_back(f);
  return s;
}

// The survey above as section 15 lays it out.
std::string SmallSurveyBytes() {
  std::string b = "pcr table scan 1\n";
  b += Bytes({3, 10, 1, 2, 4, 3, 0, 0xB4, 0x24});  // start .. checksum (0x1234 as a varint)
  b += Bytes({0});                                 // error ""
  b += Bytes({1, 1, 'a', 2, 1, 1, 5});             // one feature: "a", sparse, id -1, line 1, column 5
  b += Bytes({1, 3, 2, 0, 0, 0, 0, 0, 0, 0});      // typed, present 3, ints 2, the other counts 0
  b += Bytes({0, 0});                              // list_floats, timestamp_digits
  b += Bytes({1, 1, 5, 2, '-', '1'});              // first_negative
  b += std::string(14, '\0');                      // the other 14 firsts absent
  return b;
}

TableConversionPlan SmallPlan() {
  TableConversionPlan p{.csv = true, .split_bytes = 64};
  p.features.push_back({.name = "a", .type = FeatureType::kInt64});
  p.maps.push_back(MapKind::kColumn);
  p.first_float.push_back(std::nullopt);
  p.shards.push_back({.start = 3, .stop = 10, .line = 2, .from = 0, .checksum = 0x1234});
  p.notes.push_back("n");
  return p;
}

std::string SmallPlanBytes() {
  std::string b = "pcr table plan 1\n";
  b += Bytes({1, 64, 1});                   // csv, split_bytes, one feature
  b += Bytes({1, 'a', 1, 0, 0, 0, 0});      // "a", int64, no id, id 0, a column, no first float
  b += Bytes({1, 3, 10, 2, 0, 0xB4, 0x24});  // one shard
  b += Bytes({1, 1, 'n'});                  // one note
  return b;
}

TEST_CASE("a shard's survey encodes as section 15 lays it out") {
  CHECK(EncodeShardSurvey(SmallSurvey()) == SmallSurveyBytes());
  Result<ShardSurvey> back = DecodeShardSurvey(SmallSurveyBytes());
  REQUIRE(back.ok());
  CHECK(back->start == 3);
  CHECK(back->stop == 10);
  CHECK(back->guessed);
  CHECK(back->checksum == 0x1234);
  REQUIRE(back->features.size() == 1);
  CHECK(back->features[0].map == MapKind::kSparse);
  CHECK(back->features[0].id == -1);
  CHECK(back->features[0].votes.ints == 2);
  REQUIRE(back->features[0].votes.first_negative);
  CHECK(back->features[0].votes.first_negative->text == "-1");
  CHECK_FALSE(back->features[0].votes.first_float);
  CHECK(EncodeShardSurvey(*back) == SmallSurveyBytes());
}

TEST_CASE("a conversion's plan encodes as section 15 lays it out") {
  CHECK(EncodeTableConversionPlan(SmallPlan()) == SmallPlanBytes());
  Result<TableConversionPlan> back = DecodeTableConversionPlan(SmallPlanBytes());
  REQUIRE(back.ok());
  CHECK(back->split_bytes == 64);
  REQUIRE(back->features.size() == 1);
  CHECK(back->features[0].type == FeatureType::kInt64);
  REQUIRE(back->shards.size() == 1);
  CHECK(back->shards[0].checksum == 0x1234);
  CHECK(back->notes == std::vector<std::string>{"n"});
  CHECK(EncodeTableConversionPlan(*back) == SmallPlanBytes());
}

TEST_CASE("every truncation and a byte after the end are refused") {
  const std::string survey = SmallSurveyBytes(), plan = SmallPlanBytes();
  for (size_t n = 0; n < survey.size(); ++n) {
    INFO("survey cut at " << n);
    CHECK(DecodeShardSurvey(survey.substr(0, n)).status().message().find("not a table shard's survey") !=
          std::string::npos);
  }
  for (size_t n = 0; n < plan.size(); ++n) {
    INFO("plan cut at " << n);
    CHECK(DecodeTableConversionPlan(plan.substr(0, n)).status().message().find("not a table conversion's plan") !=
          std::string::npos);
  }
  CHECK_FALSE(DecodeShardSurvey(survey + "x").ok());
  CHECK_FALSE(DecodeTableConversionPlan(plan + "x").ok());
  CHECK_FALSE(DecodeShardSurvey(plan).ok());
  CHECK_FALSE(DecodeTableConversionPlan(survey).ok());
}

// Whether `bytes` with byte `at` after its first line set to `byte` decodes.
template <typename Decode>
bool DecodesWith(std::string bytes, size_t at, int byte, Decode decode) {
  bytes[bytes.find('\n') + 1 + at] = static_cast<char>(byte);
  return decode(bytes).ok();
}

TEST_CASE("fields out of their range are refused") {
  auto survey_with = [](size_t at, int byte) { return DecodesWith(SmallSurveyBytes(), at, byte, DecodeShardSurvey); };
  CHECK(survey_with(2, 1));
  CHECK_FALSE(survey_with(2, 2));   // guessed
  CHECK_FALSE(survey_with(13, 4));  // map
  CHECK_FALSE(survey_with(17, 2));  // typed
  CHECK_FALSE(survey_with(27, 2));  // list_floats
  CHECK_FALSE(survey_with(28, 65));  // timestamp_digits
  CHECK_FALSE(survey_with(29, 2));  // a ValuePlace flag
  auto plan_with = [](size_t at, int byte) {
    return DecodesWith(SmallPlanBytes(), at, byte, DecodeTableConversionPlan);
  };
  CHECK(plan_with(5, 17));
  CHECK_FALSE(plan_with(0, 2));   // csv
  CHECK_FALSE(plan_with(1, 0));   // split_bytes
  CHECK_FALSE(plan_with(5, 0));   // type
  CHECK_FALSE(plan_with(5, 18));  // type
  CHECK_FALSE(plan_with(6, 2));   // has_id
  CHECK_FALSE(plan_with(8, 4));   // map
  CHECK_FALSE(plan_with(9, 2));   // first_float's flag
  CHECK_FALSE(plan_with(14, 4));  // a shard's from above its start
  CHECK_FALSE(plan_with(11, 11));  // a shard's start above its stop
}

}  // namespace
}  // namespace pcr
