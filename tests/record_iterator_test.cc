#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <future>
#include <thread>

#include "pcr/record_iterator.h"
#include "reader/inspect.h"
#include "test_util.h"
#include "pcr/convert.h"

namespace pcr {
namespace {

using test::DataDir;
using test::TempDir;

struct Sample {
  TempDir tmp;
  std::unique_ptr<ImageDataset> ds;
  Sample() {
    REQUIRE(ConvertImages({.src_dir = DataDir() + "/sample", .out_dir = tmp / "ds", .images_per_record = 3})
                .ok());
    auto opened = ImageDataset::Open(tmp / "ds", {.io = test::Io()});
    REQUIRE(opened.ok());
    ds = std::move(opened).value();
  }
};

// A record as delivered, copied out of the reused batch.
struct Delivered {
  uint64_t record = 0;
  std::vector<Image> images;
};

std::vector<Delivered> Drain(RecordIterator& it) {
  std::vector<Delivered> out;
  RecordBatch batch;  // one batch refilled for every record
  while (true) {
    auto more = it.Next(&batch);
    REQUIRE(more.ok());
    if (!*more) return out;
    Delivered d{batch.record, {}};
    for (const ImageView& v : batch.images) {
      d.images.push_back({v.label, std::string(v.key), Bytes(v.jpeg.begin(), v.jpeg.end())});
    }
    out.push_back(std::move(d));
  }
}

std::vector<std::string> Keys(const std::vector<Image>& images) {
  std::vector<std::string> keys;
  for (const Image& img : images) keys.push_back(img.key);
  return keys;
}

TEST_CASE("the iterator yields every record in order at the chosen fidelity") {
  Sample s;
  const size_t in_flight = GENERATE(1, 3, 16);
  const uint64_t budget = GENERATE(uint64_t{1}, uint64_t{256} << 20);
  auto it = RecordIterator::Create(*s.ds, {.fidelity = 2, .records_in_flight = in_flight,
                                           .max_bytes_in_flight = budget});
  REQUIRE(it.ok());
  const auto batches = Drain(**it);
  REQUIRE(batches.size() == s.ds->num_records());
  for (uint64_t r = 0; r < batches.size(); ++r) {
    CHECK(batches[r].record == r);
    auto direct = s.ds->ReadRecord(r, 2);
    REQUIRE(direct.ok());
    REQUIRE(batches[r].images.size() == direct->size());
    for (size_t i = 0; i < direct->size(); ++i) CHECK(batches[r].images[i].jpeg == (*direct)[i].jpeg);
  }
  RecordBatch after;
  CHECK_FALSE(*(*it)->Next(&after));
}

TEST_CASE("a seed shuffles records and the images inside them, reproducibly") {
  Sample s;
  auto run = [&](uint64_t seed) {
    auto it = RecordIterator::Create(*s.ds, {.shuffle_seed = seed});
    REQUIRE(it.ok());
    return Drain(**it);
  };
  const auto a = run(5), b = run(5), c = run(6);
  std::vector<uint64_t> order_a, order_c;
  for (const auto& x : a) order_a.push_back(x.record);
  for (const auto& x : c) order_c.push_back(x.record);
  std::vector<uint64_t> sorted(order_a);
  std::sort(sorted.begin(), sorted.end());
  for (uint64_t r = 0; r < sorted.size(); ++r) CHECK(sorted[r] == r);
  CHECK(order_a != sorted);
  CHECK(order_a != order_c);
  bool any_image_moved = false;
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].record == b[i].record);
    CHECK(Keys(a[i].images) == Keys(b[i].images));
    auto direct = s.ds->ReadRecord(a[i].record, s.ds->num_scan_groups());
    REQUIRE(direct.ok());
    const auto want = Keys(*direct), got = Keys(a[i].images);
    CHECK(std::is_permutation(got.begin(), got.end(), want.begin(), want.end()));
    any_image_moved |= got != want;
  }
  CHECK(any_image_moved);
}

TEST_CASE("a read error ends the iteration with the error") {
  Sample s;
  // Damage record 4's group-1 stream on disk after opening.
  const auto opened = DatasetFile(*s.ds, DatasetRecord(*s.ds, 4).file).MoveValue();
  const PcrFile& file = *opened;
  const uint64_t at = file.index().stripes[DatasetRecord(*s.ds, 4).stripe].stream_offset(1);
  Bytes bytes = test::ReadFile(file.path());
  bytes[at] ^= 0xff;
  // Damage with the file's size and time kept, as a failing disk leaves it
  // (a rewrite that changes them is reported as "changed while open").
  const auto modified = std::filesystem::last_write_time(file.path());
  test::WriteFile(file.path(), bytes);
  std::filesystem::last_write_time(file.path(), modified);
  auto it = RecordIterator::Create(*s.ds, {.fidelity = 1, .records_in_flight = 1});
  REQUIRE(it.ok());
  RecordBatch batch;
  for (uint64_t r = 0; r < 4; ++r) {
    auto more = (*it)->Next(&batch);
    REQUIRE(more.ok());
    REQUIRE(*more);
  }
  auto bad = (*it)->Next(&batch);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.status().message(), Catch::Contains(file.path()) && Catch::Contains("stream 1"));
}

TEST_CASE("an iterator dropped early stops its reader") {
  Sample s;
  REQUIRE(s.ds->num_records() == 8);
  REQUIRE(DatasetAllFiles(*s.ds).ok());  // the files' indexes, read once
  const IoCounters before = s.ds->io_counters();
  auto it = RecordIterator::Create(*s.ds, {.records_in_flight = 2});
  REQUIRE(it.ok());
  RecordBatch batch;
  REQUIRE((*it)->Next(&batch).ok());
  // Dropping it must return promptly: on another thread, with a deadline.
  std::promise<void> dropped;
  std::thread dropper([&] {
    it->reset();
    dropped.set_value();
  });
  const bool in_time = dropped.get_future().wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  REQUIRE(in_time);
  dropper.join();
  // The reader stopped: besides the record delivered, at most the records
  // in flight (2) and one more batch of 2 were read, not all 8.
  const uint64_t reads = s.ds->io_counters().reads - before.reads;
  CHECK(reads >= 1);
  CHECK(reads <= 5);
  CHECK_FALSE(RecordIterator::Create(*s.ds, {.fidelity = 99}).ok());
}

}  // namespace
}  // namespace pcr

namespace pcr {
namespace {

TEST_CASE("iterating through an O_DIRECT engine gives the same records") {
  Sample s;
  auto engine = MakeIoEngine({.direct = true, .max_io_bytes = 8192});
  REQUIRE(engine.ok());
  auto direct = OpenImageDataset(s.tmp / "ds", {}, engine->get());
  REQUIRE(direct.ok());
  for (int k : {1, s.ds->num_scan_groups()}) {
    auto it = RecordIterator::Create(**direct, {.fidelity = k, .records_in_flight = 3});
    REQUIRE(it.ok());
    const auto batches = Drain(**it);
    REQUIRE(batches.size() == s.ds->num_records());
    for (const Delivered& b : batches) {
      auto want = s.ds->ReadRecord(b.record, k);
      REQUIRE(want.ok());
      REQUIRE(b.images.size() == want->size());
      for (size_t i = 0; i < want->size(); ++i) CHECK(b.images[i].jpeg == (*want)[i].jpeg);
    }
  }
  // Bytes read beyond those requested are alignment padding only.
  CHECK((*engine)->counters().bytes_read <=
        (*direct)->bytes_requested() +
            2 * kDirectAlignment * (2 * s.ds->num_records() + 1 + DatasetFileCount(*s.ds) * 3));
}

}  // namespace
}  // namespace pcr
