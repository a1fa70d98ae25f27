// Sharded conversion, merging parts, and resuming an interrupted conversion.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "reader/inspect.h"
#include "pcr/verify.h"
#include "test_util.h"
#include "format/journal.h"
#include "pcr/convert.h"
#include "tools/option_spelling.h"

namespace pcr {
namespace {

namespace fs = std::filesystem;
using test::DataDir;
using test::MakeMixedSource;
using test::ReadFile;
using test::TempDir;

// Every regular file under `dir` (names relative to it) and its bytes.
std::map<std::string, Bytes> Tree(const fs::path& dir) {
  std::map<std::string, Bytes> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file()) out[e.path().filename().string()] = ReadFile(e.path());
  }
  return out;
}

std::vector<std::string> Names(const std::map<std::string, Bytes>& tree) {
  std::vector<std::string> names;
  for (const auto& [name, bytes] : tree) names.push_back(name);
  return names;
}

ino_t Inode(const fs::path& p) {
  struct stat st {};
  REQUIRE(stat(p.c_str(), &st) == 0);
  return st.st_ino;
}

// The record files in `dir` and their inodes.
std::map<std::string, ino_t> RecordInodes(const fs::path& dir) {
  std::map<std::string, ino_t> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == kRecordFileExtension) out[e.path().filename().string()] = Inode(e.path());
  }
  return out;
}

// RecordInodes(dir), with every record file also hard-linked into `aside`,
// so that no inode number can be reused while the test looks.
std::map<std::string, ino_t> PinnedRecordInodes(const fs::path& dir, const fs::path& aside) {
  fs::create_directories(aside);
  const auto inodes = RecordInodes(dir);
  for (const auto& [name, inode] : inodes) fs::create_hard_link(dir / name, aside / name);
  return inodes;
}

ConvertImagesOptions MixedOptions(const fs::path& src, const fs::path& out) {
  return {.src_dir = src, .out_dir = out, .images_per_record = 3, .records_per_file = 2, .jobs = 2,
          .skip_bad = true, .shuffle_seed = 7};
}

TEST_CASE("sharded conversion plus merge gives the bytes of a one-machine conversion") {
  TempDir tmp;
  MakeMixedSource(tmp.path() / "src");
  const auto one = ConvertImages(MixedOptions(tmp / "src", tmp / "one"));
  REQUIRE(one.ok());
  REQUIRE(one->skipped.size() == 3);
  const auto reference = Tree(tmp / "one");
  // 27 sources in files of 6: five files, some holding skipped images.
  REQUIRE(one->files == 5);

  // 9 records of 3 images: parts of 3 and 7 shards cut files 1 and 3 in
  // pieces, and of 12 shards some parts hold no record.
  for (uint64_t shards : {2, 3, 7, 12}) {
    INFO(shards << " shards");
    std::vector<std::string> parts;
    uint64_t images = 0;
    std::map<std::string, int> listed;  // record file names, by the parts listing them
    for (uint64_t i = 0; i < shards; ++i) {
      ConvertImagesOptions o = MixedOptions(tmp / "src", tmp / ("part-" + std::to_string(shards) + "-" + std::to_string(i)));
      o.shard_index = i;
      o.num_shards = shards;
      o.jobs = 1 + static_cast<int>(i % 2);
      auto part = ConvertImages(o);
      REQUIRE(part.ok());
      images += part->images;
      // Each part converts its run of records [9i/n, 9(i+1)/n), three sources each.
      CHECK(part->images + part->skipped.size() == 3 * (9 * (i + 1) / shards - 9 * i / shards));
      for (const auto& [name, inode] : RecordInodes(o.out_dir)) listed[name]++;
      CHECK(fs::exists(fs::path(o.out_dir) / kPartManifestName));
      CHECK_FALSE(fs::exists(fs::path(o.out_dir) / kDatasetManifestName));
      auto open = ImageDataset::Open(o.out_dir, {.io = test::Io()});
      REQUIRE_FALSE(open.ok());
      CHECK_THAT(open.status().message(), Catch::Contains("pcr-convert merge"));
      parts.push_back(o.out_dir);
    }
    CHECK(images == one->images);
    // Parts are given in any order.
    std::reverse(parts.begin(), parts.end());
    const fs::path merged = tmp / ("merged-" + std::to_string(shards));
    auto summary = MergeParts(merged, parts);
    REQUIRE(summary.ok());
    CHECK(summary->images == one->images);
    CHECK(summary->skipped == 3);
    const auto tree = Tree(merged);
    CHECK(Names(tree) == Names(reference));
    for (const auto& [name, bytes] : reference) {
      INFO(name);
      CHECK(tree.at(name) == bytes);
    }
    // Files a part holds whole are linked, not copied; pieces are joined.
    for (const auto& [name, inode] : RecordInodes(merged)) {
      INFO(name);
      bool found = false;
      for (const std::string& p : parts) found |= fs::exists(fs::path(p) / name) && Inode(fs::path(p) / name) == inode;
      CHECK(found == (listed.at(name) == 1));
    }
    const auto cut = std::count_if(listed.begin(), listed.end(), [](const auto& l) { return l.second > 1; });
    CHECK((cut > 0) == (shards != 2));
    CHECK(VerifyPath(merged.string(), test::Io()).errors.empty());
    // A merge interrupted before its manifest completes when run again, also
    // when a part's file was rewritten (or copied) with the same bytes since.
    fs::remove(merged / kDatasetManifestName);
    const std::string first = RecordInodes(merged).begin()->first;
    fs::remove(merged / first);
    fs::copy_file(tmp.path() / "one" / first, merged / first);
    // A joined file cut short is joined again.
    if (listed.at("records-00003.pcr") > 1) test::WriteFile(merged / "records-00003.pcr", Bytes(100, 7));
    REQUIRE(MergeParts(merged, parts).ok());
    CHECK(Tree(merged) == tree);
    // A merged dataset is refused as the output of another merge, before and by it.
    CHECK(CheckMergeOutput(merged.string()).message() == merged.string() + " already holds a pcr dataset (dataset.pcrd)");
    CHECK(MergeParts(merged, parts).status().message() == CheckMergeOutput(merged.string()).message());
    CHECK(CheckMergeOutput(tmp / "new").ok());
  }
}

TEST_CASE("merge refuses missing, repeated, unfinished and foreign parts") {
  TempDir tmp;
  const std::string src = DataDir() + "/sample";
  auto part = [&](uint64_t i, uint64_t n, uint64_t per_record) {
    ConvertImagesOptions o{.src_dir = src, .out_dir = tmp / ("p" + std::to_string(i) + "-" + std::to_string(n) + "-" +
                                                            std::to_string(per_record)),
                           .images_per_record = per_record, .jobs = 1, .shard_index = i, .num_shards = n};
    REQUIRE(ConvertImages(o).ok());
    return o.out_dir;
  };
  const std::string a = part(0, 3, 2), b = part(1, 3, 2), c = part(2, 3, 2);
  auto message = [&](const std::vector<std::string>& parts) {
    auto r = MergeParts(tmp / "out", parts);
    REQUIRE_FALSE(r.ok());
    return r.status().message();
  };
  CHECK_THAT(message({a, c}), Catch::Contains("missing shards 1 of 3"));
  CHECK_THAT(message({a, b, c, b}), Catch::Contains("shard 1 is also " + b));
  CHECK_THAT(message({a, part(1, 3, 4), c}), Catch::Contains("from another conversion"));
  CHECK_THAT(message({a, part(1, 2, 2), c}), Catch::Contains("from another conversion"));
  CHECK_THAT(message({a, b, src}), Catch::Contains("no part.pcrd"));
  fs::copy(b, tmp / "unfinished");
  fs::remove(tmp.path() / "unfinished" / kPartManifestName);
  CHECK_THAT(message({a, tmp / "unfinished", c}), Catch::Contains("did not finish"));
  fs::create_directories(tmp / "whole");
  REQUIRE(ConvertImages({.src_dir = src, .out_dir = tmp / "whole", .jobs = 1}).ok());
  CHECK_THAT(message({a, b, tmp / "whole"}), Catch::Contains("a whole dataset, not a part"));
  auto into_part = MergeParts(a, {a, b, c});
  REQUIRE_FALSE(into_part.ok());
  CHECK_THAT(into_part.status().message(), Catch::Contains("also given as a part"));

  CHECK_FALSE(fs::exists(tmp.path() / "out"));

  // A damaged part file is named, and nothing is written.
  test::WriteFile(fs::path(b) / "records-00005.pcr", Bytes{1, 2, 3});
  CHECK_THAT(message({a, b, c}), Catch::Contains(b + "/records-00005.pcr: size or index checksum differs"));
  CHECK_FALSE(fs::exists(tmp.path() / "out"));
}

TEST_CASE("merge checks the pieces it joins and refuses parts cut by file mixed with parts cut by record") {
  TempDir tmp;
  const std::string src = DataDir() + "/sample";
  // 12 records in files of 3: the parts of 3 shards hold records 0-3, 4-7 and
  // 8-11, so files 1 and 2 are cut in pieces.
  std::vector<std::string> parts;
  for (uint64_t i = 0; i < 3; ++i) {
    ConvertImagesOptions o{.src_dir = src, .out_dir = tmp / ("p" + std::to_string(i)), .images_per_record = 2,
                           .records_per_file = 3, .jobs = 1, .shard_index = i, .num_shards = 3};
    REQUIRE(ConvertImages(o).ok());
    parts.push_back(o.out_dir);
  }
  REQUIRE(fs::exists(fs::path(parts[1]) / "records-00002.pcr"));
  REQUIRE(fs::exists(fs::path(parts[2]) / "records-00002.pcr"));
  auto message = [&](const fs::path& out) {
    auto r = MergeParts(out, parts);
    REQUIRE_FALSE(r.ok());
    CHECK_FALSE(fs::exists(out / kDatasetManifestName));
    return r.status().message();
  };

  SECTION("a damaged stream of a piece is named with its offset") {
    const fs::path piece = fs::path(parts[1]) / "records-00002.pcr";
    Bytes bytes = ReadFile(piece);
    bytes[kFileHeaderSize + 5] ^= 0x40;
    test::WriteFile(piece, bytes);
    const std::string m = message(tmp / "out");
    CHECK_THAT(m, Catch::Contains(piece.string() + ": stripe 0 stream 0 at offset 16") &&
                      Catch::Contains("checksum mismatch"));
    CHECK_FALSE(fs::exists(tmp.path() / "out" / "records-00002.pcr"));
  }
  // Stamped as parts were before 0.8, when each part held whole files.
  auto restamp = [](const fs::path& part) {
    Bytes bytes = ReadFile(part / kPartManifestName);
    Bytes header;
    FileHeader{.kind = FileKind::kDatasetPart, .version_minor = kPartVersionMinor}.EncodeTo(&header);
    std::copy(header.begin(), header.end(), bytes.begin());
    test::WriteFile(part / kPartManifestName, bytes);
  };
  SECTION("parts cut by file and by record") {
    restamp(parts[0]);
    CHECK_THAT(message(tmp / "out"), Catch::Contains("cut by file (before 0.8) and by record do not merge"));
  }
  SECTION("parts cut by file never share a file") {
    for (const std::string& p : parts) restamp(p);
    CHECK_THAT(message(tmp / "out"), Catch::Contains("parts cut by file never share a file"));
  }
  SECTION("an interrupted part cut by file is not resumed") {
    const fs::path out = tmp / "old";
    fs::create_directories(out);
    std::ofstream(out / kConversionMarkerName) << "pcr-convert journal 1 plan 0123456789abcdef shard 1 of 3\n";
    auto r = ConvertImages({.src_dir = src, .out_dir = out, .jobs = 1, .shard_index = 1, .num_shards = 3});
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.status().message(), Catch::Contains("cut by file") && Catch::Contains("restart = true"));
  }
}

TEST_CASE("a failed conversion resumes without redoing its finished files") {
  TempDir tmp;
  MakeMixedSource(tmp.path() / "src");
  ConvertImagesOptions o{.src_dir = tmp / "src", .out_dir = tmp / "out", .images_per_record = 2, .jobs = 2,
                         .shuffle_seed = std::nullopt};
  auto failed = ConvertImages(o);
  REQUIRE_FALSE(failed.ok());
  const auto before = PinnedRecordInodes(tmp / "out", tmp / "aside");
  // The bad class sorts last: the 24 good images before it make 12 files.
  REQUIRE(before.size() == 12);
  CHECK(fs::exists(tmp.path() / "out" / kConversionMarkerName));
  CHECK_FALSE(ImageDataset::Open(tmp / "out", {.io = test::Io()}).ok());

  SECTION("after the bad files are replaced") {
    const Bytes good = ReadFile(DataDir() + "/sample/misc/restarts.jpg");
    for (const auto& e : fs::directory_iterator(tmp / "src/zbad")) test::WriteFile(e.path(), good);
    std::vector<ConvertProgress> reports;
    o.progress = [&](const ConvertProgress& p) { reports.push_back(p); };
    auto resumed = ConvertImages(o);
    REQUIRE(resumed.ok());
    // Progress counts the kept files' images as done, not as read by this run.
    REQUIRE_FALSE(reports.empty());
    CHECK(reports.back().images_done == 27);
    CHECK(reports.back().images_total == 27);
    CHECK(reports.back().images_resumed == 24);
    CHECK(reports.back().bytes_read == 3 * good.size());  // only the three new images
    o.progress = nullptr;
    CHECK(resumed->resumed_files == 12);
    CHECK(resumed->images == 27);
    for (const auto& [name, inode] : before) CHECK(Inode(tmp.path() / "out" / name) == inode);
    o.out_dir = tmp / "fresh";
    REQUIRE(ConvertImages(o).ok());
    CHECK(Tree(tmp / "out") == Tree(tmp / "fresh"));
  }
  SECTION("with --skip-bad") {
    o.skip_bad = true;
    auto resumed = ConvertImages(o);
    REQUIRE(resumed.ok());
    CHECK(resumed->resumed_files == 12);
    CHECK(resumed->skipped.size() == 3);
    for (const auto& [name, inode] : before) CHECK(Inode(tmp.path() / "out" / name) == inode);
    o.out_dir = tmp / "fresh";
    REQUIRE(ConvertImages(o).ok());
    CHECK(Tree(tmp / "out") == Tree(tmp / "fresh"));
  }
  SECTION("a damaged finished file is converted again, with the files after it") {
    const fs::path damaged = tmp.path() / "out" / "records-00005.pcr";
    fs::resize_file(damaged, fs::file_size(damaged) - 1);
    o.skip_bad = true;
    auto resumed = ConvertImages(o);
    REQUIRE(resumed.ok());
    CHECK(resumed->resumed_files == 5);
    CHECK(Inode(tmp.path() / "out" / "records-00004.pcr") == before.at("records-00004.pcr"));
    o.out_dir = tmp / "fresh";
    REQUIRE(ConvertImages(o).ok());
    CHECK(Tree(tmp / "out") == Tree(tmp / "fresh"));
  }
  SECTION("a different conversion is refused, naming the option, and starts over when told") {
    o.skip_bad = true;
    o.images_per_record = 3;
    auto refused = ConvertImages(o);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(refused.status().message(),
               Catch::Contains("holds an interrupted conversion with images_per_record '2' (now '3')") &&
                   Catch::Contains("keep its 12 finished files") && Catch::Contains("restart = true"));
    for (const auto& [name, inode] : before) CHECK(Inode(tmp.path() / "out" / name) == inode);  // untouched
    o.images_per_record = 2;
    o.shuffle_seed = 5;
    CHECK_THAT(ConvertImages(o).status().message(), Catch::Contains("shuffle_seed 'none (no shuffle_seed)' (now '5')"));
    // pcr-convert's flags, as the journal names them.
    o.option_names = &cli::kOptionNames;
    CHECK_THAT(ConvertImages(o).status().message(),
               Catch::Contains("holds an interrupted conversion with --shuffle 'none (--keep-order)' (now '5'): run it "
                               "again with the same options and inputs to keep its 12 finished files, or start over "
                               "with --restart"));
    o.option_names = &kLibraryOptionNames;
    o.shuffle_seed.reset();
    fs::remove(tmp.path() / "src/zbad" / fs::directory_iterator(tmp.path() / "src/zbad")->path().filename());
    CHECK_THAT(ConvertImages(o).status().message(), Catch::Contains("other source images (27 then, 26 now)"));
    o.images_per_record = 3;
    o.restart = true;
    auto other = ConvertImages(o);
    REQUIRE(other.ok());
    CHECK(other->resumed_files == 0);
    o.out_dir = tmp / "fresh";
    REQUIRE(ConvertImages(o).ok());
    CHECK(Tree(tmp / "out") == Tree(tmp / "fresh"));
  }
}

TEST_CASE("a directory another conversion is writing is refused") {
  TempDir tmp;
  fs::create_directories(tmp.path() / "out");
  const int fd = open((tmp.path() / "out").c_str(), O_RDONLY | O_DIRECTORY);
  REQUIRE(fd >= 0);
  REQUIRE(flock(fd, LOCK_EX) == 0);
  auto busy = ConvertImages({.src_dir = DataDir() + "/sample", .out_dir = tmp / "out", .jobs = 1});
  REQUIRE_FALSE(busy.ok());
  CHECK_THAT(busy.status().message(), Catch::Contains("another pcr-convert is writing this directory"));
  close(fd);
  CHECK(ConvertImages({.src_dir = DataDir() + "/sample", .out_dir = tmp / "out", .jobs = 1}).ok());
}

}  // namespace
}  // namespace pcr
