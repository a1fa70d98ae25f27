// How the users of a caller spell conversion options, so that the library's
// messages tell them what to type: pcr-convert's flags ("--skip-bad"),
// pcr's keyword arguments ("skip_bad=True"), or by default the C++ option
// fields ("skip_bad = true").
//
// Thread safety: an OptionNames is read only. Lifetimes: the options that
// point to one (option_names, never null) need it for as long as the call
// they are given to, and it needs the strings its spellings view; a
// constexpr table of string literals, as every caller's is, lives forever.
// A table is compiled against this header: Option grows with pcr's options.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "pcr/export.h"

namespace pcr {

// The options that messages name.
enum class Option : uint8_t {
  // Image conversion (ConvertImagesOptions).
  kImagesPerRecord,
  kRecordsPerFile,
  kScanScript,
  kStripMetadata,
  kSkipBad,
  kRestart,
  kShuffle,
  kKeepOrder,  // no shuffle: source order
  kList,
  kByContent,
  kFields,
  kFieldsKey,
  kFieldType,  // with values: the field's name, the type
  kFieldOrder,
  kExifOrientation,
  kShard,
  kNumShards,
  kShards,  // WebDataset shards
  kWorkDir,
  // Table conversion (TableConvertOptions).
  kFormat,
  kColumnType,  // with values: the column's name, the type
  kSchema,
  kStrings,
  kOnBadValueMissing,
  // Counting access logs for one table (CountAccessLogs' `table`), given
  // the table's path.
  kCountOneTable,
};
inline constexpr size_t kOptionCount = static_cast<size_t>(Option::kCountOneTable) + 1;

struct OptionSpelling {
  std::string_view alone;  // the option named, or a switch set: "--skip-bad", "skip_bad=True"
  std::string_view given;  // with values, each "{}" one: "--column-type {}={}"; empty when none
  // Given again in a sentence that has just named it ("or n=int64"); empty: as `given`.
  std::string_view again;
};

// The options spelt with values (`given`), which a complete table must spell so.
inline constexpr Option kOptionsWithValues[] = {Option::kFieldType, Option::kColumnType, Option::kCountOneTable};

class PCR_EXPORT OptionNames {
 public:
  // A table from (option, spelling) pairs; `complete` tells whether it spells every option, and
  // kOptionsWithValues with values.
  constexpr OptionNames(std::initializer_list<std::pair<Option, OptionSpelling>> spellings) {
    for (const auto& [option, spelling] : spellings) spellings_[static_cast<size_t>(option)] = spelling;
  }
  constexpr bool complete() const {
    for (const OptionSpelling& s : spellings_) {
      if (s.alone.empty()) return false;
    }
    for (const Option o : kOptionsWithValues) {
      if (spellings_[static_cast<size_t>(o)].given.empty()) return false;
    }
    return true;
  }

  // The option alone.
  std::string operator()(Option option) const;
  // The option given `values` (one per "{}" of its `given`, in order).
  std::string operator()(Option option, std::initializer_list<std::string_view> values) const;
  // The same, given again in one sentence (OptionSpelling::again).
  std::string Again(Option option, std::initializer_list<std::string_view> values) const;

 private:
  std::array<OptionSpelling, kOptionCount> spellings_{};
};

// The C++ option fields: "skip_bad = true", "column_types[\"n\"] = string".
PCR_EXPORT extern const OptionNames kLibraryOptionNames;

}  // namespace pcr
