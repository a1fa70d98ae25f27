// The part of an image conversion that every input shares: sources in
// conversion order, read through a SourceReader, transcoded, and written as
// record files, a journal and a manifest (pcr/convert.h, ConvertImages).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "pcr/convert.h"
#include "writer/sources.h"
#include "writer/transcode_pool.h"

namespace pcr {

// The field ConvertImagesOptions::exif_orientation adds.
inline constexpr char kExifOrientationField[] = "exif_orientation";

struct ConversionInput {
  SourceList list;                 // in conversion order
  TableSchema fields;              // names and types; none without fields
  uint64_t fields_checksum = 0;    // ConversionPlan::fields_checksum
  // (key, reason) of what was refused before conversion; listed in the skip
  // list of part 0.
  std::vector<std::pair<std::string, std::string>> skipped;
  const SourceReader* reader = nullptr;
  // How errors name source i.
  std::function<std::string(uint64_t)> describe;
};

// `sources` in the order SeededPermutation(size, seed) gives (spec 10.3).
std::vector<SampleMetadata> Permuted(std::vector<SampleMetadata> sources, uint64_t seed);
// Converts `input` into options.out_dir as ConvertImages does.
Result<ConvertImagesSummary> ConvertInput(const ConvertImagesOptions& options, ConversionInput& input);

}  // namespace pcr
