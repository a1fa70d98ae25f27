// Converting JPEG datasets: inputs, determinism, refusals, options.
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
#include "writer/transcode.h"

namespace pcr {
namespace {

namespace fs = std::filesystem;
using test::DataDir;
using test::MakeMixedSource;
using test::ReadFile;
using test::RequireSamePixels;
using test::SampleFiles;
using test::SampleOptions;
using test::TempDir;

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
  CHECK((*ds)->sample(0).value() == SampleMetadata{7, "video/video-001.jpeg"});
  CHECK((*ds)->sample(1).value() == SampleMetadata{3, "textures/ring.jpg"});
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
  for (uint64_t i = 0; i < (*ds)->num_images(); ++i) keys.push_back((*ds)->sample(i)->key);
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
  CHECK_THAT(none.status().message(), Catch::Contains("ignored 1 other files, e.g. a/ring.mpo (by_content = true"));
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

std::vector<std::string> Keys(const std::string& path) {
  auto ds = ImageDataset::Open(path, {.io = test::Io()});
  REQUIRE(ds.ok());
  std::vector<std::string> keys;
  for (uint64_t i = 0; i < (*ds)->num_images(); ++i) keys.push_back((*ds)->sample(i)->key);
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
