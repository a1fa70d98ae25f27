// Attacks on the reader: every truncation and every single-byte flip of a
// small real file must give an error or the correct data.
#include <catch2/catch.hpp>

#include <filesystem>

#include "format/checksum.h"
#include "reader/inspect.h"
#include "pcr/decode.h"
#include "tools/quality.h"
#include "pcr/record_iterator.h"
#include "pcr/verify.h"
#include "test_util.h"
#include "pcr/convert.h"

namespace pcr {
namespace {

namespace fs = std::filesystem;
using test::DataDir;
using test::ReadFile;
using test::TempDir;
using test::WriteFile;

// Every image of the file at every fidelity, read record-wise and one by one;
// or the first error.
Result<std::vector<Bytes>> ReadEverything(const std::string& path) {
  PCR_ASSIGN_OR_RETURN(auto ds, ImageDataset::Open(path, {.io = test::Io()}));
  std::vector<Bytes> out;
  for (int k = 1; k <= ds->num_scan_groups(); ++k) {
    for (uint64_t r = 0; r < ds->num_records(); ++r) {
      PCR_ASSIGN_OR_RETURN(auto images, ds->ReadRecord(r, k));
      for (Image& img : images) {
        out.push_back(std::move(img.jpeg));
        out.back().push_back(static_cast<uint8_t>(img.label));
        out.back().insert(out.back().end(), img.key.begin(), img.key.end());
      }
    }
    for (uint64_t i = 0; i < ds->num_images(); ++i) {
      PCR_ASSIGN_OR_RETURN(Image img, ds->ReadImage(i, k));
      out.push_back(std::move(img.jpeg));
    }
  }
  return out;
}

struct SmallFile {
  TempDir tmp;
  std::string path;
  Bytes bytes;
  std::vector<Bytes> expected;

  SmallFile() {
    fs::create_directories(tmp.path() / "src/a");
    fs::create_directories(tmp.path() / "src/b");
    fs::copy(DataDir() + "/sample/video/video-001.q50.410.jpeg", tmp.path() / "src/a");
    fs::copy(DataDir() + "/sample/misc/jpg-cmyk-1.jpg", tmp.path() / "src/b");
    fs::copy(DataDir() + "/sample/misc/jpg-size-1x1.jpg", tmp.path() / "src/b");
    auto done = ConvertImages({.src_dir = tmp / "src", .out_dir = tmp / "out",
                               .images_per_record = 2, .records_per_file = 2});
    REQUIRE(done.ok());
    path = tmp / "out/records-00000.pcr";
    bytes = ReadFile(path);
    auto all = ReadEverything(path);
    REQUIRE(all.ok());
    expected = std::move(all).value();
  }
};

TEST_CASE("every truncation of a file is refused") {
  SmallFile f;
  const std::string cut_path = f.tmp / "cut.pcr";
  for (size_t len = 0; len < f.bytes.size(); ++len) {
    WriteFile(cut_path, ByteSpan(f.bytes).first(len));
    auto opened = ImageDataset::Open(cut_path, {.io = test::Io()});
    INFO("length " << len);
    REQUIRE_FALSE(opened.ok());
    CHECK(opened.status().code() == StatusCode::kCorruption);
    CHECK_THAT(opened.status().message(), Catch::Contains(cut_path));
    CHECK_FALSE(VerifyPath(cut_path, test::Io()).errors.empty());
  }
}

TEST_CASE("every flipped byte is caught by verify, and reads never return wrong data") {
  SmallFile f;
  const std::string bad_path = f.tmp / "flip.pcr";
  size_t opened = 0;
  for (size_t i = 0; i < f.bytes.size(); ++i) {
    for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}}) {
      Bytes bad = f.bytes;
      bad[i] ^= mask;
      WriteFile(bad_path, bad);
      INFO("offset " << i << " mask " << int{mask});
      CHECK_FALSE(VerifyPath(bad_path, test::Io()).errors.empty());
      auto got = ReadEverything(bad_path);
      if (got.ok()) {
        ++opened;
        CHECK(*got == f.expected);
      } else {
        CHECK_THAT(got.status().message(), Catch::Contains(bad_path));
      }
    }
  }
  // Every byte is covered by a checksum, so no flip reads back as data.
  CHECK(opened == 0);
}

TEST_CASE("a corrupt stream error names file, stripe, stream and offset") {
  SmallFile f;
  auto ds = ImageDataset::Open(f.path, {.io = test::Io()});
  REQUIRE(ds.ok());
  const auto file = DatasetFile(**ds, 0).value();
  const StripeInfo& stripe = file->index().stripes[1];
  const uint64_t at = stripe.stream_offset(2) + 1;
  Bytes bad = f.bytes;
  bad[at] ^= 0xff;
  const std::string bad_path = f.tmp / "bad.pcr";
  WriteFile(bad_path, bad);
  auto reopened = ImageDataset::Open(bad_path, {.io = test::Io()});
  REQUIRE(reopened.ok());  // metadata and index are intact
  auto rec = (*reopened)->ReadRecord(1, 2);
  REQUIRE_FALSE(rec.ok());
  CHECK(rec.status().code() == StatusCode::kCorruption);
  CHECK_THAT(rec.status().message(), Catch::Contains(bad_path + ": stripe 1 stream 2 at offset " +
                                                     std::to_string(stripe.stream_offset(2))));
  CHECK((*reopened)->ReadRecord(1, 1).ok());
  const VerifyReport report = VerifyPath(bad_path, test::Io());
  REQUIRE(report.errors.size() == 2);  // the stream and the chunk inside it
}

TEST_CASE("a dataset whose files disagree with the manifest is refused") {
  SmallFile f;
  fs::copy(DataDir() + "/sample/misc/jpg-size-1x1.jpg", f.tmp.path() / "src/b/extra.jpg");
  REQUIRE(ConvertImages({.src_dir = f.tmp / "src", .out_dir = f.tmp / "other"}).ok());
  fs::copy_file(f.tmp.path() / "other/records-00000.pcr", f.tmp.path() / "out/records-00000.pcr",
                fs::copy_options::overwrite_existing);
  // Open reads the manifest alone; the file is checked when first touched.
  auto ds = ImageDataset::Open(f.tmp / "out", {.io = test::Io()});
  REQUIRE(ds.ok());
  auto read = (*ds)->ReadRecord(0, 1);
  REQUIRE_FALSE(read.ok());
  CHECK_THAT(read.status().message(), Catch::Contains("records-00000.pcr"));
  CHECK_THAT(read.status().message(), Catch::Contains("differs from the manifest"));
  CHECK_FALSE((*ds)->sample(0).ok());
  CHECK_FALSE((*ds)->counts().ok());
}


TEST_CASE("a damaged index with valid checksums is refused or reads the same data") {
  SmallFile f;
  const size_t footer = f.bytes.size() - kFooterSize;
  const uint64_t index_offset = LoadFixed64(f.bytes.data() + footer);
  const std::string bad_path = f.tmp / "index.pcr";
  size_t accepted = 0, refused = 0;
  for (size_t i = index_offset; i < footer; ++i) {
    for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x10}, uint8_t{0x80}, uint8_t{0xff}}) {
      Bytes bad = f.bytes;
      bad[i] ^= mask;
      test::RefixIndexChecksum(&bad);
      WriteFile(bad_path, bad);
      INFO("index byte " << i - index_offset << " mask " << int{mask});
      auto got = ReadEverything(bad_path);
      if (!got.ok()) {
        ++refused;
        CHECK_THAT(got.status().message(), Catch::Contains(bad_path));
        continue;
      }
      // The index decoded and every checksum it names held: the bytes read
      // are the file's own, so they must be what was written.
      ++accepted;
      CHECK(*got == f.expected);
      CHECK(VerifyPath(bad_path, test::Io()).errors.empty());
    }
  }
  std::printf("index damage with re-fixed checksums: %zu refused, %zu read back unchanged\n", refused, accepted);
  CHECK(refused > 0);
}

TEST_CASE("every read path checks the chunks verify checks") {
  SmallFile f;
  const std::string bad_path = f.tmp / "chunk.pcr";
  // Chunk checksums that disagree with their bytes, inside valid stream checksums.
  WriteFile(bad_path, test::RewriteIndex(f.bytes, [](FileIndex* index) {
    for (ChunkInfo& c : index->stripes[1].chunks) c.checksum ^= 1;
  }));
  const VerifyReport v = VerifyPath(bad_path, test::Io());
  REQUIRE(!v.errors.empty());
  CHECK_THAT(v.errors[0], Catch::Contains("chunk checksum mismatch"));
  auto ds = ImageDataset::Open(bad_path, {.io = test::Io()});
  REQUIRE(ds.ok());
  for (int k = 1; k <= (*ds)->num_scan_groups(); ++k) {
    INFO("fidelity " << k);
    REQUIRE((*ds)->ReadRecord(0, k).ok());
    auto record = (*ds)->ReadRecord(1, k);
    REQUIRE(!record.ok());
    CHECK_THAT(record.status().message(),
               Catch::Contains(bad_path + ": stripe 1 stream 1 image 0") && Catch::Contains("chunk checksum mismatch"));
    auto it = RecordIterator::Create(**ds, {.fidelity = k});
    REQUIRE(it.ok());
    RecordBatch batch;
    Result<bool> more = true;
    while (more.ok() && *more) more = (*it)->Next(&batch);
    REQUIRE(!more.ok());
    CHECK_THAT(more.status().message(), Catch::Contains("chunk checksum mismatch"));
    // The error ends the iteration: later calls give it again.
    const Result<bool> after = (*it)->Next(&batch);
    REQUIRE(!after.ok());
    CHECK(after.status().message() == more.status().message());
  }
  auto quality = MeasureFidelityQuality(**ds, (*ds)->num_images());
  REQUIRE(!quality.ok());
  CHECK_THAT(quality.status().message(), Catch::Contains("chunk checksum mismatch"));
}

TEST_CASE("an empty segments chunk's checksum is checked wherever segments are put back") {
  // One image keeps segments apart (so the file has a segments stream), the
  // other none: its segments chunk is empty.
  TempDir tmp;
  fs::create_directories(tmp.path() / "src/a");
  fs::copy(DataDir() + "/segments/jpg-cmyk-2.jpg", tmp.path() / "src/a");
  fs::copy(DataDir() + "/sample/misc/jpg-size-1x1.jpg", tmp.path() / "src/a");
  REQUIRE(ConvertImages({.src_dir = tmp / "src", .out_dir = tmp / "out", .images_per_record = 2}).ok());
  const Bytes bytes = ReadFile(tmp / "out/records-00000.pcr");
  auto ds = ImageDataset::Open(tmp / "out/records-00000.pcr", {.io = test::Io()});
  REQUIRE(ds.ok());
  const uint64_t image = (*ds)->sample(0)->key == "a/jpg-size-1x1.jpg" ? 0 : 1;
  REQUIRE((*ds)->sample(image)->key == "a/jpg-size-1x1.jpg");
  const int segments_group = (*ds)->num_scan_groups() + 1;
  const std::string bad_path = tmp / "segments.pcr";
  WriteFile(bad_path, test::RewriteIndex(bytes, [&](FileIndex* index) {
    StripeInfo& stripe = index->stripes[0];
    REQUIRE(stripe.has_segments);
    ChunkInfo& c = stripe.chunks[static_cast<size_t>(segments_group - 1) * stripe.image_count + image];
    REQUIRE(c.length == 0);
    c.checksum ^= 1;
  }));
  auto bad = ImageDataset::Open(bad_path, {.io = test::Io()});
  REQUIRE(bad.ok());
  const uint64_t record = 0;
  // Without segments nothing reads the chunk; with them, both paths check it.
  CHECK((*bad)->ReadRecordBatches({&record, 1}, {.fidelity = kFullFidelity}).ok());
  CHECK((*bad)->ReadImage(image, kFullFidelity).ok());
  auto batches = (*bad)->ReadRecordBatches({&record, 1}, {.fidelity = kFullFidelity, .segments = true});
  REQUIRE(!batches.ok());
  CHECK_THAT(batches.status().message(), Catch::Contains("(segments)") && Catch::Contains("chunk checksum mismatch"));
  const ImageRequest request{.image = image, .fidelity = kFullFidelity, .segments = true};
  auto images = (*bad)->ReadImages({&request, 1});
  REQUIRE(!images.ok());
  CHECK_THAT(images.status().message(), Catch::Contains("(segments)") && Catch::Contains("chunk checksum mismatch"));
}

TEST_CASE("damage behind re-fixed checksums reaches the decoders, which refuse it or decode") {
  SmallFile f;
  const uint64_t index_offset = LoadFixed64(f.bytes.data() + f.bytes.size() - kFooterSize);
  const std::string bad_path = f.tmp / "refixed.pcr";
  size_t refused = 0, jpeg_errors = 0, decoded = 0, named_errors = 0;
  for (size_t i = kFileHeaderSize; i < index_offset; ++i) {
    const uint8_t mask = i % 2 ? 0x01 : 0xff;  // one low bit, or the whole byte
    Bytes bad = f.bytes;
    bad[i] ^= mask;
    WriteFile(bad_path, test::RefixChecksums(bad));
    INFO("offset " << i << " mask " << int{mask});
    // The checksums hold, so the readers accept the bytes ...
    auto ds = ImageDataset::Open(bad_path, {.io = test::Io()});
    REQUIRE(ds.ok());
    // ... unless the sample metadata no longer parses, which a read of the
    // record finds.
    auto metadata = (*ds)->ReadRecordBatches(std::vector<uint64_t>{0, 1}, {.fidelity = kFieldsOnly});
    if (!metadata.ok()) {
      ++refused;
      CHECK_THAT(metadata.status().message(), Catch::Contains(bad_path));
      continue;
    }
    // ... and the damage reaches the JPEG decoder: an error or pixels.
    bool any_error = false;
    for (int k = 1; k <= (*ds)->num_scan_groups(); ++k) {
      for (uint64_t image = 0; image < (*ds)->num_images(); ++image) {
        auto img = (*ds)->ReadImage(image, k);
        REQUIRE(img.ok());
        auto pixels = DecodeJpeg(img->jpeg);
        ++(pixels.ok() ? decoded : jpeg_errors);
        any_error |= !pixels.ok();
      }
    }
    // A decode error names the file, the image and its key (checked on the
    // first few damaged files: the report decodes every image at every group).
    if (any_error && named_errors++ < 8) {
      auto quality = MeasureFidelityQuality(**ds, (*ds)->num_images());
      REQUIRE(!quality.ok());
      CHECK_THAT(quality.status().message(),
                 Catch::Matches(".*refixed\\.pcr: image [0-9]+ \\(record [0-9]+, key [^)]+\\) at fidelity [0-9]+: .*"));
    }
  }
  std::printf("stream damage with re-fixed checksums: %zu files refused, %zu decodes failed, %zu decoded\n",
              refused, jpeg_errors, decoded);
  CHECK(refused > 0);
  CHECK(jpeg_errors > 0);
  CHECK(named_errors > 0);
}

}  // namespace
}  // namespace pcr
