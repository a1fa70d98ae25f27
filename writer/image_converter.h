// pcr-convert images: a JPEG dataset in, a pcr dataset directory out.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "format/scan_script.h"
#include "format/status.h"
#include "reader/jpeg_decode.h"

namespace pcr {

struct ConvertImagesOptions {
  std::string src_dir;              // ImageFolder root, or the root of --list paths
  std::string list_file;            // CSV "path,label" lines; empty: use class folders
  std::string out_dir;              // created if missing; must hold no dataset
  uint64_t images_per_record = 1024;  // images in one record (stripe)
  uint64_t records_per_file = 1;      // records in one .pcr file
  int jobs = 0;                       // transcoding threads; 0: all cores
  std::string scan_script = "spectral5";  // built-in name or a script file
  bool strip_metadata = false;           // drop APPn and COM segments
  bool skip_bad = false;  // skip unconvertible files, listed in OUT_DIR/skipped.tsv
  uint64_t max_pixels = kDefaultMaxPixels;  // larger images are refused after their header
  // Working memory of all jobs together (source bytes and libjpeg's arrays);
  // each job gets memory_bytes / jobs. 0: 1 GiB per job, at most half the RAM.
  uint64_t memory_bytes = 0;
  std::optional<uint64_t> shuffle_seed;  // shuffle image order before writing
  // Called after each record with (images done, images total).
  std::function<void(uint64_t, uint64_t)> progress;
};

struct ConvertImagesSummary {
  uint64_t images = 0;
  uint64_t records = 0;
  uint64_t files = 0;
  uint64_t input_bytes = 0;   // of the converted source files
  uint64_t output_bytes = 0;  // of the .pcr files
  std::vector<std::pair<std::string, std::string>> skipped;  // (path, reason)
};

// The name of the skip list written next to the output by skip_bad.
inline constexpr char kSkippedListName[] = "skipped.tsv";
// Present in OUT_DIR while a conversion runs: records beside it and no
// manifest are the remains of an interrupted conversion, which the next
// conversion into OUT_DIR removes.
inline constexpr char kConversionMarkerName[] = ".pcr-convert-incomplete";

// The built-in script `name_or_file` names, else the script in that file
// (its name is the file name). InvalidArgument when it is neither.
Result<ScanScript> LoadScanScript(const std::string& name_or_file);

// Converts every JPEG of the source into OUT_DIR. Never modifies the source.
// On error nothing that looks like a complete dataset is left: the manifest
// is written last, and files written so far are removed. Killed at any
// point, it leaves no manifest (or a complete dataset), and running it again
// completes. The output is the same bytes for any `jobs`.
Result<ConvertImagesSummary> ConvertImages(const ConvertImagesOptions& options);

}  // namespace pcr
