// Reading image datasets: every fidelity, single files, read counts, batches.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "format/checksum.h"
#include "pcr/convert.h"
#include "pcr/decode.h"
#include "pcr/verify.h"
#include "reader/inspect.h"
#include "tests/image_util.h"
#include "writer/file_writer.h"
#include "writer/transcode.h"

namespace pcr {
namespace {

namespace fs = std::filesystem;
using test::DataDir;
using test::ReadFile;
using test::RequireSamePixels;
using test::SampleFiles;
using test::SampleOptions;
using test::TempDir;
using test::TreeHashes;

TEST_CASE("a converted dataset reads back at every fidelity") {
  TempDir tmp;
  const auto before = TreeHashes(DataDir() + "/sample");
  auto summary = ConvertImages(SampleOptions(tmp / "ds", 2));
  REQUIRE(summary.ok());
  CHECK(TreeHashes(DataDir() + "/sample") == before);

  const auto files = SampleFiles();
  REQUIRE(summary->images == files.size());
  auto ds = ImageDataset::Open(tmp / "ds", {.io = test::Io()});
  REQUIRE(ds.ok());
  CHECK((*ds)->num_images() == files.size());
  CHECK((*ds)->num_records() == (files.size() + 4) / 5);
  CHECK((*ds)->class_names() == std::vector<std::string>{"misc", "textures", "video"});
  // The default script is the first built-in one.
  CHECK((*ds)->scan_script() == *BuiltinScanScript(BuiltinScanScriptNames().front()));
  const int L = (*ds)->num_scan_groups();
  REQUIRE(L == 5);

  for (uint64_t r = 0; r < (*ds)->num_records(); ++r) {
    for (int k = 1; k < L; ++k) CHECK((*ds)->RecordBytes(r, k).value() < (*ds)->RecordBytes(r, k + 1).value());
  }
  uint64_t image = 0;
  for (uint64_t r = 0; r < (*ds)->num_records(); ++r) {
    auto full = (*ds)->ReadRecord(r, L);
    REQUIRE(full.ok());
    for (const Image& img : *full) {
      INFO(img.key);
      const fs::path src = fs::path(DataDir()) / "sample" / img.key;
      REQUIRE(src == files[image]);
      const std::string cls = fs::path(img.key).begin()->string();
      CHECK((*ds)->class_names()[img.label] == cls);
      RequireSamePixels(ReadFile(src), img.jpeg);
      for (int k = 1; k <= L; ++k) {
        auto single = (*ds)->ReadImage(image, k);
        REQUIRE(single.ok());
        CHECK(single->key == img.key);
        CHECK(single->label == img.label);
        CHECK(DecodeJpeg(single->jpeg).ok());
        auto rec = (*ds)->ReadRecord(r, k);
        REQUIRE(rec.ok());
        CHECK(rec->at(image - DatasetRecord(**ds, r).first_image).jpeg == single->jpeg);
        // Cut from any fidelity at or above k, with no read: the same bytes.
        for (int from = k; from <= L; ++from) {
          const Bytes above = (*ds)->ReadImage(image, from).value().jpeg;
          auto cut = (*ds)->LowerFidelity(image, above, from, k);
          REQUIRE(cut.ok());
          CHECK(*cut == single->jpeg);
        }
      }
      ++image;
    }
  }
  CHECK_FALSE((*ds)->ReadRecord(0, 0).ok());
  CHECK_FALSE((*ds)->ReadRecord(0, L + 1).ok());
  CHECK_FALSE((*ds)->ReadImage(image, 1).ok());
  const VerifyReport report = VerifyPath(tmp / "ds", test::Io());
  CHECK(report.errors.empty());
  CHECK(report.files == summary->files);
}

TEST_CASE("LowerFidelity refuses a JPEG that is not the image at the fidelity it names") {
  TempDir tmp;
  REQUIRE(ConvertImages(SampleOptions(tmp / "ds", 2)).ok());
  auto ds = ImageDataset::Open(tmp / "ds", {.io = test::Io()}).MoveValue();
  const int L = ds->num_scan_groups();
  // An image with bytes in every scan group, and another one.
  auto every_group = [&](uint64_t i) {
    for (int k = 1; k < L; ++k) {
      if (ds->ReadImage(i, k).value().jpeg.size() >= ds->ReadImage(i, k + 1).value().jpeg.size()) return false;
    }
    return true;
  };
  uint64_t image = 0;
  while (!every_group(image)) ++image;
  const uint64_t another = image + 1;
  const Bytes full = ds->ReadImage(image, L).value().jpeg;
  const Bytes other = ds->ReadImage(another, L).value().jpeg;
  CHECK(ds->LowerFidelity(image, full, kFullFidelity, 2).ok());
  auto code = [&](uint64_t i, ByteSpan jpeg, int from, int to) {
    return ds->LowerFidelity(i, jpeg, from, to).status().code();
  };
  CHECK(code(image, full, 2, 3) == StatusCode::kInvalidArgument);  // above the JPEG's fidelity
  CHECK(code(image, full, L, 0) == StatusCode::kInvalidArgument);
  CHECK(code(image, full, L + 1, 1) == StatusCode::kInvalidArgument);
  CHECK(code(ds->num_images(), full, L, 1) == StatusCode::kInvalidArgument);
  CHECK(code(another, full, L, 1) == StatusCode::kCorruption);  // another image's bytes
  CHECK(code(image, other, L, 1) == StatusCode::kCorruption);
  CHECK(code(image, full, L - 1, 1) == StatusCode::kCorruption);  // read at L, said to be L - 1
  CHECK(code(image, ByteSpan(full).first(full.size() - 1), L, 1) == StatusCode::kCorruption);  // no EOI
  CHECK(code(image, ByteSpan(full).first(40), L, 1) == StatusCode::kCorruption);
  Bytes flipped = full;
  flipped[flipped.size() - 3] ^= 0x01;  // the last byte of scan group L
  const Status st = ds->LowerFidelity(image, flipped, L, 1).status();
  CHECK(st.code() == StatusCode::kCorruption);
  CHECK_THAT(st.message(),
             Catch::Contains("scan group " + std::to_string(L)) && Catch::Contains(ds->sample(image)->key));
  CHECK(ds->LowerFidelity(image, flipped, L, L).ok());  // nothing cut, nothing to check
}

TEST_CASE("a single record file opens on its own") {
  TempDir tmp;
  REQUIRE(ConvertImages(SampleOptions(tmp / "ds", 0)).ok());
  auto ds = ImageDataset::Open(tmp / "ds/records-00001.pcr", {.io = test::Io()});
  REQUIRE(ds.ok());
  CHECK((*ds)->num_images() == 5);
  CHECK((*ds)->class_names().empty());
  CHECK((*ds)->sample(0)->key == SampleFiles()[5].lexically_relative(DataDir() + "/sample").string());
}

// The sample dataset opened through an engine whose counters the test reads.
struct CountedSample {
  TempDir tmp;
  std::unique_ptr<IoEngine> engine;
  std::unique_ptr<ImageDataset> ds;
  CountedSample() {
    REQUIRE(ConvertImages(SampleOptions(tmp / "ds", 0)).ok());
    auto e = MakeIoEngine(test::Io());
    REQUIRE(e.ok());
    engine = std::move(e).value();
    auto opened = OpenImageDataset(tmp / "ds", {}, engine.get());
    REQUIRE(opened.ok());
    ds = std::move(opened).value();
    REQUIRE(DatasetAllFiles(*ds).ok());  // the files' indexes, read once
  }
};

TEST_CASE("a record at fidelity k is one read of its prefix; an image costs at most k reads") {
  CountedSample s;
  auto* ds = &s.ds;
  auto& engine = s.engine;
  for (int k = 1; k <= (*ds)->num_scan_groups(); ++k) {
    for (uint64_t r = 0; r < (*ds)->num_records(); ++r) {
      const IoCounters before = engine->counters();
      REQUIRE((*ds)->ReadRecord(r, k).ok());
      const IoCounters after = engine->counters();
      CHECK(after.reads - before.reads == 1);
      CHECK(after.bytes_read - before.bytes_read == (*ds)->RecordBytes(r, k).value());
    }
    for (uint64_t i = 0; i < (*ds)->num_images(); ++i) {
      REQUIRE((*ds)->sample(i).ok());  // the record's labels and keys, read once
      const IoCounters before = engine->counters();
      const uint64_t requested = (*ds)->bytes_requested();
      auto img = (*ds)->ReadImage(i, k);
      REQUIRE(img.ok());
      const IoCounters after = engine->counters();
      const uint64_t wanted = img->jpeg.size() - kJpegEndOfImage.size();
      CHECK(after.reads - before.reads <= static_cast<uint64_t>(k));
      CHECK((*ds)->bytes_requested() - requested == wanted);
      CHECK(after.bytes_read - before.bytes_read >= wanted);
      // Without coalescing across holes, exactly the chunks are read.
      const ImageRequest one{i, k};
      const IoCounters before_exact = engine->counters();
      auto exact = (*ds)->ReadImages({&one, 1}, {.hole_limit = 0});
      REQUIRE(exact.ok());
      CHECK(engine->counters().bytes_read - before_exact.bytes_read == wanted);
      CHECK(exact->at(0).jpeg == img->jpeg);
    }
  }
}

TEST_CASE("batched image reads coalesce, and match single reads") {
  CountedSample s;
  auto* ds = &s.ds;
  auto& engine = s.engine;
  const int L = (*ds)->num_scan_groups();
  // Every image of record 1 at fidelity k: the chunks tile streams 1..k, one read.
  for (int k = 1; k <= L; ++k) {
    const RecordLocation& rec = DatasetRecord(**ds, 1);
    std::vector<ImageRequest> whole;
    for (uint64_t i = rec.first_image + rec.image_count; i-- > rec.first_image;) whole.push_back({i, k});
    const IoCounters before = engine->counters();
    auto images = (*ds)->ReadImages(whole);
    REQUIRE(images.ok());
    CHECK(engine->counters().reads - before.reads == 1);
    // The first takes the record's labels and keys (stream 0) in the same read.
    CHECK(engine->counters().bytes_read - before.bytes_read ==
          (*ds)->RecordBytes(1, k).value() - (k == 1 ? 0 : (*ds)->RecordBytes(1, 0).value()));
    auto record = (*ds)->ReadRecord(1, k);
    REQUIRE(record.ok());
    for (size_t j = 0; j < whole.size(); ++j) {
      CHECK(images->at(j).jpeg == record->at(whole[j].image - rec.first_image).jpeg);
    }
  }
  // A mix of images from every record at different fidelities, with a duplicate.
  std::vector<ImageRequest> mix;
  for (uint64_t i = 0; i < (*ds)->num_images(); i += 3) mix.push_back({i, static_cast<int>(1 + i % L)});
  mix.push_back(mix.front());
  auto batch = (*ds)->ReadImages(mix);
  REQUIRE(batch.ok());
  for (size_t j = 0; j < mix.size(); ++j) {
    auto single = (*ds)->ReadImage(mix[j].image, mix[j].fidelity);
    REQUIRE(single.ok());
    CHECK(batch->at(j).jpeg == single->jpeg);
    CHECK(batch->at(j).key == single->key);
  }
  const ImageRequest bad[] = {{0, 1}, {(*ds)->num_images(), 1}};
  CHECK_FALSE((*ds)->ReadImages(bad).ok());
}

TEST_CASE("a label that names no class of the manifest is refused") {
  TempDir tmp;
  REQUIRE(ConvertImages(SampleOptions(tmp / "ds", 0)).ok());
  const fs::path manifest = tmp.path() / "ds" / kDatasetManifestName;
  auto engine = MakeIoEngine({.kind = IoEngineKind::kPread});
  REQUIRE(engine.ok());
  auto file = PcrFile::Open(manifest.string(), engine->get());
  REQUIRE(file.ok());
  DatasetManifest m = (*file)->manifest();
  REQUIRE(m.class_names.size() == 3);
  m.class_names.resize(1);
  file->reset();
  fs::remove(manifest);
  REQUIRE(WriteDatasetManifest(manifest.string(), m).ok());
  // Labels are read with their records: the first read of one with label 1 refuses it.
  auto ds = ImageDataset::Open(tmp / "ds", {.io = test::Io()});
  REQUIRE(ds.ok());
  uint64_t labelled = 0;
  while (labelled < (*ds)->num_images() && (*ds)->sample(labelled).ok()) ++labelled;
  REQUIRE(labelled < (*ds)->num_images());
  const Result<SampleMetadata> refused = (*ds)->sample(labelled);
  CHECK(refused.status().code() == StatusCode::kCorruption);
  CHECK_THAT(refused.status().message(), Catch::Contains("label 1 names no class (the manifest lists 1)"));
  const uint64_t record = (*ds)->LocateImage(labelled)->first;
  const auto read = (*ds)->ReadRecordBatches({&record, 1}, {.fidelity = 1});
  REQUIRE_FALSE(read.ok());
  CHECK_THAT(read.status().message(), Catch::Contains("label 1 names no class"));
  CHECK_FALSE((*ds)->ReadImage(labelled, 1).ok());
}

}  // namespace
}  // namespace pcr
