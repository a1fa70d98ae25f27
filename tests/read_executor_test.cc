// The one read path: ranges planned, read, checked and returned as spans.
#include <catch2/catch.hpp>

#include <filesystem>

#include "io/read_executor.h"
#include "reader/inspect.h"
#include "tests/image_util.h"

namespace pcr {
namespace {

using test::ReadFile;
using test::SampleOptions;
using test::TempDir;

// The sample dataset in 5-image records, opened through an engine whose
// counters the test reads.
struct Opened {
  TempDir tmp;
  std::unique_ptr<IoEngine> engine;
  std::unique_ptr<ImageDataset> ds;
  explicit Opened(IoEngineOptions io = test::Io()) {
    REQUIRE(ConvertImages(SampleOptions(tmp / "ds", 0)).ok());
    auto e = MakeIoEngine(io);
    REQUIRE(e.ok());
    engine = std::move(e).value();
    auto opened = OpenImageDataset(tmp / "ds", {}, engine.get());
    REQUIRE(opened.ok());
    ds = std::move(opened).value();
    auto all = DatasetAllFiles(*ds);
    REQUIRE(all.ok());
    files_ = std::move(all).value();
  }
  std::vector<std::shared_ptr<const PcrFile>> files_;
  const std::vector<std::shared_ptr<const PcrFile>>& files() const { return files_; }
};

ByteSpan BytesOf(const Bytes& file, const ReadRange& r) { return ByteSpan(file).subspan(r.offset, r.length); }

TEST_CASE("many streams of many files in one call, coalesced and checked") {
  Opened o;
  // Every stream of every file, last file first and streams in reverse.
  std::vector<ReadRange> ranges;
  for (size_t f = o.files().size(); f-- > 0;) {
    const PcrFile& file = *o.files()[f];
    for (size_t s = file.index().stripes[0].streams.size(); s-- > 0;) ranges.push_back(StreamRange(file, 0, s));
  }
  const IoCounters before = o.engine->counters();
  ReadBatch batch;
  REQUIRE(ExecuteReads(*o.engine, ranges, {}, &batch).ok());
  // Streams of a stripe are contiguous: one read per file.
  CHECK(o.engine->counters().reads - before.reads == o.files().size());
  CHECK(batch.reads() == o.files().size());
  REQUIRE(batch.size() == ranges.size());
  for (size_t i = 0; i < ranges.size(); ++i) {
    const Bytes file = ReadFile(ranges[i].file->path());
    CHECK(std::ranges::equal(batch[i], BytesOf(file, ranges[i])));
    CHECK(batch.check(i).ok());
  }
  // The batch is reused: its spans now answer the new ranges.
  const std::vector<ReadRange> one = {ChunkRange(*o.files()[0], 0, 2, 1)};
  REQUIRE(ExecuteReads(*o.engine, one, {}, &batch).ok());
  REQUIRE(batch.size() == 1);
  CHECK(std::ranges::equal(batch[0], BytesOf(ReadFile(o.files()[0]->path()), one[0])));
}

TEST_CASE("ranges of different units are never read together") {
  Opened o;
  const PcrFile& file = *o.files()[0];
  const size_t streams = file.index().stripes[0].streams.size();
  std::vector<ReadRange> ranges;
  for (size_t s = 0; s < streams; ++s) ranges.push_back(StreamRange(file, 0, s, s % 2));
  ReadBatch batch;
  REQUIRE(ExecuteReads(*o.engine, ranges, {.hole_limit = 0}, &batch).ok());
  // Even and odd streams each lie at gaps of one stream: without units they
  // would be one read; with a zero hole limit, one read per stream.
  CHECK(batch.reads() == streams);
  const Bytes bytes = ReadFile(file.path());
  for (size_t i = 0; i < ranges.size(); ++i) CHECK(std::ranges::equal(batch[i], BytesOf(bytes, ranges[i])));
}

TEST_CASE("a corrupt stream read in a batch names its file, stripe and stream") {
  Opened o;
  const std::string path = o.files()[1]->path();
  const uint64_t at = o.files()[1]->index().stripes[0].stream_offset(3) + 2;
  o.ds.reset();
  {
    Bytes bytes = ReadFile(path);
    bytes[at] ^= 0x10;
    test::WriteFile(path, bytes);
  }
  auto ds = OpenImageDataset(o.tmp / "ds", {}, o.engine.get());
  REQUIRE(ds.ok());
  const auto files = DatasetAllFiles(**ds).MoveValue();
  const std::vector<ReadRange> ranges = {StreamRange(*files[0], 0, 3), StreamRange(*files[1], 0, 3),
                                         StreamRange(*files[1], 0, 4)};
  ReadBatch batch;
  const Status got = ExecuteReads(*o.engine, ranges, {}, &batch);
  REQUIRE_FALSE(got.ok());
  CHECK(got.code() == StatusCode::kCorruption);
  CHECK_THAT(got.message(), Catch::Contains(path + ": stripe 0 stream 3 at offset"));
  // With keep_going every range is checked and only the damaged one fails.
  REQUIRE(ExecuteReads(*o.engine, ranges, {}, &batch, true).ok());
  CHECK(batch.check(0).ok());
  CHECK(batch.check(1).message() == got.message());
  CHECK(batch.check(2).ok());
}

TEST_CASE("reads of an O_DIRECT file land in place and give the same bytes") {
  Opened o({.kind = test::Io().kind, .direct = true, .max_io_bytes = 8192});
  std::vector<ReadRange> ranges;
  for (const auto& file : o.files()) {
    const StripeInfo& stripe = file->index().stripes[0];
    for (uint64_t i = 0; i < stripe.image_count; ++i) ranges.push_back(ChunkRange(*file, 0, 3, i));
    ranges.push_back(StreamRange(*file, 0, 0));
  }
  ReadBatch batch;
  REQUIRE(ExecuteReads(*o.engine, ranges, {}, &batch).ok());
  for (size_t i = 0; i < ranges.size(); ++i) {
    CHECK(std::ranges::equal(batch[i], BytesOf(ReadFile(ranges[i].file->path()), ranges[i])));
  }
}

}  // namespace
}  // namespace pcr
