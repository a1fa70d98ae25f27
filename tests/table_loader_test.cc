#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <thread>

#include "pcr/convert.h"
#include "pcr/table_loader.h"
#include "test_util.h"

namespace pcr {
namespace {

using test::TempDir;

// 500 rows: label = row, an id list of row % 3 ids, a string missing in every fourth row; stripes of 64 rows.
std::unique_ptr<Table> OpenTable(const TempDir& tmp) {
  std::ofstream out(tmp / "rows.jsonl");
  for (int r = 0; r < 500; ++r) {
    out << "{\"label\": " << r << ", \"sparse\": {\"7\": [";
    for (int i = 0; i < r % 3; ++i) out << (i ? ", " : "") << r * 10 + i;
    out << "]}" << (r % 4 ? ", \"name\": \"n" + std::to_string(r) + "\"" : std::string()) << "}\n";
  }
  out.close();
  TableConvertOptions o{.input = tmp / "rows.jsonl", .out_dir = tmp / "t"};
  o.writer.rows_per_stripe = 64;
  REQUIRE(ConvertTable(o).ok());
  auto t = Table::Open(tmp / "t", {.io = test::Io()});
  REQUIRE(t.ok());
  return std::move(t).MoveValue();
}

std::vector<TableLoaderBatch> Drain(TableLoader& loader, size_t at_most = SIZE_MAX) {
  std::vector<TableLoaderBatch> out;
  TableLoaderBatch batch;
  while (out.size() < at_most && loader.Next(&batch).MoveValue()) out.push_back(batch);
  return out;
}

// Every delivered row's values are the table's own.
void CheckRows(const TableLoaderBatch& b) {
  REQUIRE(b.columns.size() == 3);
  for (size_t j = 0; j < b.rows.size(); ++j) {
    const int64_t r = static_cast<int64_t>(b.rows[j]);
    CHECK(b.columns[0].ints[j] == r);
    const Column& ids = b.columns[1];
    REQUIRE(ids.offsets[j + 1] - ids.offsets[j] == static_cast<uint64_t>(r % 3));
    for (uint64_t i = ids.offsets[j]; i < ids.offsets[j + 1]; ++i) {
      CHECK(ids.ints[i] == r * 10 + static_cast<int64_t>(i - ids.offsets[j]));
    }
    CHECK(b.columns[2].present[j] == (r % 4 != 0));
    if (r % 4) CHECK(b.columns[2].string(j) == "n" + std::to_string(r));
  }
}

TEST_CASE("TableLoader delivers every row once per epoch across ranks and workers, with the table's values") {
  TempDir tmp;
  auto table = OpenTable(tmp);
  std::map<uint64_t, int> seen;
  for (uint64_t rank = 0; rank < 2; ++rank) {
    std::vector<uint64_t> rank_rows;
    for (uint64_t worker = 0; worker < 3; ++worker) {
      const TableLoaderOptions o{.epoch = {.rank = rank, .world_size = 2, .batch_size = 16, .worker = worker,
                                           .num_workers = 3},
                                 .shuffle_stripes = 3};
      auto loader = TableLoader::Create(*table, o, {.seed = 5});
      REQUIRE(loader.ok());
      CHECK((*loader)->num_batches() == 16);  // 250 rows in batches of 16
      for (const TableLoaderBatch& b : Drain(**loader)) {
        CHECK(b.batch % 3 == worker);
        CheckRows(b);
        rank_rows.insert(rank_rows.end(), b.rows.begin(), b.rows.end());
      }
    }
    CHECK(rank_rows.size() == 250);
    for (const uint64_t r : rank_rows) seen[r]++;
  }
  REQUIRE(seen.size() == 500);
  CHECK(std::all_of(seen.begin(), seen.end(), [](const auto& kv) { return kv.second == 1; }));
}

TEST_CASE("TableLoader keeps its table open after the caller destroys its Table") {
  TempDir tmp;
  auto table = OpenTable(tmp);
  auto loader = TableLoader::Create(*table, {.epoch = {.batch_size = 100}}, {.seed = 1});
  REQUIRE(loader.ok());
  table.reset();
  const std::vector<TableLoaderBatch> batches = Drain(**loader);
  REQUIRE(batches.size() == 5);
  for (const TableLoaderBatch& b : batches) CheckRows(b);
}

TEST_CASE("TableLoader resumes after a saved state with the batches still to come") {
  TempDir tmp;
  auto table = OpenTable(tmp);
  const TableLoaderOptions o{.epoch = {.batch_size = 32}, .shuffle_stripes = 2};
  auto whole = TableLoader::Create(*table, o, {.seed = 3, .epoch = 2});
  REQUIRE(whole.ok());
  const std::vector<TableLoaderBatch> all = Drain(**whole);
  REQUIRE(all.size() == 16);
  auto first = TableLoader::Create(*table, o, {.seed = 3, .epoch = 2});
  REQUIRE(first.ok());
  Drain(**first, 6);
  const LoaderState saved = (*first)->state();
  CHECK(saved.ToString() == "seed=3 epoch=2 batches=6 num_workers=1");
  auto resumed = TableLoader::Create(*table, o, saved);
  REQUIRE(resumed.ok());
  const std::vector<TableLoaderBatch> rest = Drain(**resumed);
  REQUIRE(rest.size() == 10);
  for (size_t i = 0; i < rest.size(); ++i) CHECK(rest[i].rows == all[6 + i].rows);
  // Shuffled: not the table's order, and another epoch another order.
  std::vector<uint64_t> rows;
  for (const auto& b : all) rows.insert(rows.end(), b.rows.begin(), b.rows.end());
  CHECK(!std::is_sorted(rows.begin(), rows.end()));
  auto other = TableLoader::Create(*table, o, {.seed = 3, .epoch = 3});
  REQUIRE(other.ok());
  CHECK(Drain(**other, 1)[0].rows != all[0].rows);
}

TEST_CASE("TableLoader with max_batches delivers that part of the share and stops") {
  TempDir tmp;
  auto table = OpenTable(tmp);
  TableLoaderOptions o{.epoch = {.batch_size = 32}, .shuffle_stripes = 2};
  const std::vector<TableLoaderBatch> all = Drain(**TableLoader::Create(*table, o, {.seed = 1, .epoch = 0}));
  REQUIRE(all.size() == 16);
  o.max_batches = 3;
  for (uint64_t start : {0, 7, 14}) {
    INFO("start " << start);
    const std::vector<TableLoaderBatch> got = Drain(**TableLoader::Create(*table, o, {.seed = 1, .batches = start}));
    REQUIRE(got.size() == std::min<uint64_t>(3, 16 - start));
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i].rows == all[start + i].rows);
  }
}

TEST_CASE("TableLoaders sharing a StripeCache read a window's stripes once and give the same rows") {
  TempDir tmp;
  auto table = OpenTable(tmp);
  TableLoaderOptions o{.epoch = {.batch_size = 16}, .shuffle_stripes = 4};
  const std::vector<TableLoaderBatch> all = Drain(**TableLoader::Create(*table, o, {.seed = 2}));
  REQUIRE(all.size() == 32);
  const uint64_t whole = table->io_counters().bytes_read;
  for (size_t cached : {0, 8}) {
    INFO("stripes cached " << cached);
    auto again = Table::Open(tmp / "t", {.io = test::Io()}).MoveValue();
    o.stripe_cache = cached ? std::make_shared<StripeCache>(cached) : nullptr;
    o.max_batches = 2;
    std::vector<TableLoaderBatch> got;
    for (uint64_t start = 0; start < all.size(); start += 2) {
      for (auto& b : Drain(**TableLoader::Create(*again, o, {.seed = 2, .batches = start}))) got.push_back(b);
    }
    REQUIRE(got.size() == all.size());
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i].rows == all[i].rows);
    // A run of two batches needs most of its window's stripes: one loader
    // per run reads each stripe again and again, unless the cache has it.
    if (cached) {
      CHECK(again->io_counters().bytes_read == whole);
    } else {
      CHECK(again->io_counters().bytes_read > 2 * whole);
    }
  }
}

// What FindOrRead gives `n` threads asking for one stripe at once.
std::vector<Result<std::shared_ptr<const TableBatch>>> AskTogether(StripeCache& cache, size_t n,
                                                                    const std::function<Result<TableBatch>()>& read) {
  std::vector<Result<std::shared_ptr<const TableBatch>>> got(n, Status::Cancelled("not asked"));
  std::atomic<size_t> started{0};
  std::vector<std::thread> threads;
  for (size_t t = 0; t < n; ++t) {
    threads.emplace_back([&, t] {
      started++;
      while (started < n) std::this_thread::yield();
      got[t] = cache.FindOrRead("table", {0, 2}, 3, read);
    });
  }
  for (auto& t : threads) t.join();
  return got;
}

TEST_CASE("StripeCache reads a stripe once for callers on several threads, failures included") {
  std::atomic<int> reads{0};
  auto slow = [&](Result<TableBatch> answer) {
    return [&reads, answer]() -> Result<TableBatch> {
      reads++;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the others ask meanwhile
      return answer;
    };
  };
  for (size_t held : {4, 0}) {
    INFO("holding " << held << " stripes");
    StripeCache cache(held);
    reads = 0;
    auto failed = AskTogether(cache, 6, slow(Status::IOError("stripe 3 lost")));
    CHECK(reads == 1);
    for (const auto& g : failed) CHECK(g.status().message() == "stripe 3 lost");
    // An error is not kept: the next caller reads again.
    auto got = AskTogether(cache, 6, slow(TableBatch{.rows = 64}));
    CHECK(reads == 2);
    for (const auto& g : got) {
      REQUIRE(g.ok());
      CHECK(*g == *got[0]);
    }
    CHECK((*got[0])->rows == 64);
    // A stripe held is found; another projection is another stripe.
    auto again = cache.FindOrRead("table", {0, 2}, 3, slow(TableBatch{.rows = 1}));
    CHECK(reads == (held ? 2 : 3));
    CHECK((*again)->rows == (held ? 64u : 1u));
    CHECK((*cache.FindOrRead("table", {0}, 3, slow(TableBatch{.rows = 7})))->rows == 7);
  }
}

TEST_CASE("TableLoader checks its options and the projection") {
  TempDir tmp;
  auto table = OpenTable(tmp);
  auto unknown = TableLoader::Create(*table, {.epoch = {.batch_size = 4}, .features = {"label", "nope"}});
  REQUIRE(!unknown.ok());
  CHECK_THAT(unknown.status().message(), Catch::Contains("nope"));
  CHECK(!TableLoader::Create(*table, {.epoch = {.batch_size = 0}}).ok());
  auto moved = TableLoader::Create(*table, {.epoch = {.world_size = 2, .batch_size = 4, .delivered = {{1, 1, 2}}}});
  REQUIRE_FALSE(moved.ok());
  CHECK_THAT(moved.status().message(), Catch::Contains("resumes on the world size and workers"));
  auto late = TableLoader::Create(*table, {.epoch = {.batch_size = 100}}, {.batches = 6});
  REQUIRE(!late.ok());
  CHECK_THAT(late.status().message(), Catch::Contains("0..5"));
  auto projected = TableLoader::Create(*table, {.epoch = {.batch_size = 100, .shuffle = false}, .features = {"7"}});
  REQUIRE(projected.ok());
  CHECK((*projected)->features() == std::vector<uint32_t>{1});
  const auto batches = Drain(**projected);
  REQUIRE(batches.size() == 5);
  CHECK(batches[0].rows.front() == 0);
  CHECK(batches[4].rows.back() == 499);
}

}  // namespace
}  // namespace pcr
