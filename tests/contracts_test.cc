// Every argument a header states a range for, given a value outside it,
// returns InvalidArgument naming the argument, in every build; memory a
// configuration would take is refused before it is asked for, and an
// allocation failure on a loader's thread comes back from Next. The
// sanitizer build runs this program too.
#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>

#include "pcr/pcr.h"
#include "test_util.h"

namespace pcr {
namespace {

std::unique_ptr<Table> OpenTable(const test::TempDir& tmp) {
  std::ofstream out(tmp / "rows.jsonl");
  for (int r = 0; r < 100; ++r) out << "{\"label\": " << r << "}\n";
  out.close();
  TableConvertOptions o{.input = tmp / "rows.jsonl", .out_dir = tmp / "t"};
  o.writer.rows_per_stripe = 32;
  REQUIRE(ConvertTable(o).ok());
  auto t = Table::Open(tmp / "t", {.io = test::Io()});
  REQUIRE(t.ok());
  return std::move(t).MoveValue();
}

struct Case {
  std::string call;
  std::function<Status()> run;
  std::string want;  // the message names the argument
};

void CheckAll(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    INFO(c.call);
    const Status st = c.run();
    CHECK(st.code() == StatusCode::kInvalidArgument);
    CHECK_THAT(st.message(), Catch::Contains(c.want));
  }
}

TEST_CASE("indices, positions and sizes out of range are InvalidArgument naming them") {
  test::TempDir tmp;
  auto ds = test::OpenSample(tmp, 3);
  const ImageDataset& d = *ds;
  auto table = OpenTable(tmp);
  const Table& t = *table;
  const uint32_t feature = 0, absent = 99999;
  const uint64_t n = d.num_images(), records = d.num_records();
  std::vector<uint8_t> small(10), out(12);
  CheckAll({
      {"sample", [&] { return d.sample(n).status(); }, "image " + std::to_string(n) + " out of range"},
      {"LocateImage", [&] { return d.LocateImage(n + 7).status(); }, "image " + std::to_string(n + 7)},
      {"RecordBytes record", [&] { return d.RecordBytes(records, 1).status(); }, "record " + std::to_string(records)},
      {"RecordBytes fidelity", [&] { return d.RecordBytes(0, 1000).status(); }, "fidelity must be 1.."},
      {"SelectedBytes field", [&] { return d.SelectedBytes(0, {.fields = {absent}}).status(); }, "field 99999"},
      {"SelectedBytes record", [&] { return d.SelectedBytes(records, {}).status(); }, "record"},
      {"Table::stripe_rows", [&] { return t.stripe_rows(size_t{1} << 30).status(); }, "stripe 1073741824"},
      {"Table::SelectedBytes feature", [&] { return t.SelectedBytes({&absent, 1}, 0, 1).status(); }, "feature 99999"},
      {"Table::SelectedBytes stripes", [&] { return t.SelectedBytes({&feature, 1}, 1, size_t{1} << 30).status(); },
       "stripes [1, +1073741824)"},
      {"BatchesPerRank", [&] { return BatchesPerRank(100, {.batch_size = 0}).status(); }, "batch_size"},
      {"BatchesPerRank world", [&] { return BatchesPerRank(d, {.world_size = 0}, 0, 0).status(); }, "world_size"},
      {"RandomResizedCropRegion", [&] { return RandomResizedCropRegion(0, 5, {}, 1).status(); }, "width"},
      {"RandomResizedCropRegion scale", [&] { return RandomResizedCropRegion(5, 5, {.scale_min = 2}, 1).status(); },
       "scale_min"},
      {"CenterCropOf", [&] { return CenterCropOf(5, 5, 10, 11).status(); }, "crop must be 1..resize"},
      {"CenterCropOf huge", [&] { return CenterCropOf(65535, 1, 65535, 1).status(); }, "beyond 2^31 - 1"},
      {"ResizeBilinear src", [&] { return ResizeBilinear(small, 2, 2, 3, out, 2, 2); }, "src holds 10 bytes"},
      {"ResizeBilinear channels", [&] { return ResizeBilinear(small, 2, 5, 1, out, 2, 2); }, "dst holds 12 bytes"},
      {"ResizeBilinear size", [&] { return ResizeBilinear(small, 0, 2, 3, out, 2, 2); }, "src_width"},
      {"BatchDecoder crop", [&] { return BatchDecoder::Create({.crop = BatchTransformOptions::Crop(7)}).status(); },
       "crop must be"},
      {"BatchDecoder dtype", [&] { return BatchDecoder::Create({.dtype = BatchTransformOptions::Dtype(9)}).status(); },
       "dtype must be"},
      {"BatchDecoder resize",
       [&] { return BatchDecoder::Create({.crop = BatchTransformOptions::Crop::kCenter, .resize = 1 << 30}).status(); },
       "resize must be"},
      {"uneven", [&] { return BatchesPerRank(100, {.uneven = UnevenShares(5)}).status(); }, "uneven must be"},
      {"on_bad_value",
       [&] {
         return ConvertTable({.input = tmp / "rows.jsonl", .out_dir = tmp / "t2", .on_bad_value = BadValue(3)})
             .status();
       },
       "on_bad_value must be"},
      {"max_mbps -1", [&] { return ImageDataset::Open(tmp / "ds", {.io = {.max_mbps = -1}}).status(); }, "max_mbps"},
      {"max_mbps NaN",
       [&] {
         return ImageDataset::Open(tmp / "ds", {.io = {.max_mbps = std::numeric_limits<double>::quiet_NaN()}})
             .status();
       },
       "max_mbps"},
      {"max_mbps inf",
       [&] {
         return Table::Open(tmp / "t", {.io = {.max_mbps = std::numeric_limits<double>::infinity()}}).status();
       },
       "max_mbps"},
  });
  // A rate so low it would never finish is the caller's to stop.
  auto cancel = std::make_shared<std::atomic<bool>>(true);
  auto stopped = ImageDataset::Open(tmp / "ds", {.io = {.max_mbps = 1e-9, .cancel = cancel}});
  CHECK(stopped.status().code() == StatusCode::kCancelled);
  // The same calls in range give values.
  CHECK(d.sample(n - 1).ok());
  CHECK(d.RecordBytes(records - 1, kFullFidelity).ok());
  CHECK(t.stripe_rows(t.stripe_count() - 1).value() == 100 - 32 * 3);
  CHECK(BatchesPerRank(100, {.batch_size = 7}).value() == 15);
}

TEST_CASE("every Next refuses a null batch") {
  test::TempDir tmp;
  auto ds = test::OpenSample(tmp, 3);
  auto table = OpenTable(tmp);
  CheckAll({
      {"RecordIterator", [&] { return RecordIterator::Create(*ds).MoveValue()->Next(nullptr).status(); },
       "RecordIterator::Next: batch is null"},
      {"SampleIterator", [&] { return SampleIterator::Create(*ds, {}).MoveValue()->Next(nullptr).status(); },
       "SampleIterator::Next: batch is null"},
      {"DecodeIterator",
       [&] { return DecodeIterator::Create(*ds, {.threads = 1}).MoveValue()->Next(nullptr).status(); },
       "DecodeIterator::Next: batch is null"},
      {"ImageLoader",
       [&] {
         ImageLoaderOptions o;
         o.transform.size = 16;
         o.transform.threads = 1;
         return ImageLoader::Create(*ds, o).MoveValue()->Next(nullptr).status();
       },
       "ImageLoader::Next: batch is null"},
      {"TableLoader",
       [&] {
         const std::vector<std::string> label = {"label"};
         return TableLoader::Create(*table, {.features = label}).MoveValue()->Next(nullptr).status();
       },
       "TableLoader::Next: batch is null"},
  });
}

TEST_CASE("ImageLoader refuses a batch larger than max_batch_bytes before allocating it") {
  test::TempDir tmp;
  auto ds = test::OpenSample(tmp, 3);
  ImageLoaderOptions o;
  o.epoch.batch_size = 1;
  o.transform.size = 65535;  // 12.9 GB per image
  auto refused = ImageLoader::Create(*ds, o);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(refused.status().message(), Catch::Contains("max_batch_bytes"));
  // The bound is the option: 4 images of 16 x 16 x 3 bytes take 3072.
  o.epoch.batch_size = 4;
  o.transform.size = 16;
  o.max_batch_bytes = 3071;
  CHECK_THAT(ImageLoader::Create(*ds, o).status().message(), Catch::Contains("max_batch_bytes (3071)"));
  o.max_batch_bytes = 3072;
  CHECK(ImageLoader::Create(*ds, o).ok());
}

#if !defined(__SANITIZE_ADDRESS__) && !defined(__has_feature)
#define PCR_UNDER_ASAN 0
#elif defined(__SANITIZE_ADDRESS__)
#define PCR_UNDER_ASAN 1
#elif __has_feature(address_sanitizer)
#define PCR_UNDER_ASAN 1
#else
#define PCR_UNDER_ASAN 0
#endif

TEST_CASE("an allocation that fails on the loader's thread comes back from Next as OutOfMemory") {
  // AddressSanitizer reserves its shadow memory beyond any address-space limit.
  if (PCR_UNDER_ASAN) {
    WARN("SKIP: an address-space limit does not apply under AddressSanitizer");
    return;
  }
  test::TempDir tmp;
  auto ds = test::OpenSample(tmp, 3);
  ImageLoaderOptions o;
  o.epoch.batch_size = 1;
  o.transform.size = 30000;  // 2.7 GB per batch, beyond the limit below
  o.transform.threads = 1;
  o.max_batch_bytes = uint64_t{16} << 30;
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    // Room for what the process maps now and 1 GiB more.
    std::ifstream statm("/proc/self/statm");
    uint64_t pages = 0;
    statm >> pages;
    const rlim_t limit = pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) + (uint64_t{1} << 30);
    const rlimit r{limit, limit};
    setrlimit(RLIMIT_AS, &r);
    auto loader = ImageLoader::Create(*ds, o);
    std::string got = loader.ok() ? "" : "Create: " + loader.status().ToString();
    if (loader.ok()) {
      LoaderBatch batch;
      auto next = (*loader)->Next(&batch);
      got = next.ok() ? "ok" : next.status().ToString();
    }
    (void)!write(fds[1], got.data(), got.size());
    _exit(0);
  }
  close(fds[1]);
  std::string got;
  char buf[256];
  ssize_t k;
  while ((k = read(fds[0], buf, sizeof buf)) > 0) got.append(buf, static_cast<size_t>(k));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK_THAT(got, Catch::StartsWith("Out of memory: loading a batch"));
}

}  // namespace
}  // namespace pcr
