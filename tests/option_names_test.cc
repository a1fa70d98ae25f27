// The library's messages name options as the caller's table spells them:
// the C++ fields by default, pcr-convert's flags with the CLI's table.
#include <catch2/catch.hpp>

#include <string>

#include "pcr/convert.h"
#include "pcr/option_names.h"
#include "tests/test_util.h"
#include "tools/option_spelling.h"

namespace pcr {
namespace {

using test::TempDir;

TEST_CASE("an option given values fills each {} in order; one without a pattern is named alone") {
  CHECK(cli::kOptionNames(Option::kColumnType, {"n", "string"}) == "--column-type n=string");
  CHECK(kLibraryOptionNames(Option::kColumnType, {"n", "string"}) == "column_types[\"n\"] = string");
  CHECK(cli::kOptionNames(Option::kSkipBad, {"ignored"}) == "--skip-bad");
  CHECK(kLibraryOptionNames(Option::kSkipBad) == "skip_bad = true");
  CHECK(kLibraryOptionNames.complete());
}

TEST_CASE("image conversion messages spell the options of the caller's table") {
  TempDir dir;
  ConvertImagesOptions o{.src_dir = test::DataDir() + "/sample", .out_dir = dir / "o", .images_per_record = 0};
  CHECK(CheckConvertImagesOptions(o).message() == "images_per_record must be positive, not 0");
  o.option_names = &cli::kOptionNames;
  CHECK(CheckConvertImagesOptions(o).message() == "--images-per-record must be positive, not 0");
  o.images_per_record = 4;
  o.exif_orientation = o.strip_metadata = true;
  CHECK(CheckConvertImagesOptions(o).message() == "--exif-orientation needs the metadata --strip-metadata drops");
  o.option_names = &kLibraryOptionNames;
  CHECK(CheckConvertImagesOptions(o).message() ==
        "exif_orientation = true needs the metadata strip_metadata = true drops");
  o.exif_orientation = o.strip_metadata = false;
  o.field_order = {"captoin"};
  CHECK_THAT(ConvertImages(o).status().message(), Catch::Contains("field_order names 'captoin', which is not a field"));
  o.option_names = &cli::kOptionNames;
  CHECK_THAT(ConvertImages(o).status().message(), Catch::Contains("--field-order names 'captoin', which is not a field"));
}

TEST_CASE("table conversion messages and notes spell the options of the caller's table") {
  TempDir dir;
  std::string text = "n,e\n";
  for (int i = 0; i < 4; ++i) text += std::to_string(i) + ",\n";
  text += "abc,\n";
  test::WriteFile(dir / "t.csv", ByteSpan(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  TableConvertOptions o{.input = dir / "t.csv", .out_dir = dir / "cli", .option_names = &cli::kOptionNames};
  const std::string cli = ConvertTable(o).status().message();
  CHECK_THAT(cli, Catch::Contains("declare --column-type n=string (or pass --strings for every column) to keep the "
                                  "column as text, or pass --on-bad-value missing to store such cells as missing"));
  o.on_bad_value = BadValue::kMissing;
  Result<TableConvertReport> noted = ConvertTable(o);
  REQUIRE(noted.ok());
  CHECK_THAT(noted->notes.front(), Catch::Contains("(--column-type e=TYPE declares another type)"));
  o.option_names = &kLibraryOptionNames;
  o.on_bad_value = BadValue::kError;
  o.out_dir = dir / "lib";
  CHECK_THAT(ConvertTable(o).status().message(),
             Catch::Contains("declare column_types[\"n\"] = string (or pass strings = true for every column) to keep "
                             "the column as text, or pass on_bad_value = BadValue::kMissing to store such cells as "
                             "missing"));
}

TEST_CASE("pcr-convert's table gives its flags' words, a type given again as NAME=TYPE") {
  TempDir dir;
  auto refusal = [&](const std::string& name, const std::string& text, const OptionNames& names) {
    test::WriteFile(dir / name, ByteSpan(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
    return ConvertTable({.input = dir / name, .out_dir = dir / "o", .option_names = &names}).status().message();
  };
  const std::string ints = "uid\n1\n-5\n18446744073709551615\n";
  CHECK_THAT(refusal("u.csv", ints, cli::kOptionNames),
             Catch::Contains("which no integer type holds both of: declare --column-type uid=string to keep them as "
                             "text, or uid=uint64 or uid=int64 with --on-bad-value missing to store the values the type "
                             "cannot hold as missing"));
  CHECK_THAT(refusal("u.csv", ints, kLibraryOptionNames),
             Catch::Contains("declare column_types[\"uid\"] = string to keep them as text, or "
                             "column_types[\"uid\"] = uint64 or column_types[\"uid\"] = int64 with "
                             "on_bad_value = BadValue::kMissing"));
  CHECK_THAT(refusal("t.csv", "t\n2020-01-01T00:00:00.123456789Z\n2300-01-01T00:00:00Z\n", cli::kOptionNames),
             Catch::Contains("declare --column-type t=string to keep the text, or t=timestamp_us if no time has "
                             "more than 6 fraction digits"));
  // Counting access logs of one table.
  const std::string rows = "a\n1\n2\n";
  test::WriteFile(dir / "r.csv", ByteSpan(reinterpret_cast<const uint8_t*>(rows.data()), rows.size()));
  Result<TableConvertReport> table = ConvertTable({.input = dir / "r.csv", .out_dir = dir / "r"});
  REQUIRE(table.ok());
  const Status other = ReorderTable(table->path, dir / "s", {"a"}, test::Io(), "0123456789abcdef", cli::kOptionNames).status();
  CHECK(other.message().ends_with("); count this table's access logs with pcr-dump popularity --table"));
  CHECK(cli::kOptionNames(Option::kCountOneTable, {"PATH"}) == "pcr-dump popularity --table PATH");
}

}  // namespace
}  // namespace pcr
