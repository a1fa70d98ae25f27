// WebDataset tar shards as input: samples and their fields, brace patterns,
// long names, damaged tars and samples refused or skipped, sharded
// conversion and merge.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "pcr/convert.h"
#include "pcr/image_dataset.h"
#include "pcr/verify.h"
#include "tests/image_util.h"
#include "writer/tar.h"

namespace pcr {
namespace {

namespace fs = std::filesystem;
using test::DataDir;
using test::ReadFile;
using test::TempDir;

// Writes a tar file member by member: ustar headers, a pax header for names
// over 100 bytes, and the end-of-archive marker.
class TarWriter {
 public:
  void Add(const std::string& name, const std::string& data) {
    if (name.size() > 100) {
      const std::string record = "path=" + name + "\n";
      size_t length = record.size() + 2;
      while (std::to_string(length).size() + 1 + record.size() != length) ++length;
      Member("PaxHeader", std::to_string(length) + " " + record, 'x');
    }
    Member(name.substr(0, 100), data, '0');
  }
  void AddFile(const std::string& name, const fs::path& file) {
    const Bytes b = ReadFile(file);
    Add(name, std::string(b.begin(), b.end()));
  }
  std::string Finish() { return bytes_ + std::string(1024, '\0'); }
  // The offset the next member's header will have.
  size_t size() const { return bytes_.size(); }

 private:
  void Member(const std::string& name, const std::string& data, char type) {
    char h[512] = {};
    std::memcpy(h, name.data(), name.size());
    std::snprintf(h + 100, 8, "%07o", 0644);
    std::snprintf(h + 108, 8, "%07o", 0);
    std::snprintf(h + 116, 8, "%07o", 0);
    std::snprintf(h + 124, 12, "%011llo", static_cast<unsigned long long>(data.size()));
    std::snprintf(h + 136, 12, "%011o", 0);
    h[156] = type;
    std::memcpy(h + 257, "ustar\0" "00", 8);
    std::memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (const char c : h) sum += static_cast<unsigned char>(c);
    std::snprintf(h + 148, 8, "%06o", sum);
    bytes_.append(h, 512);
    bytes_ += data;
    bytes_.append((512 - data.size() % 512) % 512, '\0');
  }
  std::string bytes_;
};

void Write(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

const fs::path kRing = DataDir() + "/sample/textures/ring.jpg";
const fs::path kGray = DataDir() + "/sample/misc/testimggray.jpg";

// In shard order, so that sample i is the i-th in the tars.
ConvertImagesOptions Options(const TempDir& tmp, std::vector<std::string> shards) {
  return {.out_dir = tmp / "ds", .images_per_record = 2, .jobs = 2, .shards = std::move(shards),
          .shuffle_seed = std::nullopt};
}

std::unique_ptr<ImageDataset> Open(const std::string& path) {
  auto ds = ImageDataset::Open(path, {.io = test::Io()});
  REQUIRE(ds.ok());
  return std::move(ds).value();
}

std::vector<Column> ReadAll(const ImageDataset& ds, const std::vector<std::string>& names) {
  auto fields = ds.ResolveFields(names);
  REQUIRE(fields.ok());
  std::vector<uint64_t> records(ds.num_records());
  for (uint64_t r = 0; r < records.size(); ++r) records[r] = r;
  auto batches = ds.ReadRecordBatches(records, {.fields = *fields});
  REQUIRE(batches.ok());
  REQUIRE(batches->size() == 1);
  return (*batches)[0].fields;
}

TEST_CASE("samples, labels and every kind of member round-trip") {
  TempDir tmp;
  TarWriter t;
  t.AddFile("a/000.jpg", kRing);
  t.Add("a/000.txt", "a ring, \"quoted\"");
  t.Add("a/000.cls", "7\n");
  t.Add("a/000.json", R"({"similarity": 0.25, "width": 640, "ok": true, "tags": [1, 2], "box": [0.5, 2],
                        "url": "http://x/1", "exif": {"Orientation": 6}, "none": null, "box64": [0.1, 7]})");
  t.Add("a/000.bin", std::string("\0\1\2", 3));
  t.AddFile("a/001.JPEG", kGray);
  t.Add("a/001.txt", "gray");
  t.Add("a/001.json", R"({"similarity": 1, "width": 8, "tags": [], "box": [3]})");
  Write(tmp / "s.tar", t.Finish());
  ConvertImagesOptions o = Options(tmp, {tmp / "s.tar"});
  o.field_types = {{"box", FeatureType::kFloat32List}, {"width", FeatureType::kFloat32}};
  auto summary = ConvertWebDataset(o);
  REQUIRE(summary.ok());
  CHECK(summary->images == 2);
  auto ds = Open(tmp / "ds");
  CHECK(ds->sample(0).value() == SampleMetadata{7, "a/000"});
  CHECK(ds->sample(1).value() == SampleMetadata{-1, "a/001"});
  std::map<std::string, FeatureType> types;
  for (const FeatureInfo& f : ds->field_schema().features) types[f.name] = f.type;
  CHECK(types == std::map<std::string, FeatureType>{{"txt", FeatureType::kString},
                                                    {"cls", FeatureType::kInt64},
                                                    {"similarity", FeatureType::kFloat64},
                                                    {"width", FeatureType::kFloat32},
                                                    {"ok", FeatureType::kInt64},
                                                    {"tags", FeatureType::kIdList},
                                                    {"box", FeatureType::kFloat32List},
                                                    {"url", FeatureType::kString},
                                                    {"exif", FeatureType::kString},
                                                    {"none", FeatureType::kString},
                                                    {"bin", FeatureType::kBytes},
                                                    {"box64", FeatureType::kFloat64List}});
  const auto c =
      ReadAll(*ds, {"txt", "cls", "similarity", "tags", "box", "exif", "bin", "none", "url", "width", "box64"});
  CHECK(c[0].string(0) == "a ring, \"quoted\"");
  CHECK(c[0].string(1) == "gray");
  CHECK(c[1].present == std::vector<uint8_t>{1, 0});
  CHECK(c[1].ints[0] == 7);
  CHECK(c[2].doubles == std::vector<double>{0.25, 1});
  CHECK(c[3].ints == std::vector<int64_t>{1, 2});
  CHECK(c[3].offsets == std::vector<uint64_t>{0, 2, 2});
  CHECK(c[4].floats == std::vector<float>{0.5f, 2, 3});
  CHECK(c[9].floats == std::vector<float>{640, 8});
  CHECK(c[10].doubles == std::vector<double>{0.1, 7});
  CHECK(c[10].present == std::vector<uint8_t>{1, 0});
  CHECK(c[5].string(0) == R"({"Orientation": 6})");
  CHECK(c[6].string(0) == std::string("\0\1\2", 3));
  CHECK(c[6].present == std::vector<uint8_t>{1, 0});
  CHECK(c[7].present == std::vector<uint8_t>{0, 0});
  CHECK(c[8].present == std::vector<uint8_t>{1, 0});
  // Full fidelity decodes to the originals' pixels.
  auto full = ds->ReadImage(0, ds->num_scan_groups());
  REQUIRE(full.ok());
  test::RequireSamePixels(ReadFile(kRing), full->jpeg);
  CHECK(VerifyPath(tmp / "ds", test::Io()).errors.empty());
}

TEST_CASE("brace patterns name shards in order") {
  auto e = ExpandBraces("s-{008..011}-{a,b}.tar");
  REQUIRE(e.ok());
  CHECK(*e == std::vector<std::string>{"s-008-a.tar", "s-008-b.tar", "s-009-a.tar", "s-009-b.tar",
                                       "s-010-a.tar", "s-010-b.tar", "s-011-a.tar", "s-011-b.tar"});
  CHECK(*ExpandBraces("plain.tar") == std::vector<std::string>{"plain.tar"});
  CHECK(*ExpandBraces("{9..10}") == std::vector<std::string>{"9", "10"});
  for (const std::string bad : {"s-{1..2.tar", "s-{2..1}.tar", "s-{a..b}.tar", "s}.tar", "{0..9999999}"}) {
    INFO(bad);
    CHECK_FALSE(ExpandBraces(bad).ok());
  }
  TempDir tmp;
  for (int s = 0; s < 3; ++s) {
    TarWriter t;
    t.AddFile(std::to_string(s) + ".jpg", kGray);
    Write(tmp / ("shard-00000" + std::to_string(s) + ".tar"), t.Finish());
  }
  REQUIRE(ConvertWebDataset(Options(tmp, {tmp / "shard-{000000..000002}.tar"})).ok());
  auto ds = Open(tmp / "ds");
  REQUIRE(ds->num_images() == 3);
  for (uint64_t i = 0; i < 3; ++i) CHECK(ds->sample(i)->key == std::to_string(i));
}

TEST_CASE("long member names come from pax headers") {
  TempDir tmp;
  const std::string dir = std::string(120, 'd') + "/";
  TarWriter t;
  t.AddFile(dir + "x.jpg", kGray);
  t.Add(dir + "x.txt", "long");
  Write(tmp / "s.tar", t.Finish());
  REQUIRE(ConvertWebDataset(Options(tmp, {tmp / "s.tar"})).ok());
  auto ds = Open(tmp / "ds");
  CHECK(ds->sample(0)->key == dir + "x");
  CHECK(ReadAll(*ds, {"txt"})[0].string(0) == "long");
}

TEST_CASE("damaged shards and bad samples are refused naming shard, member and offset, or skipped") {
  TempDir tmp;
  TarWriter t;
  t.AddFile("000.jpg", kGray);
  t.Add("000.txt", "zero");
  const size_t second = t.size();
  t.AddFile("001.jpg", kRing);
  t.Add("001.txt", "one");
  const size_t third = t.size();
  t.Add("002.txt", "no image");
  t.AddFile("003.jpg", kGray);
  const std::string good = t.Finish();
  struct Case {
    std::string what;
    std::string bytes;
    std::string want;
    uint64_t kept_with_skip;
  };
  std::string bad_sum = good;
  bad_sum[second + 10] ^= 1;
  std::string bad_size = good;
  std::memcpy(&bad_size[second + 124], "99999999999", 11);
  std::memset(&bad_size[second + 148], ' ', 8);
  unsigned sum = 0;
  for (size_t i = 0; i < 512; ++i) sum += static_cast<unsigned char>(bad_size[second + i]);
  std::snprintf(&bad_size[second + 148], 8, "%06o", sum);
  // A good shard after the damaged one, whose sample a skipping conversion keeps.
  TarWriter other;
  other.AddFile("zzz.jpg", kGray);
  Write(tmp / "t.tar", other.Finish());
  for (const Case& c : std::vector<Case>{
           {"no JPEG", good, "s.tar: member 002.txt at offset " + std::to_string(third) + ": sample 002 has no", 4},
           {"cut in a member", good.substr(0, second + 700), "cut short by the end of the file at offset " +
                                                                 std::to_string(second), 2},
           {"cut between members", good.substr(0, third), "no end-of-archive marker", 2},
           {"bad header checksum", bad_sum, "bad tar header checksum at offset " + std::to_string(second), 1},
           {"bad size", bad_size, "bad member size in tar header at offset " + std::to_string(second), 1},
       }) {
    INFO(c.what);
    Write(tmp / "s.tar", c.bytes);
    fs::remove_all(tmp / "ds");
    auto refused = ConvertWebDataset(Options(tmp, {tmp / "s.tar"}));
    REQUIRE_FALSE(refused.ok());
    CHECK_THAT(refused.status().message(), Catch::Contains(tmp / "s.tar") && Catch::Contains(c.want));
    CHECK_FALSE(fs::exists(tmp / "ds/dataset.pcrd"));
    ConvertImagesOptions o = Options(tmp, {tmp / "s.tar", tmp / "t.tar"});
    o.skip_bad = true;
    fs::remove_all(tmp / "ds");
    auto skipped = ConvertWebDataset(o);
    REQUIRE(skipped.ok());
    CHECK(skipped->images == c.kept_with_skip);
    REQUIRE(skipped->skipped.size() == 1);
    CHECK_THAT(skipped->skipped[0].second, Catch::Contains(c.want));
    CHECK(VerifyPath(tmp / "ds", test::Io()).errors.empty());
  }
  TarWriter cls;
  cls.AddFile("000.jpg", kGray);
  cls.Add("000.cls", "seven");
  Write(tmp / "s.tar", cls.Finish());
  fs::remove_all(tmp / "ds");
  CHECK_THAT(ConvertWebDataset(Options(tmp, {tmp / "s.tar"})).status().message(),
             Catch::Contains("member 000.cls at offset 512") && Catch::Contains("one integer"));
  TarWriter twice;
  twice.AddFile("000.jpg", kGray);
  twice.Add("000.json", R"({"a": 1, "a": 2})");
  Write(tmp / "s.tar", twice.Finish());
  CHECK_THAT(ConvertWebDataset(Options(tmp, {tmp / "s.tar"})).status().message(),
             Catch::Contains("member 000.json") && Catch::Contains("'a' appears twice"));
  TarWriter json;
  json.AddFile("000.jpg", kGray);
  json.Add("000.json", "[1]");
  Write(tmp / "s.tar", json.Finish());
  CHECK_THAT(ConvertWebDataset(Options(tmp, {tmp / "s.tar"})).status().message(),
             Catch::Contains("member 000.json") && Catch::Contains("one JSON object"));
  CHECK_FALSE(ConvertWebDataset(Options(tmp, {tmp / "missing.tar"})).ok());
}

TEST_CASE("an interrupted WebDataset conversion resumes, keeping its finished files") {
  TempDir tmp;
  TarWriter t;
  const Bytes gray = ReadFile(kGray);
  for (int i = 0; i < 4; ++i) {
    // Sample 3's JPEG stops after its header: it cannot be transcoded.
    const std::string jpeg = i == 3 ? std::string(gray.begin(), gray.begin() + 300) : std::string(gray.begin(), gray.end());
    t.Add("k" + std::to_string(i) + ".jpg", jpeg);
    t.Add("k" + std::to_string(i) + ".txt", "caption " + std::to_string(i));
  }
  Write(tmp / "s.tar", t.Finish());
  ConvertImagesOptions o = Options(tmp, {tmp / "s.tar"});
  o.images_per_record = 1;
  o.jobs = 1;
  auto failed = ConvertWebDataset(o);
  REQUIRE_FALSE(failed.ok());
  CHECK_THAT(failed.status().message(), Catch::Contains(tmp / "s.tar") && Catch::Contains("member k3.jpg"));
  CHECK_FALSE(fs::exists(tmp / "ds/dataset.pcrd"));
  o.skip_bad = true;
  auto resumed = ConvertWebDataset(o);
  REQUIRE(resumed.ok());
  CHECK(resumed->resumed_files == 3);
  CHECK(resumed->images == 3);
  REQUIRE(resumed->skipped.size() == 1);
  CHECK(resumed->skipped[0].first == "k3");
  auto ds = Open(tmp / "ds");
  auto txt = ds->ResolveFields({"txt"});
  REQUIRE(txt.ok());
  auto batches = ds->ReadRecordBatches(std::vector<uint64_t>{0, 1, 2}, {.fields = *txt});
  REQUIRE(batches.ok());
  for (uint64_t r = 0; r < 3; ++r) CHECK((*batches)[r].fields[0].string(0) == "caption " + std::to_string(r));
}

TEST_CASE("sharded WebDataset conversion merges into the one-machine bytes") {
  TempDir tmp;
  std::vector<fs::path> images;
  for (const fs::path& p : test::SampleFiles()) images.push_back(p);
  for (size_t s = 0; s < 2; ++s) {
    TarWriter t;
    for (size_t i = s * 12; i < s * 12 + 12; ++i) {
      const std::string key = "k" + std::to_string(100 + i);
      t.AddFile(key + ".jpg", images[i]);
      t.Add(key + ".json", "{\"i\": " + std::to_string(i) + ", \"f\": " + std::to_string(i * 0.5) + "}");
    }
    Write(tmp / ("p" + std::to_string(s) + ".tar"), t.Finish());
  }
  ConvertImagesOptions whole = Options(tmp, {tmp / "p{0,1}.tar"});
  whole.out_dir = tmp / "whole";
  whole.records_per_file = 2;
  REQUIRE(ConvertWebDataset(whole).ok());
  std::vector<std::string> parts;
  for (uint64_t shard = 0; shard < 3; ++shard) {
    ConvertImagesOptions o = whole;
    o.out_dir = tmp / ("part" + std::to_string(shard));
    o.shard_index = shard;
    o.num_shards = 3;
    o.jobs = 1;
    REQUIRE(ConvertWebDataset(o).ok());
    parts.push_back(o.out_dir);
  }
  REQUIRE(MergeParts(tmp / "merged", parts).ok());
  for (const auto& e : fs::directory_iterator(tmp / "whole")) {
    INFO(e.path().filename());
    CHECK(ReadFile(e.path()) == ReadFile(tmp.path() / "merged" / e.path().filename()));
  }
  auto ds = Open(tmp / "merged");
  CHECK(ds->num_images() == 24);
  REQUIRE(ds->field_schema().features.size() == 2);
  CHECK(ds->field_schema().features[0].type == FeatureType::kInt64);
  CHECK(ds->field_schema().features[1].type == FeatureType::kFloat64);
}

}  // namespace
}  // namespace pcr
