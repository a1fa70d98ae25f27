// The public C++ API's safety: what a program gets when it misuses a Result,
// and what stays valid when it destroys a dataset before what it made of it.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <csignal>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pcr/convert.h"
#include "pcr/decode.h"
#include "pcr/decode_iterator.h"
#include "pcr/image_dataset.h"
#include "pcr/image_loader.h"
#include "pcr/record_iterator.h"
#include "pcr/sample_iterator.h"
#include "pcr/status.h"
#include "pcr/transform.h"
#include "test_util.h"

namespace pcr {
namespace {

// Runs `f` in a child process; returns what it wrote to stderr and whether
// it ended by SIGABRT.
std::pair<std::string, bool> InChild(const std::function<void()>& f) {
  int pipe_fds[2];
  REQUIRE(pipe(pipe_fds) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::signal(SIGABRT, SIG_DFL);  // not Catch's handler, which reports a failure
    dup2(pipe_fds[1], 2);
    close(pipe_fds[0]);
    f();
    _exit(0);
  }
  close(pipe_fds[1]);
  std::string err;
  char buf[512];
  ssize_t n;
  while ((n = read(pipe_fds[0], buf, sizeof(buf))) > 0) err.append(buf, static_cast<size_t>(n));
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return {err, WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT};
}

Result<std::string> Fails() { return Status::NotFound("train-pcr: no such dataset"); }

TEST_CASE("reading the value of a failed Result aborts with the error's message") {
  for (const auto& read : std::vector<std::function<void()>>{
           [] { (void)Fails().value(); },
           [] { (void)*Fails(); },
           [] {
             auto r = Fails();
             (void)r->size();
           },
           [] {
             auto r = Fails();
             (void)r.MoveValue();
           },
           [] {
             const auto r = Fails();
             (void)*r;
           },
       }) {
    const auto [err, aborted] = InChild(read);
    CHECK(aborted);
    CHECK_THAT(err, Catch::Contains("Not found: train-pcr: no such dataset"));
  }
  // A real failure from the library reads the same way.
  const auto [err, aborted] = InChild([] { (void)(*ImageDataset::Open("/nonexistent/train-pcr"))->num_images(); });
  CHECK(aborted);
  CHECK_THAT(err, Catch::Contains("/nonexistent/train-pcr"));
}

TEST_CASE("a Result gives its value, a fallback or its error") {
  Result<std::string> ok = std::string("abc");
  CHECK(ok.ok());
  CHECK(ok.status().ok());
  CHECK(*ok == "abc");
  CHECK(ok.ValueOr("x") == "abc");
  CHECK(Fails().ValueOr("x") == "x");
  CHECK(Result<std::string>(std::string("moved")).ValueOr("x") == "moved");
  CHECK(ok.MoveValue() == "abc");

  Result<std::unique_ptr<int>> owned = std::make_unique<int>(7);
  std::unique_ptr<int> taken = owned.MoveValue();
  CHECK(*taken == 7);
  Result<std::unique_ptr<int>> owned2 = std::make_unique<int>(8);
  CHECK(*std::move(owned2).ValueOr(nullptr) == 8);
}

TEST_CASE("a Result built from an OK status is an error, not an empty value") {
  Result<int> r = Status::OK();
  CHECK_FALSE(r.ok());
  CHECK_FALSE(r.status().ok());
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(r.status().message(), Catch::Contains("OK status"));
  CHECK(r.ValueOr(5) == 5);
}

// Every image's key and JPEG, read while the dataset is open, by image index.
std::vector<Image> Expected(const ImageDataset& ds) {
  std::vector<ImageRequest> all;
  for (uint64_t i = 0; i < ds.num_images(); ++i) all.push_back({.image = i});
  return ds.ReadImages(all).MoveValue();
}

// Runs under the sanitizers in CI: a read of freed memory fails there.
TEST_CASE("iterators and batches stay valid after the dataset handle is destroyed") {
  test::TempDir tmp;
  auto ds = test::OpenSample(tmp, 3);
  const std::vector<Image> want = Expected(*ds);
  std::map<std::string, Bytes> by_key;
  for (const Image& img : want) by_key[img.key] = img.jpeg;

  auto records = RecordIterator::Create(*ds, {.records_in_flight = 2});
  auto samples = SampleIterator::Create(*ds, {.epoch = {.batch_size = 2}});
  auto decoded = DecodeIterator::Create(*ds, {.threads = 2});
  ImageLoaderOptions whole{.epoch = {.batch_size = 5}};
  whole.output = ImageLoaderOptions::Output::kDecoded;
  whole.transform.threads = 2;
  auto loader = ImageLoader::Create(*ds, whole);
  REQUIRE(loader.ok());
  auto batches = ds->ReadRecordBatches(std::vector<uint64_t>{0, 1}, {.fidelity = kFullFidelity});
  REQUIRE(records.ok());
  REQUIRE(samples.ok());
  REQUIRE(decoded.ok());
  REQUIRE(batches.ok());
  const uint64_t images = ds->num_images();
  ds.reset();

  // Batches read before: keys and JPEGs as read.
  for (const RecordBatch& b : *batches) {
    for (const ImageView& v : b.images) {
      CHECK(Bytes(v.jpeg.begin(), v.jpeg.end()) == by_key.at(std::string(v.key)));
    }
  }
  uint64_t seen = 0;
  RecordBatch rb;
  while ((*records)->Next(&rb).MoveValue()) {
    for (const ImageView& v : rb.images) {
      CHECK(Bytes(v.jpeg.begin(), v.jpeg.end()) == by_key.at(std::string(v.key)));
      ++seen;
    }
  }
  CHECK(seen == images);
  seen = 0;
  SampleBatch sb;
  while ((*samples)->Next(&sb).MoveValue()) {
    for (const Image& img : sb.images) {
      CHECK(img.jpeg == by_key.at(img.key));
      ++seen;
    }
  }
  CHECK(seen == images);
  seen = 0;
  DecodedBatch db;
  while ((*decoded)->Next(&db).MoveValue()) {
    for (const DecodedView& v : db.images) {
      const DecodedImage whole = DecodeJpeg(by_key.at(std::string(v.key))).MoveValue();
      CHECK(std::vector<uint8_t>(v.pixels.begin(), v.pixels.end()) == whole.pixels);
      ++seen;
    }
  }
  CHECK(seen == images);
  seen = 0;
  LoaderBatch lb;
  while ((*loader)->Next(&lb).MoveValue()) {
    for (size_t j = 0; j < lb.indices.size(); ++j) {
      const DecodedImage one = DecodeJpeg(want[lb.indices[j]].jpeg, {.format = PixelFormat::kRgb}).MoveValue();
      CHECK(std::equal(one.pixels.begin(), one.pixels.end(),
                       lb.images.begin() + static_cast<std::ptrdiff_t>(lb.offsets[j])));
      ++seen;
    }
  }
  CHECK(seen == images);
  // A batch outlives the iterator that filled it, too.
  records->reset();
  for (const ImageView& v : rb.images) CHECK(by_key.count(std::string(v.key)) == 1);
}

TEST_CASE("decoding options are checked at Create, naming the option and its range") {
  test::TempDir tmp;
  auto ds = test::OpenSample(tmp, 3);
  struct Case {
    DecodeIteratorOptions options;
    std::string want;
  };
  for (const Case& c : std::vector<Case>{
           {{.decode = {.scale_denom = 3}}, "scale_denom must be 1, 2, 4 or 8, not 3"},
           {{.threads = -1}, "threads must be 0..1024 (0: one per core), not -1"},
           {{.decode = {.crop = {.width = 10, .height = 0}}}, "crop 10x0+0+0: width and height must both be positive"},
           {{.decode = {.crop = {.x = -1, .width = 4, .height = 4}}}, "x and y at least 0"},
           {{.records_ahead = 0}, "records_ahead must be 1..1024, not 0"},
           {{.records = {.fidelity = kFieldsOnly}}, "fidelity"},
           {{.records_ahead = size_t{1} << 40}, "records_ahead must be 1..1024, not 1099511627776"},
       }) {
    INFO(c.want);
    auto it = DecodeIterator::Create(*ds, c.options);
    REQUIRE_FALSE(it.ok());
    CHECK(it.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(it.status().message(), Catch::Contains(c.want));
  }
  // A one-off decode takes the same rule: a crop of width 0 and height 0 is none.
  const Image img = ds->ReadImage(0, kFullFidelity).MoveValue();
  CHECK(DecodeJpeg(img.jpeg, {.crop = {.x = 3, .y = 3}}).ok());
  auto half = DecodeJpeg(img.jpeg, {.crop = {.width = 10}});
  REQUIRE_FALSE(half.ok());
  CHECK_THAT(half.status().message(), Catch::Contains("must both be positive, or both 0 for no crop"));
  CHECK_FALSE(BatchDecoder::Create({.threads = 5000}).ok());
}


}  // namespace
}  // namespace pcr
