// The conversion options as pcr-convert's flags, for the library's messages.
#pragma once

#include "pcr/option_names.h"

namespace pcr::cli {

inline constexpr OptionNames kOptionNames = {
    {Option::kImagesPerRecord, {"--images-per-record", ""}},
    {Option::kRecordsPerFile, {"--records-per-file", ""}},
    {Option::kScanScript, {"--scan-script", ""}},
    {Option::kStripMetadata, {"--strip-metadata", ""}},
    {Option::kSkipBad, {"--skip-bad", ""}},
    {Option::kRestart, {"--restart", ""}},
    {Option::kShuffle, {"--shuffle", ""}},
    {Option::kKeepOrder, {"--keep-order", ""}},
    {Option::kList, {"--list", ""}},
    {Option::kByContent, {"--by-content", ""}},
    {Option::kFields, {"--fields", ""}},
    {Option::kFieldsKey, {"--fields-key", ""}},
    {Option::kFieldType, {"--field-type", "--field-type {}={}", "{}={}"}},
    {Option::kFieldOrder, {"--field-order", ""}},
    {Option::kExifOrientation, {"--exif-orientation", ""}},
    {Option::kShard, {"--shard", ""}},
    {Option::kNumShards, {"--num-shards", ""}},
    {Option::kShards, {"--shards", ""}},
    {Option::kWorkDir, {"--work-dir", ""}},
    {Option::kFormat, {"--format", ""}},
    {Option::kColumnType, {"--column-type", "--column-type {}={}", "{}={}"}},
    {Option::kSchema, {"--schema", ""}},
    {Option::kStrings, {"--strings", ""}},
    {Option::kOnBadValueMissing, {"--on-bad-value missing", ""}},
    {Option::kCountOneTable, {"pcr-dump popularity --table", "pcr-dump popularity --table {}"}},
};
static_assert(kOptionNames.complete());

}  // namespace pcr::cli
