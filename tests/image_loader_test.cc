#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>

#include "format/permutation.h"
#include "pcr/convert.h"
#include "pcr/image_loader.h"
#include "reader/inspect.h"
#include "test_util.h"

namespace pcr {
namespace {

using test::TempDir;

ImageLoaderOptions Options(uint64_t rank, uint64_t world, uint64_t workers = 1, uint64_t worker = 0) {
  return {.epoch = {.rank = rank, .world_size = world, .batch_size = 4, .worker = worker, .num_workers = workers,
                    .shuffle_buffer = 8},
          .fidelity = 2,
          .transform = {.size = 32, .threads = 2}};
}

std::vector<LoaderBatch> Drain(ImageLoader& loader, size_t at_most = SIZE_MAX) {
  std::vector<LoaderBatch> out;
  LoaderBatch batch;
  while (out.size() < at_most && loader.Next(&batch).MoveValue()) out.push_back(batch);
  return out;
}

TEST_CASE("Output::kDecoded gives each image whole at its decoded size, a ragged batch, resumable") {
  TempDir tmp;
  auto ds = test::OpenSample(tmp, 5);
  ImageLoaderOptions o = Options(0, 1);
  o.output = ImageLoaderOptions::Output::kDecoded;
  o.decoded_scale = 2;
  auto loader = ImageLoader::Create(*ds, o, {.seed = 3});
  REQUIRE(loader.ok());
  const std::vector<LoaderBatch> got = Drain(**loader);
  CHECK(got.size() == (*loader)->num_batches());
  std::set<uint64_t> seen;
  std::set<std::pair<int, int>> sizes;
  for (const LoaderBatch& b : got) {
    REQUIRE(b.shapes.size() == b.indices.size());
    REQUIRE(b.offsets.size() == b.indices.size());
    for (size_t j = 0; j < b.indices.size(); ++j) {
      INFO("image " << b.indices[j]);
      seen.insert(b.indices[j]);
      // The pixels of pcr's one-off decode of the image at fidelity 2, halved.
      const Image img = ds->ReadImage(b.indices[j], 2).MoveValue();
      auto want = DecodeJpeg(img.jpeg, {.scale_denom = 2, .format = PixelFormat::kRgb});
      REQUIRE(want.ok());
      CHECK(b.shapes[j].width == want->width);
      CHECK(b.shapes[j].height == want->height);
      sizes.insert({want->width, want->height});
      REQUIRE(b.offsets[j] + want->pixels.size() <= b.images.size());
      CHECK(std::equal(want->pixels.begin(), want->pixels.end(),
                       b.images.begin() + static_cast<std::ptrdiff_t>(b.offsets[j])));
      CHECK(b.labels[j] == img.label);
    }
  }
  CHECK(seen.size() == ds->num_images());
  CHECK(sizes.size() > 3);  // no square resize: the sample's sizes differ
  // Resumed after batch 2, the rest is the same.
  auto resumed = ImageLoader::Create(*ds, o, {.seed = 3, .batches = 2, .num_workers = 1});
  REQUIRE(resumed.ok());
  const std::vector<LoaderBatch> rest = Drain(**resumed);
  REQUIRE(rest.size() + 2 == got.size());
  for (size_t i = 0; i < rest.size(); ++i) {
    CHECK(rest[i].indices == got[i + 2].indices);
    CHECK(rest[i].images == got[i + 2].images);
  }
  // A batch beyond max_batch_bytes is refused from the headers, before decoding.
  o.max_batch_bytes = 100;
  auto small = ImageLoader::Create(*ds, o);
  REQUIRE(small.ok());
  LoaderBatch batch;
  auto next = (*small)->Next(&batch);
  REQUIRE_FALSE(next.ok());
  CHECK(next.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(next.status().message(), Catch::Contains("more than max_batch_bytes (100)"));
  o.decoded_scale = 3;
  CHECK_THAT(ImageLoader::Create(*ds, o).status().message(), Catch::Contains("decoded_scale"));
  o.decoded_scale = 1;
  o.output = static_cast<ImageLoaderOptions::Output>(5);
  CHECK_THAT(ImageLoader::Create(*ds, o).status().message(), Catch::Contains("output must be"));
}

uint64_t ChainedSeed(std::initializer_list<uint64_t> values) {
  uint64_t z = 0;
  for (const uint64_t v : values) z = SplitMix64(z ^ v).Next();
  return z;
}

TEST_CASE("the loader's batches are the rank's samples decoded with the batch's seed") {
  TempDir tmp;
  auto ds = test::OpenSample(tmp, 5);
  const LoaderState start{.seed = 5, .epoch = 2};
  for (uint64_t rank = 0; rank < 2; ++rank) {
    const ImageLoaderOptions o = Options(rank, 2);
    auto loader = ImageLoader::Create(*ds, o, start);
    REQUIRE(loader.ok());
    const std::vector<LoaderBatch> got = Drain(**loader);
    CHECK(got.size() == (*loader)->num_batches());
    CHECK(got.size() == BatchesPerRank(ds->num_images(), o.epoch).value());

    auto samples = SampleIterator::Create(*ds, {.epoch = o.epoch, .fidelity = o.fidelity}, {5, 2, 0});
    auto decoder = BatchDecoder::Create(o.transform);
    REQUIRE(samples.ok());
    REQUIRE(decoder.ok());
    SampleBatch jpegs;
    for (uint64_t b = 0; b < got.size(); ++b) {
      REQUIRE((*samples)->Next(&jpegs).MoveValue());
      std::vector<ByteSpan> spans;
      std::vector<int64_t> labels;
      for (const Image& img : jpegs.images) {
        spans.push_back(img.jpeg);
        labels.push_back(img.label);
      }
      std::vector<uint8_t> pixels(spans.size() * (*decoder)->image_bytes());
      REQUIRE((*decoder)->Decode(spans, ChainedSeed({5, 2, rank, b}), pixels).ok());
      CHECK(got[b].batch == b);
      CHECK(got[b].indices == jpegs.indices);
      CHECK(got[b].labels == labels);
      CHECK(got[b].images == pixels);
    }
    CHECK_FALSE((*samples)->Next(&jpegs).MoveValue());
    CHECK((*loader)->state() == LoaderState{5, 2, got.size(), 1});
  }
}

TEST_CASE("workers taken in turn give the rank's batches in order, the same images for any count") {
  TempDir tmp;
  auto ds = test::OpenSample(tmp, 5);
  for (uint64_t rank = 0; rank < 3; ++rank) {
    std::multiset<uint64_t> alone;
    for (const LoaderBatch& b : Drain(**ImageLoader::Create(*ds, Options(rank, 3)))) {
      alone.insert(b.indices.begin(), b.indices.end());
    }
    for (uint64_t workers : {2, 3, 5}) {
      std::vector<std::unique_ptr<ImageLoader>> loaders;
      for (uint64_t w = 0; w < workers; ++w) loaders.push_back(ImageLoader::Create(*ds, Options(rank, 3, workers, w)).MoveValue());
      std::multiset<uint64_t> together;
      LoaderBatch batch;
      uint64_t next = 0;
      for (bool more = true; more;) {
        more = false;
        for (auto& l : loaders) {
          if (!l->Next(&batch).MoveValue()) continue;
          more = true;
          CHECK(batch.batch == next++);
          together.insert(batch.indices.begin(), batch.indices.end());
        }
      }
      CHECK(next == loaders[0]->num_batches());
      CHECK(together == alone);
    }
  }
}

TEST_CASE("a loader made from a saved state delivers the batches after it, byte for byte") {
  TempDir tmp;
  auto ds = test::OpenSample(tmp, 5);
  for (uint64_t workers : {1, 2}) {
    // Uninterrupted: the rank's batches in turn from its workers.
    auto run = [&](const LoaderState& start, size_t stop_after) {
      std::vector<std::unique_ptr<ImageLoader>> loaders;
      for (uint64_t w = 0; w < workers; ++w) {
        loaders.push_back(ImageLoader::Create(*ds, Options(1, 2, workers, w), start).MoveValue());
      }
      std::vector<LoaderBatch> out;
      LoaderBatch batch;
      LoaderState last = start;
      for (size_t i = 0; out.size() < stop_after; ++i) {
        ImageLoader& l = *loaders[i % workers];
        if (!l.Next(&batch).MoveValue()) break;
        out.push_back(batch);
        last = l.state();
      }
      return std::make_pair(out, last);
    };
    const auto [all, end] = run({.seed = 9, .epoch = 1}, SIZE_MAX);
    REQUIRE(all.size() >= 3);
    for (size_t stop = 0; stop <= all.size(); ++stop) {
      INFO("workers " << workers << ", stop after " << stop);
      const auto [first, saved] = run({.seed = 9, .epoch = 1}, stop);
      CHECK(saved.batches == stop);
      const LoaderState parsed = LoaderState::Parse(saved.ToString()).MoveValue();
      CHECK(parsed == saved);
      const auto [rest, _] = run(parsed, SIZE_MAX);
      REQUIRE(first.size() + rest.size() == all.size());
      for (size_t b = 0; b < rest.size(); ++b) {
        CHECK(rest[b].batch == stop + b);
        CHECK(rest[b].indices == all[stop + b].indices);
        CHECK(rest[b].images == all[stop + b].images);
      }
    }
  }
}

TEST_CASE("max_batches delivers a part of the share, the same batches, reading and decoding none after it") {
  TempDir tmp;
  auto ds = test::OpenSample(tmp, 2);
  ImageLoaderOptions o = Options(0, 1);
  o.epoch.shuffle_buffer = 4;
  o.read_ahead = 64;
  auto whole = ImageLoader::Create(*ds, o, {.seed = 5, .epoch = 1}).MoveValue();
  const std::vector<LoaderBatch> all = Drain(*whole);
  REQUIRE(all.size() == 6);
  whole.reset();
  for (uint64_t start : {0, 2, 5}) {
    for (uint64_t most : {1, 2, 9}) {
      INFO("start " << start << ", max_batches " << most);
      auto reopened = ImageDataset::Open(tmp / "ds", {.io = test::Io()}).MoveValue();
      o.max_batches = most;
      auto part = ImageLoader::Create(*reopened, o, {.seed = 5, .epoch = 1, .batches = start}).MoveValue();
      const std::vector<LoaderBatch> got = Drain(*part);
      REQUIRE(got.size() == std::min<uint64_t>(most, all.size() - start));
      std::set<uint64_t> records;
      for (size_t b = 0; b < got.size(); ++b) {
        CHECK(got[b].batch == start + b);
        CHECK(got[b].indices == all[start + b].indices);
        CHECK(got[b].images == all[start + b].images);
        for (uint64_t i : got[b].indices) records.insert(reopened->LocateImage(i)->first);
      }
      part.reset();
      // Only the part's records were read: fewer bytes than the rest of the
      // epoch's where the rest has more records.
      const uint64_t read = reopened->io_counters().bytes_read;
      auto rest_ds = ImageDataset::Open(tmp / "ds", {.io = test::Io()}).MoveValue();
      o.max_batches = 0;
      std::set<uint64_t> rest_records;
      for (const LoaderBatch& b :
           Drain(*ImageLoader::Create(*rest_ds, o, {.seed = 5, .epoch = 1, .batches = start}).MoveValue())) {
        for (uint64_t i : b.indices) rest_records.insert(rest_ds->LocateImage(i)->first);
      }
      const uint64_t rest_read = rest_ds->io_counters().bytes_read;
      if (records.size() < rest_records.size()) {
        CHECK(read < rest_read);
      } else {
        CHECK(read == rest_read);
      }
    }
  }
}

TEST_CASE("bad loader options and states are refused at Create, naming what is wrong") {
  TempDir tmp;
  auto ds = test::OpenSample(tmp, 5);
  const uint64_t batches = BatchesPerRank(ds->num_images(), Options(0, 2).epoch).value();
  struct Case {
    ImageLoaderOptions options;
    LoaderState start;
    std::string want;
  };
  ImageLoaderOptions huge = Options(0, 1);
  huge.epoch.batch_size = uint64_t{1} << 40;
  ImageLoaderOptions no_size = Options(0, 1);
  no_size.transform.size = 0;
  ImageLoaderOptions fidelity = Options(0, 1);
  fidelity.fidelity = 99;
  ImageLoaderOptions field = Options(0, 1);
  field.fields = {"caption"};
  for (const Case& c : std::vector<Case>{
           {Options(2, 2), {}, "rank must be 0..1"},
           {Options(0, 2, 2, 2), {}, "worker must be 0..1"},
           {huge, {}, "batch_size 1099511627776 of 32 x 32 images (3072 bytes each) needs more than max_batch_bytes"},
           {no_size, {}, "size must be 1..65535"},
           {fidelity, {}, "fidelity"},
           {field, {}, "caption"},
           {Options(0, 2), {.batches = batches + 1}, "the state's batches must be 0.." + std::to_string(batches)},
           {Options(0, 2, 2), {.batches = 1, .num_workers = 3}, "resume with num_workers=3, not 2"},
       }) {
    INFO(c.want);
    auto loader = ImageLoader::Create(*ds, c.options, c.start);
    REQUIRE_FALSE(loader.ok());
    CHECK(loader.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(loader.status().message(), Catch::Contains(c.want));
  }
  CHECK_FALSE(LoaderState::Parse("seed=1 epoch=2 batches=3").ok());
  CHECK_FALSE(LoaderState::Parse("seed=1 epoch=2 batches=3 num_workers=1 x").ok());
  CHECK(LoaderState::Parse("seed=1 epoch=2 batches=3 num_workers=0").MoveValue() == LoaderState{1, 2, 3, 0});
}

// Damages image `image` of the one-file dataset `path`: byte `at` of its
// first scan group chunk becomes `byte`, with checksums refixed when `refix`
// (so only the decoder sees it). Returns its key.
std::string Damage(const std::string& path, uint64_t image, size_t at, uint8_t byte, bool refix) {
  auto ds = ImageDataset::Open(path).MoveValue();
  const auto [record, row] = ds->LocateImage(image).value();
  const RecordLocation& loc = DatasetRecord(*ds, record);
  const uint64_t offset = DatasetFile(*ds, loc.file).MoveValue()->ChunkOffset(loc.stripe, 1, row);
  const std::string key = ds->sample(image)->key;
  ds.reset();
  Bytes bytes = test::ReadFile(path);
  bytes[offset + at] = byte;
  test::WriteFile(path, refix ? test::RefixChecksums(bytes) : bytes);
  return key;
}

TEST_CASE("a corrupt image is named by its key and index, or with skip_corrupt left out and listed") {
  for (const bool decoder_sees_it : {false, true}) {
    INFO((decoder_sees_it ? "damage behind refixed checksums" : "damage a checksum finds"));
    TempDir tmp;
    REQUIRE(ConvertImages({.src_dir = test::DataDir() + "/sample", .out_dir = tmp / "ds", .images_per_record = 5,
                           .records_per_file = 100})
                .ok());
    const std::string path = DatasetFile(*ImageDataset::Open(tmp / "ds").MoveValue(), 0).MoveValue()->path();
    const uint64_t images = ImageDataset::Open(path).MoveValue()->num_images();
    // Byte 0 of the chunk is the SOI marker's 0xFF: no JPEG without it.
    const std::string key = Damage(path, 7, 0, 0x00, decoder_sees_it);
    auto ds = ImageDataset::Open(path).MoveValue();
    ImageLoaderOptions o = Options(0, 1);
    auto failing = ImageLoader::Create(*ds, o).MoveValue();
    LoaderBatch batch;
    Result<bool> more = true;
    while (more.ok() && *more) more = failing->Next(&batch);
    REQUIRE_FALSE(more.ok());
    CHECK(more.status().code() == StatusCode::kCorruption);
    CHECK_THAT(more.status().message(), Catch::Contains("image 7") && Catch::Contains(key));

    o.skip_corrupt = true;
    auto skipping = ImageLoader::Create(*ds, o).MoveValue();
    std::set<uint64_t> seen;
    for (const LoaderBatch& b : Drain(*skipping)) {
      CHECK(b.images.size() == b.indices.size() * 3 * 32 * 32);
      seen.insert(b.indices.begin(), b.indices.end());
    }
    CHECK(seen.size() == images - 1);
    CHECK(seen.count(7) == 0);
    const std::vector<SkippedImage> skipped = skipping->skipped();
    REQUIRE(skipped.size() == 1);
    CHECK(skipped[0].index == 7);
    CHECK(skipped[0].key == key);
    CHECK(skipped[0].error.code() == StatusCode::kCorruption);

    // Replaced: every batch keeps its size, image 7's place taken by the
    // first image of its batch, decoded alike.
    o.replace_skipped = true;
    auto replacing = ImageLoader::Create(*ds, o).MoveValue();
    const std::vector<LoaderBatch> full = Drain(*replacing);
    REQUIRE(full.size() == replacing->num_batches());
    uint64_t delivered = 0, repeats = 0;
    for (const LoaderBatch& b : full) {
      const size_t n = b.indices.size(), bytes = 3 * 32 * 32;
      CHECK(n == std::min<uint64_t>(o.epoch.batch_size, images - delivered));
      CHECK(b.labels.size() == n);
      CHECK(b.images.size() == n * bytes);
      delivered += n;
      CHECK(std::count(b.indices.begin(), b.indices.end(), 7) == 0);
      const std::set<uint64_t> distinct(b.indices.begin(), b.indices.end());
      if (distinct.size() < n) {
        ++repeats;
        CHECK(b.indices.back() == b.indices.front());
        CHECK(std::equal(b.images.end() - static_cast<std::ptrdiff_t>(bytes), b.images.end(), b.images.begin()));
      }
    }
    CHECK(delivered == images);
    CHECK(repeats == 1);
    CHECK(replacing->skipped().size() == 1);
  }
}

TEST_CASE("with skip_corrupt, a record whose labels and keys fail their checksum is skipped image by image") {
  TempDir tmp;
  REQUIRE(ConvertImages({.src_dir = test::DataDir() + "/sample",
                         .out_dir = tmp / "ds",
                         .images_per_record = 5,
                         .records_per_file = 100})
              .ok());
  const std::string path = DatasetFile(*ImageDataset::Open(tmp / "ds").MoveValue(), 0).MoveValue()->path();
  uint64_t offset = 0, images = 0;
  {
    auto ds = ImageDataset::Open(path).MoveValue();
    images = ds->num_images();
    const RecordLocation& loc = DatasetRecord(*ds, 1);
    offset = DatasetFile(*ds, loc.file).MoveValue()->index().stripes[loc.stripe].stream_offset(0);
  }
  Bytes bytes = test::ReadFile(path);
  bytes[offset] ^= 0x01;
  test::WriteFile(path, bytes);
  auto ds = ImageDataset::Open(path).MoveValue();
  ImageLoaderOptions o = Options(0, 1);
  o.skip_corrupt = true;
  auto skipping = ImageLoader::Create(*ds, o).MoveValue();
  std::set<uint64_t> seen;
  for (const LoaderBatch& b : Drain(*skipping)) seen.insert(b.indices.begin(), b.indices.end());
  std::set<uint64_t> skipped;
  for (const SkippedImage& s : skipping->skipped()) {
    CHECK(s.error.code() == StatusCode::kCorruption);
    skipped.insert(s.index);
  }
  CHECK(skipped == std::set<uint64_t>{5, 6, 7, 8, 9});
  CHECK(seen.size() == images - 5);
  for (uint64_t i = 5; i < 10; ++i) CHECK(seen.count(i) == 0);
}

}  // namespace
}  // namespace pcr
