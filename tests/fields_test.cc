// Per-sample fields of image datasets: --fields input of every type, reads
// of any fields plus a fidelity, projections that read only their streams,
// refusals of bad input and of damaged field streams.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "pcr/convert.h"
#include "pcr/decode_iterator.h"
#include "pcr/record_iterator.h"
#include "pcr/sample_iterator.h"
#include "pcr/verify.h"
#include "reader/inspect.h"
#include "tests/image_util.h"

namespace pcr {
namespace {

namespace fs = std::filesystem;
using test::DataDir;
using test::ReadFile;
using test::SampleFiles;
using test::TempDir;

// The fields a test gives image i of the sample: one of every type, each
// missing for some images.
struct Expected {
  std::string caption;
  std::optional<int64_t> n;
  std::optional<double> x;
  std::optional<float> f;
  std::optional<std::string> blob;
  std::optional<std::vector<int64_t>> ids;
  std::optional<std::vector<float>> box32;
  std::optional<std::vector<double>> box64;
};

std::vector<std::string> SampleKeys() {
  std::vector<std::string> keys;
  for (const fs::path& p : SampleFiles()) keys.push_back(fs::relative(p, DataDir() + "/sample").generic_string());
  return keys;
}

Expected ExpectedFor(size_t i) {
  Expected e;
  e.caption = "image " + std::to_string(i) + ", a \"quoted\" caption";
  if (i % 4 != 1) e.n = static_cast<int64_t>(i * 1000003) - 7;
  if (i % 3 != 2) e.x = 0.125 * static_cast<double>(i) + 1e-9;
  e.f = 1.5f + static_cast<float>(i);
  if (i % 5 != 0) e.blob = std::string("b\x01") + static_cast<char>('a' + i);
  if (i != 3) e.ids = i == 6 ? std::vector<int64_t>{} : std::vector<int64_t>{static_cast<int64_t>(i), -9, 1ll << 40};
  if (i % 2 == 0) e.box32 = std::vector<float>{0.25f * static_cast<float>(i), 2.5f, 10, 20};
  if (i % 3 != 0) e.box64 = std::vector<double>{1.0 / 3 + static_cast<double>(i), 7, 8.5};
  return e;
}

template <typename T>
std::string JsonArray(const std::vector<T>& v) {
  std::string s = "[";
  for (size_t k = 0; k < v.size(); ++k) {
    char buf[64];
    if constexpr (std::is_floating_point_v<T>) {
      std::snprintf(buf, sizeof(buf), "%.17g", static_cast<double>(v[k]));
    } else {
      std::snprintf(buf, sizeof(buf), "%lld", static_cast<long long>(v[k]));
    }
    s += (k ? "," : "") + std::string(buf);
  }
  return s + "]";
}

// A CSV fields file for the sample; list cells are JSON arrays.
void WriteCsv(const std::string& path, const std::vector<std::string>& keys) {
  std::ofstream out(path);
  out << "caption,n,path,x,f,blob,ids,box32,box64\n";
  for (size_t i = 0; i < keys.size(); ++i) {
    const Expected e = ExpectedFor(i);
    char x[64] = "";
    if (e.x) std::snprintf(x, sizeof(x), "%.17g", *e.x);
    auto quoted = [](const std::string& s) {
      std::string q = "\"";
      for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
      return q + "\"";
    };
    out << quoted(e.caption) << "," << (e.n ? std::to_string(*e.n) : "") << "," << keys[i] << "," << x << ","
        << *e.f << "," << (e.blob ? *e.blob : "NA") << "," << (e.ids ? quoted(JsonArray(*e.ids)) : "") << ","
        << (e.box32 ? quoted(JsonArray(*e.box32)) : "") << "," << (e.box64 ? quoted(JsonArray(*e.box64)) : "")
        << "\n";
  }
}

ConvertImagesOptions FieldOptions(const TempDir& tmp, const std::string& fields) {
  return {.src_dir = DataDir() + "/sample", .out_dir = tmp / "ds", .images_per_record = 5, .jobs = 2,
          .fields_file = fields,
          .field_types = {{"f", FeatureType::kFloat32}, {"blob", FeatureType::kBytes},
                          {"ids", FeatureType::kIdList}, {"box32", FeatureType::kFloat32List},
                          {"box64", FeatureType::kFloat64List}}};
}

const std::vector<std::string> kAll = {"caption", "n", "x", "f", "blob", "ids", "box32", "box64"};

template <typename T>
std::vector<T> Slice(const Buffer<T>& v, const Column& c, uint64_t row) {
  return std::vector<T>(v.begin() + static_cast<ptrdiff_t>(c.offsets[row]),
                        v.begin() + static_cast<ptrdiff_t>(c.offsets[row + 1]));
}

// Checks row `row` of the columns of kAll (in that order) against image i's fields.
void CheckRow(const std::vector<Column>& c, uint64_t row, size_t i) {
  INFO("image " << i);
  const Expected e = ExpectedFor(i);
  REQUIRE(c.size() == kAll.size());
  CHECK(c[0].string(row) == e.caption);
  CHECK(static_cast<bool>(c[1].present[row]) == e.n.has_value());
  if (e.n) CHECK(c[1].ints[row] == *e.n);
  CHECK(static_cast<bool>(c[2].present[row]) == e.x.has_value());
  if (e.x) CHECK(c[2].doubles[row] == *e.x);
  CHECK(c[3].floats[row] == *e.f);
  CHECK(static_cast<bool>(c[4].present[row]) == e.blob.has_value());
  if (e.blob) CHECK(c[4].string(row) == *e.blob);
  CHECK(static_cast<bool>(c[5].present[row]) == e.ids.has_value());
  if (e.ids) CHECK(Slice(c[5].ints, c[5], row) == *e.ids);
  CHECK(static_cast<bool>(c[6].present[row]) == e.box32.has_value());
  if (e.box32) CHECK(Slice(c[6].floats, c[6], row) == *e.box32);
  CHECK(static_cast<bool>(c[7].present[row]) == e.box64.has_value());
  if (e.box64) CHECK(Slice(c[7].doubles, c[7], row) == *e.box64);
}

std::unique_ptr<ImageDataset> Open(const std::string& path) {
  auto ds = ImageDataset::Open(path, {.io = test::Io()});
  REQUIRE(ds.ok());
  return std::move(ds).value();
}

std::vector<uint64_t> AllRecords(const ImageDataset& ds) {
  std::vector<uint64_t> r(ds.num_records());
  for (uint64_t i = 0; i < r.size(); ++i) r[i] = i;
  return r;
}

TEST_CASE("every field type round-trips through a CSV fields file") {
  TempDir tmp;
  const std::vector<std::string> keys = SampleKeys();
  WriteCsv(tmp / "fields.csv", keys);
  REQUIRE(ConvertImages(FieldOptions(tmp, tmp / "fields.csv")).ok());
  auto ds = Open(tmp / "ds");
  const TableSchema& schema = ds->field_schema();
  REQUIRE(schema.features.size() == kAll.size());
  const std::map<std::string, FeatureType> types = {
      {"caption", FeatureType::kString}, {"n", FeatureType::kInt64},        {"x", FeatureType::kFloat64},
      {"f", FeatureType::kFloat32},      {"blob", FeatureType::kBytes},     {"ids", FeatureType::kIdList},
      {"box32", FeatureType::kFloat32List}, {"box64", FeatureType::kFloat64List}};
  for (const FeatureInfo& f : schema.features) {
    INFO(f.name);
    CHECK(f.type == types.at(f.name));
  }
  CHECK(schema.row_count == keys.size());
  CHECK(schema.features[1].present_count == 18);  // n is missing for i % 4 == 1
  auto fields = ds->ResolveFields(kAll);
  REQUIRE(fields.ok());
  for (const int fidelity : {0, 2, ds->num_scan_groups()}) {
    INFO("fidelity " << fidelity);
    auto batches = ds->ReadRecordBatches(AllRecords(*ds), {.fidelity = fidelity, .fields = *fields});
    REQUIRE(batches.ok());
    size_t checked = 0;
    for (const RecordBatch& b : *batches) {
      for (const ImageView& v : b.images) {
        const size_t i = static_cast<size_t>(std::find(keys.begin(), keys.end(), v.key) - keys.begin());
        REQUIRE(i < keys.size());
        CheckRow(b.fields, v.row, i);
        CHECK(v.jpeg.empty() == (fidelity == 0));
        ++checked;
      }
    }
    CHECK(checked == keys.size());
  }
  const VerifyReport report = VerifyPath(tmp / "ds", test::Io());
  CHECK(report.errors.empty());
}

TEST_CASE("JSON Lines fields infer their types as tables do") {
  TempDir tmp;
  {
    std::ofstream out(tmp / "fields.jsonl");
    out << "{\"path\": \"textures/ring.jpg\", \"t\": \"ring\", \"n\": 3, \"x\": 1, \"ok\": true, "
           "\"ids\": [1, 2], \"box\": [1, 2.5], \"none\": null}\n"
        << "\n"
        << "{\"x\": 2.25, \"path\": \"./textures/hard.jpg\", \"ok\": false, \"ids\": [], \"box\": [3]}\n";
  }
  ConvertImagesOptions o{.src_dir = DataDir() + "/sample", .out_dir = tmp / "ds", .jobs = 1,
                         .fields_file = tmp / "fields.jsonl"};
  std::ofstream(tmp / "list.csv") << "textures/ring.jpg,0\ntextures/hard.jpg,1\n";
  o.list_file = tmp / "list.csv";
  REQUIRE(ConvertImages(o).ok());
  auto ds = Open(tmp / "ds");
  std::map<std::string, FeatureType> types;
  for (const FeatureInfo& f : ds->field_schema().features) types[f.name] = f.type;
  CHECK(types == std::map<std::string, FeatureType>{{"t", FeatureType::kString},
                                                    {"n", FeatureType::kInt64},
                                                    {"x", FeatureType::kFloat64},
                                                    {"ok", FeatureType::kInt64},
                                                    {"ids", FeatureType::kIdList},
                                                    {"box", FeatureType::kFloat64List},
                                                    {"none", FeatureType::kString}});
  auto f = ds->ResolveFields({"x", "ok", "box", "none", "n"});
  REQUIRE(f.ok());
  auto b = ds->ReadRecordBatches(std::vector<uint64_t>{0}, {.fields = *f});
  REQUIRE(b.ok());
  const std::vector<Column>& c = (*b)[0].fields;
  CHECK(c[0].doubles == std::vector<double>{1, 2.25});
  CHECK(c[1].ints == std::vector<int64_t>{1, 0});
  CHECK(c[2].doubles == std::vector<double>{1, 2.5, 3});
  CHECK(c[3].present == std::vector<uint8_t>{0, 0});
  CHECK(c[4].present == std::vector<uint8_t>{1, 0});
}


TEST_CASE("a CSV fields file and the same CSV as a table get the same column types") {
  TempDir tmp;
  // Padded and signed numbers, integers beside floats, text beside numbers.
  std::ofstream(tmp / "fields.csv") << "path,n,x,s,e\n"
                                    << "textures/ring.jpg, 7 ,1,abc,\n"
                                    << "textures/hard.jpg,+8,2.5,7,\n";
  ConvertImagesOptions o{.src_dir = DataDir() + "/sample", .out_dir = tmp / "ds", .jobs = 1,
                         .fields_file = tmp / "fields.csv"};
  std::ofstream(tmp / "list.csv") << "textures/ring.jpg,0\ntextures/hard.jpg,1\n";
  o.list_file = tmp / "list.csv";
  REQUIRE(ConvertImages(o).ok());
  auto table = ConvertTable({.input = tmp / "fields.csv", .out_dir = tmp / "table"});
  REQUIRE(table.ok());
  std::map<std::string, FeatureType> fields, columns;
  auto ds = Open(tmp / "ds");
  for (const FeatureInfo& f : ds->field_schema().features) fields[f.name] = f.type;
  for (const FeatureInfo& f : table->schema.features) {
    if (f.name != "path") columns[f.name] = f.type;
  }
  CHECK(fields == columns);
  CHECK(fields.at("n") == FeatureType::kInt64);
  CHECK(fields.at("x") == FeatureType::kFloat64);
  CHECK(fields.at("s") == FeatureType::kString);
  auto f = ds->ResolveFields({"n"});
  REQUIRE(f.ok());
  auto b = ds->ReadRecordBatches(std::vector<uint64_t>{0}, {.fields = *f});
  REQUIRE(b.ok());
  CHECK((*b)[0].fields[0].ints == std::vector<int64_t>{7, 8});
}
TEST_CASE("a read of fields and a fidelity reads only their streams") {
  TempDir tmp;
  WriteCsv(tmp / "fields.csv", SampleKeys());
  ConvertImagesOptions o = FieldOptions(tmp, tmp / "fields.csv");
  o.field_order = {"caption", "ids"};
  REQUIRE(ConvertImages(o).ok());
  auto ds = Open(tmp / "ds");
  const std::vector<uint64_t> records = AllRecords(*ds);
  struct Case {
    std::vector<std::string> fields;
    int fidelity;
    uint64_t reads_per_record;  // runs of adjacent streams
  };
  // Gaps of unread field streams are read through (they are small); scan
  // groups not asked for are not.
  for (const Case& c : {Case{{"caption"}, 0, 1}, Case{{"caption", "ids"}, 2, 1}, Case{{"box64"}, 0, 1},
                        Case{{}, 3, 1}, Case{{"ids", "caption"}, 1, 1}}) {
    INFO(c.fields.size() << " fields, fidelity " << c.fidelity);
    auto f = ds->ResolveFields(c.fields);
    REQUIRE(f.ok());
    const RecordSelection selection{.fidelity = c.fidelity, .fields = *f};
    uint64_t selected = 0;
    for (const uint64_t r : records) selected += ds->SelectedBytes(r, selection).value();
    const IoCounters before = ds->io_counters();
    const uint64_t requested = ds->bytes_requested();
    auto b = ds->ReadRecordBatches(records, selection);
    REQUIRE(b.ok());
    const IoCounters after = ds->io_counters();
    CHECK(ds->bytes_requested() - requested == selected);
    // What is read beyond the streams asked for is only field streams in between.
    uint64_t gaps = 0;  // the bytes from each record's start to the end of what it reads
    for (const uint64_t r : records) {
      const auto file = DatasetFile(*ds, DatasetRecord(*ds, r).file).value();
      const StripeInfo& stripe = file->index().stripes[DatasetRecord(*ds, r).stripe];
      const uint64_t first = stripe.offset;
      const uint64_t last = c.fidelity > 0 ? stripe.stream_offset(stripe.group_stream(c.fidelity) + 1)
                                           : stripe.stream_offset(stripe.group_stream(1));
      gaps += last - first;
    }
    CHECK(after.bytes_read - before.bytes_read >= selected);
    CHECK(after.bytes_read - before.bytes_read <= gaps);
    CHECK(after.reads - before.reads == c.reads_per_record * records.size());
    uint64_t whole = 0;
    for (const uint64_t r : records) whole += ds->RecordBytes(r, c.fidelity).value();
    if (!c.fields.empty()) CHECK(selected < whole + ds->counts()->field_bytes[0] * 2);
  }
  // Fields alone never touch image bytes.
  auto caption = ds->ResolveFields({"caption"});
  REQUIRE(caption.ok());
  uint64_t fields_only = 0, group1 = 0;
  for (const uint64_t r : records) {
    fields_only += ds->SelectedBytes(r, {.fidelity = 0, .fields = *caption}).value();
    group1 += ds->RecordBytes(r, 1).value() - ds->RecordBytes(r, 0).value();
  }
  CHECK(fields_only * 10 < group1);
}

TEST_CASE("fields leave every image's bytes as they were") {
  TempDir tmp;
  WriteCsv(tmp / "fields.csv", SampleKeys());
  REQUIRE(ConvertImages(FieldOptions(tmp, tmp / "fields.csv")).ok());
  ConvertImagesOptions plain = FieldOptions(tmp, "");
  plain.field_types.clear();
  plain.out_dir = tmp / "plain";
  REQUIRE(ConvertImages(plain).ok());
  auto with = Open(tmp / "ds");
  auto without = Open(tmp / "plain");
  REQUIRE(with->num_images() == without->num_images());
  CHECK(without->field_schema().features.empty());
  for (uint64_t r = 0; r < with->num_records(); ++r) {
    for (int k = 1; k <= with->num_scan_groups(); ++k) {
      auto a = with->ReadRecord(r, k);
      auto b = without->ReadRecord(r, k);
      REQUIRE(a.ok());
      REQUIRE(b.ok());
      REQUIRE(a->size() == b->size());
      for (size_t i = 0; i < a->size(); ++i) CHECK((*a)[i].jpeg == (*b)[i].jpeg);
    }
  }
  // Image files without fields keep the stamp older readers read.
  CHECK(ReadFile(tmp.path() / "plain" / "records-00000.pcr")[9] == 1);
  // Encoded field streams stamp 0.5.
  CHECK(ReadFile(tmp.path() / "ds" / "records-00000.pcr")[9] == kEncodingsVersionMinor);
}

TEST_CASE("RecordIterator hands out each image's fields with shuffled images") {
  TempDir tmp;
  const std::vector<std::string> keys = SampleKeys();
  WriteCsv(tmp / "fields.csv", keys);
  REQUIRE(ConvertImages(FieldOptions(tmp, tmp / "fields.csv")).ok());
  auto ds = Open(tmp / "ds");
  for (const int fidelity : {kFieldsOnly, 1}) {
    auto it = RecordIterator::Create(*ds, {.fidelity = fidelity, .fields = kAll, .shuffle_seed = 5});
    REQUIRE(it.ok());
    RecordBatch batch;
    size_t seen = 0;
    while (true) {
      auto more = (*it)->Next(&batch);
      REQUIRE(more.ok());
      if (!*more) break;
      for (const ImageView& v : batch.images) {
        const size_t i = static_cast<size_t>(std::find(keys.begin(), keys.end(), v.key) - keys.begin());
        CheckRow(batch.fields, v.row, i);
        CHECK(v.jpeg.empty() == (fidelity == kFieldsOnly));
        ++seen;
      }
    }
    CHECK(seen == keys.size());
  }
  CHECK_FALSE(RecordIterator::Create(*ds, {.fields = {"nope"}}).ok());
}

TEST_CASE("SampleIterator hands out each image's fields in batch order") {
  TempDir tmp;
  const std::vector<std::string> keys = SampleKeys();
  WriteCsv(tmp / "fields.csv", keys);
  REQUIRE(ConvertImages(FieldOptions(tmp, tmp / "fields.csv")).ok());
  auto ds = Open(tmp / "ds");
  for (const uint64_t read_ahead : {1, 7, 100}) {
    auto it = SampleIterator::Create(*ds, {.epoch = {.batch_size = 4, .shuffle_buffer = 6}, .fidelity = 1,
                                           .read_ahead = read_ahead, .fields = kAll},
                                     {.seed = 9});
    REQUIRE(it.ok());
    SampleBatch batch;
    size_t seen = 0;
    while (true) {
      auto more = (*it)->Next(&batch);
      REQUIRE(more.ok());
      if (!*more) break;
      REQUIRE(batch.fields.size() == kAll.size());
      for (size_t j = 0; j < batch.images.size(); ++j) {
        const size_t i = static_cast<size_t>(std::find(keys.begin(), keys.end(), batch.images[j].key) - keys.begin());
        CheckRow(batch.fields, j, i);
        ++seen;
      }
    }
    CHECK(seen == keys.size());
  }
}

// `jpeg` with an EXIF segment (orientation 6, little-endian TIFF), an XMP
// segment and a comment inserted after its first segment, as cameras and
// editors write them.
Bytes WithCameraSegments(const Bytes& jpeg) {
  auto segment = [](uint8_t marker, const std::string& payload) {
    Bytes out = {0xff, marker, static_cast<uint8_t>((payload.size() + 2) >> 8),
                 static_cast<uint8_t>(payload.size() + 2)};
    out.insert(out.end(), payload.begin(), payload.end());
    return out;
  };
  const std::string exif = std::string("Exif\0\0II*\0\x08\0\0\0\x01\0\x12\x01\x03\0\x01\0\0\0\x06\0\0\0\0\0\0\0", 32) +
                           std::string(500, 't');  // a thumbnail's worth of bytes
  const size_t first = 4 + (static_cast<size_t>(jpeg[4]) << 8 | jpeg[5]);
  Bytes out(jpeg.begin(), jpeg.begin() + static_cast<ptrdiff_t>(first));
  for (const Bytes& s : {segment(0xe1, exif), segment(0xe1, std::string("http://ns.adobe.com/xap/1.0/\0<x/>", 34)),
                         segment(0xfe, "a comment")}) {
    out.insert(out.end(), s.begin(), s.end());
  }
  out.insert(out.end(), jpeg.begin() + static_cast<ptrdiff_t>(first), jpeg.end());
  return out;
}

TEST_CASE("segments decoding does not need are kept apart, read only when asked for, and put back exactly") {
  TempDir tmp;
  fs::create_directories(tmp.path() / "src/a");
  const Bytes plain = ReadFile(DataDir() + "/sample/video/video-001.jpeg");
  const Bytes camera = WithCameraSegments(plain);
  test::WriteFile(tmp.path() / "src/a/camera.jpg", camera);
  fs::copy(DataDir() + "/sample/misc/jpg-srgb-icc.jpg", tmp.path() / "src/a/icc.jpg");
  fs::copy(DataDir() + "/sample/textures/ring.jpg", tmp.path() / "src/a/ring.jpg");
  const ConvertImagesOptions o{.src_dir = tmp / "src", .out_dir = tmp / "ds", .images_per_record = 3, .jobs = 1,
                               .exif_orientation = true, .shuffle_seed = std::nullopt};
  REQUIRE(ConvertImages(o).ok());
  // The orientation field makes it 0.4, or 0.5 where its stream is encoded.
  const uint8_t stamp = ReadFile(tmp.path() / "ds/records-00000.pcr")[9];
  CHECK((stamp == kFieldsVersionMinor || stamp == kEncodingsVersionMinor));
  auto ds = Open(tmp / "ds");
  REQUIRE(ds->num_images() == 3);
  REQUIRE(ds->sample(0)->key == "a/camera.jpg");
  const int full = ds->num_scan_groups();
  // Group 1 keeps JFIF and ICC; EXIF, XMP and the comment are apart.
  auto without = ds->ReadImage(0, full);
  REQUIRE(without.ok());
  const auto original = test::MetadataSegments(camera);
  REQUIRE(original.size() == 4);
  CHECK(test::MetadataSegments(without->jpeg) == decltype(original){original[0]});
  test::RequireSamePixels(camera, without->jpeg);
  const uint64_t segment_bytes = ds->counts()->segment_bytes;
  CHECK(segment_bytes > 500);
  // Asked for, they are back in place: the original's segments exactly.
  for (const int k : {1, 3, full}) {
    auto with = ds->ReadImages(std::vector<ImageRequest>{{0, k, true}, {1, k, true}, {2, k, true}});
    REQUIRE(with.ok());
    CHECK(test::MetadataSegments((*with)[0].jpeg) == original);
    auto record = ds->ReadRecordBatches(std::vector<uint64_t>{0}, {.fidelity = k, .segments = true});
    REQUIRE(record.ok());
    for (size_t i = 0; i < 3; ++i) {
      const ByteSpan jpeg = (*record)[0].images[i].jpeg;
      CHECK(Bytes(jpeg.begin(), jpeg.end()) == (*with)[i].jpeg);
    }
  }
  auto whole = ds->ReadImages(std::vector<ImageRequest>{{0, full, true}, {1, full, true}});
  REQUIRE(whole.ok());
  test::RequireSamePixels(camera, (*whole)[0].jpeg);
  CHECK(test::MetadataSegments((*whole)[1].jpeg) == test::MetadataSegments(ReadFile(DataDir() + "/sample/misc/jpg-srgb-icc.jpg")));
  // A record read without segments does not read the segments stream.
  const IoCounters before = ds->io_counters();
  REQUIRE(ds->ReadRecordBatches(std::vector<uint64_t>{0}, {.fidelity = full}).ok());
  const auto opened = DatasetFile(*ds, 0).value();
  const StripeInfo& first = opened->index().stripes[0];
  CHECK(ds->io_counters().bytes_read - before.bytes_read == first.length() - first.streams.back().length);
  CHECK_FALSE(ds->ReadRecordBatches(std::vector<uint64_t>{0}, {.fidelity = 0, .segments = true}).ok());
  // The EXIF orientation is a field.
  auto orientation = ds->ResolveFields({"exif_orientation"});
  REQUIRE(orientation.ok());
  auto b = ds->ReadRecordBatches(std::vector<uint64_t>{0}, {.fields = *orientation});
  REQUIRE(b.ok());
  CHECK((*b)[0].fields[0].present == std::vector<uint8_t>{1, 0, 0});
  CHECK((*b)[0].fields[0].ints[0] == 6);
  CHECK(VerifyPath(tmp / "ds", test::Io()).errors.empty());
  // Damage behind re-fixed checksums in the segments is refused, naming the file.
  const fs::path file = tmp.path() / "ds/records-00000.pcr";
  const StripeInfo stripe = DatasetFile(*ds, 0).value()->index().stripes[0];
  const uint64_t at = stripe.stream_offset(stripe.group_stream(full + 1));
  Bytes bad = ReadFile(file);
  bad[at] ^= 0x80;  // the first entry's position varint now runs on
  test::WriteFile(file, test::RefixChecksums(bad));
  auto damaged = Open(file.string());
  auto read = damaged->ReadImages(std::vector<ImageRequest>{{0, 1, true}});
  REQUIRE_FALSE(read.ok());
  CHECK(read.status().code() == StatusCode::kCorruption);
  CHECK_THAT(read.status().message(), Catch::Contains(file.string()) && Catch::Contains("segments"));
  CHECK(damaged->ReadImage(0, full).ok());  // reads without segments never look at them
}

TEST_CASE("DecodeIterator hands out the fields of the images it decodes") {
  TempDir tmp;
  const std::vector<std::string> keys = SampleKeys();
  WriteCsv(tmp / "fields.csv", keys);
  REQUIRE(ConvertImages(FieldOptions(tmp, tmp / "fields.csv")).ok());
  auto ds = Open(tmp / "ds");
  auto it = DecodeIterator::Create(*ds, {.records = {.fidelity = 1, .fields = kAll, .shuffle_seed = 2},
                                         .decode = {.scale_denom = 8}, .threads = 2});
  REQUIRE(it.ok());
  DecodedBatch batch;
  size_t seen = 0;
  while (true) {
    auto more = (*it)->Next(&batch);
    REQUIRE(more.ok());
    if (!*more) break;
    for (const DecodedView& v : batch.images) {
      const size_t i = static_cast<size_t>(std::find(keys.begin(), keys.end(), v.key) - keys.begin());
      CheckRow(batch.source.fields, v.row, i);
      ++seen;
    }
  }
  CHECK(seen == keys.size());
}

Status ConvertWith(const TempDir& tmp, const std::string& name, const std::string& text, bool skip_bad = false,
                   std::map<std::string, FeatureType> types = {}) {
  const std::string path = tmp / name;
  std::ofstream(path) << text;
  fs::remove_all(tmp / "ds");
  ConvertImagesOptions o{.src_dir = DataDir() + "/sample", .out_dir = tmp / "ds", .jobs = 1, .skip_bad = skip_bad,
                         .fields_file = path, .field_types = std::move(types)};
  std::ofstream(tmp / "list.csv") << "textures/ring.jpg,0\ntextures/hard.jpg,1\n";
  o.list_file = tmp / "list.csv";
  return ConvertImages(o).status();
}

TEST_CASE("bad fields input is refused naming the file, line and what is wrong") {
  TempDir tmp;
  const std::string ring = "{\"path\": \"textures/ring.jpg\", \"a\": 1}\n";
  const std::string hard = "{\"path\": \"textures/hard.jpg\", \"a\": 2}\n";
  struct Case {
    std::string name, text, want;
    std::map<std::string, FeatureType> types = {};
  };
  for (const Case& c : std::vector<Case>{
           {"f.jsonl", ring, "hard.jpg: no row in"},
           {"f.jsonl", ring + hard + "{\"path\": \"x/y.jpg\"}\n", "line 3: image 'x/y.jpg' is not among"},
           {"f.jsonl", ring + ring, "line 2, column 10: image 'textures/ring.jpg' has a second row"},
           {"f.jsonl", ring + "{\"path\": \"textures/hard.jpg\", \"a\": \"two\"}\n",
            "line 2, column 36: field 'a' holds numbers (first 1 at line 1, column 36) and here strings: declare "
            "field_types[\"a\"] = string (or another type)"},
           {"f.jsonl", ring + "{\"path\": \"textures/hard.jpg\", \"a\": [1, \"x\"]}\n",
            "line 2, column 40: field 'a': expected an array of numbers"},
           {"f.jsonl", ring + "{\"a\": 2}\n", "line 2, column 1: no 'path' member"},
           {"f.jsonl", ring + "{\"path\": \"textures/hard.jpg\", \"a\": 2\n", "line 2, column"},
           {"f.jsonl", ring + "{\"path\": \"/textures/hard.jpg\"}\n", "is not relative to the image root"},
           {"f.jsonl", ring + "{\"path\": \"textures/hard.jpg\", \"a\": 1.5}\n", "field 'a' is int64: expected an integer",
            {{"a", FeatureType::kInt64}}},
           {"f.jsonl", ring + hard, "field_types names 'b', which is not a field", {{"b", FeatureType::kInt64}}},
           {"f.jsonl", ring + "{\"path\": \"textures/hard.jpg\", \"a\": 9007199254740993}\n",
            "integer has no exact double", {{"a", FeatureType::kFloat64}}},
           {"f.csv", "path,a\ntextures/ring.jpg,1\ntextures/hard.jpg\n", "line 3, column 1: row has 1 cells"},
           {"f.csv", "a,b\n1,2\n", "no 'path' column"},
           {"f.csv", "path,a\ntextures/ring.jpg,[1\ntextures/hard.jpg,[2]\n", "line 2, column 19: field 'a'",
            {{"a", FeatureType::kIdList}}},
           {"f.txt", ring, "unknown fields format"},
       }) {
    INFO(c.text);
    const Status s = ConvertWith(tmp, c.name, c.text, false, c.types);
    REQUIRE_FALSE(s.ok());
    CHECK(s.code() == StatusCode::kInvalidArgument);
    CHECK_THAT(s.message(), Catch::Contains(c.want));
    CHECK_FALSE(fs::exists(tmp / "ds/dataset.pcrd"));
  }
}

TEST_CASE("reordering a dataset's fields copies every stream and changes only their order") {
  TempDir tmp;
  const std::vector<std::string> keys = SampleKeys();
  WriteCsv(tmp / "fields.csv", keys);
  REQUIRE(ConvertImages(FieldOptions(tmp, tmp / "fields.csv")).ok());
  auto done = ReorderImageFields(tmp / "ds", tmp / "re", {"box64", "n"}, test::Io());
  REQUIRE(done.ok());
  auto a = Open(tmp / "ds");
  auto b = Open(tmp / "re");
  REQUIRE(b->num_records() == a->num_records());
  CHECK(b->field_schema() == a->field_schema());
  auto fa = a->ResolveFields(kAll);
  auto fb = b->ResolveFields(kAll);
  for (uint64_t r = 0; r < a->num_records(); ++r) {
    const auto file = DatasetFile(*b, DatasetRecord(*b, r).file).value();
    const StripeInfo& stripe = file->index().stripes[DatasetRecord(*b, r).stripe];
    CHECK(b->field_schema().features[stripe.table_streams[0].feature].name == "box64");
    auto x = a->ReadRecordBatches(std::vector<uint64_t>{r}, {.fidelity = a->num_scan_groups(), .fields = *fa});
    auto y = b->ReadRecordBatches(std::vector<uint64_t>{r}, {.fidelity = b->num_scan_groups(), .fields = *fb});
    REQUIRE(x.ok());
    REQUIRE(y.ok());
    for (size_t i = 0; i < (*x)[0].images.size(); ++i) {
      const ByteSpan ja = (*x)[0].images[i].jpeg, jb = (*y)[0].images[i].jpeg;
      CHECK(Bytes(ja.begin(), ja.end()) == Bytes(jb.begin(), jb.end()));
      const size_t k = static_cast<size_t>(std::find(keys.begin(), keys.end(), (*y)[0].images[i].key) - keys.begin());
      CheckRow((*y)[0].fields, (*y)[0].images[i].row, k);
    }
  }
  CHECK(VerifyPath(tmp / "re", test::Io()).errors.empty());
  CHECK_FALSE(ReorderImageFields(tmp / "ds", tmp / "re", {}, test::Io()).ok());  // OUT holds a dataset
}

TEST_CASE("--field-order names only fields") {
  TempDir tmp;
  WriteCsv(tmp / "fields.csv", SampleKeys());
  ConvertImagesOptions o = FieldOptions(tmp, tmp / "fields.csv");
  o.field_order = {"caption", "captoin"};
  const Status s = ConvertImages(o).status();
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK_THAT(s.message(), Catch::Contains("field_order names 'captoin', which is not a field"));
}

TEST_CASE("--skip-bad skips images without a row and lists rows without an image") {
  TempDir tmp;
  REQUIRE(ConvertWith(tmp, "f.jsonl", "{\"path\": \"textures/ring.jpg\", \"a\": 1}\n{\"path\": \"gone.jpg\"}\n", true)
              .ok());
  auto ds = Open(tmp / "ds");
  REQUIRE(ds->num_images() == 1);
  CHECK(ds->sample(0)->key == "textures/ring.jpg");
  std::ifstream in(tmp / "ds/skipped.tsv");
  const std::string skipped((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK_THAT(skipped, Catch::Contains("textures/hard.jpg\tInvalid argument: no row in"));
  CHECK_THAT(skipped, Catch::Contains("gone.jpg\trow of"));
}

// A file of three images with fields of every type, and everything in it read back.
struct FieldFile {
  TempDir tmp;
  std::string path;
  Bytes bytes;
  std::vector<Bytes> expected;

  FieldFile() {
    const std::vector<std::string> keys = SampleKeys();
    std::ofstream(tmp / "list.csv") << keys[1] << ",0\n" << keys[2] << ",1\n" << keys[20] << ",0\n";
    WriteCsv(tmp / "fields.csv", keys);
    ConvertImagesOptions o = FieldOptions(tmp, tmp / "fields.csv");
    o.list_file = tmp / "list.csv";
    o.images_per_record = 3;
    o.skip_bad = true;  // the rows of the other images
    REQUIRE(ConvertImages(o).ok());
    path = tmp / "ds/records-00000.pcr";
    bytes = ReadFile(path);
    auto all = ReadAll(path);
    REQUIRE(all.ok());
    expected = std::move(all).value();
  }

  // Every image at full fidelity and every field, as bytes.
  static Result<std::vector<Bytes>> ReadAll(const std::string& path) {
    PCR_ASSIGN_OR_RETURN(auto ds, ImageDataset::Open(path, {.io = test::Io()}));
    PCR_ASSIGN_OR_RETURN(auto fields, ds->ResolveFields(kAll));
    PCR_ASSIGN_OR_RETURN(auto batches,
                         ds->ReadRecordBatches(AllRecords(*ds), {.fidelity = ds->num_scan_groups(), .fields = fields}));
    std::vector<Bytes> out;
    for (const RecordBatch& b : batches) {
      for (const ImageView& v : b.images) out.emplace_back(v.jpeg.begin(), v.jpeg.end());
      for (const Column& c : b.fields) {
        Bytes col(c.present.begin(), c.present.end());
        auto put = [&](const auto& v) {
          const auto* p = reinterpret_cast<const uint8_t*>(v.data());
          col.insert(col.end(), p, p + v.size() * sizeof(v[0]));
        };
        put(c.ints);
        put(c.doubles);
        put(c.floats);
        put(c.offsets);
        put(c.bytes);
        out.push_back(std::move(col));
      }
    }
    return out;
  }
};

TEST_CASE("every flipped byte of a file with fields is caught, and reads never return wrong data") {
  FieldFile f;
  const std::string bad_path = f.tmp / "flip.pcr";
  for (size_t i = 0; i < f.bytes.size(); ++i) {
    Bytes bad = f.bytes;
    bad[i] ^= i % 2 ? 0x01 : 0x80;
    test::WriteFile(bad_path, bad);
    INFO("offset " << i);
    CHECK_FALSE(VerifyPath(bad_path, test::Io()).errors.empty());
    auto got = FieldFile::ReadAll(bad_path);
    REQUIRE_FALSE(got.ok());
    CHECK_THAT(got.status().message(), Catch::Contains(bad_path));
  }
}

TEST_CASE("field streams damaged behind re-fixed checksums are refused naming the field, or decode") {
  FieldFile f;
  auto ds = Open(f.path);
  const StripeInfo stripe = DatasetFile(*ds, 0).value()->index().stripes[0];
  const std::string bad_path = f.tmp / "refixed.pcr";
  size_t refused = 0, decoded = 0;
  for (size_t s = 1; s < stripe.group_stream(1); ++s) {
    const TableStream& t = stripe.table_streams[s - stripe.first_table_stream];
    const std::string name = ds->field_schema().features[t.feature].name;
    for (uint64_t i = stripe.stream_offset(s); i < stripe.stream_offset(s + 1); ++i) {
      Bytes bad = f.bytes;
      bad[i] ^= i % 2 ? 0x01 : 0xff;
      test::WriteFile(bad_path, test::RefixChecksums(bad));
      INFO("field " << name << " " << StreamRoleName(t.role) << " byte " << i);
      auto damaged = ImageDataset::Open(bad_path, {.io = test::Io()});
      REQUIRE(damaged.ok());  // the index and sample metadata are untouched
      auto field = (*damaged)->ResolveFields({name});
      auto read = (*damaged)->ReadRecordBatches(std::vector<uint64_t>{0}, {.fields = *field});
      if (!read.ok()) {
        ++refused;
        CHECK(read.status().code() == StatusCode::kCorruption);
        CHECK_THAT(read.status().message(), Catch::Contains(bad_path) && Catch::Contains("'" + name + "'"));
        CHECK_FALSE(VerifyPath(bad_path, test::Io()).errors.empty());
      } else {
        ++decoded;
        CHECK((*read)[0].fields[0].rows == 3);
      }
      // Reads that leave the field out are unaffected.
      auto other = (*damaged)->ResolveFields({name == "caption" ? "x" : "caption"});
      CHECK((*damaged)->ReadRecordBatches(std::vector<uint64_t>{0}, {.fidelity = 1, .fields = *other}).ok());
    }
  }
  std::printf("field stream damage with re-fixed checksums: %zu refused, %zu decoded\n", refused, decoded);
  CHECK(refused > 0);
}

TEST_CASE("an index whose field streams break the rules is refused") {
  FieldFile f;
  const fs::path file = f.path;
  const Bytes& good = f.bytes;
  struct Case {
    std::string what;
    std::function<void(FileIndex*)> edit;
    std::string want;
  };
  for (const Case& c : std::vector<Case>{
           {"map flag", [](FileIndex* i) { i->schema.features[0].has_id = true; i->schema.features[0].id = 0;
                                           i->schema.features[0].name = "0"; }, "unknown flags"},
           {"second stream of a role",
            [](FileIndex* i) { i->stripes[0].table_streams[1].role = i->stripes[0].table_streams[0].role; },
            "second"},
           {"rows", [](FileIndex* i) { i->schema.row_count++; }, "rows, the schema"},
           {"counts", [](FileIndex* i) { i->schema.features[1].present_count--; }, "present_count"},
           {"unknown feature", [](FileIndex* i) { i->stripes[0].table_streams[0].feature = 99; }, "stream 0"},
       }) {
    INFO(c.what);
    test::WriteFile(file, test::RewriteIndex(good, c.edit));
    auto opened = ImageDataset::Open(file.string(), {.io = test::Io()});
    REQUIRE_FALSE(opened.ok());
    CHECK_FALSE(FieldFile::ReadAll(file.string()).ok());
    CHECK(opened.status().code() == StatusCode::kCorruption);
    CHECK_THAT(opened.status().message(), Catch::Contains(file.string()) && Catch::Contains(c.want));
  }
  // A 0.4 index in a file stamped 0.1 is not read as one.
  Bytes old = good;
  old[9] = 1;
  StoreFixed32(old.data() + 12, Checksum32(ByteSpan(old).first(12)));
  test::WriteFile(file, old);
  CHECK_FALSE(ImageDataset::Open(file.string(), {.io = test::Io()}).ok());
}

}  // namespace
}  // namespace pcr
