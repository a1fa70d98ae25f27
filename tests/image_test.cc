#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "format/checksum.h"
#include "reader/image_dataset_rep.h"
#include "pcr/decode.h"
#include "io/stream_reader.h"
#include "pcr/verify.h"
#include "test_util.h"
#include "pcr/convert.h"
#include "writer/transcode.h"

namespace pcr {
namespace {

namespace fs = std::filesystem;
using test::DataDir;
using test::MakeMixedSource;
using test::ReadFile;
using test::TempDir;

std::vector<fs::path> SampleFiles() {
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(DataDir() + "/sample")) {
    if (e.is_regular_file()) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The original is decoded as libjpeg-turbo's djpeg would, warnings allowed;
// the converted file must decode without any warning.
void RequireSamePixels(ByteSpan original, ByteSpan converted) {
  auto a = DecodeJpeg(original, {.warnings_are_errors = false});
  auto b = DecodeJpeg(converted);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->width == b->width);
  CHECK(a->height == b->height);
  CHECK(a->components == b->components);
  CHECK(a->pixels == b->pixels);
}

// Hash of every file under a directory, to prove it was not modified.
std::map<std::string, uint64_t> TreeHashes(const fs::path& root) {
  std::map<std::string, uint64_t> out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_regular_file()) out[e.path().string()] = Checksum64(ReadFile(e.path()));
  }
  return out;
}

TEST_CASE("every sample JPEG transcodes losslessly with every built-in script") {
  for (const std::string& name : BuiltinScanScriptNames()) {
    const ScanScript script = *BuiltinScanScript(name);
    for (const fs::path& file : SampleFiles()) {
      INFO(file.string() << " with " << name);
      const Bytes original = ReadFile(file);
      auto t = TranscodeToScanGroups(original, script);
      REQUIRE(t.ok());
      REQUIRE(t->chunks.size() == static_cast<size_t>(script.group_count()));
      RequireSamePixels(original, t->AtFidelity(script.group_count()));
      size_t previous = 0;
      for (int k = 1; k <= script.group_count(); ++k) {
        const Bytes partial = t->AtFidelity(k);
        CHECK(partial.size() >= previous);
        previous = partial.size();
        auto decoded = DecodeJpeg(partial);
        CHECK(decoded.ok());
      }
    }
  }
}

TEST_CASE("grayscale images leave colour-only scan groups empty") {
  const ScanScript script = *BuiltinScanScript("spectral");
  auto t = TranscodeToScanGroups(ReadFile(DataDir() + "/sample/misc/testimggray.jpg"), script);
  REQUIRE(t.ok());
  CHECK(t->components == 1);
  // Group 4 of "spectral" holds only the AC scans of components 1 and 2.
  CHECK(t->chunks[3].empty());
  for (int g : {0, 1, 2, 4, 5}) CHECK_FALSE(t->chunks[g].empty());
  // Groups 3 and 5 of "spectral5" too.
  auto t5 = TranscodeToScanGroups(ReadFile(DataDir() + "/sample/misc/testimggray.jpg"), *BuiltinScanScript("spectral5"));
  REQUIRE(t5.ok());
  for (int g : {0, 1, 3}) CHECK_FALSE(t5->chunks[g].empty());
  for (int g : {2, 4}) CHECK(t5->chunks[g].empty());
}

TEST_CASE("APPn segments are kept by default and dropped on request") {
  const Bytes original = ReadFile(DataDir() + "/sample/misc/jpg-srgb-icc.jpg");
  const ScanScript script = *BuiltinScanScript("spectral");
  const std::string icc = "ICC_PROFILE";
  auto contains_icc = [&](const Bytes& b) {
    return std::search(b.begin(), b.end(), icc.begin(), icc.end()) != b.end();
  };
  REQUIRE(contains_icc(original));
  auto kept = TranscodeToScanGroups(original, script);
  auto stripped = TranscodeToScanGroups(original, script, {.keep_metadata = false});
  REQUIRE(kept.ok());
  REQUIRE(stripped.ok());
  CHECK(contains_icc(kept->chunks[0]));
  CHECK_FALSE(contains_icc(stripped->chunks[0]));
  RequireSamePixels(original, stripped->AtFidelity(script.group_count()));
}

TEST_CASE("unsupported and corrupt JPEGs are refused with a reason") {
  const ScanScript script = *BuiltinScanScript("spectral");
  auto twelve = TranscodeToScanGroups(ReadFile(DataDir() + "/bad/testorig12.jpg"), script);
  REQUIRE_FALSE(twelve.ok());
  CHECK(twelve.status().code() == StatusCode::kNotSupported);
  CHECK_THAT(twelve.status().message(), Catch::Contains("12-bit"));

  auto truncated =
      TranscodeToScanGroups(ReadFile(DataDir() + "/bad/video-001.progressive.truncated.jpeg"), script);
  REQUIRE_FALSE(truncated.ok());
  CHECK(truncated.status().code() == StatusCode::kCorruption);

  auto text = TranscodeToScanGroups(ReadFile(DataDir() + "/bad/not-a-jpeg.jpg"), script);
  REQUIRE_FALSE(text.ok());
  CHECK_THAT(text.status().message(), Catch::Contains("not a JPEG"));

  // SOI, then a lossless (SOF3) frame header.
  const Bytes lossless = {0xff, 0xd8, 0xff, 0xc3, 0x00, 0x0b, 0x08, 0x00, 0x10,
                          0x00, 0x10, 0x01, 0x01, 0x11, 0x00};
  auto refused = TranscodeToScanGroups(lossless, script);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::kNotSupported);
  CHECK_THAT(refused.status().message(), Catch::Contains("lossless"));
}

ConvertImagesOptions SampleOptions(const std::string& out, int jobs) {
  return {.src_dir = DataDir() + "/sample", .out_dir = out, .images_per_record = 5, .jobs = jobs};
}

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
    for (int k = 1; k < L; ++k) CHECK((*ds)->RecordBytes(r, k) < (*ds)->RecordBytes(r, k + 1));
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
        CHECK(rec->at(image - (*ds)->rep().record(r).first_image).jpeg == single->jpeg);
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

TEST_CASE("output is byte-identical for any number of jobs") {
  TempDir tmp;
  REQUIRE(ConvertImages(SampleOptions(tmp / "one", 1)).ok());
  REQUIRE(ConvertImages(SampleOptions(tmp / "four", 4)).ok());
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(tmp / "one")) names.push_back(e.path().filename());
  REQUIRE(names.size() > 2);
  for (const std::string& n : names) {
    INFO(n);
    CHECK(ReadFile(tmp.path() / "one" / n) == ReadFile(tmp.path() / "four" / n));
  }
}

TEST_CASE("a single record file opens on its own") {
  TempDir tmp;
  REQUIRE(ConvertImages(SampleOptions(tmp / "ds", 0)).ok());
  auto ds = ImageDataset::Open(tmp / "ds/records-00001.pcr", {.io = test::Io()});
  REQUIRE(ds.ok());
  CHECK((*ds)->num_images() == 5);
  CHECK((*ds)->class_names().empty());
  CHECK((*ds)->sample(0).key == SampleFiles()[5].lexically_relative(DataDir() + "/sample").string());
}

TEST_CASE("--list gives keys and labels from a CSV") {
  TempDir tmp;
  const std::string list = tmp / "list.csv";
  std::ofstream(list) << "video/video-001.jpeg,7\ntextures/ring.jpg,3\n";
  ConvertImagesOptions o = SampleOptions(tmp / "ds", 1);
  o.list_file = list;
  REQUIRE(ConvertImages(o).ok());
  auto ds = ImageDataset::Open(tmp / "ds", {.io = test::Io()});
  REQUIRE(ds.ok());
  REQUIRE((*ds)->num_images() == 2);
  CHECK((*ds)->sample(0) == SampleMetadata{7, "video/video-001.jpeg"});
  CHECK((*ds)->sample(1) == SampleMetadata{3, "textures/ring.jpg"});
}

TEST_CASE("--list keys must be relative paths in normal form") {
  TempDir tmp;
  const std::string absolute = fs::absolute(DataDir() + "/sample/textures/ring.jpg").string();
  for (const std::string& key : {absolute, std::string("../sample/textures/ring.jpg"), std::string("./textures/ring.jpg"),
                                 std::string("textures//ring.jpg"), std::string("textures/./ring.jpg"),
                                 std::string("textures/x/../ring.jpg"), std::string("textures/")}) {
    INFO(key);
    const std::string list = tmp / "list.csv";
    std::ofstream(list) << "video/video-001.jpeg,0\n" << key << ",1\n";
    ConvertImagesOptions o = SampleOptions(tmp / "ds", 1);
    o.list_file = list;
    auto r = ConvertImages(o);
    REQUIRE(!r.ok());
    CHECK_THAT(r.status().message(), Catch::Contains(list + " line 2: path '" + key + "' is not a relative path"));
    CHECK(!fs::exists(tmp.path() / "ds"));
  }
}

TEST_CASE("files not named as JPEGs are counted and named; --by-content takes them by signature") {
  TempDir tmp;
  fs::copy(DataDir() + "/sample", tmp / "src", fs::copy_options::recursive);
  // Real JPEGs under the names of a multi-picture, a stereo and an unknown extension.
  fs::copy(DataDir() + "/sample/textures/ring.jpg", tmp / "src/textures/ring.mpo");
  fs::copy(DataDir() + "/sample/misc/restarts.jpg", tmp / "src/misc/restarts.jps");
  fs::copy(DataDir() + "/sample/video/video-001.jpeg", tmp / "src/video/clip.egd");
  std::ofstream(tmp / "src/misc/notes.txt") << "not an image\n";
  std::ofstream(tmp / "src/misc/fake.jpg") << "not a JPEG either\n";
  ConvertImagesOptions o = SampleOptions(tmp / "by-name", 2);
  o.src_dir = tmp / "src";
  o.skip_bad = true;
  auto by_name = ConvertImages(o);
  REQUIRE(by_name.ok());
  CHECK(by_name->images == 24);
  CHECK(by_name->ignored_files == 4);
  CHECK(by_name->ignored_examples ==
        std::vector<std::string>{"misc/notes.txt", "misc/restarts.jps", "textures/ring.mpo", "video/clip.egd"});
  CHECK(by_name->skipped.size() == 1);  // fake.jpg

  o.out_dir = tmp / "by-content";
  o.by_content = true;
  auto by_content = ConvertImages(o);
  REQUIRE(by_content.ok());
  CHECK(by_content->images == 27);
  CHECK(by_content->ignored_files == 2);
  CHECK(by_content->ignored_examples == std::vector<std::string>{"misc/fake.jpg", "misc/notes.txt"});
  CHECK(by_content->skipped.empty());
  auto ds = ImageDataset::Open(tmp / "by-content", {.io = test::Io()});
  REQUIRE(ds.ok());
  std::vector<std::string> keys;
  for (uint64_t i = 0; i < (*ds)->num_images(); ++i) keys.push_back((*ds)->sample(i).key);
  CHECK(std::count(keys.begin(), keys.end(), "textures/ring.mpo") == 1);
  CHECK(std::count(keys.begin(), keys.end(), "video/clip.egd") == 1);

  // A directory of nothing but such files says what it ignored.
  fs::create_directories(tmp / "only/a");
  fs::copy(DataDir() + "/sample/textures/ring.jpg", tmp / "only/a/ring.mpo");
  o.src_dir = tmp / "only";
  o.out_dir = tmp / "only-out";
  o.by_content = false;
  auto none = ConvertImages(o);
  REQUIRE(!none.ok());
  CHECK_THAT(none.status().message(), Catch::Contains("ignored 1 other files, e.g. a/ring.mpo (--by-content"));
}

TEST_CASE("a bad file fails the conversion, names the file and leaves no dataset") {
  TempDir tmp;
  MakeMixedSource(tmp.path() / "src");
  ConvertImagesOptions o = SampleOptions(tmp / "out", 2);
  o.src_dir = tmp / "src";
  auto result = ConvertImages(o);
  REQUIRE_FALSE(result.ok());
  CHECK_THAT(result.status().message(), Catch::Contains("zbad/not-a-jpeg.jpg"));
  CHECK_FALSE(fs::exists(tmp.path() / "out" / kDatasetManifestName));
  CHECK_FALSE(ImageDataset::Open(tmp / "out", {.io = test::Io()}).ok());
  CHECK_FALSE(VerifyPath(tmp / "out", test::Io()).errors.empty());

  // With the bad file first, nothing was finished and nothing is left.
  o.list_file = tmp / "list.csv";
  o.out_dir = tmp / "out2";
  std::ofstream(o.list_file) << "zbad/not-a-jpeg.jpg,0\nmisc/restarts.jpg,1\n";
  REQUIRE_FALSE(ConvertImages(o).ok());
  CHECK(fs::is_empty(tmp.path() / "out2"));
}

TEST_CASE("--skip-bad converts the rest and lists what it skipped") {
  TempDir tmp;
  MakeMixedSource(tmp.path() / "src");
  ConvertImagesOptions o = SampleOptions(tmp / "out", 2);
  o.src_dir = tmp / "src";
  o.skip_bad = true;
  auto result = ConvertImages(o);
  REQUIRE(result.ok());
  CHECK(result->images == SampleFiles().size());
  REQUIRE(result->skipped.size() == 3);
  std::ifstream in(tmp / "out/skipped.tsv");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK_THAT(text, Catch::Contains("zbad/testorig12.jpg\tNot supported: 12-bit"));
  CHECK_THAT(text, Catch::Contains("zbad/video-001.progressive.truncated.jpeg\tCorruption"));
  CHECK_THAT(text, Catch::Contains("zbad/not-a-jpeg.jpg\tCorruption: not a JPEG"));
  CHECK(VerifyPath(tmp / "out", test::Io()).errors.empty());
}

// `jpeg` with its frame header claiming width x height.
Bytes WithFrameSize(Bytes jpeg, uint16_t width, uint16_t height) {
  for (size_t i = 2; i + 9 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xff && jpeg[i + 1] >= 0xc0 && jpeg[i + 1] <= 0xc2) {
      jpeg[i + 5] = static_cast<uint8_t>(height >> 8);
      jpeg[i + 6] = static_cast<uint8_t>(height);
      jpeg[i + 7] = static_cast<uint8_t>(width >> 8);
      jpeg[i + 8] = static_cast<uint8_t>(width);
      return jpeg;
    }
  }
  FAIL("no frame header");
  return jpeg;
}

TEST_CASE("absurd dimensions and memory needs are refused before the pixels are touched") {
  const ScanScript script = *BuiltinScanScript("spectral5");
  const Bytes real = ReadFile(DataDir() + "/sample/textures/ring.jpg");
  const Bytes bomb = WithFrameSize(real, 64250, 64250);

  auto t = TranscodeToScanGroups(bomb, script);
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().code() == StatusCode::kNotSupported);
  CHECK_THAT(t.status().message(), Catch::Contains("64250x64250 = 4128062500 pixels, over the limit of 178956970"));
  JpegDecoder decoder;
  auto shape = decoder.Shape(bomb);
  REQUIRE_FALSE(shape.ok());
  CHECK(shape.status().code() == StatusCode::kNotSupported);

  // The limit is the caller's: a real 256x256 image over a 60000-pixel limit.
  auto small_limit = TranscodeToScanGroups(real, script, {.max_pixels = 60000});
  REQUIRE_FALSE(small_limit.ok());
  CHECK_THAT(small_limit.status().message(), Catch::Contains("256x256 = 65536 pixels, over the limit of 60000"));
  CHECK_FALSE(DecodeJpeg(real, {.max_pixels = 60000}).ok());
  CHECK(DecodeJpeg(real, {.max_pixels = 65536}).ok());

  // 8000x8000 passes the pixel limit, but its coefficients need about 190 MiB.
  auto big = TranscodeToScanGroups(WithFrameSize(real, 8000, 8000), script, {.max_memory_bytes = 64 << 20});
  REQUIRE_FALSE(big.ok());
  CHECK(big.status().code() == StatusCode::kNotSupported);
  CHECK_THAT(big.status().message(), Catch::Contains("needs more than the 64 MiB of working memory allowed"));

  // Through the converter: named, and skipped with --skip-bad.
  TempDir tmp;
  fs::create_directories(tmp.path() / "src/a");
  fs::copy(DataDir() + "/sample/textures/ring.jpg", tmp.path() / "src/a/ring.jpg");
  test::WriteFile(tmp.path() / "src/a/bomb.jpg", bomb);
  auto refused = ConvertImages({.src_dir = tmp / "src", .out_dir = tmp / "out"});
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.status().message(), Catch::Contains("a/bomb.jpg"));
  CHECK_THAT(refused.status().message(), Catch::Contains("over the limit of 178956970"));
  auto skipped = ConvertImages({.src_dir = tmp / "src", .out_dir = tmp / "out2", .skip_bad = true});
  REQUIRE(skipped.ok());
  CHECK(skipped->images == 1);
  auto tiny_budget = ConvertImages({.src_dir = tmp / "src", .out_dir = tmp / "out3", .jobs = 2,
                                    .skip_bad = true, .max_pixels = uint64_t{1} << 33, .memory_bytes = 2u << 20});
  REQUIRE(tiny_budget.ok());
  REQUIRE(tiny_budget->skipped.size() == 1);
  CHECK_THAT(tiny_budget->skipped[0].second, Catch::Contains("needs more than the 1 MiB of working memory allowed"));
}

TEST_CASE("conversion refuses to overwrite an existing dataset") {
  TempDir tmp;
  REQUIRE(ConvertImages(SampleOptions(tmp / "ds", 0)).ok());
  auto again = ConvertImages(SampleOptions(tmp / "ds", 0));
  REQUIRE_FALSE(again.ok());
  CHECK_THAT(again.status().message(), Catch::Contains("already holds a pcr dataset"));
}

TEST_CASE("a custom scan script file defines the groups") {
  TempDir tmp;
  const std::string script = tmp / "two.txt";
  std::ofstream(script) << "0,1,2,3: 0-0, 0, 0\n0: 1-63, 0, 0; 1: 1-63, 0, 0; 2: 1-63, 0, 0; 3: 1-63, 0, 0\n";
  ConvertImagesOptions o = SampleOptions(tmp / "ds", 0);
  o.scan_script = script;
  REQUIRE(ConvertImages(o).ok());
  auto ds = ImageDataset::Open(tmp / "ds", {.io = test::Io()});
  REQUIRE(ds.ok());
  CHECK((*ds)->num_scan_groups() == 2);
  CHECK((*ds)->scan_script().name == "two.txt");
  auto img = (*ds)->ReadImage(0, 2);
  REQUIRE(img.ok());
  RequireSamePixels(ReadFile(SampleFiles()[0]), img->jpeg);
}

}  // namespace
}  // namespace pcr

namespace pcr {
namespace {

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
    auto opened = ImageDataset::Rep::Open(tmp / "ds", {}, engine.get());
    REQUIRE(opened.ok());
    ds = std::move(opened).value();
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
      CHECK(after.bytes_read - before.bytes_read == (*ds)->RecordBytes(r, k));
    }
    for (uint64_t i = 0; i < (*ds)->num_images(); ++i) {
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
    const RecordLocation& rec = (*ds)->rep().record(1);
    std::vector<ImageRequest> whole;
    for (uint64_t i = rec.first_image + rec.image_count; i-- > rec.first_image;) whole.push_back({i, k});
    const IoCounters before = engine->counters();
    auto images = (*ds)->ReadImages(whole);
    REQUIRE(images.ok());
    CHECK(engine->counters().reads - before.reads == 1);
    CHECK(engine->counters().bytes_read - before.bytes_read ==
          (*ds)->RecordBytes(1, k) - (*ds)->RecordBytes(1, 0));
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

}  // namespace
}  // namespace pcr

namespace pcr {
namespace {

std::vector<std::string> Keys(const std::string& path) {
  auto ds = ImageDataset::Open(path, {.io = test::Io()});
  REQUIRE(ds.ok());
  std::vector<std::string> keys;
  for (uint64_t i = 0; i < (*ds)->num_images(); ++i) keys.push_back((*ds)->sample(i).key);
  return keys;
}

TEST_CASE("--shuffle writes a seeded permutation, the same for any jobs") {
  TempDir tmp;
  ConvertImagesOptions a = SampleOptions(tmp / "a", 1);
  a.shuffle_seed = 7;
  ConvertImagesOptions b = SampleOptions(tmp / "b", 3);
  b.shuffle_seed = 7;
  ConvertImagesOptions c = SampleOptions(tmp / "c", 1);
  c.shuffle_seed = 8;
  REQUIRE(ConvertImages(a).ok());
  REQUIRE(ConvertImages(b).ok());
  REQUIRE(ConvertImages(c).ok());
  const auto ka = Keys(tmp / "a");
  std::vector<std::string> sorted_keys;
  for (const fs::path& f : SampleFiles()) sorted_keys.push_back(f.lexically_relative(DataDir() + "/sample"));
  CHECK(ka != sorted_keys);
  CHECK(std::is_permutation(ka.begin(), ka.end(), sorted_keys.begin(), sorted_keys.end()));
  CHECK(ka == Keys(tmp / "b"));
  CHECK(ka != Keys(tmp / "c"));
  CHECK(ReadFile(tmp.path() / "a/records-00000.pcr") == ReadFile(tmp.path() / "b/records-00000.pcr"));
}

}  // namespace
}  // namespace pcr

namespace pcr {
namespace {

TEST_CASE("many streams of many files in one call, coalesced and checked") {
  TempDir tmp;
  REQUIRE(ConvertImages(SampleOptions(tmp / "ds", 0)).ok());
  auto engine = MakeIoEngine(test::Io());
  REQUIRE(engine.ok());
  auto ds = ImageDataset::Rep::Open(tmp / "ds", {}, engine->get());
  REQUIRE(ds.ok());
  // Every stream of every file, last file first and streams in reverse.
  std::vector<StreamRequest> requests;
  for (size_t f = (*ds)->rep().files.size(); f-- > 0;) {
    const PcrFile& file = *(*ds)->rep().files[f];
    for (size_t s = file.index().stripes[0].streams.size(); s-- > 0;) requests.push_back({&file, 0, s});
  }
  const IoCounters before = (*engine)->counters();
  auto streams = ReadStreams(**engine, requests);
  REQUIRE(streams.ok());
  // Streams of a stripe are contiguous: one read per file.
  CHECK((*engine)->counters().reads - before.reads == (*ds)->rep().files.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const Bytes file = ReadFile(requests[i].file->path());
    const StripeInfo& stripe = requests[i].file->index().stripes[0];
    const uint64_t off = stripe.stream_offset(requests[i].stream);
    CHECK(streams->at(i) == Bytes(file.begin() + off, file.begin() + off + stripe.streams[requests[i].stream].length));
  }
  const StreamRequest missing{(*ds)->rep().files[0].get(), 0, 99};
  CHECK_FALSE(ReadStreams(**engine, {&missing, 1}).ok());
}

TEST_CASE("a corrupt stream read in a batch names its file, stripe and stream") {
  TempDir tmp;
  REQUIRE(ConvertImages(SampleOptions(tmp / "ds", 0)).ok());
  const std::string path = tmp / "ds/records-00001.pcr";
  {
    auto clean = ImageDataset::Open(tmp / "ds", {.io = test::Io()});
    REQUIRE(clean.ok());
    Bytes bytes = ReadFile(path);
    bytes[(*clean)->rep().files[1]->index().stripes[0].stream_offset(3) + 2] ^= 0x10;
    test::WriteFile(path, bytes);
  }
  auto engine = MakeIoEngine(test::Io());
  REQUIRE(engine.ok());
  auto ds = ImageDataset::Rep::Open(tmp / "ds", {}, engine->get());
  REQUIRE(ds.ok());
  const StreamRequest reqs[] = {{(*ds)->rep().files[0].get(), 0, 3}, {(*ds)->rep().files[1].get(), 0, 3}};
  auto got = ReadStreams(**engine, reqs);
  REQUIRE_FALSE(got.ok());
  CHECK_THAT(got.status().message(), Catch::Contains(path + ": stripe 0 stream 3 at offset"));
}

}  // namespace
}  // namespace pcr
