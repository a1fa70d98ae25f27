#include <catch2/catch.hpp>

#include "io/read_plan.h"

namespace pcr {

std::ostream& operator<<(std::ostream& os, const PlannedRead& r) {
  return os << "{file " << r.file << " @" << r.offset << " +" << r.length << "}";
}
std::ostream& operator<<(std::ostream& os, const RequestSlice& s) {
  return os << "{read " << s.read << " @" << s.offset_in_read << "}";
}

namespace {

struct Case {
  const char* name;
  std::vector<RangeRequest> requests;
  CoalesceOptions options;
  std::vector<PlannedRead> reads;
  std::vector<RequestSlice> slices;
};

constexpr size_t kNone = RequestSlice::kNoRead;
const CoalesceOptions kHole10{.hole_limit = 10, .max_read = 100};

TEST_CASE("coalescing planner, table-driven") {
  const Case cases[] = {
      {"empty", {}, kHole10, {}, {}},
      {"one request", {{0, 5, 10}}, kHole10, {{0, 5, 10}}, {{0, 0}}},
      {"adjacent merge", {{0, 0, 10}, {0, 10, 10}}, kHole10, {{0, 0, 20}}, {{0, 0}, {0, 10}}},
      {"gap at the limit merges", {{0, 0, 10}, {0, 20, 5}}, kHole10, {{0, 0, 25}}, {{0, 0}, {0, 20}}},
      {"gap past the limit splits", {{0, 0, 10}, {0, 21, 5}}, kHole10, {{0, 0, 10}, {0, 21, 5}},
       {{0, 0}, {1, 0}}},
      {"unsorted input", {{0, 50, 10}, {0, 0, 10}, {0, 15, 10}}, kHole10, {{0, 0, 25}, {0, 50, 10}},
       {{1, 0}, {0, 0}, {0, 15}}},
      {"different files never merge", {{1, 0, 10}, {0, 10, 10}}, kHole10, {{0, 10, 10}, {1, 0, 10}},
       {{1, 0}, {0, 0}}},
      {"max_read stops merging", {{0, 0, 60}, {0, 60, 60}}, kHole10, {{0, 0, 60}, {0, 60, 60}},
       {{0, 0}, {1, 0}}},
      {"merge up to exactly max_read", {{0, 0, 50}, {0, 55, 45}}, kHole10, {{0, 0, 100}}, {{0, 0}, {0, 55}}},
      {"a long request stays whole", {{0, 0, 500}}, kHole10, {{0, 0, 500}}, {{0, 0}}},
      {"overlap always shares a read", {{0, 0, 80}, {0, 70, 80}}, kHole10, {{0, 0, 150}}, {{0, 0}, {0, 70}}},
      {"duplicates share a read", {{0, 7, 3}, {0, 7, 3}}, kHole10, {{0, 7, 3}}, {{0, 0}, {0, 0}}},
      {"contained request", {{0, 0, 40}, {0, 10, 5}}, kHole10, {{0, 0, 40}}, {{0, 0}, {0, 10}}},
      {"empty requests read nothing", {{0, 3, 0}, {0, 0, 2}}, kHole10, {{0, 0, 2}}, {{kNone, 0}, {0, 0}}},
      {"zero hole limit merges only touching", {{0, 0, 4}, {0, 4, 4}, {0, 9, 1}},
       {.hole_limit = 0, .max_read = 100}, {{0, 0, 8}, {0, 9, 1}}, {{0, 0}, {0, 4}, {1, 0}}},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const ReadPlan plan = PlanReads(c.requests, c.options);
    CHECK(plan.reads == c.reads);
    CHECK(plan.slices == c.slices);
    uint64_t requested = 0, planned = 0;
    for (const auto& r : c.requests) requested += r.length;
    for (const auto& r : c.reads) planned += r.length;
    CHECK(plan.bytes_requested == requested);
    CHECK(plan.bytes_planned == planned);
  }
}

TEST_CASE("every request lies inside its read") {
  // A pseudo-random mix over three files.
  std::vector<RangeRequest> requests;
  uint64_t x = 12345;
  for (int i = 0; i < 2000; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    requests.push_back({(x >> 60) % 3, (x >> 20) % 100000, (x >> 8) % 3000});
  }
  const ReadPlan plan = PlanReads(requests, {.hole_limit = 512, .max_read = 8192});
  for (size_t i = 0; i < requests.size(); ++i) {
    const RequestSlice& s = plan.slices[i];
    if (requests[i].length == 0) continue;
    REQUIRE(s.read < plan.reads.size());
    const PlannedRead& r = plan.reads[s.read];
    CHECK(r.file == requests[i].file);
    CHECK(r.offset + s.offset_in_read == requests[i].offset);
    CHECK(s.offset_in_read + requests[i].length <= r.length);
  }
  for (size_t i = 1; i < plan.reads.size(); ++i) {
    const PlannedRead& a = plan.reads[i - 1];
    const PlannedRead& b = plan.reads[i];
    CHECK((a.file < b.file || (a.file == b.file && a.offset + a.length < b.offset)));
  }
}

}  // namespace
}  // namespace pcr
