// What pcr-convert images writes beside its record files (spec sections 10,
// 10.1 and 10.2): file names, the plan checksum that identifies a conversion,
// and the conversion journal.
//
//   Journal := FirstLine "\n" LimitsLine "\n" [OptionsLine "\n"] (SkipLine* DoneLine)*
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "format/file_format.h"

namespace pcr {

// The skip list written next to the output when images are skipped.
inline constexpr char kSkippedListName[] = "skipped.tsv";
// The journal: present in OUT_DIR while a conversion runs, and after one
// failed or was killed.
inline constexpr char kConversionMarkerName[] = ".pcr-convert-incomplete";

// "records-NNNNN.pcr": the name of record file number `file`.
std::string RecordFileName(uint64_t file);
// True for the names a conversion writes: record files and the skip list.
bool IsConversionOutput(std::string_view name);

// What decides a conversion's output bytes, besides its sources.
struct ConversionPlan {
  uint64_t images_per_record = 0;
  uint64_t records_per_file = 0;
  bool strip_metadata = false;
  ScanScript script;
  std::vector<std::string> class_names;
  // Checksum64 of the conversion's fields (schema, values and stream
  // order); 0 without fields.
  uint64_t fields_checksum = 0;
};

// Checksum64 of the plan and the sources in conversion order (section 10.1).
uint64_t PlanChecksum(const ConversionPlan& plan, std::span<const SampleMetadata> sources);

// A file finished by a conversion, as the journal lists it.
struct FinishedFile {
  uint64_t file = 0;       // its number: RecordFileName(file)
  DatasetFileEntry entry;  // size 0: every image was skipped, no file
  uint64_t input_bytes = 0;
  std::vector<std::pair<uint64_t, std::string>> skipped;  // (source index, reason without newlines)
};

// "pcr-convert journal V plan ... shard I of N": V is 2 for a part (N > 1),
// whose shard is a run of records, else 1.
std::string JournalFirstLine(uint64_t plan_checksum, uint64_t shard_index, uint64_t shard_count);
// V of the journal (or first line) `text`; 0 when it starts with no FirstLine.
int JournalVersion(std::string_view text);
std::string JournalLimitsLine(bool skip_bad, uint64_t max_pixels, uint64_t memory_per_job);
// The options a conversion was run with, as (name, value) pairs:
// "options name=value ...", each value percent-encoded (section 10.2).
// Names are pcr-convert's flags without "--".
using JournalOptions = std::vector<std::pair<std::string, std::string>>;
// The "shuffle" value of a conversion that keeps the source order.
inline constexpr std::string_view kUnshuffled = "none (--keep-order)";
std::string JournalOptionsLine(const JournalOptions& options);
// The pairs of an options line; nullopt when `line` is not one.
std::optional<JournalOptions> ParseJournalOptionsLine(std::string_view line);
// The skip lines and the done line of `file`, each ending in "\n".
std::string EncodeJournalLines(const FinishedFile& file);

// The finished files a journal `text` lists when its first line is
// `first_line`, numbered consecutively from `first_file`, with source
// indexes below `source_count`; nothing when the journal belongs to another
// conversion. Only whole lines count, and the list ends at the first line
// that does not fit, or at the first file with skip lines when the
// journal's limits line is not `limits_line`.
std::vector<FinishedFile> DecodeJournal(std::string_view text, std::string_view first_line,
                                        std::string_view limits_line, uint64_t first_file, uint64_t source_count);

}  // namespace pcr
