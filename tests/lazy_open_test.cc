// Opening a dataset reads its manifest alone; files are opened and checked
// when first touched, under a memory bound.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <set>
#include <thread>

#include "io/pcr_file.h"
#include "pcr/convert.h"
#include "pcr/image_loader.h"
#include "pcr/record_iterator.h"
#include "reader/inspect.h"
#include "test_util.h"

namespace pcr {
namespace {

using test::TempDir;

// The 24 sample images in 12 files of one record of two images each.
struct ManyFiles {
  TempDir tmp;
  ManyFiles() {
    REQUIRE(ConvertImages({.src_dir = test::DataDir() + "/sample", .out_dir = tmp / "ds", .images_per_record = 2,
                           .records_per_file = 1})
                .ok());
  }
  std::unique_ptr<ImageDataset> Open(const ImageReaderOptions& options = {}) const {
    auto ds = ImageDataset::Open(tmp / "ds", options);
    REQUIRE(ds.ok());
    return std::move(ds).MoveValue();
  }
};

std::set<size_t> FilesOf(const ImageDataset& ds, const std::vector<uint64_t>& images) {
  std::set<size_t> files;
  for (const uint64_t i : images) files.insert(DatasetRecord(ds, ds.LocateImage(i)->first).file);
  return files;
}

TEST_CASE("open is one read of the manifest, and a rank's worker opens only the files of its share") {
  ManyFiles m;
  REQUIRE(m.Open()->num_records() == 12);
  std::set<uint64_t> delivered;
  for (uint64_t rank = 0; rank < 2; ++rank) {
    for (uint64_t worker = 0; worker < 2; ++worker) {
      auto ds = m.Open({.io = test::Io()});
      CHECK(ds->io_counters().reads == 1);
      CHECK(DatasetFilesLoaded(*ds) == 0);
      CHECK(DatasetFileCount(*ds) == 12);
      ImageLoaderOptions o{.epoch = {.rank = rank, .world_size = 2, .batch_size = 2, .worker = worker,
                                     .num_workers = 2, .shuffle_buffer = 4},
                           .fidelity = 1,
                           .transform = {.size = 16, .threads = 1}};
      auto loader = ImageLoader::Create(*ds, o, {.seed = 5});
      REQUIRE(loader.ok());
      std::vector<uint64_t> images;
      LoaderBatch batch;
      while ((*loader)->Next(&batch).MoveValue()) {
        images.insert(images.end(), batch.indices.begin(), batch.indices.end());
      }
      REQUIRE(images.size() == 6);
      delivered.insert(images.begin(), images.end());
      // The files its images lie in, each opened once, and no other.
      const std::set<size_t> files = FilesOf(*ds, images);
      CHECK(DatasetFilesLoaded(*ds) == files.size());
      CHECK(files.size() <= 6);
    }
  }
  CHECK(delivered.size() == 24);
}

TEST_CASE("a dataset with more files than its index cache holds reads the same, within the bound") {
  ManyFiles m;
  auto whole = m.Open();
  const uint64_t one_file = DatasetFile(*whole, 0).MoveValue()->MemoryBytes();
  const uint64_t bound = 3 * one_file;
  auto small = m.Open({.index_cache_bytes = bound});
  for (int pass = 0; pass < 2; ++pass) {
    auto it = RecordIterator::Create(*small, {.fidelity = 2, .shuffle_seed = 7 + static_cast<uint64_t>(pass)});
    REQUIRE(it.ok());
    RecordBatch batch;
    while ((*it)->Next(&batch).MoveValue()) {
      const std::vector<Image> want = whole->ReadRecord(batch.record, 2).MoveValue();
      REQUIRE(batch.images.size() == want.size());
      for (const ImageView& view : batch.images) {  // shuffled within the record
        const auto same = std::find_if(want.begin(), want.end(), [&](const Image& w) { return w.key == view.key; });
        REQUIRE(same != want.end());
        CHECK(view.label == same->label);
        CHECK(Bytes(view.jpeg.begin(), view.jpeg.end()) == same->jpeg);
      }
    }
  }
  for (uint64_t i = 0; i < small->num_images(); ++i) CHECK(small->sample(i)->key == whole->sample(i)->key);
  // Past the bound, what was read least recently was dropped and read again.
  CHECK(DatasetCacheBytes(*small) <= bound);
  CHECK(DatasetFilesLoaded(*small) > 12);
  CHECK(DatasetFilesLoaded(*whole) == 12);
}

TEST_CASE("concurrent first touches of a file read it once") {
  ManyFiles m;
  for (int round = 0; round < 20; ++round) {
    auto ds = m.Open();
    std::vector<std::thread> threads;
    std::atomic<int> failed{0};
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] {
        if (!(t % 2 ? ds->ReadRecord(0, 1).ok() : ds->sample(1).ok())) ++failed;
      });
    }
    for (std::thread& t : threads) t.join();
    CHECK(failed == 0);
    CHECK(DatasetFilesLoaded(*ds) == 1);
  }
}

TEST_CASE("a manifest written before 0.9 reads the same, each file opened at open") {
  ManyFiles m;
  auto now = m.Open();
  const std::string manifest = (m.tmp.path() / "ds" / kDatasetManifestName).string();
  auto engine = MakeIoEngine({.kind = IoEngineKind::kPread});
  REQUIRE(engine.ok());
  DatasetManifest old = PcrFile::Open(manifest, engine->get()).MoveValue()->manifest();
  REQUIRE(old.records);
  old.records = false;
  Bytes index, file;
  old.EncodeTo(&index);
  FileHeader{.kind = FileKind::kDataset, .version_minor = 1}.EncodeTo(&file);
  PutBytes(&file, EncodeIndexAndFooter(index, file.size()));
  test::WriteFile(manifest, file);

  auto before = m.Open();
  CHECK(DatasetFilesLoaded(*before) == 12);
  CHECK(before->num_records() == now->num_records());
  CHECK(before->field_schema() == now->field_schema());
  CHECK(before->content_id() == now->content_id());
  for (uint64_t r = 0; r < now->num_records(); ++r) {
    CHECK(DatasetRecord(*before, r).image_count == DatasetRecord(*now, r).image_count);
    const auto a = before->ReadRecord(r, kFullFidelity).MoveValue();
    const auto b = now->ReadRecord(r, kFullFidelity).MoveValue();
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) CHECK((a[i].jpeg == b[i].jpeg && a[i].key == b[i].key));
  }
}

}  // namespace
}  // namespace pcr
