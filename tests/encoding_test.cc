// Stream encodings (spec 13.5): every encoding round-trips real and
// adversarial values bit for bit, the writer's choice reads back, and
// truncated, flipped and hand-made bad encodings are refused, not crashed on.
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "format/file_format.h"
#include "format/stream_decoding.h"
#include "format/stream_encoding.h"
#include "format/table_format.h"
#include "pcr/table.h"
#include "csv_check.h"
#include "test_util.h"
#include "writer/stream_encoder.h"
#include "writer/table_writer.h"

using namespace pcr;

namespace {

constexpr ElementKind kNumeric[] = {ElementKind::kU32, ElementKind::kI64, ElementKind::kF32, ElementKind::kF64};

Bytes Raw(ElementKind kind, const std::vector<uint64_t>& v) {
  Bytes raw;
  for (const uint64_t x : v) {
    if (ElementWidth(kind) == 4) {
      PutFixed32(&raw, static_cast<uint32_t>(x));
    } else {
      PutFixed64(&raw, x);
    }
  }
  return raw;
}

uint64_t Bits(double d) { return std::bit_cast<uint64_t>(d); }
uint64_t Bits(float f) { return std::bit_cast<uint32_t>(f); }

// Value sets a stream may hold, as bit patterns.
std::vector<std::vector<uint64_t>> ValueSets(ElementKind kind) {
  std::mt19937_64 rng(7);
  std::vector<std::vector<uint64_t>> sets = {{}, {42}, std::vector<uint64_t>(3000, 9)};
  const int bits = static_cast<int>(ElementWidth(kind) * 8);
  // Every bit width, above a base, across block boundaries.
  for (int b = 0; b <= bits; ++b) {
    std::vector<uint64_t> v;
    const uint64_t mask = b == 64 ? ~uint64_t{0} : (uint64_t{1} << b) - 1;
    for (size_t n : {1, 1023, 1025}) {
      for (size_t i = 0; i < n; ++i) v.push_back(1000 + (rng() & mask));
    }
    sets.push_back(v);
  }
  // Extremes, sorted ids, runs, few distinct values.
  sets.push_back({0, 1, ~uint64_t{0}, uint64_t{1} << 63, (uint64_t{1} << 63) - 1, 0, ~uint64_t{0}});
  std::vector<uint64_t> sorted, runs, few;
  uint64_t id = uint64_t{1} << 40;
  for (int i = 0; i < 5000; ++i) {
    sorted.push_back(id += rng() % 100);
    runs.push_back(static_cast<uint64_t>(i / 37) * 11);
    few.push_back(std::vector<uint64_t>{5, 77, 123456789, 5, 5}[rng() % 5]);
  }
  sets.insert(sets.end(), {sorted, runs, few});
  if (kind == ElementKind::kF64 || kind == ElementKind::kF32) {
    const bool f64 = kind == ElementKind::kF64;
    std::vector<uint64_t> special, decimals;
    for (const double d : {0.0, -0.0, 1.5, std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::denorm_min(),
                           std::numeric_limits<double>::max(), 0.1, -2.75}) {
      special.push_back(f64 ? Bits(d) : Bits(static_cast<float>(d)));
    }
    special.push_back(f64 ? 0x7ff8000000000123ULL : 0x7fc00123ULL);  // NaN with a payload
    special.push_back(f64 ? 0xfff0000000000001ULL : 0xff800001ULL);  // signalling NaN
    for (int i = 0; i < 4000; ++i) {
      const double d = static_cast<double>(static_cast<int64_t>(rng() % 100000) - 50000) / 100;
      decimals.push_back(f64 ? Bits(d) : Bits(static_cast<float>(d)));
      if (i % 97 == 0) decimals.push_back(special[static_cast<size_t>(i) % special.size()]);
    }
    sets.insert(sets.end(), {special, decimals});
  }
  if (kind == ElementKind::kU32) {
    for (auto& v : sets) {
      for (uint64_t& x : v) x &= 0xffffffff;
    }
  }
  return sets;
}

// Columns of the corpus CSV bundled with the tests, as int64 where they parse.
std::vector<std::vector<uint64_t>> SoybeanColumns() {
  std::ifstream in(std::string(PCR_TEST_DATA_DIR) + "/tabular/Soybean.csv");
  std::string line;
  std::getline(in, line);
  std::vector<std::vector<uint64_t>> columns;
  while (std::getline(in, line)) {
    std::stringstream cells(line);
    std::string cell;
    for (size_t c = 0; std::getline(cells, cell, ','); ++c) {
      if (columns.size() <= c) columns.resize(c + 1);
      if (cell.size() >= 2 && cell.front() == '"') cell = cell.substr(1, cell.size() - 2);
      char* end = nullptr;
      const long long v = std::strtoll(cell.c_str(), &end, 10);
      if (!cell.empty() && *end == '\0') columns[c].push_back(static_cast<uint64_t>(v));
    }
  }
  return columns;
}

void RoundTrip(ElementKind kind, const Bytes& raw, const EncodingChoice& choice) {
  const EncodedStream e = EncodeStream(kind, raw, choice);
  if (e.encoding == StreamEncoding::kPlain) {
    CHECK(e.bytes.empty());
    return;
  }
  Bytes out;
  const Status st = DecodeStream(kind, e.encoding, e.bytes, raw.size(), &out);
  REQUIRE(st.ok());
  REQUIRE(out == raw);
}

}  // namespace

TEST_CASE("every encoding, forced, gives back every value set bit for bit") {
  for (const ElementKind kind : kNumeric) {
    const auto sets = ValueSets(kind);
    for (uint8_t e = 0; e <= static_cast<uint8_t>(StreamEncoding::kDecimal); ++e) {
      const auto encoding = static_cast<StreamEncoding>(e);
      EncodingChoice choice{.force = encoding};
      size_t used = 0;
      for (size_t s = 0; s < sets.size(); ++s) {
        INFO("kind " << static_cast<int>(kind) << " encoding " << EncodingName(encoding) << " set " << s);
        const Bytes raw = Raw(kind, sets[s]);
        RoundTrip(kind, raw, choice);
        used += EncodeStream(kind, raw, choice).encoding == encoding;
      }
      // A forced encoding is used wherever the kind allows it (a constant
      // only where the values are constant).
      if (TopEncodingAllowed(kind, encoding) && encoding != StreamEncoding::kPlain) CHECK(used > 1);
    }
    for (size_t s = 0; s < sets.size(); ++s) RoundTrip(kind, Raw(kind, sets[s]), {});
  }
}

TEST_CASE("the automatic choice round-trips real columns and finds their structure") {
  const auto columns = SoybeanColumns();
  REQUIRE(columns.size() > 20);
  size_t smaller = 0;
  for (const auto& c : columns) {
    const Bytes raw = Raw(ElementKind::kI64, c);
    RoundTrip(ElementKind::kI64, raw, {});
    const EncodedStream e = EncodeStream(ElementKind::kI64, raw, {});
    smaller += e.encoding != StreamEncoding::kPlain && e.bytes.size() * 8 < raw.size();
  }
  // Small categorical integers take under a byte each, before zstd.
  CHECK(smaller * 2 > columns.size());
}

TEST_CASE("decimal digits held as runs or a dictionary decode through them, exceptions included") {
  for (const ElementKind kind : {ElementKind::kF64, ElementKind::kF32}) {
    const bool f64 = kind == ElementKind::kF64;
    const auto bits = [&](double d) { return f64 ? Bits(d) : Bits(static_cast<float>(d)); };
    std::mt19937_64 rng(11);
    // Mostly zero with a value every 40 rows (spam's columns), and five
    // distinct values in random order; a NaN now and then is an exception.
    std::vector<uint64_t> sparse, few;
    const double fives[] = {0.25, 1.5, -3.75, 12.0, 0.5};
    for (int i = 0; i < 6000; ++i) {
      sparse.push_back(bits(i % 40 == 7 ? static_cast<double>(rng() % 1000) / 100 : 0.0));
      few.push_back(i % 500 == 3 ? (f64 ? 0x7ff8000000000001ULL : 0x7fc00001ULL) : bits(fives[rng() % 5]));
    }
    for (const auto& [values, digits] : {std::pair{sparse, "digits: rle("}, std::pair{few, "digits: dictionary("}}) {
      const Bytes raw = Raw(kind, values);
      const EncodingChoice choice{.force = StreamEncoding::kDecimal};
      const EncodedStream e = EncodeStream(kind, raw, choice);
      const std::string tree = DescribeEncoding(kind, e.encoding, e.bytes);
      INFO(tree);
      CHECK(tree.find(digits) != std::string::npos);
      RoundTrip(kind, raw, choice);
    }
  }
}

TEST_CASE("string dictionaries round-trip with their lengths, empty and binary strings included") {
  const std::vector<std::string> words = {"", "a", std::string("\0\xff", 2), "grey soil", ""};
  Bytes lengths, values;
  std::mt19937 rng(3);
  for (int i = 0; i < 5000; ++i) {
    const std::string& w = words[rng() % words.size()];
    PutFixed32(&lengths, static_cast<uint32_t>(w.size()));
    values.insert(values.end(), w.begin(), w.end());
  }
  for (const EncodingChoice& choice : {EncodingChoice{}, EncodingChoice{.force = StreamEncoding::kStringDictionary}}) {
    const EncodedStream e = EncodeStrings(lengths, values, choice);
    REQUIRE(e.encoding == StreamEncoding::kStringDictionary);
    Bytes out, out_lengths;
    REQUIRE(DecodeStream(ElementKind::kStrings, e.encoding, e.bytes, values.size(), &out, lengths.size() / 4,
                         &out_lengths)
                .ok());
    CHECK(out == values);
    CHECK(out_lengths == lengths);
    // The wrong raw length is refused. (The string count comes from the
    // lengths stream's raw_length, which the feature decoder checks against
    // the presence bitmap.)
    CHECK(!DecodeStream(ElementKind::kStrings, e.encoding, e.bytes, values.size() + 1, &out, lengths.size() / 4,
                        &out_lengths)
               .ok());
  }
  // Mostly distinct strings stay plain unless forced.
  Bytes l2, v2;
  for (int i = 0; i < 100; ++i) {
    const std::string s = std::to_string(i * 7919);
    PutFixed32(&l2, static_cast<uint32_t>(s.size()));
    v2.insert(v2.end(), s.begin(), s.end());
  }
  CHECK(EncodeStrings(l2, v2, {}).encoding == StreamEncoding::kPlain);
}

TEST_CASE("every truncation of an encoded stream is refused, and no byte flip crashes or changes its length") {
  struct Encoded {
    ElementKind kind;
    EncodedStream stream;
    uint64_t raw_length;
  };
  std::vector<Encoded> streams;
  for (const ElementKind kind : kNumeric) {
    const auto sets = ValueSets(kind);
    for (uint8_t e = 1; e <= static_cast<uint8_t>(StreamEncoding::kDecimal); ++e) {
      for (const size_t s : {size_t{3}, sets.size() - 1, sets.size() - 2}) {
        const Bytes raw = Raw(kind, sets[s]);
        EncodedStream enc = EncodeStream(kind, raw, {.force = static_cast<StreamEncoding>(e)});
        if (enc.encoding != StreamEncoding::kPlain && enc.bytes.size() < 4096) {
          streams.push_back({kind, std::move(enc), raw.size()});
        }
      }
    }
  }
  REQUIRE(streams.size() > 20);
  uint64_t refused = 0, decoded = 0;
  for (const auto& [kind, enc, raw_length] : streams) {
    Bytes ok_out;
    REQUIRE(DecodeStream(kind, enc.encoding, enc.bytes, raw_length, &ok_out).ok());
    for (size_t cut = 0; cut < enc.bytes.size(); ++cut) {
      Bytes out;
      const ByteSpan part(enc.bytes.data(), cut);
      CHECK(!DecodeStream(kind, enc.encoding, part, raw_length, &out).ok());
    }
    for (size_t at = 0; at < enc.bytes.size(); ++at) {
      Bytes flipped = enc.bytes, out;
      flipped[at] ^= 0x5a;
      if (DecodeStream(kind, enc.encoding, flipped, raw_length, &out).ok()) {
        CHECK(out.size() == raw_length);
        ++decoded;
      } else {
        ++refused;
      }
    }
  }
  // Flipped values still decode (the stream checksum catches them in a
  // file); flipped structure is refused.
  CHECK(refused > 0);
  CHECK(decoded > 0);
}

TEST_CASE("hand-made bad encodings are refused with what is wrong") {
  const auto refuse = [](ElementKind kind, StreamEncoding top, const Bytes& bytes, uint64_t raw_length,
                         const std::string& what) {
    Bytes out;
    const Status st = DecodeStream(kind, top, bytes, raw_length, &out);
    INFO(st.ToString());
    REQUIRE(!st.ok());
    CHECK_THAT(st.message(), Catch::Contains(what));
  };
  using E = StreamEncoding;
  const auto tag = [](E e) { return static_cast<uint8_t>(e); };
  // Bit width over the element's bits.
  refuse(ElementKind::kU32, E::kBitPack, {tag(E::kBitPack), 0, 0, 0, 0, 33}, 4, "bit width 33 over 32");
  refuse(ElementKind::kI64, E::kBitPack, {tag(E::kBitPack), 0, 0, 0, 0, 0, 0, 0, 0, 65}, 8, "bit width 65 over 64");
  // Packed bytes that do not fit the count.
  refuse(ElementKind::kI64, E::kBitPack, {tag(E::kBitPack), 0, 0, 0, 0, 0, 0, 0, 0, 4, 0xff}, 24,
         "1 bytes of bit-packed values, expected 2");
  // A dictionary code out of range: 2 entries (constant 7), codes 0, 1, 2.
  const Bytes dict = {tag(E::kDictionary), 2, 9, tag(E::kPlain), 7, 0, 0, 0, 8, 0, 0, 0,
                      11, tag(E::kBitPack), 0, 0, 0, 0, 0, 0, 0, 0, 2, 0b100100};
  refuse(ElementKind::kU32, E::kDictionary, dict, 12, "dictionary code 2 out of range of 2 entries");
  // Runs past the values: 2 runs of lengths 2 and 3 for 4 values.
  const Bytes rle = {tag(E::kRle),  2, 9,    tag(E::kPlain), 1, 0, 0, 0, 2, 0, 0, 0,
                     11,  tag(E::kBitPack), 2, 0, 0, 0, 0, 0, 0, 0, 1, 0b10};
  refuse(ElementKind::kU32, E::kRle, rle, 16, "runs past the 4 values");
  // A zero-length run.
  const Bytes rle0 = {tag(E::kRle), 1, 5, tag(E::kPlain), 1, 0, 0, 0, 9, tag(E::kConstant), 0, 0, 0, 0, 0, 0, 0, 0};
  refuse(ElementKind::kU32, E::kRle, rle0, 4, "of length 0");
  // A decimal exponent over 18, and exceptions out of order.
  refuse(ElementKind::kF64, E::kDecimal, {tag(E::kDecimal), 19}, 8, "decimal exponent 19 over 18");
  const Bytes dec = {tag(E::kDecimal), 1, 9, tag(E::kConstant), 5, 0, 0, 0, 0, 0, 0, 0, 2,
                     17, tag(E::kPlain), 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0,
                     0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  refuse(ElementKind::kF64, E::kDecimal, dec, 24, "out of order");
  // Nesting deeper than 4: delta of delta of delta of delta of a constant.
  Bytes deep = {tag(E::kConstant), 1, 0, 0, 0, 0, 0, 0, 0};
  for (int i = 0; i < 4; ++i) {
    Bytes outer = {tag(E::kDelta), 0, 0, 0, 0, 0, 0, 0, 0, static_cast<uint8_t>(deep.size())};
    outer.insert(outer.end(), deep.begin(), deep.end());
    deep = outer;
  }
  refuse(ElementKind::kI64, E::kDelta, deep, 8, "nested deeper than 4");
  // An encoding a kind does not allow, and a stream whose tag is not its entry's.
  refuse(ElementKind::kF64, E::kBitPack, {tag(E::kBitPack)}, 8, "not a stream encoding here");
  refuse(ElementKind::kI64, E::kConstant, {tag(E::kBitPack), 0, 0, 0, 0, 0, 0, 0, 0, 0}, 8, "its entry says 1");
  // Bytes left over, and a child that runs past its parent.
  refuse(ElementKind::kU32, E::kConstant, {tag(E::kConstant), 1, 0, 0, 0, 0}, 8, "5 bytes of a constant, expected 4");
  refuse(ElementKind::kU32, E::kDelta, {tag(E::kDelta), 0, 0, 0, 0, 9, tag(E::kConstant)}, 8, "runs past its parent");
  // More than 2^24 times the encoded bytes.
  refuse(ElementKind::kI64, E::kConstant, {tag(E::kConstant), 1, 0, 0, 0, 0, 0, 0, 0}, uint64_t{9} << 24,
         "over 16777216 times");
  // String dictionaries whose entry lengths do not add up.
  const Bytes sd = {tag(E::kStringDictionary), 1, 5, tag(E::kPlain), 3, 0, 0, 0, 2, 'a', 'b',
                    2, tag(E::kConstant)};
  Bytes out, lengths;
  const Status st = DecodeStream(ElementKind::kStrings, E::kStringDictionary, sd, 3, &out, 1, &lengths);
  REQUIRE(!st.ok());
  CHECK_THAT(st.message(), Catch::Contains("do not add up to its 2 bytes"));
}

TEST_CASE("encoding names parse back, and kinds allow exactly the encodings of the spec") {
  for (uint8_t e = 0; e <= kMaxStreamEncoding; ++e) {
    StreamEncoding parsed;
    REQUIRE(ParseEncodingName(EncodingName(static_cast<StreamEncoding>(e)), &parsed));
    CHECK(static_cast<uint8_t>(parsed) == e);
  }
  EncodingChoice choice;
  CHECK(ParseEncodingChoice("auto", &choice));
  CHECK(!choice.force);
  CHECK(!ParseEncodingChoice("derived_lengths", &choice));
  CHECK(!ParseEncodingChoice("zip", &choice));
  CHECK(TopEncodingAllowed(ElementKind::kBytes, StreamEncoding::kPlain));
  CHECK(!TopEncodingAllowed(ElementKind::kBytes, StreamEncoding::kRle));
  CHECK(!TopEncodingAllowed(ElementKind::kF64, StreamEncoding::kBitPack));
  CHECK(!TopEncodingAllowed(ElementKind::kI64, StreamEncoding::kDecimal));
  CHECK(TopEncodingAllowed(ElementKind::kU32, StreamEncoding::kDerivedLengths));
  CHECK(!TopEncodingAllowed(ElementKind::kI64, StreamEncoding::kDerivedLengths));
  CHECK(TopEncodingAllowed(ElementKind::kStrings, StreamEncoding::kStringDictionary));
  CHECK(!TopEncodingAllowed(ElementKind::kStrings, StreamEncoding::kDictionary));
}

TEST_CASE("index entries of encoded streams that cannot hold their raw lengths are refused before decoding") {
  test::TempDir dir;
  const std::string path = dir / "t.pcr";
  auto w = TableFileWriter::Create(path,
                                   {{.name = "s", .type = FeatureType::kString},
                                    {.name = "ids", .type = FeatureType::kIdList},
                                    {.name = "n", .type = FeatureType::kInt64}},
                                   {});
  REQUIRE(w.ok());
  for (int r = 0; r < 3000; ++r) {
    (*w)->AddString(0, r % 3 == 0 ? "red" : "green");
    const std::vector<int64_t> ids(static_cast<size_t>(r % 5), 7);
    (*w)->AddIdList(1, ids, {});
    (*w)->AddInt64(2, r % 4);
    REQUIRE((*w)->EndRow().ok());
  }
  REQUIRE((*w)->Finish().ok());
  const Bytes good = test::ReadFile(path);
  REQUIRE(good[9] == kEncodingsVersionMinor);
  const auto open_and_read = [&](const std::function<void(FileIndex*, bool*)>& edit) {
    bool edited = false;
    test::WriteFile(path, test::RewriteIndex(good, [&](FileIndex* index) { edit(index, &edited); }));
    REQUIRE(edited);
    auto t = Table::Open(path, {.io = test::Io()});
    if (!t.ok()) return t.status();
    auto b = (*t)->Read(test::AllFeatures(**t), 0, 1);
    return b.ok() ? Status::OK() : b.status();
  };
  // Derived lengths that are not whole u32 values, with statistics to match.
  Status st = open_and_read([](FileIndex* index, bool* edited) {
    for (TableStream& t : index->stripes[0].table_streams) {
      if (t.encoding == StreamEncoding::kDerivedLengths) {
        t.raw_length += 1;
        *edited = true;
      }
    }
  });
  CHECK_THAT(st.message(), Catch::Contains("is not whole 4-byte values"));
  // An encoded scalar stream claiming more values than rows.
  st = open_and_read([](FileIndex* index, bool* edited) {
    for (TableStream& t : index->stripes[0].table_streams) {
      if (t.feature == 2 && t.role == StreamRole::kValues && t.encoding != StreamEncoding::kPlain) {
        t.raw_length = 8 * 3001;
        *edited = true;
      }
    }
  });
  CHECK_THAT(st.message(), Catch::Contains("one at most per row of 3000"));
  // An encoded id list claiming 2^20 more ids than its lengths give (within
  // the expansion bound): refused against its lengths before decoding.
  st = open_and_read([](FileIndex* index, bool* edited) {
    for (TableStream& t : index->stripes[0].table_streams) {
      if (t.feature == 1 && t.role == StreamRole::kValues && t.encoding != StreamEncoding::kPlain) {
        const uint64_t more = uint64_t{8} << 20;
        t.raw_length += more;
        index->schema.features[1].value_count += more / 8;
        *edited = true;
      }
    }
  });
  CHECK_THAT(st.message(), Catch::Contains("elements of 8 bytes"));
}
