#include <catch2/catch.hpp>

#include <random>

#include "format/checksum.h"
#include "format/coding.h"
#include "format/file_format.h"
#include "format/journal.h"
#include "format/json.h"
#include "format/scan_script.h"
#include "format/table_format.h"
#include "io/pcr_file.h"
#include "writer/feature_streams.h"

namespace pcr {
namespace {

TEST_CASE("varints round-trip at every width and reject truncation") {
  const uint64_t values[] = {0, 1, 127, 128, 300, 16383, 16384, (1ull << 35) + 7, UINT64_MAX};
  for (uint64_t v : values) {
    Bytes b;
    PutVarint64(&b, v);
    ByteCursor d(b);
    uint64_t out = 0;
    REQUIRE(d.GetVarint64(&out));
    CHECK(out == v);
    CHECK(d.done());
    for (size_t cut = 0; cut < b.size(); ++cut) {
      ByteCursor t(ByteSpan(b).first(cut));
      CHECK_FALSE(t.GetVarint64(&out));
      CHECK(t.failed());
    }
  }
}

TEST_CASE("varint decoder rejects encodings past 64 bits") {
  const Bytes eleven(11, 0x80);
  ByteCursor d(eleven);
  uint64_t v;
  CHECK_FALSE(d.GetVarint64(&v));
  Bytes overflow(9, 0xff);
  overflow.push_back(0x02);  // the tenth byte may only be 0 or 1
  ByteCursor o(overflow);
  CHECK_FALSE(o.GetVarint64(&v));
}

TEST_CASE("signed varints zigzag") {
  for (int64_t v : {int64_t{0}, int64_t{-1}, int64_t{1}, int64_t{-64}, INT64_MIN, INT64_MAX}) {
    Bytes b;
    PutVarsint64(&b, v);
    ByteCursor d(b);
    int64_t out;
    REQUIRE(d.GetVarsint64(&out));
    CHECK(out == v);
  }
  Bytes b;
  PutVarsint64(&b, -1);
  CHECK(b.size() == 1);
}

TEST_CASE("fixed-width fields are little-endian") {
  Bytes b;
  PutFixed32(&b, 0x04030201);
  PutFixed64(&b, 0x0c0b0a0908070605ull);
  CHECK(b == Bytes{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  ByteCursor d(b);
  uint32_t a;
  uint64_t c;
  REQUIRE(d.GetFixed32(&a));
  REQUIRE(d.GetFixed64(&c));
  CHECK(a == 0x04030201);
  CHECK(c == 0x0c0b0a0908070605ull);
  CHECK_FALSE(d.GetFixed8(nullptr));
}

TEST_CASE("length-prefixed strings are bounded") {
  Bytes b;
  PutLengthPrefixed(&b, "hello");
  std::string s;
  ByteCursor ok(b);
  REQUIRE(ok.GetLengthPrefixed(5, &s));
  CHECK(s == "hello");
  ByteCursor too_long(b);
  CHECK_FALSE(too_long.GetLengthPrefixed(4, &s));
  ByteCursor truncated(ByteSpan(b).first(3));
  CHECK_FALSE(truncated.GetLengthPrefixed(5, &s));
}

TEST_CASE("checksums are XXH3-64 with seed 0") {
  // Reference values of XXH3_64bits from the xxHash test vectors.
  CHECK(Checksum64({}) == 0x2D06800538D394C2ull);
  const Bytes abc = {'a', 'b', 'c'};
  CHECK(Checksum32(abc) == static_cast<uint32_t>(Checksum64(abc)));
  CHECK(Checksum64(abc) != Checksum64(ByteSpan(abc).first(2)));
}

TEST_CASE("file header round-trips and rejects damage") {
  Bytes b;
  FileHeader{.kind = FileKind::kImages}.EncodeTo(&b);
  static_assert(kFileHeaderSize == 16);
  REQUIRE(b.size() == kFileHeaderSize);
  auto h = FileHeader::DecodeFrom(b);
  REQUIRE(h.ok());
  CHECK(h->kind == FileKind::kImages);
  CHECK(h->version_major == 0);
  CHECK(h->version_minor == 1);
  for (size_t i = 0; i < b.size(); ++i) {
    Bytes bad = b;
    bad[i] ^= 0x40;
    CHECK_FALSE(FileHeader::DecodeFrom(bad).ok());
  }
  CHECK_FALSE(FileHeader::DecodeFrom(ByteSpan(b).first(15)).ok());
}

TEST_CASE("a newer minor version is refused as not supported") {
  Bytes b;
  FileHeader{.kind = FileKind::kTable, .version_minor = kVersionMinor + 1}.EncodeTo(&b);
  auto h = FileHeader::DecodeFrom(b);
  REQUIRE_FALSE(h.ok());
  CHECK(h.status().code() == StatusCode::kNotSupported);
  CHECK_THAT(h.status().message(), Catch::Contains("newer than this reader"));
}

TEST_CASE("footer checks its range against the file size") {
  Bytes b;
  Footer{.index_offset = 100, .index_length = 50, .index_checksum = 7}.EncodeTo(&b);
  static_assert(kFooterSize == 32);
  REQUIRE(b.size() == kFooterSize);
  auto f = Footer::DecodeFrom(b, 100 + 50 + kFooterSize);
  REQUIRE(f.ok());
  CHECK(f->index_checksum == 7);
  CHECK_FALSE(Footer::DecodeFrom(b, 100 + 51 + kFooterSize).ok());
  for (size_t i = 0; i < b.size(); ++i) {
    Bytes bad = b;
    bad[i] ^= 1;
    CHECK_FALSE(Footer::DecodeFrom(bad, 100 + 50 + kFooterSize).ok());
  }
}

TEST_CASE("built-in scan scripts are valid and survive encoding") {
  for (const std::string& name : BuiltinScanScriptNames()) {
    auto script = BuiltinScanScript(name);
    REQUIRE(script.ok());
    CHECK(ValidateScanScript(*script).ok());
    Bytes b;
    EncodeScanScript(*script, &b);
    ByteCursor d(b);
    ScanScript back;
    REQUIRE(DecodeScanScript(&d, &back));
    CHECK(d.done());
    CHECK(back == *script);
    auto parsed = ParseScanScript(FormatScanScript(*script), name);
    REQUIRE(parsed.ok());
    CHECK(parsed->groups == script->groups);
  }
  CHECK(BuiltinScanScript("libjpeg")->group_count() == 10);
  CHECK_FALSE(BuiltinScanScript("nope").ok());
}

TEST_CASE("scan script validation rejects illegal progressions") {
  struct Case {
    const char* text;
    const char* why;
  };
  const Case cases[] = {
      {"0,1,2,3: 0-0, 0, 0\n", "AC never coded"},
      {"0: 1-63, 0, 0\n0,1,2,3: 0-0, 0, 0\n", "AC before DC"},
      {"0,1,2,3: 0-63, 0, 0\n", "DC scan with Se > 0"},
      {"0,1,2,3: 0-0, 0, 0\n0,1: 1-63, 0, 0\n2: 1-63, 0, 0\n3: 1-63, 0, 0\n", "AC scan of two components"},
      {"0,1,2,3: 0-0, 0, 1\n0: 1-63,0,0\n1: 1-63,0,0\n2: 1-63,0,0\n3: 1-63,0,0\n", "DC never refined"},
      {"0,1,2,3: 0-0, 0, 0\n0: 1-63,0,0\n0: 1-63,0,0\n1: 1-63,0,0\n2: 1-63,0,0\n3: 1-63,0,0\n",
       "band coded twice"},
      {"0,1,2,3: 0-0, 0, 0\n0: 1-63,2,1\n1: 1-63,0,0\n2: 1-63,0,0\n3: 1-63,0,0\n", "refine uncoded"},
      {"1,2,3: 0-0, 0, 0\n0: 0-0,0,0\n0: 1-63,0,0\n1: 1-63,0,0\n2: 1-63,0,0\n3: 1-63,0,0\n",
       "group 1 lacks component 0"},
      {"0,1,2,3: 0-0 0 0\n", "syntax"},
      {"7: 0-0, 0, 0\n", "component out of range"},
  };
  for (const Case& c : cases) {
    INFO(c.why);
    CHECK_FALSE(ParseScanScript(c.text, "test").ok());
  }
  CHECK(ParseScanScript("# full-precision spectral\n0,1,2,3: 0-0,0,0\n0: 1-63,0,0; 3: 1-63,0,0\n"
                        "1: 1-63,0,0; 2: 1-63,0,0\n",
                        "ok")
            .ok());
}

FileIndex TwoStripeIndex() {
  FileIndex index;
  index.script = *BuiltinScanScript("spectral");
  uint64_t offset = kFileHeaderSize;
  for (int s = 0; s < 2; ++s) {
    StripeInfo stripe;
    stripe.offset = offset;
    stripe.image_count = 3;
    stripe.streams.push_back({10, 99});
    for (int g = 1; g <= index.script.group_count(); ++g) {
      uint64_t len = 0;
      for (int i = 0; i < 3; ++i) {
        stripe.chunks.push_back({static_cast<uint64_t>(g + i), static_cast<uint32_t>(g * 10 + i)});
        len += g + i;
      }
      stripe.streams.push_back({len, static_cast<uint64_t>(g)});
    }
    offset += stripe.length();
    index.stripes.push_back(stripe);
  }
  return index;
}

TEST_CASE("file index round-trips and enforces the stripe tiling") {
  const FileIndex index = TwoStripeIndex();
  const uint64_t end = index.stripes[1].offset + index.stripes[1].length();
  Bytes b;
  index.EncodeTo(FileKind::kImages, 1, &b);
  auto back = FileIndex::DecodeFrom(b, FileKind::kImages, 1, end);
  REQUIRE(back.ok());
  REQUIRE(back->stripes.size() == 2);
  CHECK(back->stripes[1].chunk(3, 2).length == 5);
  CHECK(back->stripes[1].chunk(3, 2).checksum == 32);
  CHECK(back->stripes[1].stream_offset(1) == index.stripes[1].offset + 10);
  // The index must start where the stripes end.
  CHECK_FALSE(FileIndex::DecodeFrom(b, FileKind::kImages, 1, end + 1).ok());
  CHECK_FALSE(FileIndex::DecodeFrom(b, FileKind::kImages, 1, end - 1).ok());
  for (size_t cut = 0; cut < b.size(); ++cut) {
    CHECK_FALSE(FileIndex::DecodeFrom(ByteSpan(b).first(cut), FileKind::kImages, 1, end).ok());
  }
}

TEST_CASE("file index rejects chunks that do not fill their stream") {
  FileIndex index = TwoStripeIndex();
  index.stripes[0].chunks[0].length += 1;
  const uint64_t end = index.stripes[1].offset + index.stripes[1].length();
  Bytes b;
  index.EncodeTo(FileKind::kImages, 1, &b);
  auto back = FileIndex::DecodeFrom(b, FileKind::kImages, 1, end);
  REQUIRE_FALSE(back.ok());
  CHECK_THAT(back.status().message(), Catch::Contains("group 1"));
}

TEST_CASE("sample metadata round-trips and rejects trailing bytes") {
  const std::vector<SampleMetadata> samples = {{0, "cats/a.jpg"}, {-1, ""}, {1234567, "dogs/b.jpg"}};
  Bytes b;
  EncodeSampleMetadata(samples, &b);
  auto back = DecodeSampleMetadata(b, samples.size());
  REQUIRE(back.ok());
  CHECK(*back == samples);
  CHECK_FALSE(DecodeSampleMetadata(b, samples.size() - 1).ok());
  CHECK_FALSE(DecodeSampleMetadata(b, samples.size() + 1).ok());
}

TEST_CASE("dataset manifest round-trips and rejects path-like and repeated file names") {
  DatasetManifest m;
  m.script = *BuiltinScanScript("libjpeg");
  m.class_names = {"cat", "dog"};
  m.files = {{"records-00000.pcr", 1000, 10, 1, 42}, {"records-00001.pcr", 900, 9, 1, 43}};
  Bytes b;
  m.EncodeTo(&b);
  auto back = DatasetManifest::DecodeFrom(b, false);
  REQUIRE(back.ok());
  CHECK(*back == m);
  m.files[0].name = "../etc/passwd";
  b.clear();
  m.EncodeTo(&b);
  CHECK_FALSE(DatasetManifest::DecodeFrom(b, false).ok());
  // One file listed twice would give its images twice.
  m.files[0].name = m.files[1].name;
  b.clear();
  m.EncodeTo(&b);
  auto twice = DatasetManifest::DecodeFrom(b, false);
  REQUIRE_FALSE(twice.ok());
  CHECK_THAT(twice.status().message(), Catch::Contains("listed twice"));
}

TEST_CASE("part manifest round-trips in its own file kind and rejects non-parts") {
  PartManifest p{.shard_index = 2, .shard_count = 3, .plan_checksum = 0x0123456789abcdef};
  p.dataset.script = *BuiltinScanScript("spectral5");
  p.dataset.files = {{"records-00007.pcr", 1000, 10, 1, 42}};
  Bytes index;
  p.EncodeTo(&index);
  Bytes file;
  FileHeader{.kind = FileKind::kDatasetPart, .version_minor = kPartVersionMinor}.EncodeTo(&file);
  const Bytes tail = EncodeIndexAndFooter(index, file.size());
  file.insert(file.end(), tail.begin(), tail.end());

  // A whole file in memory opens through the readers' one Open.
  auto engine = MakeIoEngine({.kind = IoEngineKind::kPread});
  REQUIRE(engine.ok());
  auto opened = PcrFile::Open(IoEngine::OpenMemory("part.pcrd", file), engine->get());
  REQUIRE(opened.ok());
  CHECK((*opened)->header().kind == FileKind::kDatasetPart);
  CHECK((*opened)->part() == p);
  auto back = PartManifest::DecodeFrom(ByteSpan(file).subspan(kFileHeaderSize, index.size()));
  REQUIRE(back.ok());
  CHECK(*back == p);
  for (size_t i = 0; i < file.size(); ++i) {
    Bytes bad = file;
    bad[i] ^= 0x10;
    auto damaged = PcrFile::Open(IoEngine::OpenMemory("part.pcrd", bad), engine->get());
    CHECK_FALSE(damaged.ok());
  }
  // Stamped before part manifests existed.
  Bytes old_header;
  FileHeader{.kind = FileKind::kDatasetPart, .version_minor = 2}.EncodeTo(&old_header);
  CHECK_FALSE(FileHeader::DecodeFrom(old_header).ok());

  for (auto [index_of, count] : {std::pair<uint64_t, uint64_t>{0, 1}, {3, 3}, {0, 0}}) {
    PartManifest bad = p;
    bad.shard_index = index_of;
    bad.shard_count = count;
    Bytes b;
    bad.EncodeTo(&b);
    CHECK_FALSE(PartManifest::DecodeFrom(b).ok());
  }
  CHECK_FALSE(PartManifest::DecodeFrom(ByteSpan(index).first(5)).ok());
}

TEST_CASE("the conversion journal round-trips and ends at the first line that does not fit") {
  // Version 2 for a part, cut by record; 1 for a conversion not split.
  CHECK(JournalFirstLine(0x0123456789abcdefull, 0, 1) == "pcr-convert journal 1 plan 0123456789abcdef shard 0 of 1");
  const std::string first = JournalFirstLine(0x0123456789abcdefull, 1, 3);
  CHECK(first == "pcr-convert journal 2 plan 0123456789abcdef shard 1 of 3");
  CHECK(JournalVersion(first + "\nlimits") == 2);
  CHECK(JournalVersion(JournalFirstLine(1, 0, 1)) == 1);
  CHECK(JournalVersion("pcr-convert journal 3 plan") == 0);
  CHECK(JournalVersion("pcr-convert journal 1") == 0);
  const std::string limits = JournalLimitsLine(true, 1000, 1 << 20);
  CHECK(limits == "limits skip-bad 1 max-pixels 1000 memory 1048576");
  const FinishedFile a{.file = 4, .entry = {.name = RecordFileName(4), .size = 900, .image_count = 7,
                                            .stripe_count = 2, .index_checksum = 0xfeedull},
                       .input_bytes = 1234};
  const FinishedFile b{.file = 5, .entry = {}, .input_bytes = 10, .skipped = {{40, "Corruption: not a JPEG"}}};
  const FinishedFile c{.file = 6, .entry = {.name = RecordFileName(6), .size = 77, .image_count = 1,
                                            .stripe_count = 1, .index_checksum = 1},
                       .input_bytes = 5};
  CHECK(EncodeJournalLines(b) == "skip 40 Corruption: not a JPEG\ndone 5 0 0 0 0000000000000000 10\n");
  const std::string text = first + "\n" + limits + "\n" + EncodeJournalLines(a) + EncodeJournalLines(b) +
                           EncodeJournalLines(c);
  const auto files = DecodeJournal(text, first, limits, 4, 100);
  REQUIRE(files.size() == 3);
  CHECK(files[0].entry == a.entry);
  CHECK(files[0].input_bytes == 1234);
  CHECK(files[1].skipped == b.skipped);
  CHECK(files[1].entry.name.empty());
  CHECK(files[2].entry == c.entry);

  CHECK(DecodeJournal(text, JournalFirstLine(0x0123456789abcdefull, 0, 3), limits, 4, 100).empty());
  // Other limits might convert the skipped image: the list ends before it.
  CHECK(DecodeJournal(text, first, JournalLimitsLine(false, 1000, 1 << 20), 4, 100).size() == 1);
  // Files must be numbered from the part's first file, consecutively.
  CHECK(DecodeJournal(text, first, limits, 3, 100).empty());
  // A source index past the sources ends the list.
  CHECK(DecodeJournal(text, first, limits, 4, 40).size() == 1);
  // A line cut short by a crash does not count.
  for (size_t cut = 0; cut < text.size(); ++cut) {
    const auto some = DecodeJournal(std::string_view(text).substr(0, cut), first, limits, 4, 100);
    CHECK(some.size() <= 3);
    for (size_t i = 0; i < some.size(); ++i) CHECK(some[i].file == 4 + i);
  }
  CHECK(DecodeJournal(text.substr(0, text.size() - 1), first, limits, 4, 100).size() == 2);
}

TEST_CASE("record file names and the outputs a conversion owns") {
  CHECK(RecordFileName(0) == "records-00000.pcr");
  CHECK(RecordFileName(123456) == "records-123456.pcr");
  CHECK(IsConversionOutput("records-00012.pcr"));
  CHECK(IsConversionOutput("records-123456.pcr"));
  CHECK(IsConversionOutput(kSkippedListName));
  CHECK_FALSE(IsConversionOutput("records-0001.pcr"));
  CHECK_FALSE(IsConversionOutput("records-0001x.pcr"));
  CHECK_FALSE(IsConversionOutput("table.pcr"));
  CHECK_FALSE(IsConversionOutput(kDatasetManifestName));
}

TEST_CASE("the plan checksum changes with every input it covers") {
  const ConversionPlan plan{.images_per_record = 8, .records_per_file = 1, .script = *BuiltinScanScript("spectral5"),
                            .class_names = {"a", "b"}};
  const std::vector<SampleMetadata> sources = {{0, "a/1.jpg"}, {1, "b/2.jpg"}};
  const uint64_t base = PlanChecksum(plan, sources);
  CHECK(PlanChecksum(plan, sources) == base);
  auto changed = [&](auto edit) {
    ConversionPlan p = plan;
    std::vector<SampleMetadata> s = sources;
    edit(p, s);
    return PlanChecksum(p, s) != base;
  };
  CHECK(changed([](ConversionPlan& p, auto&) { p.images_per_record = 9; }));
  CHECK(changed([](ConversionPlan& p, auto&) { p.records_per_file = 2; }));
  CHECK(changed([](ConversionPlan& p, auto&) { p.strip_metadata = true; }));
  CHECK(changed([](ConversionPlan& p, auto&) { p.script = *BuiltinScanScript("libjpeg"); }));
  CHECK(changed([](ConversionPlan& p, auto&) { p.class_names[1] = "c"; }));
  CHECK(changed([](ConversionPlan&, std::vector<SampleMetadata>& s) { s[1].label = 0; }));
  CHECK(changed([](ConversionPlan&, std::vector<SampleMetadata>& s) { std::swap(s[0], s[1]); }));
  CHECK(changed([](ConversionPlan&, std::vector<SampleMetadata>& s) { s.pop_back(); }));
}

TEST_CASE("a map feature is named by its id in decimal") {
  for (const auto& [name, id, ok] : {std::tuple<std::string, int64_t, bool>{"7", 7, true}, {"-12", -12, true},
                                     {"007", 7, false}, {"x", 7, false}, {"8", 7, false}, {"+7", 7, false}}) {
    INFO(name);
    TableSchema schema{.row_count = 1, .features = {{.name = name, .type = FeatureType::kFloat32, .has_id = true,
                                                     .id = id}}};
    Bytes b;
    EncodeTableSchema(schema, &b);
    ByteCursor d(b);
    TableSchema back;
    std::string error;
    CHECK(DecodeTableSchema(&d, kMaxFeatureType, true, &back, &error) == ok);
    if (!ok) CHECK_THAT(error, Catch::Contains("in decimal"));
  }
}

TEST_CASE("a zstd stream is exactly one frame") {
  Bytes raw(1000);
  for (size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<uint8_t>(i % 7);
  const StoredStream stored = CompressStream(raw, 3);
  REQUIRE(stored.codec == StreamCodec::kZstd);
  Bytes out;
  REQUIRE(DecompressStream(stored.bytes(), stored.codec, raw.size(), &out).ok());
  CHECK(out == raw);
  // A second frame that decodes to nothing, or a stray byte, after the frame.
  const StoredStream empty = CompressStream({}, 3);
  Bytes two = stored.owned;
  if (empty.codec == StreamCodec::kZstd) two.insert(two.end(), empty.owned.begin(), empty.owned.end());
  two.push_back(0);
  const Status st = DecompressStream(two, stored.codec, raw.size(), &out);
  CHECK(st.code() == StatusCode::kCorruption);
  CHECK_THAT(st.message(), Catch::Contains("after the zstd frame"));
}

TEST_CASE("bool values are the bytes 0 and 1; any other byte is refused with its position") {
  FeatureStreams f;
  f.AddBool(0, true);
  f.AddBool(2, false);
  f.AddBool(3, true);
  Bytes presence, unused;
  f.Raw(StreamRole::kPresence, 4, &presence);
  const ByteSpan stored = f.Raw(StreamRole::kValues, 4, &unused);
  Bytes values(stored.begin(), stored.end());
  CHECK(values == Bytes{1, 0, 1});
  Column c(FeatureType::kBool);
  REQUIRE(DecodeFeatureStreams(FeatureType::kBool, 4, presence, {}, values, {}, &c).ok());
  CHECK(c.ints == std::vector<int64_t>{1, 0, 0, 1});
  CHECK(c.present == std::vector<uint8_t>{1, 0, 1, 1});
  values[2] = 2;
  Column bad(FeatureType::kBool);
  const Status s = DecodeFeatureStreams(FeatureType::kBool, 4, presence, {}, values, {}, &bad);
  CHECK(s.code() == StatusCode::kCorruption);
  CHECK_THAT(s.message(), Catch::Contains("values stream: bool value 2 at byte 2"));
}

TEST_CASE("types of 0.6 and 0.7 are refused in files stamped earlier") {
  for (const auto& [version, max] :
       std::vector<std::pair<uint8_t, uint8_t>>{{2, 7}, {4, 10}, {5, 10}, {6, 16}, {7, 17}}) {
    CHECK(MaxFeatureType(version) == max);
  }
  CHECK(FeatureTypeVersion(FeatureType::kUInt64IdList) == kUInt64IdsVersionMinor);
  CHECK(FeatureTypeVersion(FeatureType::kBool) == kTypesVersionMinor);
  CHECK(FeatureTypeVersion(FeatureType::kTimestampNs) == kTypesVersionMinor);
  CHECK(FeatureTypeVersion(FeatureType::kFloat64List) == 4);
  // A schema of each type reads in a file of the type's version, not in one stamped just before.
  for (const FeatureType type : {FeatureType::kTimestampMs, FeatureType::kUInt64IdList}) {
    const TableSchema schema{.row_count = 0, .features = {{.name = "t", .type = type}}};
    Bytes b;
    EncodeTableSchema(schema, &b);
    const uint8_t version = FeatureTypeVersion(type);
    for (const uint8_t stamped : {static_cast<uint8_t>(version - 1), version}) {
      ByteCursor d(b);
      TableSchema back;
      std::string error;
      CHECK(DecodeTableSchema(&d, MaxFeatureType(stamped), true, &back, &error) == (stamped == version));
      if (stamped != version) {
        CHECK(error == "feature 0 has unknown type " + std::to_string(static_cast<int>(type)));
      }
    }
  }
}

TEST_CASE("any bytes written as a JSON string read back as the same bytes") {
  std::mt19937 rng(5);
  for (int round = 0; round < 2000; ++round) {
    std::string bytes(rng() % 24, '\0');
    for (char& c : bytes) c = static_cast<char>(rng() % 4 == 0 ? 0x80 + rng() % 0x80 : rng() % 256);
    std::string json;
    AppendJsonString(bytes, &json);
    for (const char c : json) CHECK(static_cast<unsigned char>(c) >= 0x20);
    JsonCursor cursor(json);
    std::string back;
    REQUIRE(cursor.String(&back));
    CHECK(back == bytes);
  }
  std::string json;
  AppendJsonString("\xc3\xa9\xed\xa0\x80\xf4\x90\x80\x80", &json);  // é, a surrogate, above U+10FFFF
  CHECK(json == "\"\xc3\xa9\\udced\\udca0\\udc80\\udcf4\\udc90\\udc80\\udc80\"");
}

TEST_CASE("the first byte that starts no UTF-8 character is found, and escaped for messages") {
  CHECK(InvalidUtf8At("plain \xc3\xa9 \xf0\x9f\x98\x80") == std::string_view::npos);
  CHECK(InvalidUtf8At("") == std::string_view::npos);
  CHECK(InvalidUtf8At("ok\xff") == 2);
  CHECK(InvalidUtf8At("a\xed\xa0\x80") == 1);      // a surrogate
  CHECK(InvalidUtf8At("\xc0\xaf") == 0);            // an overlong '/'
  CHECK(InvalidUtf8At("ab\xf4\x90\x80\x80") == 2);  // above U+10FFFF
  CHECK(InvalidUtf8At("\xc3") == 0);                // cut short
  CHECK(EscapeInvalidUtf8("\xc3\xa9\xff!") == "\xc3\xa9\\xff!");
}

}  // namespace
}  // namespace pcr
