#include "pcr/option_names.h"

namespace pcr {

std::string OptionNames::operator()(Option option) const {
  return std::string(spellings_[static_cast<size_t>(option)].alone);
}

namespace {

// `pattern` with each "{}" one of `values`, in order.
std::string Filled(std::string_view pattern, std::initializer_list<std::string_view> values) {
  std::string out;
  auto value = values.begin();
  for (size_t at = 0; at < pattern.size(); ++at) {
    if (pattern.compare(at, 2, "{}") == 0 && value != values.end()) {
      out += *value++;
      ++at;
    } else {
      out += pattern[at];
    }
  }
  return out;
}

}  // namespace

std::string OptionNames::operator()(Option option, std::initializer_list<std::string_view> values) const {
  const std::string_view given = spellings_[static_cast<size_t>(option)].given;
  return given.empty() ? (*this)(option) : Filled(given, values);
}

std::string OptionNames::Again(Option option, std::initializer_list<std::string_view> values) const {
  const std::string_view again = spellings_[static_cast<size_t>(option)].again;
  return again.empty() ? (*this)(option, values) : Filled(again, values);
}

constexpr OptionNames kLibrarySpelling = {
    {Option::kImagesPerRecord, {"images_per_record", ""}},
    {Option::kRecordsPerFile, {"records_per_file", ""}},
    {Option::kScanScript, {"scan_script", ""}},
    {Option::kStripMetadata, {"strip_metadata = true", ""}},
    {Option::kSkipBad, {"skip_bad = true", ""}},
    {Option::kRestart, {"restart = true", ""}},
    {Option::kShuffle, {"shuffle_seed", ""}},
    {Option::kKeepOrder, {"no shuffle_seed", ""}},
    {Option::kList, {"list_file", ""}},
    {Option::kByContent, {"by_content = true", ""}},
    {Option::kFields, {"fields_file", ""}},
    {Option::kFieldsKey, {"fields_key", ""}},
    {Option::kFieldType, {"field_types", "field_types[\"{}\"] = {}"}},
    {Option::kFieldOrder, {"field_order", ""}},
    {Option::kExifOrientation, {"exif_orientation = true", ""}},
    {Option::kShard, {"shard_index", ""}},
    {Option::kNumShards, {"num_shards", ""}},
    {Option::kShards, {"shards", ""}},
    {Option::kWorkDir, {"work_dir", ""}},
    {Option::kFormat, {"format", ""}},
    {Option::kColumnType, {"column_types", "column_types[\"{}\"] = {}"}},
    {Option::kSchema, {"schema_file", ""}},
    {Option::kStrings, {"strings = true", ""}},
    {Option::kOnBadValueMissing, {"on_bad_value = BadValue::kMissing", ""}},
    {Option::kCountOneTable, {"CountAccessLogs' table", "CountAccessLogs(logs, {})"}},
};
static_assert(kLibrarySpelling.complete());
const OptionNames kLibraryOptionNames = kLibrarySpelling;

}  // namespace pcr
