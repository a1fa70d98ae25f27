// Sharded table conversion: shards scanned, planned, converted and merged
// give ConvertTable's file byte for byte, and its errors word for word.
#include <catch2/catch.hpp>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "pcr/convert.h"
#include "pcr/table.h"
#include "tests/test_util.h"
#include "tests/table_shards.h"

namespace pcr {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

// Converts `text` once in one process and in shards of every count in
// `shard_counts` with every split in `splits`; the files must be equal.
// Returns the rescans counted.
int CheckShardsEqual(const std::string& name, const std::string& text, const std::vector<uint64_t>& splits,
                     const std::vector<uint32_t>& shard_counts, TableConvertOptions options = {}) {
  TempDir dir;
  options.input = dir / name;
  test::WriteFile(options.input, ByteSpan(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  int rescans = 0;
  for (const uint64_t split : splits) {
    options.split_bytes = split;
    options.out_dir = dir / ("one-" + std::to_string(split));
    Result<TableConvertReport> one = ConvertTable(options);
    REQUIRE(one.ok());
    const Bytes want = test::ReadFile(one->path);
    for (const uint32_t n : shard_counts) {
      INFO(name << ": split " << split << ", " << n << " shards");
      const std::string tag = std::to_string(split) + "-" + std::to_string(n);
      options.out_dir = dir / ("sharded-" + tag);
      const ShardedConversion sharded = ConvertTableInShards(options, n, dir / ("parts-" + tag));
      REQUIRE(sharded.status.message() == "");
      rescans += sharded.rescans;
      CHECK(test::ReadFile(fs::path(options.out_dir) / fs::path(one->path).filename()) == want);
    }
  }
  return rescans;
}

TEST_CASE("the bundled CSVs converted in shards equal the one-process file, in stripes cut at splits") {
  for (const char* name : {"Soybean.csv", "spam40.csv"}) {
    const Bytes bytes = test::ReadFile(test::DataDir() + "/tabular/" + name);
    const std::string text(bytes.begin(), bytes.end());
    CheckShardsEqual(name, text, {1000, 4096, 64 << 20}, {1, 2, 3, 7});
    // Stripes never hold rows of two splits, so a small split makes many.
    TempDir dir;
    TableConvertOptions options{.input = test::DataDir() + "/tabular/" + name, .out_dir = dir / "t"};
    options.split_bytes = bytes.size() / 4 + 1;
    Result<TableConvertReport> r = ConvertTable(options);
    REQUIRE(r.ok());
    CHECK(r->stripes == 4);
  }
}

// A CSV of quoted cells holding line breaks and quotes, with LF, CRLF and
// bare CR record ends, blank lines and a byte order mark.
std::string TrickyCsv(uint32_t seed) {
  std::mt19937 rng(seed);
  const char* ends[] = {"\n", "\r\n", "\r"};
  std::string text = "\xEF\xBB\xBFid,note,x\n";
  for (int row = 0; row < 300; ++row) {
    text += std::to_string(row) + ",";
    switch (rng() % 4) {
      case 0:
        text += "\"line one\nline two\r\nthree\"";
        break;
      case 1:
        text += "\"say \"\"hi\"\",\nthen go\"";
        break;
      case 2:
        text += "plain";
        break;
      default:
        break;  // missing
    }
    text += "," + std::to_string(rng() % 1000) + (rng() % 5 == 0 ? ".5" : "") + ends[rng() % 3];
    if (rng() % 10 == 0) text += "\n";  // a blank line
  }
  return text;
}

TEST_CASE("CSV shards starting inside quoted line breaks are scanned again and still equal one process") {
  int rescans = 0;
  for (const uint32_t seed : {1u, 2u}) {
    rescans += CheckShardsEqual("tricky.csv", TrickyCsv(seed), {7, 64, 500}, {2, 5, 16});
  }
  CHECK(rescans > 0);  // the guess from a line break was wrong somewhere, and the plan caught it
}

TEST_CASE("JSON Lines in shards: features first seen in later shards keep the one-process order and types") {
  std::mt19937 rng(3);
  std::string text;
  for (int row = 0; row < 400; ++row) {
    text += "{\"label\": " + std::to_string(rng() % 2);
    if (row > 150) text += ", \"late\": " + std::to_string(rng() % 7) + (row == 390 ? ".25" : "");
    text += ", \"dense\": {\"" + std::to_string(rng() % 5) + "\": 0.5}";
    text += ", \"sparse\": {\"" + std::to_string(100 + row / 100) + "\": [1, 2]}";
    text += ", \"scored\": {\"7\": [[3, 0.5]]}}\n";
    if (row % 50 == 0) text += "\n";
  }
  CheckShardsEqual("maps.jsonl", text, {1, 300, 4096}, {2, 3, 9});
  TableConvertOptions options;
  options.float32 = true;
  options.writer.stream_order = {"late", "7"};
  CheckShardsEqual("maps.jsonl", text, {999}, {4}, options);
}

TEST_CASE("a header name over a megabyte converts in shards as in one process") {
  std::string text = "\"" + std::string(1100000, 'h') + "\",b\n";
  for (int i = 0; i < 20000; ++i) text += std::to_string(i) + "," + std::to_string(i % 7) + "\n";
  CheckShardsEqual("long.csv", text, {1 << 20, 100000}, {2, 3});
}

TEST_CASE("bad input fails in shards with the one-process error, lines counted from the file's start") {
  std::string many = "a,b\n";
  for (int i = 0; i < 200; ++i) many += std::to_string(i) + "," + std::to_string(i * 3) + "\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"bad.csv", many + "1,\"x\n2,3\n"},
      {"bad.csv", many + "3\n"},
      {"bad.csv", many + "1,x\"y\n"},
      {"bad.csv", many + "2.5,1\n" + many.substr(4) + "9007199254740993,1\n"},
      {"bad.csv", "a,a\n1,2\n"},
      {"bad.jsonl", "{\"a\": 1}\n\n{\"a\": 2}\n{\"dense\": {\"1\": 2}}\n{\"a\": 3}\n{\"sparse\": {\"1\": [1]}}\n"},
      {"bad.jsonl", "{\"a\": 1}\n{\"a\": 2}\n{\"a\": 3}\n{\"a\": 4}\n{\"a\": 2\n"},
      {"bad.jsonl", "\n\n\n"},
  };
  for (const auto& [name, text] : cases) {
    TempDir dir;
    TableConvertOptions options{.input = dir / name, .out_dir = dir / "one"};
    test::WriteFile(options.input, ByteSpan(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
    const Result<TableConvertReport> one = ConvertTable(options);
    REQUIRE_FALSE(one.ok());
    for (const uint64_t split : {1, 10, 100}) {
      options.split_bytes = split;
      for (const uint32_t n : {2, 5}) {
        INFO(text.substr(0, 40) << "...: split " << split << ", " << n << " shards");
        const std::string tag = std::to_string(split) + "-" + std::to_string(n);
        options.out_dir = dir / ("s-" + tag);
        const ShardedConversion sharded = ConvertTableInShards(options, n, dir / ("p-" + tag));
        CHECK(sharded.status.message() == one.status().message());
        CHECK_FALSE(fs::exists(fs::path(options.out_dir) / "bad.pcr"));
      }
    }
  }
}

TEST_CASE("shard scans and plans refuse bytes that are not theirs, and shards beyond the count") {
  TempDir dir;
  const std::string text = "a\n1\n2\n";
  TableConvertOptions options{.input = dir / "t.csv", .out_dir = dir / "o"};
  test::WriteFile(options.input, ByteSpan(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  CHECK(SurveyTableShard(options, 2, 2).status().message().find("shards are numbered from 0") != std::string::npos);
  CHECK(PlanTableShards(options, {"junk"}).status().message().find("not a table shard's survey") != std::string::npos);
  Result<std::string> scan = SurveyTableShard(options, 0, 1);
  REQUIRE(scan.ok());
  CHECK_FALSE(PlanTableShards(options, {scan->substr(0, scan->size() - 1)}).ok());
  Result<TableShardPlan> plan = PlanTableShards(options, {*scan});
  REQUIRE(plan.ok());
  CHECK(ConvertTableShard(options, plan->plan + "x", 0, dir / "p.pcr").status().message().find("not a table "
                                                                                               "conversion's plan") !=
        std::string::npos);
  CHECK(ConvertTableShard(options, plan->plan, 1, dir / "p.pcr").status().message().find("the plan has 1 shards") !=
        std::string::npos);
  // Input bytes changed between the scan and the conversion are refused.
  test::WriteFile(options.input, ByteSpan(reinterpret_cast<const uint8_t*>("a\n1\n3\n"), 6));
  CHECK(ConvertTableShard(options, plan->plan, 0, dir / "p.pcr").status().message().find(
            "changed since the shards were scanned: convert again") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "p.pcr"));
  options.split_bytes = 0;
  CHECK(SurveyTableShard(options, 0, 1).status().message().find("split_bytes must be positive") != std::string::npos);
}

TEST_CASE("CheckTableShards refuses before any step what the steps would refuse") {
  TempDir dir;
  const std::string text = "a\n1\n2\n";
  TableConvertOptions options{.input = dir / "t.csv", .out_dir = dir / "o"};
  test::WriteFile(options.input, ByteSpan(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  auto refusal = [&](std::string_view prefix = "") { return CheckTableShards(options, prefix).message(); };
  CHECK(refusal() == "");
  CHECK_FALSE(fs::exists(options.out_dir));
  // Compressed data is known by its first bytes, whatever its name.
  const Bytes packed = {0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03};
  test::WriteFile(dir / "packed.csv", packed);
  options.input = dir / "packed.csv";
  CHECK_THAT(refusal(), Catch::Contains("packed.csv: gzip data cannot be converted in shards"));
  options.input = "-";
  options.format = "csv";
  CHECK_THAT(refusal(), Catch::Contains("standard input (-) is read once, so it cannot be converted in shards"));
  options.input = dir / "t.csv";
  options.format = "";
  test::WriteFile(options.out_dir, packed);
  CHECK_THAT(refusal(), Catch::Contains("o: not a directory; choose another output"));
  fs::remove(options.out_dir);
  fs::create_directories(options.out_dir);
  // Parts of this conversion in the output directory are not tables; another table is.
  test::WriteFile(dir / "o/run-part-0.pcr", packed);
  CHECK(refusal("run-part-") == "");
  CHECK_THAT(refusal(), Catch::Contains("t.pcr: would be a second table in"));
  test::WriteFile(dir / "o/t.pcr", packed);
  CHECK_THAT(refusal("run-part-"), Catch::Contains("t.pcr: already exists"));
  options.split_bytes = 0;
  CHECK_THAT(refusal(), Catch::Contains("split_bytes must be positive"));
}

}  // namespace
}  // namespace pcr
