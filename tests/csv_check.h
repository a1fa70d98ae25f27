// Checking a CSV table's conversion cell by cell against an independent
// RFC 4180 parse; shared by the table suite and the corpus suite.
#pragma once

#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "pcr/convert.h"
#include "pcr/table.h"
#include "pcr/verify.h"
#include "tests/test_util.h"

namespace pcr::test {

// An independent RFC 4180 reader: rows of (text, quoted) cells.
struct Cell {
  std::string text;
  bool quoted = false;
};
inline std::vector<std::vector<Cell>> ParseCsv(const std::string& text) {
  std::vector<std::vector<Cell>> rows(1, std::vector<Cell>(1));
  size_t i = 0;
  while (i < text.size()) {
    Cell& cell = rows.back().back();
    const char c = text[i];
    if (c == '"' && cell.text.empty() && !cell.quoted) {
      cell.quoted = true;
      for (++i; i < text.size(); ++i) {
        if (text[i] == '"') {
          if (i + 1 < text.size() && text[i + 1] == '"') {
            cell.text += '"';
            ++i;
          } else {
            break;
          }
        } else {
          cell.text += text[i];
        }
      }
      ++i;
    } else if (c == ',') {
      rows.back().emplace_back();
      ++i;
    } else if (c == '\n' || (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n')) {
      i += c == '\r' ? 2 : 1;
      if (i < text.size()) rows.emplace_back(1);
    } else {
      cell.text += c;
      ++i;
    }
  }
  return rows;
}

inline std::string Slurp(const std::string& path) {
  const Bytes b = test::ReadFile(path);
  return std::string(b.begin(), b.end());
}

inline std::vector<uint32_t> AllFeatures(const Table& t) {
  std::vector<uint32_t> all(t.schema().features.size());
  for (uint32_t f = 0; f < all.size(); ++f) all[f] = f;
  return all;
}

// Converts `csv` and checks every cell against an independent parse.
inline void CheckCsvRoundTrip(const std::string& csv, uint64_t rows_per_stripe) {
  INFO(csv);
  TempDir out;
  TableConvertOptions o{.input = csv, .out_dir = out.path().string()};
  o.writer.rows_per_stripe = rows_per_stripe;
  auto report = ConvertTable(o);
  REQUIRE(report.ok());
  const auto rows = ParseCsv(Slurp(csv));
  auto table = Table::Open(report->path, {.io = test::Io()});
  REQUIRE(table.ok());
  Table& t = **table;
  const auto& features = t.schema().features;
  REQUIRE(features.size() == rows[0].size());
  REQUIRE(t.schema().row_count == rows.size() - 1);
  auto batch = t.Read(AllFeatures(t), 0, t.stripe_count());
  REQUIRE(batch.ok());
  REQUIRE(batch->rows == rows.size() - 1);
  uint64_t checked = 0;
  for (size_t c = 0; c < features.size(); ++c) {
    INFO("column " << features[c].name);
    CHECK(features[c].name == rows[0][c].text);
    const Column& col = batch->columns[c];
    for (size_t r = 1; r < rows.size(); ++r) {
      const Cell& cell = rows[r][c];
      const bool missing = !cell.quoted && (cell.text.empty() || cell.text == "NA");
      INFO("row " << r << " cell '" << cell.text << "'");
      REQUIRE(col.present[r - 1] == !missing);
      if (missing) continue;
      switch (col.type) {
        case FeatureType::kInt64:
          REQUIRE(col.ints[r - 1] == std::stoll(cell.text));
          break;
        case FeatureType::kFloat64: {
          const double want = std::strtod(cell.text.c_str(), nullptr);
          REQUIRE(std::memcmp(&col.doubles[r - 1], &want, 8) == 0);
          break;
        }
        case FeatureType::kString:
          REQUIRE(col.string(r - 1) == cell.text);
          break;
        default:
          FAIL("unexpected type " << FeatureTypeName(col.type));
      }
      ++checked;
    }
  }
  CHECK(checked > 0);
  const VerifyReport v = VerifyPath(report->path, test::Io());
  CHECK(v.errors.empty());
}

}  // namespace pcr::test
