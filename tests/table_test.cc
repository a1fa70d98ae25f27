// Table files: CSV and JSON Lines round trips, projections, popularity
// ordering, reorder, malformed input and corrupt files.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <ctime>
#include <limits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <tuple>
#include <variant>

#include "format/popularity.h"
#include "reader/inspect.h"
#include "pcr/verify.h"
#include "tests/csv_check.h"
#include "tests/test_util.h"
#include "writer/atomic_file.h"
#include "writer/table_writer.h"
#include "pcr/convert.h"

namespace pcr {
namespace {

namespace fs = std::filesystem;
using test::AllFeatures;
using test::CheckCsvRoundTrip;
using test::Slurp;
using test::TempDir;

TEST_CASE("bundled CSV reads back exactly, in one stripe and in many") {
  const std::string csv = test::DataDir() + "/tabular/Soybean.csv";
  CheckCsvRoundTrip(csv, 0);
  CheckCsvRoundTrip(csv, 100);
  CheckCsvRoundTrip(csv, 1);
}

TEST_CASE("CSV column types are the narrowest that hold every cell") {
  TempDir dir;
  const std::string csv = dir / "types.csv";
  std::ofstream(csv) << "\xEF\xBB\xBFi,f,s,q,m,e\n1,2.5,x,\"y\",NA,\n-3,1e3,\"a,\"\"b\"\"\nc\",\"NA\",,\n,7,9, 1,2,\r\n";
  auto report = ConvertTable({.input = csv, .out_dir = dir.path().string()});
  REQUIRE(report.ok());
  const auto& f = report->schema.features;
  CHECK(f[0].name == "i");
  CHECK(f[0].type == FeatureType::kInt64);
  CHECK(f[1].type == FeatureType::kFloat64);
  CHECK(f[2].type == FeatureType::kString);
  CHECK(f[3].type == FeatureType::kString);  // a quoted "NA" is the string NA
  CHECK(f[4].type == FeatureType::kInt64);
  CHECK(f[5].type == FeatureType::kString);  // never present
  auto t = Table::Open(report->path, {.io = test::Io()});
  REQUIRE(t.ok());
  auto b = (*t)->Read(AllFeatures(**t), 0, 1);
  REQUIRE(b.ok());
  CHECK(b->columns[2].string(1) == "a,\"b\"\nc");
  CHECK(b->columns[2].string(2) == "9");
  CHECK(b->columns[3].string(1) == "NA");
  CHECK(b->columns[3].string(2) == " 1");
  CHECK(b->columns[4].present == std::vector<uint8_t>{0, 0, 1});
  CHECK(b->columns[1].doubles == std::vector<double>{2.5, 1000, 7});
  CHECK(f[4].present_count == 1);

  TableConvertOptions f32{.input = csv, .out_dir = (dir / "f32"), .float32 = true};
  auto r32 = ConvertTable(f32);
  REQUIRE(r32.ok());
  CHECK(r32->schema.features[1].type == FeatureType::kFloat32);
}

TEST_CASE("bytes and float lists round-trip in a table stamped 0.4, which an 0.2 stamp cannot hold") {
  TempDir dir;
  const std::string path = dir / "t.pcr";
  auto w = TableFileWriter::Create(path,
                                   {{.name = "b", .type = FeatureType::kBytes},
                                    {.name = "f", .type = FeatureType::kFloat32List},
                                    {.name = "d", .type = FeatureType::kFloat64List}},
                                   {.rows_per_stripe = 2, .stream_encoding = "plain"});
  REQUIRE(w.ok());
  const std::string blob("\0\xff\x01", 3);
  for (int r = 0; r < 5; ++r) {
    if (r != 1) (*w)->AddString(0, blob.substr(0, static_cast<size_t>(r % 4)));
    if (r != 2) (*w)->AddFloatList(1, std::vector<double>(static_cast<size_t>(r), 0.1 * r));
    if (r != 3) (*w)->AddFloatList(2, std::vector<double>{1.0 / 3, static_cast<double>(r)});
    REQUIRE((*w)->EndRow().ok());
  }
  REQUIRE((*w)->Finish().ok());
  Bytes file = test::ReadFile(path);
  CHECK(file[9] == 4);
  auto t = Table::Open(path, {.io = test::Io()});
  REQUIRE(t.ok());
  CHECK((*t)->schema().features[1].value_count == 0 + 1 + 3 + 4);
  auto b = (*t)->Read(AllFeatures(**t), 0, (*t)->stripe_count());
  REQUIRE(b.ok());
  const std::vector<Column>& c = b->columns;
  CHECK(c[0].present == std::vector<uint8_t>{1, 0, 1, 1, 1});
  CHECK(c[0].string(3) == blob);
  CHECK(c[0].string(4).empty());
  CHECK(c[1].present == std::vector<uint8_t>{1, 1, 0, 1, 1});
  CHECK(c[1].offsets == std::vector<uint64_t>{0, 0, 1, 1, 4, 8});
  CHECK(c[1].floats[1] == 0.3f);
  CHECK(c[2].doubles == std::vector<double>{1.0 / 3, 0, 1.0 / 3, 1, 1.0 / 3, 2, 1.0 / 3, 4});
  CHECK(VerifyPath(path, test::Io()).errors.empty());
  // The same file stamped 0.2 holds types that version does not have.
  file[9] = 2;
  StoreFixed32(file.data() + 12, Checksum32(ByteSpan(file).first(12)));
  test::WriteFile(path, file);
  auto old = Table::Open(path, {.io = test::Io()});
  REQUIRE_FALSE(old.ok());
  CHECK(old.status().code() == StatusCode::kCorruption);
  CHECK_THAT(old.status().message(), Catch::Contains("unknown type 8"));
}

// A seeded JSON Lines map dataset and the values it holds.
struct MapRow {
  int64_t label = 0;
  std::optional<std::string> name;
  std::map<int64_t, double> dense;
  std::map<int64_t, std::vector<int64_t>> sparse;
  std::map<int64_t, std::vector<std::pair<int64_t, double>>> scored;
};

std::vector<MapRow> MakeMapRows(int n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<MapRow> rows(n);
  for (MapRow& r : rows) {
    r.label = static_cast<int64_t>(rng() % 2);
    if (rng() % 3 == 0) r.name = "n" + std::to_string(rng() % 100) + (rng() % 5 == 0 ? "\"\\\n\u00e9" : "");
    for (int64_t id = 100; id < 140; ++id) {
      if (rng() % 10 < 4) r.dense[id] = std::ldexp(static_cast<double>(rng() % 100000), -(int)(rng() % 20)) - 3;
    }
    for (int64_t id = 1000; id < 1010; ++id) {
      if (rng() % 10 < 4) {
        auto& ids = r.sparse[id];
        for (uint64_t k = rng() % 30; k > 0; --k) ids.push_back(static_cast<int64_t>(rng()));
      }
    }
    for (int64_t id = 2000; id < 2003; ++id) {
      if (rng() % 2) {
        auto& l = r.scored[id];
        for (uint64_t k = rng() % 5; k > 0; --k) l.push_back({static_cast<int64_t>(rng() % 1000), (rng() % 64) / 8.0});
      }
    }
  }
  return rows;
}

std::string Num(double d) {
  char buf[64];
  return std::string(buf, std::to_chars(buf, buf + sizeof(buf), d).ptr);
}

std::string ToJsonl(const std::vector<MapRow>& rows) {
  std::string out;
  for (const MapRow& r : rows) {
    out += "{\"label\": " + std::to_string(r.label);
    if (r.name) {
      out += ", \"name\": \"";
      for (const char c : *r.name) out += c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n" : std::string(1, c);
      out += "\"";
    }
    out += ", \"dense\": {";
    bool first = true;
    for (const auto& [id, v] : r.dense) {
      out += (first ? "\"" : ", \"") + std::to_string(id) + "\": " + Num(v);
      first = false;
    }
    out += "}, \"sparse\": {";
    first = true;
    for (const auto& [id, ids] : r.sparse) {
      out += (first ? "\"" : ", \"") + std::to_string(id) + "\": [";
      for (size_t k = 0; k < ids.size(); ++k) out += (k ? "," : "") + std::to_string(ids[k]);
      out += "]";
      first = false;
    }
    out += "}, \"scored\": {";
    first = true;
    for (const auto& [id, l] : r.scored) {
      out += (first ? "\"" : ", \"") + std::to_string(id) + "\": [";
      for (size_t k = 0; k < l.size(); ++k) out += (k ? ", [" : "[") + std::to_string(l[k].first) + ", " + Num(l[k].second) + "]";
      out += "]";
      first = false;
    }
    out += "}}\n";
  }
  return out;
}

// Checks every value of `t` against `rows`.
void CheckMapTable(Table& t, const std::vector<MapRow>& rows) {
  REQUIRE(t.schema().row_count == rows.size());
  auto b = t.Read(AllFeatures(t), 0, t.stripe_count());
  REQUIRE(b.ok());
  uint64_t values = 0;
  for (size_t j = 0; j < t.schema().features.size(); ++j) {
    const FeatureInfo& f = t.schema().features[j];
    const Column& c = b->columns[j];
    INFO("feature " << f.name);
    for (size_t r = 0; r < rows.size(); ++r) {
      const MapRow& row = rows[r];
      INFO("row " << r);
      if (f.name == "label") {
        REQUIRE(c.present[r]);
        REQUIRE(c.ints[r] == row.label);
      } else if (f.name == "name") {
        REQUIRE(c.present[r] == row.name.has_value());
        if (row.name) REQUIRE(c.string(r) == *row.name);
      } else if (f.type == FeatureType::kFloat64) {
        REQUIRE(f.has_id);
        const auto it = row.dense.find(f.id);
        REQUIRE(c.present[r] == (it != row.dense.end()));
        if (c.present[r]) REQUIRE(c.doubles[r] == it->second);
      } else if (f.type == FeatureType::kIdList) {
        const auto it = row.sparse.find(f.id);
        REQUIRE(c.present[r] == (it != row.sparse.end()));
        const std::vector<int64_t> got(c.ints.begin() + c.offsets[r], c.ints.begin() + c.offsets[r + 1]);
        REQUIRE(got == (c.present[r] ? it->second : std::vector<int64_t>{}));
      } else {
        REQUIRE(f.type == FeatureType::kScoredIdList64);
        const auto it = row.scored.find(f.id);
        REQUIRE(c.present[r] == (it != row.scored.end()));
        std::vector<std::pair<int64_t, double>> got;
        for (uint64_t k = c.offsets[r]; k < c.offsets[r + 1]; ++k) got.push_back({c.ints[k], c.doubles[k]});
        REQUIRE(got == (c.present[r] ? it->second : std::vector<std::pair<int64_t, double>>{}));
      }
      values += c.present[r];
    }
  }
  CHECK(values > rows.size() * 10);
}

TEST_CASE("a JSON Lines map dataset round trips; projections, popularity and reorder") {
  TempDir dir;
  const auto rows = MakeMapRows(500, 7);
  const std::string input = dir / "maps.jsonl";
  std::ofstream(input) << ToJsonl(rows);
  TableConvertOptions o{.input = input, .out_dir = dir / "a"};
  o.writer.rows_per_stripe = 128;
  auto report = ConvertTable(o);
  REQUIRE(report.ok());
  CHECK(report->stripes == 4);
  CHECK(report->schema.features.size() == 2 + 40 + 10 + 3);

  auto table = Table::Open(report->path, {.io = test::Io()});
  REQUIRE(table.ok());
  Table& t = **table;
  CheckMapTable(t, rows);

  SECTION("a projection returns the same columns as a full read") {
    auto ids = t.Resolve({"1003", "2001", "117", "label"});
    REQUIRE(ids.ok());
    auto part = t.Read(*ids, 1, 2);
    REQUIRE(part.ok());
    auto full = t.Read(AllFeatures(t), 1, 2);
    REQUIRE(full.ok());
    CHECK(part->rows == 256);
    for (size_t j = 0; j < ids->size(); ++j) {
      const Column& a = part->columns[j];
      const Column& b = full->columns[(*ids)[j]];
      CHECK(a.present == b.present);
      CHECK(a.ints == b.ints);
      CHECK(a.doubles == b.doubles);
      CHECK(a.offsets == b.offsets);
    }
    CHECK(part->bytes_selected == t.SelectedBytes(*ids, 1, 2).value());
    CHECK(!t.Resolve({"label", "nope"}).ok());
  }

  SECTION("access logs become a popularity file that orders streams; reorder copies them") {
    const std::string log = dir / "access.log";
    auto a = t.Resolve({"1005", "2002", "120"});
    auto b = t.Resolve({"2002", "120"});
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    // Job 1 reads projections a and b, job 2 reads b through two tables.
    for (const auto& [job, projection] : {std::pair{"job 1", &*a}, {"job 1", &*b}, {"job 2", &*b}, {"job 2", &*b}}) {
      auto logged = Table::Open(report->path, {.io = test::Io(), .access_log = FileAccessLog(log), .job = job});
      REQUIRE(logged.ok());
      REQUIRE((*logged)->Read(*projection, 0, 1).ok());
      REQUIRE((*logged)->Read(*projection, 1, 1).ok());  // the same projection is logged once
    }
    auto lines = ParseAccessLog(Slurp(log));
    REQUIRE(lines.ok());
    REQUIRE(lines->size() == 4);
    CHECK((*lines)[0] == AccessLogEntry{.features = {"1005", "2002", "120"}, .table = report->path,
                                        .table_id = t.content_id(), .job = "job 1"});
    CHECK(t.content_id().size() == 16);
    // Each feature once per job: 1005 by job 1, 2002 and 120 by both.
    std::map<std::string, uint64_t> counts = CountJobs(*lines);
    CHECK(counts == std::map<std::string, uint64_t>{{"1005", 1}, {"120", 2}, {"2002", 2}});
    // A line naming a feature twice names it once; lines without a job are a job each.
    auto old_lines = ParseAccessLog("{\"features\":[\"label\",\"label\",\"120\"]}\n{\"features\":[\"120\"]}\n");
    REQUIRE(old_lines.ok());
    CHECK(CountJobs(*old_lines) == std::map<std::string, uint64_t>{{"120", 2}, {"label", 1}});
    const std::string pop = dir / "popularity.jsonl";
    std::ofstream(pop) << FormatPopularity(counts, report->path, t.content_id());
    auto entries = ParsePopularity(Slurp(pop));
    REQUIRE(entries.ok());
    CHECK(entries->front() == PopularityEntry{"120", 2, report->path, t.content_id()});
    auto popularity = ReadPopularityFile(pop);
    REQUIRE(popularity.ok());
    CHECK(popularity->table_id == t.content_id());
    const std::vector<std::string>* order = &popularity->order;
    CHECK(*order == std::vector<std::string>{"120", "2002", "1005"});
    const std::string bom_pop = dir / "bom-popularity.jsonl";
    std::ofstream(bom_pop) << "\xEF\xBB\xBF" << FormatPopularity(counts);
    auto bom_order = ReadPopularityFile(bom_pop);
    REQUIRE(bom_order.ok());
    CHECK(bom_order->order == *order);
    CHECK(bom_order->table_id.empty());

    auto check_order = [&](const std::string& path) {
      auto r = Table::Open(path, {.io = test::Io()});
      REQUIRE(r.ok());
      for (const StripeInfo& s : TableFile(**r).index().stripes) {
        std::vector<std::string> firsts;
        for (const TableStream& ts : s.table_streams) {
          const std::string& name = (*r)->schema().features[ts.feature].name;
          if (firsts.empty() || firsts.back() != name) firsts.push_back(name);
        }
        REQUIRE(firsts.size() == (*r)->schema().features.size());
        CHECK(std::vector<std::string>(firsts.begin(), firsts.begin() + 4) ==
              std::vector<std::string>{"120", "2002", "1005", "label"});
      }
      CheckMapTable(**r, rows);
      CHECK((*r)->content_id() == t.content_id());  // the same contents in another order
      // The popular features are now one contiguous range: one read per stripe at hole limit 0.
      auto ids = (*r)->Resolve({"2002", "120"});
      REQUIRE(ids.ok());
      const IoCounters before = (*r)->io_counters();
      REQUIRE((*r)->Read(*ids, 0, (*r)->stripe_count()).ok());
      CHECK((*r)->io_counters().reads - before.reads == (*r)->stripe_count());
    };

    TableConvertOptions ordered = o;
    ordered.out_dir = dir / "b";
    ordered.writer.stream_order = *order;
    auto rb = ConvertTable(ordered);
    REQUIRE(rb.ok());
    check_order(rb->path);

    auto rc = ReorderTable(report->path, dir / "c", *order, test::Io(), popularity->table_id);
    REQUIRE(rc.ok());
    CHECK(rc->notes.empty());
    // An order counted on another table is refused; one naming none of its features is noted.
    auto other = ReorderTable(report->path, dir / "d", *order, test::Io(), "0123456789abcdef");
    REQUIRE(!other.ok());
    CHECK_THAT(other.status().message(), Catch::Contains("counted on another table (content id 0123456789abcdef"));
    auto unknown = ReorderTable(report->path, dir / "e", {"no-such-feature"}, test::Io());
    REQUIRE(unknown.ok());
    REQUIRE(unknown->notes.size() == 1);
    CHECK_THAT(unknown->notes[0], Catch::Contains("names no feature of"));
    check_order(rc->path);
    CHECK(rc->output_bytes == report->output_bytes);
    CHECK(rc->schema == report->schema);
    CHECK(!ReorderTable(report->path, report->path, *order, test::Io()).ok());
    // A second table beside the input would leave its directory unreadable;
    // the directory of a table given as a directory holds nothing else.
    const std::string beside_path = dir / "a/reordered.pcr";
    const std::string inside = "inside " + dir / "a" + ", the table directory it reorders";
    using Refusal = std::tuple<std::string, std::string, std::string>;
    for (const auto& [in, out, why] :
         {Refusal{dir / "a", beside_path, inside}, Refusal{dir / "a", dir / "a/sub/", inside},
          Refusal{report->path, beside_path, "would be a second table in"}}) {
      INFO(in << " -> " << out);
      auto refused = ReorderTable(in, out, *order, test::Io());
      REQUIRE(!refused.ok());
      CHECK_THAT(refused.status().message(), Catch::Contains(why));
      CHECK(!std::filesystem::exists(beside_path));
      CHECK(!std::filesystem::exists(dir / "a/sub"));
    }
    CHECK(Table::Open(dir / "a", {.io = test::Io()}).ok());
    // A conversion into a table's directory is refused alike.
    std::filesystem::copy_file(input, dir / "other.jsonl");
    auto converted = ConvertTable({.input = dir / "other.jsonl", .out_dir = dir / "a"});
    REQUIRE(!converted.ok());
    CHECK_THAT(converted.status().message(), Catch::Contains("other.pcr: would be a second table in"));
    CHECK(!std::filesystem::exists(dir / "a/other.pcr"));
    // So would one in another table's directory.
    auto into_other = ReorderTable(report->path, dir / "c/other.pcr", {"label"}, test::Io());
    REQUIRE(!into_other.ok());
    CHECK_THAT(into_other.status().message(), Catch::Contains("would be a second table in"));
  }
}

TEST_CASE("float32 maps store floats and scores as float") {
  TempDir dir;
  const std::string input = dir / "f.jsonl";
  std::ofstream(input) << "{\"dense\": {\"1\": 0.1}, \"scored\": {\"2\": [[5, 0.3]]}}\n";
  TableConvertOptions o{.input = input, .out_dir = dir.path().string(), .float32 = true};
  auto report = ConvertTable(o);
  REQUIRE(report.ok());
  auto t = Table::Open(report->path, {.io = test::Io()});
  REQUIRE(t.ok());
  auto b = (*t)->Read(AllFeatures(**t), 0, 1);
  REQUIRE(b.ok());
  CHECK(b->columns[0].floats == std::vector<float>{0.1f});
  CHECK(b->columns[1].type == FeatureType::kScoredIdList32);
  CHECK(b->columns[1].floats == std::vector<float>{0.3f});
}

TEST_CASE("CSV records end at LF, CRLF or a bare CR alike") {
  const std::string lf = "a,b,c\n1,\"x\ny\",2.5\n-2,\"\",NA\n3,z,7\n";
  TempDir dir;
  std::vector<std::vector<Column>> read;
  for (const std::string ending : {"\n", "\r\n", "\r"}) {
    std::string text;
    for (const char c : lf) text += c == '\n' ? ending : std::string(1, c);
    INFO("line ending " << (ending == "\r" ? "CR" : ending == "\n" ? "LF" : "CRLF"));
    const std::string csv = dir / ("t" + std::to_string(read.size()) + ".csv");
    std::ofstream(csv, std::ios::binary) << text;
    auto report = ConvertTable({.input = csv, .out_dir = dir / ("out" + std::to_string(read.size()))});
    REQUIRE(report.ok());
    const auto& f = report->schema.features;
    REQUIRE(f.size() == 3);
    CHECK(f[0].name == "a");
    CHECK(f[2].name == "c");
    CHECK(report->schema.row_count == 3);
    CHECK(f[0].type == FeatureType::kInt64);
    CHECK(f[2].type == FeatureType::kFloat64);
    auto t = Table::Open(report->path, {.io = test::Io()});
    REQUIRE(t.ok());
    auto b = (*t)->Read(AllFeatures(**t), 0, 1);
    REQUIRE(b.ok());
    CHECK(b->columns[0].ints == std::vector<int64_t>{1, -2, 3});
    CHECK(b->columns[1].string(0) == "x" + ending + "y");  // a line break inside quotes is kept as written
    CHECK(b->columns[2].present == std::vector<uint8_t>{1, 0, 1});
    read.push_back(std::move(b->columns));
  }
  CHECK(read[1][2].doubles == read[0][2].doubles);
  CHECK(read[2][2].doubles == read[0][2].doubles);

  // Line numbers count every kind of line break, also inside quotes.
  const std::string bad = dir / "bad.csv";
  std::ofstream(bad, std::ios::binary) << "a,b\r\"x\ry\",2\r3\r";
  auto r = ConvertTable({.input = bad, .out_dir = dir / "bad-out"});
  REQUIRE(!r.ok());
  CHECK_THAT(r.status().message(), Catch::Contains("line 4, column 1: row has 1 cells, the header 2"));
}

TEST_CASE("integers a double holds are kept exactly in float64 columns") {
  // Those no double holds are among the malformed input cases below.
  TempDir dir;
  // Integers a double holds exactly are kept, however large.
  const std::string exact = dir / "exact.csv";
  std::ofstream(exact) << "a\n0.5\n100000000000000000000\n9007199254740992\n-0\n";
  auto r = ConvertTable({.input = exact, .out_dir = dir / "out"});
  REQUIRE(r.ok());
  auto t = Table::Open(r->path, {.io = test::Io()});
  REQUIRE(t.ok());
  auto b = (*t)->Read(AllFeatures(**t), 0, 1);
  REQUIRE(b.ok());
  CHECK(b->columns[0].doubles == std::vector<double>{0.5, 1e20, 9007199254740992.0, 0.0});
  // An int64 column keeps every int64 exactly.
  const std::string ints = dir / "ints.csv";
  std::ofstream(ints) << "a\n9223372036854775807\n9007199254740993\n-9223372036854775808\n";
  auto ri = ConvertTable({.input = ints, .out_dir = dir / "ints-out"});
  REQUIRE(ri.ok());
  auto ti = Table::Open(ri->path, {.io = test::Io()});
  REQUIRE(ti.ok());
  auto bi = (*ti)->Read(AllFeatures(**ti), 0, 1);
  REQUIRE(bi.ok());
  CHECK(bi->columns[0].ints ==
        std::vector<int64_t>{INT64_MAX, 9007199254740993, std::numeric_limits<int64_t>::min()});
}

TEST_CASE("a table conversion never replaces a file, nor writes a directory another conversion writes") {
  TempDir dir;
  const std::string csv = test::DataDir() + "/tabular/Soybean.csv";
  SECTION("the final rename refuses a file that appeared during the conversion") {
    const std::string path = dir / "t.pcr";
    auto file = AtomicFile::Create(path);
    REQUIRE(file.ok());
    const std::string mine = "new bytes";
    REQUIRE((*file)->Append(ByteSpan(reinterpret_cast<const uint8_t*>(mine.data()), mine.size())).ok());
    std::ofstream(path) << "the other conversion's table";
    const Status s = (*file)->Commit();
    REQUIRE(!s.ok());
    CHECK_THAT(s.message(), Catch::Contains(path + ": already exists; not replaced"));
    CHECK(Slurp(path) == "the other conversion's table");
    for (const auto& e : fs::directory_iterator(dir.path())) CHECK(e.path().filename() == "t.pcr");
  }
  SECTION("a directory another conversion holds is refused, for convert and reorder") {
    auto first = ConvertTable({.input = csv, .out_dir = dir / "a"});
    REQUIRE(first.ok());
    auto lock = DirectoryLock::Take(dir / "b");
    REQUIRE(lock.ok());
    auto r = ConvertTable({.input = csv, .out_dir = dir / "b"});
    REQUIRE(!r.ok());
    CHECK_THAT(r.status().message(), Catch::Contains("another pcr-convert is writing this directory"));
    auto ro = ReorderTable(first->path, dir / "b", {}, test::Io());
    REQUIRE(!ro.ok());
    CHECK_THAT(ro.status().message(), Catch::Contains("another pcr-convert is writing this directory"));
    CHECK(fs::is_empty(dir / "b"));
  }
}

// 150 rows "i,i", but row 120's second cell is the word abc.
std::string WordAmongNumbers() {
  std::string rows;
  for (int i = 0; i < 150; ++i) rows += std::to_string(i) + "," + (i == 120 ? "abc" : std::to_string(i)) + "\n";
  return rows;
}

uint64_t Bits(double d) { return std::bit_cast<uint64_t>(d); }

// Converts as `o` says and reads every feature of the table back.
std::vector<std::string> Strings(const Column& c) {
  std::vector<std::string> out;
  for (uint64_t r = 0; r < c.rows; ++r) out.emplace_back(c.string(r));
  return out;
}

std::pair<TableSchema, std::vector<Column>> ConvertAndRead(const TableConvertOptions& o) {
  auto r = ConvertTable(o);
  REQUIRE(r.ok());
  auto t = Table::Open(r->path);
  REQUIRE(t.ok());
  std::vector<uint32_t> all(r->schema.features.size());
  for (uint32_t f = 0; f < all.size(); ++f) all[f] = f;
  auto batch = (*t)->Read(all, 0, (*t)->stripe_count());
  REQUIRE(batch.ok());
  return {r->schema, std::move(batch->columns)};
}

TEST_CASE("cells larger than a stripe read back exactly, with the rows around them") {
  // A conversion lets go of the input behind it (16 MiB at a time) and of a
  // huge cell's buffers before its stripe is stored; none of it may change
  // what is stored.
  TempDir dir;
  std::mt19937_64 rng(7);
  std::string big(24 << 20, ' ');
  for (char& ch : big) ch = static_cast<char>('a' + rng() % 26);
  std::string quoted = big.substr(0, 12 << 20) + "\"" + big.substr(12 << 20);
  std::string ids;
  std::vector<int64_t> want_ids;
  for (int i = 0; i < 300000; ++i) {
    want_ids.push_back(static_cast<int64_t>(rng() >> 1));
    ids += (i ? "," : "") + std::to_string(want_ids.back());
  }
  const std::string csv = dir / "big.csv", jsonl = dir / "big.jsonl";
  std::string escaped = quoted;
  for (size_t at = escaped.find('"'); at != std::string::npos; at = escaped.find('"', at + 2)) escaped.insert(at, "\"");
  std::ofstream(csv) << "id,text\n1,small\n2," << big << "\n3,\"" << escaped << "\"\n4,\n5,end\n";
  std::ofstream(jsonl) << "{\"id\": 1, \"text\": \"small\"}\n{\"id\": 2, \"text\": \"" << big
                       << "\", \"sparse\": {\"7\": [" << ids << "]}}\n{\"id\": 3, \"text\": \"end\"}\n";
  for (const std::string& input : {csv, jsonl}) {
    INFO(input);
    TableConvertOptions o{.input = input, .out_dir = dir / fs::path(input).extension().string().substr(1)};
    o.writer.stripe_bytes = 1 << 20;
    const auto [schema, c] = ConvertAndRead(o);
    REQUIRE(schema.features.size() >= 2);
    REQUIRE(schema.features[1].name == "text");
    const Column& text = c[1];
    CHECK(text.string(0) == "small");
    CHECK(text.string(1) == big);
    if (input == csv) {
      CHECK(text.string(2) == quoted);
      CHECK(text.present == std::vector<uint8_t>{1, 1, 1, 0, 1});
      CHECK(text.string(4) == "end");
      CHECK(c[0].ints == std::vector<int64_t>{1, 2, 3, 4, 5});
    } else {
      CHECK(text.string(2) == "end");
      REQUIRE(schema.features.size() == 3);
      CHECK(c[2].ints == want_ids);
      CHECK(c[2].present == std::vector<uint8_t>{0, 1, 0});
    }
  }
  // A huge quoted cell never closed, with a doubled quote in it.
  const std::string open = dir / "open.csv";
  std::ofstream(open) << "\"id\",text\n1,\"" << big.substr(0, 2 << 20) << "\"\"" << big.substr(0, 1 << 20) << "\n";
  auto r = ConvertTable({.input = open, .out_dir = dir / "open"});
  REQUIRE(!r.ok());
  CHECK_THAT(r.status().message(), Catch::Contains("line 2, column 3: quoted field is never closed"));
}

TEST_CASE("every float spelling keeps a column float, stored bit for bit") {
  TempDir dir;
  const std::string input = dir / "f.csv";
  std::ofstream(input) << "x\n1.5\nnan\n-NaN\ninf\n-Infinity\n-0.0\n1e-400\n-1e-400\n5e-324\n"
                          "2.4703282292062327e-324\n1.7976931348623159e308\n";
  for (const char* encoding : {"auto", "plain"}) {
    TableConvertOptions o{.input = input, .out_dir = dir / encoding};
    o.writer.stream_encoding = encoding;
    const auto [schema, columns] = ConvertAndRead(o);
    CHECK(schema.features[0].type == FeatureType::kFloat64);
    const Buffer<double>& v = columns[0].doubles;
    const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
    const std::vector<uint64_t> want = {Bits(1.5), Bits(nan), Bits(-nan), Bits(inf), Bits(-inf), Bits(-0.0),
                                        Bits(0.0), Bits(-0.0), 1, 0, Bits(inf)};
    REQUIRE(v.size() == want.size());
    for (size_t i = 0; i < v.size(); ++i) CHECK(Bits(v[i]) == want[i]);
  }
  // JSON Lines: numbers beyond the double range round as IEEE says, -0 keeps its sign.
  const std::string jsonl = dir / "f.jsonl";
  std::ofstream(jsonl) << "{\"dense\": {\"1\": -0}, \"x\": 1e-400}\n{\"dense\": {\"1\": 1e999}, \"x\": 0.5}\n";
  const auto [schema, columns] = ConvertAndRead({.input = jsonl, .out_dir = dir / "j"});
  CHECK(Bits(columns[0].doubles[0]) == Bits(-0.0));
  CHECK(Bits(columns[0].doubles[1]) == Bits(std::numeric_limits<double>::infinity()));
  CHECK(Bits(columns[1].doubles[0]) == Bits(0.0));
  // JSON Lines take the CSV spellings too, in any case and with either sign.
  std::ofstream(jsonl) << "{\"x\": 1.5}\n{\"x\": nan}\n{\"x\": -NaN}\n{\"x\": inf}\n{\"x\": +Infinity}\n"
                          "{\"x\": -INF}\n{\"x\": Infinity}\n{\"x\": +nan}\n";
  const auto [spelled_schema, spelled] = ConvertAndRead({.input = jsonl, .out_dir = dir / "spelled"});
  CHECK(spelled_schema.features[0].type == FeatureType::kFloat64);
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<uint64_t> want = {Bits(1.5), Bits(nan), Bits(-nan), Bits(inf), Bits(inf), Bits(-inf), Bits(inf),
                                      Bits(nan)};
  REQUIRE(spelled[0].doubles.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) CHECK(Bits(spelled[0].doubles[i]) == want[i]);
  std::ofstream(jsonl) << "{\"x\": +1}\n";
  auto plus = ConvertTable({.input = jsonl, .out_dir = dir / "plus"});
  REQUIRE_FALSE(plus.ok());
  CHECK_THAT(plus.status().message(), Catch::Contains("line 1, column 7: ") && Catch::Contains("'+' only before nan"));
}

TEST_CASE("a few values of another JSON kind among many are bad values, named or missing when asked") {
  TempDir dir;
  const std::string input = dir / "k.jsonl";
  for (const bool string_first : {false, true}) {
    INFO("the string " << (string_first ? "first" : "last"));
    std::string text = string_first ? "{\"a\": \"abc\"}\n" : "";
    for (int i = 0; i < 200; ++i) text += "{\"a\": " + std::to_string(i) + "}\n";
    if (!string_first) text += "{\"a\": \"abc\"}\n";
    std::ofstream(input) << text;
    auto r = ConvertTable({.input = input, .out_dir = dir / "e"});
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.status().message(),
               Catch::Contains(std::string("line ") + (string_first ? "1" : "201") +
                               ", column 7: \"abc\" in column 'a' is a string, unlike its 200 other values (numbers): "
                               "pass on_bad_value = BadValue::kMissing"));
    const auto [s, c] = ConvertAndRead({.input = input, .out_dir = dir / (string_first ? "m1" : "m2"),
                                        .on_bad_value = BadValue::kMissing});
    CHECK(s.features[0].type == FeatureType::kInt64);
    CHECK(s.features[0].present_count == 200);
    CHECK(c[0].present[string_first ? 0 : 200] == 0);
  }
  // Kinds that are both common stay an error, which --on-bad-value does not pass.
  std::ofstream(input) << "{\"a\": \"x\"}\n{\"a\": 1}\n";
  auto both = ConvertTable({.input = input, .out_dir = dir / "b", .on_bad_value = BadValue::kMissing});
  REQUIRE_FALSE(both.ok());
  CHECK_THAT(both.status().message(), Catch::Contains("column 'a' holds strings (first \"x\" at line 1, column 7) "
                                                      "and here numbers"));
  // A wrong type in a column is "the column is", a map feature's "the feature is".
  std::ofstream(input) << "{\"a\": \"x\"}\n";
  TableConvertOptions declared{.input = input, .out_dir = dir / "d"};
  declared.column_types = {{"a", FeatureType::kInt64}};
  auto wrong = ConvertTable(declared);
  REQUIRE_FALSE(wrong.ok());
  CHECK_THAT(wrong.status().message(), Catch::Contains("\"x\" in column 'a' is not an int64 (the column is int64)"));
}

TEST_CASE("messages show a long cell's start and length, not the whole cell") {
  TempDir dir;
  const std::string digits(200000, '7');
  const std::string csv = dir / "l.csv", jsonl = dir / "l.jsonl";
  std::string rows = "x\n";
  for (int i = 0; i < 300; ++i) rows += "1.5\n";
  std::ofstream(csv) << rows << digits << "\n";
  std::ofstream(jsonl) << "{\"x\": 1.5}\n{\"x\": " << digits << "}\n";
  for (const std::string& input : {csv, jsonl}) {
    INFO(input);
    auto r = ConvertTable({.input = input, .out_dir = dir / "o"});
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().size() < 1000);
    CHECK_THAT(r.status().message(), Catch::Contains(std::string(60, '7') + "... (200000 bytes)"));
  }
}

TEST_CASE("declared column types and bad values") {
  TempDir dir;
  const std::string input = dir / "w.csv";
  std::ofstream(input) << "a,b\n" << WordAmongNumbers();
  // The word as a missing cell.
  {
    const auto [schema, columns] = ConvertAndRead({.input = input, .out_dir = dir / "missing", .on_bad_value = BadValue::kMissing});
    CHECK(schema.features[1].type == FeatureType::kInt64);
    CHECK(columns[1].present[120] == 0);
    CHECK(columns[1].present[119] == 1);
  }
  // Declared string: every cell as text; declared float32 for a.
  {
    TableConvertOptions o{.input = input, .out_dir = dir / "declared"};
    o.column_types = {{"b", FeatureType::kString}, {"a", FeatureType::kFloat32}};
    const auto [schema, columns] = ConvertAndRead(o);
    CHECK(schema.features[0].type == FeatureType::kFloat32);
    CHECK(schema.features[1].type == FeatureType::kString);
    CHECK(columns[1].string(120) == "abc");
    CHECK(columns[1].string(7) == "7");
  }
  // A declared type that a cell does not fit is named; unknown names are refused.
  TableConvertOptions o{.input = input, .out_dir = dir / "refused"};
  o.column_types = {{"b", FeatureType::kInt64}};
  auto r = ConvertTable(o);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), Catch::Contains("line 122, column 5: 'abc' in column 'b' is not an int64"));
  o.column_types = {{"c", FeatureType::kInt64}};
  CHECK_THAT(ConvertTable(o).status().message(), Catch::Contains("a declared type names 'c', not a column"));
  // A column without values is a string column, with a note, unless declared.
  const std::string header_only = dir / "h.csv";
  std::ofstream(header_only) << "a,b\n1,\n2,\n";
  auto noted = ConvertTable({.input = header_only, .out_dir = dir / "h"});
  REQUIRE(noted.ok());
  CHECK(noted->schema.features[1].type == FeatureType::kString);
  CHECK(noted->notes == std::vector<std::string>{"column 'b' has no values: stored as string (column_types[\"b\"] = TYPE "
                                                 "declares another type)"});
  TableConvertOptions typed{.input = header_only, .out_dir = dir / "h2"};
  typed.column_types = {{"b", FeatureType::kFloat64}};
  auto declared = ConvertTable(typed);
  REQUIRE(declared.ok());
  CHECK(declared->schema.features[1].type == FeatureType::kFloat64);
  CHECK(declared->notes.empty());
  const std::string nulls = dir / "n.jsonl";
  std::ofstream(nulls) << "{\"a\": 1, \"b\": null}\n";
  auto jsonl = ConvertTable({.input = nulls, .out_dir = dir / "n"});
  REQUIRE(jsonl.ok());
  CHECK(jsonl->notes == std::vector<std::string>{"column 'b' has only nulls: stored as string (column_types[\"b\"] = TYPE "
                                                 "declares another type)"});
}

// Seconds since the epoch of a UTC calendar time, by the C library.
int64_t Utc(int year, int month, int day, int hour = 0, int minute = 0, int second = 0) {
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  return static_cast<int64_t>(timegm(&tm));
}

TEST_CASE("CSV infers bool, uint64 and timestamps, stamped 0.6, and reads them back exactly") {
  TempDir dir;
  const std::string input = dir / "t.csv";
  std::ofstream(input) << "uid,ok,at,fine,n\n"
                          "1,true,2015-01-01T00:00:00,2015-01-01 00:00:00.000000001,1\n"
                          "2,FALSE,1969-12-31 23:59:59.25,1969-12-31T23:59:59.999999999Z,2\n"
                          "18446744073709551615,True,2016-02-29T12:00:00+01:30,,3\n"
                          ",,2024-03-10,2024-03-10T00:00-08:00,4\n";
  const auto [schema, c] = ConvertAndRead({.input = input, .out_dir = dir / "out"});
  const std::vector<FeatureType> want = {FeatureType::kUInt64, FeatureType::kBool, FeatureType::kTimestampUs,
                                         FeatureType::kTimestampNs, FeatureType::kInt64};
  for (size_t f = 0; f < want.size(); ++f) CHECK(schema.features[f].type == want[f]);
  CHECK(test::ReadFile(dir.path() / "out" / "t.pcr")[9] == kTypesVersionMinor);
  CHECK(static_cast<uint64_t>(c[0].ints[2]) == std::numeric_limits<uint64_t>::max());
  CHECK(c[0].present == std::vector<uint8_t>{1, 1, 1, 0});
  CHECK(c[1].ints == std::vector<int64_t>{1, 0, 1, 0});
  CHECK(c[1].present == std::vector<uint8_t>{1, 1, 1, 0});
  CHECK(c[2].ints == std::vector<int64_t>{Utc(2015, 1, 1) * 1000000, -750000,
                                          (Utc(2016, 2, 29, 12) - 5400) * 1000000, Utc(2024, 3, 10) * 1000000});
  CHECK(c[3].ints[0] == Utc(2015, 1, 1) * 1000000000 + 1);
  CHECK(c[3].ints[1] == -1);
  CHECK(c[3].ints[3] == (Utc(2024, 3, 10) + 8 * 3600) * 1000000000);
  // Files without the new types keep their earlier stamps.
  const std::string plain = dir / "p.csv";
  std::ofstream(plain) << "a\n1\n";
  TableConvertOptions o{.input = plain, .out_dir = dir / "p"};
  o.writer.stream_encoding = "plain";
  REQUIRE(ConvertTable(o).ok());
  CHECK(test::ReadFile(dir.path() / "p" / "p.pcr")[9] == kTableVersionMinor);
}

TEST_CASE("declared types: a schema file, column types over it, strings, and values they refuse") {
  TempDir dir;
  const std::string input = dir / "d.csv";
  std::ofstream(input) << "id,ok,day,ms,score,hash\n"
                          "7,yes,2020-05-06,1588723200123,0.1,5\n"
                          "8,0,86400,2020-05-06T00:00:00.5,2,6\n";
  const std::string schema = dir / "s.json";
  std::ofstream(schema) << R"({"ok": "bool", "day": "timestamp_s", "ms": "timestamp_ms", "score": "float64",
                               "id": "string", "hash": "float32"})";
  TableConvertOptions o{.input = input, .out_dir = dir / "a", .schema_file = schema};
  o.column_types = {{"hash", FeatureType::kUInt64}};
  const auto [s, c] = ConvertAndRead(o);
  CHECK(s.features[0].type == FeatureType::kString);
  CHECK(c[0].string(1) == "8");
  CHECK(c[1].ints == std::vector<int64_t>{1, 0});
  CHECK(c[2].ints == std::vector<int64_t>{Utc(2020, 5, 6), 86400});  // declared: integer ticks too
  CHECK(c[3].ints == std::vector<int64_t>{1588723200123, Utc(2020, 5, 6) * 1000 + 500});
  CHECK(s.features[5].type == FeatureType::kUInt64);  // column_types win over the file
  // --strings: every undeclared column is text.
  TableConvertOptions strings{.input = input, .out_dir = dir / "strings", .strings = true};
  const auto [s2, c2] = ConvertAndRead(strings);
  for (const FeatureInfo& f : s2.features) CHECK(f.type == FeatureType::kString);
  CHECK(c2[4].string(0) == "0.1");
  // A time finer than its declared unit is a bad value, never truncated.
  o.out_dir = dir / "fine";
  o.column_types = {{"ms", FeatureType::kTimestampS}};
  auto fine = ConvertTable(o);
  REQUIRE_FALSE(fine.ok());
  CHECK_THAT(fine.status().message(),
             Catch::Contains("line 3, column 11: '2020-05-06T00:00:00.5' in column 'ms' has more fraction digits "
                             "than timestamp_s holds"));
  o.column_types = {{"ms", FeatureType::kTimestampMs}, {"day", FeatureType::kTimestampS}, {"id", FeatureType::kBool}};
  auto notbool = ConvertTable(o);
  REQUIRE_FALSE(notbool.ok());
  CHECK_THAT(notbool.status().message(), Catch::Contains("line 2, column 1: '7' in column 'id' is not a bool"));
  // Schema files that are not a JSON object of type names are refused, naming the file.
  for (const auto& [text, want] : std::vector<std::pair<std::string, std::string>>{
           {"[1]", "a schema is a JSON object"},
           {R"({"a": "int32"})", "'a': unknown type 'int32'"},
           {R"({"a": 3})", "'a': expected a type name"},
           {R"({"a": "int64")", "at offset 13: expected ',' or '}'"},
           {R"({"a": "int64", "a": "bool"})", "'a' is named twice"}}) {
    std::ofstream(schema) << text;
    auto r = ReadTableSchemaFile(schema);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.status().message(), Catch::Contains(schema) && Catch::Contains(want));
  }
}

TEST_CASE("JSON Lines: booleans, uint64, times, declared map value types and strings of numbers") {
  TempDir dir;
  const std::string input = dir / "m.jsonl";
  std::ofstream(input)
      << R"({"u": 18446744073709551615, "b": true, "t": "2021-01-02T03:04:05Z", "n": 12345678901234567890, "dense": {"1": 0.1, "2": 0.5}, "scored": {"3": [[4, 0.3]]}})"
      << "\n"
      << R"({"u": 0, "b": false, "t": "2021-01-02T03:04:05.123456789Z", "n": 1, "dense": {"1": NaN, "2": -Infinity}})"
      << "\n";
  TableConvertOptions o{.input = input, .out_dir = dir / "a"};
  o.column_types = {{"n", FeatureType::kString}, {"dense", FeatureType::kFloat32}, {"2", FeatureType::kFloat64},
                    {"scored", FeatureType::kFloat32}};
  const auto [s, c] = ConvertAndRead(o);
  const std::vector<FeatureType> want = {FeatureType::kUInt64,  FeatureType::kBool,    FeatureType::kTimestampNs,
                                         FeatureType::kString,  FeatureType::kFloat32, FeatureType::kFloat64,
                                         FeatureType::kScoredIdList32};
  REQUIRE(s.features.size() == want.size());
  for (size_t f = 0; f < want.size(); ++f) CHECK(s.features[f].type == want[f]);
  CHECK(static_cast<uint64_t>(c[0].ints[0]) == std::numeric_limits<uint64_t>::max());
  CHECK(c[1].ints == std::vector<int64_t>{1, 0});
  CHECK(c[2].ints[1] - c[2].ints[0] == 123456789);
  CHECK(c[3].string(0) == "12345678901234567890");  // a declared string keeps every digit
  CHECK(c[4].floats[0] == 0.1f);
  CHECK(std::isnan(c[4].floats[1]));
  CHECK(c[5].doubles[1] == -std::numeric_limits<double>::infinity());
  CHECK(c[6].floats == std::vector<float>{0.3f});
  // Refusals name the value and the way past it.
  const std::vector<std::tuple<std::string, std::map<std::string, FeatureType>, std::string>> refused = {
      {"{\"a\": true}\n{\"a\": 1}\n", {}, "line 2, column 7: column 'a' holds booleans (first true at line 1, column 7) and here numbers"},
      {"{\"a\": -1}\n{\"a\": 18446744073709551615}\n", {}, "line 2, column 7: column 'a' holds 18446744073709551615 (above int64) and -1 (line 1, column 7"},
      {"{\"a\": \"x\"}\n", {{"a", FeatureType::kInt64}}, "line 1, column 7: \"x\" in column 'a' is not an int64 (the column is int64)"},
      {"{\"a\": 1}\n", {{"b", FeatureType::kScoredIdList64}}, "column 'b' declared scored_id_list64: a JSON Lines column is bool"},
      {"{\"dense\": {\"1\": 2}}\n", {{"dense", FeatureType::kInt64}}, "dense feature 1 declared int64: dense features are float32 or float64"},
  };
  // A declared column no row has is kept, typed, so shards converted with one schema agree.
  std::ofstream(input) << "{\"a\": 1}\n";
  TableConvertOptions absent{.input = input, .out_dir = dir / "absent"};
  absent.column_types = {{"b", FeatureType::kTimestampMs}};
  auto kept = ConvertTable(absent);
  REQUIRE(kept.ok());
  REQUIRE(kept->schema.features.size() == 2);
  CHECK(kept->schema.features[1].type == FeatureType::kTimestampMs);
  CHECK(kept->schema.features[1].present_count == 0);
  CHECK(kept->notes == std::vector<std::string>{"column 'b' is declared but no row has it: stored as timestamp_ms "
                                                "without values"});
  for (const auto& [text, types, message] : refused) {
    INFO(text);
    std::ofstream(input) << text;
    TableConvertOptions r{.input = input, .out_dir = dir / "r"};
    r.column_types = types;
    auto result = ConvertTable(r);
    REQUIRE_FALSE(result.ok());
    CHECK_THAT(result.status().message(), Catch::Contains(message));
  }
}

TEST_CASE("CSV bad values in bool and time columns are named, or missing when asked") {
  TempDir dir;
  std::string rows = "b,t\n";
  for (int i = 0; i < 150; ++i) {
    rows += (i == 100 ? std::string("maybe") : i % 2 ? "true" : "false") + "," +
            (i == 130 ? std::string("soon") : "2020-01-01T00:00:0" + std::to_string(i % 10)) + "\n";
  }
  const std::string input = dir / "b.csv";
  std::ofstream(input) << rows;
  auto r = ConvertTable({.input = input, .out_dir = dir / "e"});
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), Catch::Contains("line 102, column 1: 'maybe' in column 'b' is not true or false, "
                                                   "unlike its 149 other values (bool)"));
  const auto [s, c] = ConvertAndRead({.input = input, .out_dir = dir / "m", .on_bad_value = BadValue::kMissing});
  CHECK(s.features[0].type == FeatureType::kBool);
  CHECK(s.features[1].type == FeatureType::kTimestampUs);
  CHECK(c[0].present[100] == 0);
  CHECK(c[1].present[130] == 0);
  CHECK(s.features[1].present_count == 149);
}

TEST_CASE("a column of negative integers and integers above int64 is refused, naming both") {
  TempDir dir;
  const std::string input = dir / "u.csv";
  // The hash of the issue's table: no integer type holds both.
  std::ofstream(input) << "uid\n1234567890123456789\n-5\n18446744073709551615\n";
  auto r = ConvertTable({.input = input, .out_dir = dir / "o"});
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(),
             Catch::Contains("line 4, column 1: column 'uid' holds 18446744073709551615 (above int64) and -5 (line 3, "
                             "column 1, below uint64), which no integer type holds both of: declare "
                             "column_types[\"uid\"] = string to keep them as text, or column_types[\"uid\"] = uint64 or "
                             "column_types[\"uid\"] = int64 with on_bad_value = BadValue::kMissing"));
  // Many hashes and one negative value: the negative value breaks the rule.
  std::string hashes = "id,uid\n";
  for (int i = 0; i < 1000; ++i) hashes += std::to_string(i) + "," + std::to_string(18446744073709551615ull - i) + "\n";
  hashes += "1000,-1\n";
  std::ofstream(input) << hashes;
  r = ConvertTable({.input = input, .out_dir = dir / "h"});
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(),
             Catch::Contains("line 1002, column 6: column 'uid' holds -1 (below uint64) and 18446744073709551615 "
                             "(line 2, column 3, above int64)"));
  TableConvertOptions declared{.input = input, .out_dir = dir / "d", .on_bad_value = BadValue::kMissing};
  declared.column_types = {{"uid", FeatureType::kUInt64}};
  const auto [s, c] = ConvertAndRead(declared);
  CHECK(s.features[1].type == FeatureType::kUInt64);
  CHECK(s.features[1].present_count == 1000);
  CHECK(c[1].present[1000] == 0);
  // A column of integers beyond every integer type: text is the way to keep them.
  std::ofstream(input) << "x\n-9223372036854775809\n";
  r = ConvertTable({.input = input, .out_dir = dir / "self"});
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), Catch::Contains("line 2, column 1: -9223372036854775809 in column 'x' is beyond int64 "
                                                   "and uint64, as are all its numbers: declare column_types[\"x\"] = string"));
}

TEST_CASE("what --on-bad-value missing stores as missing, and why a column is string, are noted") {
  TempDir dir;
  // 300 times and one impossible date, in JSON Lines.
  std::string text;
  for (int i = 0; i < 300; ++i) text += "{\"t\": \"2020-01-0" + std::to_string(1 + i % 9) + "\", \"b\": 1}\n";
  text += "{\"t\": \"2023-02-29\", \"b\": 9007199254740993}\n";
  const std::string jsonl = dir / "t.jsonl";
  std::ofstream(jsonl) << text;
  auto refused = ConvertTable({.input = jsonl, .out_dir = dir / "e"});
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.status().message(),
             Catch::Contains("line 301, column 7: \"2023-02-29\" in column 't' is not an ISO 8601 time, unlike its 300 "
                             "other values"));
  TableConvertOptions o{.input = jsonl, .out_dir = dir / "m", .on_bad_value = BadValue::kMissing};
  o.column_types = {{"b", FeatureType::kFloat64}};
  auto r = ConvertTable(o);
  REQUIRE(r.ok());
  CHECK(r->schema.features[0].type == FeatureType::kTimestampUs);
  CHECK(r->schema.features[0].present_count == 300);
  CHECK(r->schema.features[1].present_count == 300);  // the integer no double holds
  CHECK(r->notes == std::vector<std::string>{
                        "column 't': 1 value not timestamp_us stored as missing (first \"2023-02-29\" at line 301, "
                        "column 7)",
                        "column 'b': 1 value not float64 stored as missing (first 9007199254740993 at line 301, "
                        "column 26)"});
  // A declared bool in JSON Lines takes 0, 1 and the words it names.
  std::ofstream(jsonl) << "{\"a\": true}\n{\"a\": 1}\n{\"a\": \"no\"}\n";
  TableConvertOptions b{.input = jsonl, .out_dir = dir / "b"};
  b.column_types = {{"a", FeatureType::kBool}};
  const auto [bs, bc] = ConvertAndRead(b);
  CHECK(bc[0].ints == std::vector<int64_t>{1, 1, 0});
  // Most cells numbers and a few words, at any share below all: an error
  // naming the first word; each way it proposes keeps every other value.
  const std::string csv = dir / "s.csv";
  std::ofstream(csv) << "n,m\n1,2\n2,x\n3,4\nabc,5\n\n";  // a blank last line is no row
  auto s = ConvertTable({.input = csv, .out_dir = dir / "s"});
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().message() ==
        csv + ": line 5, column 1: 'abc' in column 'n' is not a number, unlike its 3 other values (int64): declare "
              "column_types[\"n\"] = string (or pass strings = true for every column) to keep the column as text, or pass "
              "on_bad_value = BadValue::kMissing to store such cells as missing (1 in this column)");
  TableConvertOptions as_text{.input = csv, .out_dir = dir / "s-text"};
  as_text.column_types = {{"m", FeatureType::kString}, {"n", FeatureType::kString}};
  const auto [ts, tc] = ConvertAndRead(as_text);
  CHECK(Strings(tc[1]) == std::vector<std::string>{"2", "x", "4", "5"});
  const auto [ms, mc] = ConvertAndRead({.input = csv, .out_dir = dir / "s-missing", .on_bad_value = BadValue::kMissing});
  CHECK(ms.features[0].type == FeatureType::kInt64);
  CHECK(mc[0].ints == std::vector<int64_t>{1, 2, 3, 0});
  CHECK(mc[0].present == std::vector<uint8_t>{1, 1, 1, 0});
  CHECK(mc[1].ints == std::vector<int64_t>{2, 0, 4, 5});
  CHECK(mc[1].present == std::vector<uint8_t>{1, 0, 1, 1});
  // A column where no kind is most is text, without a word.
  std::ofstream(csv) << "n\n1\nx\n";
  const auto [hs, hc] = ConvertAndRead({.input = csv, .out_dir = dir / "half"});
  CHECK(hs.features[0].type == FeatureType::kString);
}

TEST_CASE("integers beyond int64 and uint64 are bad values of the integer column, never floats") {
  TempDir dir;
  for (const bool json : {false, true}) {
    const std::string input = dir / (json ? "u.jsonl" : "u.csv");
    const std::vector<std::string> values = {"18446744073709551615", "12", "18446744073709551616", "7"};
    {
      std::ofstream out(input);
      if (!json) out << "h\n";
      for (const std::string& v : values) out << (json ? "{\"h\": " + v + "}" : v) << "\n";
    }
    auto refused = ConvertTable({.input = input, .out_dir = dir / (json ? "j" : "c")});
    REQUIRE_FALSE(refused.ok());
    CHECK_THAT(refused.status().message(),
               Catch::Contains("18446744073709551616 in column 'h' is beyond uint64 (0 to 2^64 - 1), unlike its 3 "
                               "other values, integers: declare column_types[\"h\"] = uint64 with on_bad_value = BadValue::kMissing"));
    CHECK_THAT(refused.status().message(), Catch::Contains("or column_types[\"h\"] = string to keep every digit"));
    // Followed: the valid hash is kept, the overflow is missing.
    TableConvertOptions declared{.input = input, .out_dir = dir / (json ? "jd" : "cd"),
                                 .on_bad_value = BadValue::kMissing};
    declared.column_types = {{"h", FeatureType::kUInt64}};
    const auto [ds, dc] = ConvertAndRead(declared);
    CHECK(dc[0].ints == std::vector<int64_t>{-1, 12, 0, 7});  // uint64 as int64 of the same bits
    CHECK(dc[0].present == std::vector<uint8_t>{1, 1, 0, 1});
    // --on-bad-value missing alone infers the same type.
    const auto [ms, mc] = ConvertAndRead({.input = input, .out_dir = dir / (json ? "jm" : "cm"),
                                          .on_bad_value = BadValue::kMissing});
    CHECK(ms.features[0].type == FeatureType::kUInt64);
    CHECK(mc[0].ints == dc[0].ints);
    TableConvertOptions text{.input = input, .out_dir = dir / (json ? "jt" : "ct")};
    text.column_types = {{"h", FeatureType::kString}};
    const auto [xs, xc] = ConvertAndRead(text);
    CHECK(Strings(xc[0]) == values);
  }
  // Below int64 among negatives: int64, the same way.
  const std::string neg = dir / "n.csv";
  std::ofstream(neg) << "x\n-1\n-9223372036854775809\n";
  auto refused = ConvertTable({.input = neg, .out_dir = dir / "n"});
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.status().message(), Catch::Contains("is beyond int64 (-2^63 to 2^63 - 1)"));
  const auto [ns, nc] = ConvertAndRead({.input = neg, .out_dir = dir / "nm", .on_bad_value = BadValue::kMissing});
  CHECK(ns.features[0].type == FeatureType::kInt64);
  CHECK(nc[0].present == std::vector<uint8_t>{1, 0});
  // With real floats the column is float64, as before.
  std::ofstream(neg) << "x\n1.5\n18446744073709551616\n";
  const auto [fs, fc] = ConvertAndRead({.input = neg, .out_dir = dir / "f"});
  CHECK(fs.features[0].type == FeatureType::kFloat64);
}

TEST_CASE("a float beyond float32 in a float32 column is a bad value") {
  TempDir dir;
  const std::string csv = dir / "f.csv";
  std::ofstream(csv) << "f,l\n1.5,\"[1, 2]\"\n1.7976931348623157e308,\"[3e39]\"\n-inf,\"[]\"\n";
  TableConvertOptions o{.input = csv, .out_dir = dir / "o"};
  o.column_types = {{"f", FeatureType::kFloat32}, {"l", FeatureType::kFloat32List}};
  auto refused = ConvertTable(o);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message() ==
        csv + ": line 3, column 1: '1.7976931348623157e308' in column 'f' is beyond float32 (at most 3.4028235e38 in "
              "magnitude) (the column is float32): pass on_bad_value = BadValue::kMissing to store such cells as missing, or "
              "declare another type with column_types[\"f\"] = TYPE");
  o.column_types["f"] = FeatureType::kFloat64;
  refused = ConvertTable(o);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.status().message(), Catch::Contains("'[3e39]' in column 'l' is not a list of float32: a value "
                                                         "in it is beyond float32"));
  o.on_bad_value = BadValue::kMissing;
  o.column_types["f"] = FeatureType::kFloat32;
  o.out_dir = dir / "m";
  const auto [s, c] = ConvertAndRead(o);
  CHECK(c[0].present == std::vector<uint8_t>{1, 0, 1});
  CHECK(std::isinf(c[0].floats[2]));  // an infinity is a float32 value
  CHECK(c[1].present == std::vector<uint8_t>{1, 0, 1});
  // From JSON Lines too.
  const std::string jsonl = dir / "f.jsonl";
  std::ofstream(jsonl) << "{\"f\": 1e300}\n";
  TableConvertOptions j{.input = jsonl, .out_dir = dir / "j"};
  j.column_types = {{"f", FeatureType::kFloat32}};
  refused = ConvertTable(j);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.status().message(), Catch::Contains("1e300 in column 'f' is beyond float32"));
}

TEST_CASE("times beyond year 9999 and before year 0 read as ISO 8601 expanded years") {
  TempDir dir;
  const std::string input = dir / "y.csv";
  std::ofstream(input) << "t\n+10000-01-01T00:00:00\n-0001-12-31T23:59:59\n+292277026596-12-04T15:30:07\n"
                          "2000-01-01\n";
  TableConvertOptions o{.input = input, .out_dir = dir / "o"};
  o.column_types = {{"t", FeatureType::kTimestampS}};
  const auto [s, c] = ConvertAndRead(o);
  CHECK(c[0].ints[0] == Utc(10000, 1, 1));
  CHECK(c[0].ints[1] == Utc(-1, 12, 31, 23, 59, 59));
  CHECK(c[0].ints[2] == std::numeric_limits<int64_t>::max());
  std::ofstream(input) << "t\n+292277026596-12-04T15:30:08\n";
  o.out_dir = dir / "over";
  auto over = ConvertTable(o);
  REQUIRE_FALSE(over.ok());
  CHECK_THAT(over.status().message(), Catch::Contains("is not an ISO 8601 time"));
}

TEST_CASE("list columns: JSON Lines arrays of numbers, and declared CSV columns of JSON arrays") {
  TempDir dir;
  const std::string jsonl = dir / "l.jsonl";
  std::ofstream(jsonl) << "{\"ids\": [3, -1, 9007199254740993], \"w\": [0.5, -0.0], \"e\": []}\n"
                          "{\"ids\": [], \"w\": [1, NaN], \"e\": null}\n";
  const auto [s, c] = ConvertAndRead({.input = jsonl, .out_dir = dir / "j"});
  CHECK(s.features[0].type == FeatureType::kIdList);
  CHECK(s.features[1].type == FeatureType::kFloat64List);
  CHECK(s.features[2].type == FeatureType::kIdList);
  CHECK(c[0].ints == std::vector<int64_t>{3, -1, 9007199254740993});
  CHECK(c[0].offsets == std::vector<uint64_t>{0, 3, 3});
  CHECK(Bits(c[1].doubles[1]) == Bits(-0.0));
  CHECK(std::isnan(c[1].doubles[3]));
  CHECK(c[2].present == std::vector<uint8_t>{1, 0});
  TableConvertOptions f32{.input = jsonl, .out_dir = dir / "f32"};
  f32.column_types = {{"w", FeatureType::kFloat32List}};
  const auto [s2, c2] = ConvertAndRead(f32);
  CHECK(s2.features[1].type == FeatureType::kFloat32List);
  CHECK(c2[1].floats[0] == 0.5f);
  // CSV cells hold lists as pcr-dump cat prints them, when declared.
  const std::string csv = dir / "l.csv";
  std::ofstream(csv) << "ids,w\n\"[1,2]\",\"[2.5, 1e-400]\"\n,\"[]\"\n";
  TableConvertOptions o{.input = csv, .out_dir = dir / "c"};
  o.column_types = {{"ids", FeatureType::kIdList}, {"w", FeatureType::kFloat64List}};
  const auto [s3, c3] = ConvertAndRead(o);
  CHECK(c3[0].ints == std::vector<int64_t>{1, 2});
  CHECK(c3[0].present == std::vector<uint8_t>{1, 0});
  CHECK(c3[1].doubles == std::vector<double>{2.5, 0.0});
  CHECK(c3[1].offsets == std::vector<uint64_t>{0, 2, 2});
  std::ofstream(csv) << "ids\n\"[1,2.5]\"\n";
  o.column_types = {{"ids", FeatureType::kIdList}};
  o.out_dir = dir / "bad";
  auto bad = ConvertTable(o);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.status().message(),
             Catch::Contains("line 2, column 1: '[1,2.5]' in column 'ids' is not a JSON array of int64 ids"));
}

TEST_CASE("id lists above int64 are uint64_id_list, stamped 0.7, in columns and sparse maps") {
  TempDir dir;
  const std::string jsonl = dir / "u.jsonl";
  std::ofstream(jsonl) << "{\"ids\": [18446744073709551615, 0, 9223372036854775808], \"small\": [1], "
                          "\"sparse\": {\"7\": [18446744073709551614], \"8\": [5]}}\n"
                          "{\"ids\": [], \"small\": [2], \"sparse\": {\"7\": [3]}}\n";
  const auto [s, c] = ConvertAndRead({.input = jsonl, .out_dir = dir / "j"});
  REQUIRE(s.features.size() == 4);
  CHECK(s.features[0].type == FeatureType::kUInt64IdList);
  CHECK(s.features[1].type == FeatureType::kIdList);
  CHECK((s.features[2].has_id && s.features[2].type == FeatureType::kUInt64IdList));
  CHECK(s.features[3].type == FeatureType::kIdList);
  CHECK(test::ReadFile(dir.path() / "j" / "u.pcr")[9] == kUInt64IdsVersionMinor);
  const std::vector<uint64_t> ids(c[0].ints.begin(), c[0].ints.end());
  CHECK(ids == std::vector<uint64_t>{18446744073709551615u, 0, 9223372036854775808u});
  CHECK(c[0].offsets == std::vector<uint64_t>{0, 3, 3});
  CHECK(static_cast<uint64_t>(c[2].ints[0]) == 18446744073709551614u);
  CHECK(c[2].ints[1] == 3);
  // A column of int64 ids stays id_list and its file 0.6 or below.
  std::ofstream(dir / "s.jsonl") << "{\"ids\": [-1, 9223372036854775807]}\n";
  const auto [s2, c2] = ConvertAndRead({.input = dir / "s.jsonl", .out_dir = dir / "s"});
  CHECK(s2.features[0].type == FeatureType::kIdList);
  CHECK(test::ReadFile(dir.path() / "s" / "s.pcr")[9] < kUInt64IdsVersionMinor);
  // A declared CSV column of uint64 ids.
  std::ofstream(dir / "u.csv") << "ids\n\"[18446744073709551615,1]\"\n\"[]\"\n";
  TableConvertOptions o{.input = dir / "u.csv", .out_dir = dir / "c"};
  o.column_types = {{"ids", FeatureType::kUInt64IdList}};
  const auto [s3, c3] = ConvertAndRead(o);
  CHECK(c3[0].ints == std::vector<int64_t>{-1, 1});
  CHECK(c3[0].offsets == std::vector<uint64_t>{0, 2, 2});
}

TEST_CASE("ids above int64 beside negative ids, and ids a declared id type cannot hold, say what keeps them") {
  TempDir dir;
  std::ofstream(dir / "b.jsonl") << "{\"ids\": [-1, 2]}\n{\"ids\": [18446744073709551615]}\n";
  auto both = ConvertTable({.input = dir / "b.jsonl", .out_dir = dir / "b"});
  REQUIRE_FALSE(both.ok());
  CHECK_THAT(both.status().message(),
             Catch::Contains("line 2, column 9: [18446744073709551615] in column 'ids' holds an id above int64, and "
                             "[-1, 2] (line 1, column 9) a negative one") &&
                 Catch::Contains("column_types[\"ids\"] = uint64_id_list or column_types[\"ids\"] = id_list with "
                                 "on_bad_value = BadValue::kMissing"));
  std::ofstream(dir / "m.jsonl") << "{\"sparse\": {\"5\": [1, 18446744073709551615]}}\n";
  TableConvertOptions o{.input = dir / "m.jsonl", .out_dir = dir / "m"};
  o.column_types = {{"sparse", FeatureType::kIdList}};
  auto declared = ConvertTable(o);
  REQUIRE_FALSE(declared.ok());
  CHECK_THAT(declared.status().message(),
             Catch::Contains("line 1, column 18: [1, 18446744073709551615] in sparse feature 5 is not an array of "
                             "int64 ids") &&
                 Catch::Contains("declare column_types[\"5\"] = uint64_id_list to keep every id"));
  // Scored lists hold int64 ids.
  std::ofstream(dir / "s.jsonl") << "{\"scored\": {\"5\": [[18446744073709551615, 0.5]]}}\n";
  auto scored = ConvertTable({.input = dir / "s.jsonl", .out_dir = dir / "s"});
  REQUIRE_FALSE(scored.ok());
  CHECK_THAT(scored.status().message(), Catch::Contains("column 20: scored feature 5: id is above int64"));
}

TEST_CASE("numbers padded with spaces or signed with + are numbers; strings keep their text") {
  TempDir dir;
  const std::string input = dir / "p.csv";
  // STAR.csv pads its numbers (" 7"); pandas and DuckDB read them as numbers.
  std::ofstream(input) << "n,f,b,t,s\n 7,+1.5,\" true\",\" 2020-01-01 \",\" x\"\n+8 ,\t-2e3,false,+10000-01-01,y\n";
  const auto [s, c] = ConvertAndRead({.input = input, .out_dir = dir / "o"});
  CHECK(s.features[0].type == FeatureType::kInt64);
  CHECK(c[0].ints == std::vector<int64_t>{7, 8});
  CHECK(c[1].doubles == std::vector<double>{1.5, -2000});
  CHECK(s.features[2].type == FeatureType::kBool);
  CHECK(s.features[3].type == FeatureType::kTimestampUs);
  CHECK(c[3].ints[1] == Utc(10000, 1, 1) * 1000000);
  CHECK(c[4].string(0) == " x");
}

TEST_CASE("a time beyond timestamp_ns in a column that needs nanoseconds is refused, saying why") {
  TempDir dir;
  const std::string input = dir / "n.csv";
  std::ofstream(input) << "t\n2000-01-01T00:00:00.123456789\n3000-01-01\n";
  auto r = ConvertTable({.input = input, .out_dir = dir / "o"});
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(),
             Catch::Contains("line 3, column 1: 3000-01-01 in column 't' is beyond the years timestamp_ns holds (1677 "
                             "to 2262), which 2000-01-01T00:00:00.123456789 at line 2, column 1 needs"));
  // Declared units say which limit a time breaks.
  TableConvertOptions o{.input = input, .out_dir = dir / "d"};
  o.column_types = {{"t", FeatureType::kTimestampUs}};
  auto finer = ConvertTable(o);
  REQUIRE_FALSE(finer.ok());
  CHECK_THAT(finer.status().message(),
             Catch::Contains("'2000-01-01T00:00:00.123456789' in column 't' has more fraction digits than "
                             "timestamp_us holds"));
  std::ofstream(input) << "t\n3000-01-01\n";
  o.column_types = {{"t", FeatureType::kTimestampNs}};
  o.out_dir = dir / "e";
  auto beyond = ConvertTable(o);
  REQUIRE_FALSE(beyond.ok());
  CHECK_THAT(beyond.status().message(),
             Catch::Contains("'3000-01-01' in column 't' is beyond the years timestamp_ns holds"));
}

TEST_CASE("declared JSON Lines number columns read strings that hold numbers") {
  TempDir dir;
  const std::string input = dir / "s.jsonl";
  std::ofstream(input) << "{\"a\": \"580\", \"b\": \" 2.5\", \"c\": \"9007199254740993\"}\n{\"a\": 3, \"b\": 1, \"c\": 1}\n";
  TableConvertOptions o{.input = input, .out_dir = dir / "o", .on_bad_value = BadValue::kMissing};
  o.column_types = {{"a", FeatureType::kInt64}, {"b", FeatureType::kFloat32}, {"c", FeatureType::kFloat64}};
  auto r = ConvertTable(o);
  REQUIRE(r.ok());
  auto t = Table::Open(r->path);
  REQUIRE(t.ok());
  auto b = (*t)->Read(AllFeatures(**t), 0, 1);
  REQUIRE(b.ok());
  CHECK(b->columns[0].ints == std::vector<int64_t>{580, 3});
  CHECK(b->columns[1].floats == std::vector<float>{2.5f, 1.0f});
  CHECK(b->columns[2].present == std::vector<uint8_t>{0, 1});  // no double holds it: not rounded
}

TEST_CASE("malformed input names line and column and leaves nothing behind") {
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {"bad.csv", "a,b\n1,\"x\n2,3\n", "line 2, column 3: quoted field is never closed"},
      {"bad.csv", "a,b\n1,2\n3\n", "line 3, column 1: row has 1 cells, the header 2"},
      {"bad.csv", "a,b\n1,2,3\n", "line 2, column 3: row has 3 cells"},
      {"bad.csv", "a,b\n1,x\"y\n", "line 2, column 4: quote inside an unquoted field"},
      {"bad.csv", "a,b\n\"1\"x,2\n", "line 2, column 4: text after a closing quote"},
      {"bad.csv", "a,a\n1,2\n", "line 1, column 3: duplicate column name 'a'"},
      {"bad.csv", "", "empty file"},
      {"bad.jsonl", "", "empty file, expected one JSON object per line"},
      {"bad.jsonl", "\n\n", "empty file, expected one JSON object per line"},
      {"bad.jsonl", "{\"dense\": {\"1\": 2}}\n{\"dense\": {\"1\": \"x\"}}\n",
       "line 2, column 17: dense feature 1: expected a number"},
      {"bad.jsonl", "{\"sparse\": {\"3\": [1, 2.5]}}\n", "line 1, column 22: sparse feature 3: id is not an integer of int64 or uint64"},
      {"bad.jsonl", "{\"sparse\": {\"x\": [1]}}\n", "line 1, column 18: sparse feature x: key is not an int64 feature id"},
      {"bad.jsonl", "{\"scored\": {\"3\": [[1]]}}\n", "line 1, column 22: scored feature 3: expected a numeric score"},
      {"bad.jsonl", "{\"a\": 1}\n{\"a\": \"s\"}\n", "line 2, column 7: column 'a' holds numbers (first 1 at line 1, column 7) and here strings: declare "
       "column_types[\"a\"] = string (or another type) or pass strings = true"},
      {"bad.jsonl", "{\"a\": 1, \"a\": 2}\n", "line 1, column 15: feature 'a' appears twice in the row"},
      {"bad.jsonl", "{\"dense\": {\"5\": 1}, \"sparse\": {\"5\": [1]}}\n", "line 1, column 37: feature '5' appears both"},
      {"bad.jsonl", "{\"a\": 1}\n{\"a\": 2\n", "line 2, column 8: expected ',' or '}'"},
      {"bad.jsonl", "[1]\n", "line 1, column 1: a row must be a JSON object"},
      {"bad.jsonl", "{\"a\": [1, \"x\"]}\n", "line 1, column 11: column 'a': expected an array of numbers"},
      {"bad.jsonl", "{\"a\": {}}\n", "line 1, column 7: column 'a': expected a number, string, boolean, array of numbers or null"},
      // An integer beyond uint64 among integers is a bad value of uint64, never a float64 column that rounds.
      {"big.csv", "a\n1\n9007199254740993\n99999999999999999999\n",
       "line 4, column 1: 99999999999999999999 in column 'a' is beyond uint64 (0 to 2^64 - 1), unlike its 2 other "
       "values, integers: declare column_types[\"a\"] = uint64 with on_bad_value = BadValue::kMissing"},
      // One word among numbers is named, with the ways past it.
      {"word.csv", "a,b\n" + WordAmongNumbers(),
       "line 122, column 5: 'abc' in column 'b' is not a number, unlike its 149 other values (int64): declare "
       "column_types[\"b\"] = string (or pass strings = true for every column) to keep the column as text, or pass "
       "on_bad_value = BadValue::kMissing"},
      {"big.csv", "a,b\nx,0.5\ny,-99999999999999999999\n",
       "line 3, column 3: integer -99999999999999999999 in float64 column 'b'"},
      {"big.jsonl", "{\"a\": 1}\n{\"a\": 99999999999999999999}\n",
       "line 2, column 7: 99999999999999999999 in column 'a' is beyond uint64 (0 to 2^64 - 1), unlike its 1 other "
       "value, integers"},
      {"big.jsonl", "{\"a\": 0.5}\n{\"a\": 9007199254740993}\n",
       "line 2, column 7: integer 9007199254740993 in float64 column 'a'"},
      {"big.jsonl", "{\"dense\": {\"7\": 0.5}}\n{\"dense\": {\"7\": -9007199254740993}}\n",
       "line 2, column 17: integer -9007199254740993 in float64 dense feature 7"},
  };
  for (const auto& [name, text, want] : cases) {
    INFO(text);
    TempDir dir;
    const std::string input = dir / name;
    std::ofstream(input) << text;
    auto r = ConvertTable({.input = input, .out_dir = dir / "out"});
    REQUIRE(!r.ok());
    CHECK_THAT(r.status().message(), Catch::Contains(input) && Catch::Contains(want));
    for (const auto& e : fs::directory_iterator(dir / "out")) FAIL("left behind: " << e.path());
    CHECK(Slurp(input) == text);
  }
}

// The bytes of a small map table (8 rows in 3 stripes) written in `dir`.
Bytes SmallMapTable(const TempDir& dir, const std::vector<MapRow>& rows) {
  const std::string input = dir / "maps.jsonl";
  std::ofstream(input) << ToJsonl(rows);
  TableConvertOptions o{.input = input, .out_dir = dir / "good"};
  o.writer.rows_per_stripe = 3;
  auto report = ConvertTable(o);
  REQUIRE(report.ok());
  return test::ReadFile(report->path);
}

TEST_CASE("corrupt and truncated table files are refused or read back unchanged") {
  TempDir dir;
  const auto rows = MakeMapRows(8, 11);
  const Bytes good = SmallMapTable(dir, rows);
  const std::string bad = dir / "bad.pcr";

  // Reads every value; "" when the file reads back as the original.
  auto outcome = [&]() -> std::string {
    auto t = Table::Open(bad, {.io = test::Io()});
    if (!t.ok()) return t.status().message();
    auto b = (*t)->Read(AllFeatures(**t), 0, (*t)->stripe_count());
    if (!b.ok()) return b.status().message();
    CheckMapTable(**t, rows);
    return "";
  };

  for (size_t len = 0; len < good.size(); ++len) {
    test::WriteFile(bad, ByteSpan(good).first(len));
    const std::string msg = outcome();
    INFO("truncated to " << len);
    CHECK_THAT(msg, Catch::Contains(bad));
  }
  uint64_t refused = 0, flips = 0;
  for (size_t at = 0; at < good.size(); ++at) {
    Bytes b = good;
    b[at] ^= static_cast<uint8_t>(1u << (at % 8));
    test::WriteFile(bad, b);
    const std::string msg = outcome();
    INFO("bit flipped at " << at);
    if (!msg.empty()) {
      CHECK_THAT(msg, Catch::Contains(bad));
      ++refused;
    }
    ++flips;
  }
  CHECK(refused == flips);  // every byte is covered by a checksum
}

TEST_CASE("a damaged table index with valid checksums is refused or reads") {
  TempDir dir;
  const Bytes good = SmallMapTable(dir, MakeMapRows(8, 11));
  const uint64_t index_offset = LoadFixed64(good.data() + good.size() - kFooterSize);
  const std::string bad = dir / "bad.pcr";
  uint64_t refused = 0, read = 0;
  for (size_t at = index_offset; at < good.size() - kFooterSize; ++at) {
    for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
      Bytes b = good;
      b[at] ^= mask;
      test::RefixIndexChecksum(&b);
      test::WriteFile(bad, b);
      INFO("index byte " << at - index_offset << " mask " << int{mask});
      // Counts and lengths the bytes cannot back are refused before any
      // allocation they would size (the sanitizer build checks the rest).
      auto t = Table::Open(bad, {.io = test::Io()});
      if (!t.ok()) {
        ++refused;
        CHECK_THAT(t.status().message(), Catch::Contains(bad));
        continue;
      }
      auto batch = (*t)->Read(AllFeatures(**t), 0, (*t)->stripe_count());
      // Reorder checks what it copies as strictly as a reader (one mask of three suffices).
      std::optional<Result<TableConvertReport>> reordered;
      if (mask == 0x01) {
        reordered = ReorderTable(bad, dir / ("reordered-" + std::to_string(at)), {"label"}, test::Io());
        CHECK(reordered->ok() == batch.ok());
      }
      if (batch.ok()) {
        ++read;
        // The statistics a summary shows agree with the rows.
        const auto& features = (*t)->schema().features;
        for (size_t f = 0; f < features.size(); ++f) {
          const Column& c = batch->columns[f];
          const auto rows = static_cast<uint64_t>(std::count(c.present.begin(), c.present.end(), 1));
          CHECK(features[f].present_count == rows);
          CHECK(features[f].value_count == (c.offsets.empty() ? rows : c.offsets.back()));
        }
        if (reordered) CHECK(VerifyPath((*reordered)->path, test::Io()).errors.empty());
      } else {
        ++refused;
        CHECK_THAT(batch.status().message(), Catch::Contains(bad));
        if (reordered) CHECK_THAT(reordered->status().message(), Catch::Contains(bad));
      }
    }
  }
  std::printf("table index damage with re-fixed checksums: %llu refused, %llu read\n",
              static_cast<unsigned long long>(refused), static_cast<unsigned long long>(read));
  CHECK(refused > 0);
}

TEST_CASE("reorder refuses a stream whose raw length disagrees with its zstd frame") {
  TempDir dir;
  const std::string input = dir / "maps.jsonl";
  std::ofstream(input) << ToJsonl(MakeMapRows(400, 11));
  TableConvertOptions o{.input = input, .out_dir = dir / "good"};
  o.writer.rows_per_stripe = 200;
  o.writer.stream_encoding = "plain";
  auto report = ConvertTable(o);
  REQUIRE(report.ok());
  const Bytes good = test::ReadFile(report->path);
  size_t damaged = SIZE_MAX;
  const Bytes bad_bytes = test::RewriteIndex(good, [&](FileIndex* index) {
    // An id list's values, one id longer, with a schema that agrees, so
    // only decompression can tell.
    StripeInfo& stripe = index->stripes[1];
    for (size_t k = 0; k < stripe.table_streams.size(); ++k) {
      TableStream& t = stripe.table_streams[k];
      FeatureInfo& f = index->schema.features[t.feature];
      if (t.codec == StreamCodec::kZstd && t.role == StreamRole::kValues && IsListType(f.type)) {
        t.raw_length += 8;
        f.value_count += 1;
        damaged = k;
        break;
      }
    }
  });
  REQUIRE(damaged != SIZE_MAX);
  const std::string bad = dir / "bad.pcr";
  test::WriteFile(bad, bad_bytes);
  auto r = ReorderTable(bad, dir / "out", {"label"}, test::Io());
  REQUIRE(!r.ok());
  CHECK_THAT(r.status().message(), Catch::Contains(bad + ": stripe 1 stream " + std::to_string(damaged)) &&
                                       Catch::Contains("zstd frame content size"));
  CHECK(!fs::exists(fs::path(dir / "out") / "bad.pcr"));
  CHECK(!VerifyPath(bad, test::Io()).errors.empty());
}

TEST_CASE("schema statistics that disagree with the streams are refused at open") {
  TempDir dir;
  const Bytes good = SmallMapTable(dir, MakeMapRows(8, 11));
  const std::string bad = dir / "bad.pcr";
  for (const bool value_count : {true, false}) {
    INFO((value_count ? "value_count" : "present_count"));
    std::string name;
    test::WriteFile(bad, test::RewriteIndex(good, [&](FileIndex* index) {
      for (FeatureInfo& f : index->schema.features) {
        if (f.type != FeatureType::kIdList) continue;
        (value_count ? f.value_count : f.present_count) += value_count ? 3665038759 : 1;
        name = f.name;
        break;
      }
    }));
    REQUIRE(!name.empty());
    auto t = Table::Open(bad, {.io = test::Io()});
    REQUIRE(!t.ok());
    CHECK(t.status().code() == StatusCode::kCorruption);
    CHECK_THAT(t.status().message(), Catch::Contains(bad + ": at offset") &&
                                         Catch::Contains("feature '" + name + "': " +
                                                         (value_count ? "value_count" : "present_count")));
    const VerifyReport v = VerifyPath(bad, test::Io());
    REQUIRE(v.errors.size() == 1);
    CHECK_THAT(v.errors[0], Catch::Contains(value_count ? "value_count" : "present_count"));
  }
}

TEST_CASE("table stream damage behind re-fixed checksums is refused or decodes") {
  TempDir dir;
  const Bytes good = SmallMapTable(dir, MakeMapRows(8, 11));
  const uint64_t index_offset = LoadFixed64(good.data() + good.size() - kFooterSize);
  const std::string bad = dir / "bad.pcr";
  uint64_t refused = 0, decoded = 0;
  for (size_t at = kFileHeaderSize; at < index_offset; ++at) {
    Bytes b = good;
    b[at] ^= static_cast<uint8_t>(at % 2 ? 0x01 : 0xff);
    test::WriteFile(bad, test::RefixChecksums(b));
    INFO("byte " << at);
    // The checksums hold, so the damage reaches zstd and the stream decoders.
    auto t = Table::Open(bad, {.io = test::Io()});
    REQUIRE(t.ok());
    auto batch = (*t)->Read(AllFeatures(**t), 0, (*t)->stripe_count());
    if (batch.ok()) {
      ++decoded;
      CHECK(batch->rows == 8);
    } else {
      ++refused;
      CHECK_THAT(batch.status().message(), Catch::Contains(bad));
    }
    CHECK(VerifyPath(bad, test::Io()).errors.empty() == batch.ok());  // verify decodes every stream too
  }
  std::printf("table stream damage with re-fixed checksums: %llu refused, %llu decoded\n",
              static_cast<unsigned long long>(refused), static_cast<unsigned long long>(decoded));
  CHECK(refused > 0);
  CHECK(decoded > 0);
}

TEST_CASE("IsTablePath: table files and directories holding one, not image datasets or other files") {
  const std::string golden = test::DataDir() + "/golden";
  CHECK(IsTablePath(golden + "/v0.6-tables/maps.pcr").value());
  CHECK_FALSE(IsTablePath(golden + "/v0.6-tables").value());  // several tables
  CHECK_FALSE(IsTablePath(golden + "/v0.1-images").value());
  CHECK_FALSE(IsTablePath(golden + "/v0.1-images/records-00000.pcr").value());
  TempDir dir;
  std::filesystem::copy_file(golden + "/v0.6-tables/maps.pcr", dir / "t.pcr");
  CHECK(IsTablePath(dir.path().string(), {.kind = IoEngineKind::kPread}).value());
  std::ofstream(dir / "notes.txt") << "a file that is no pcr file";
  CHECK_FALSE(IsTablePath(dir / "notes.txt").value());
  CHECK_FALSE(IsTablePath(dir / "absent.pcr").value());
}

}  // namespace
}  // namespace pcr
