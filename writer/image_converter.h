// pcr-convert images: a JPEG dataset in, a pcr dataset directory out.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "format/journal.h"
#include "format/scan_script.h"
#include "format/status.h"
#include "jpeg/jpeg_limits.h"

namespace pcr {

struct ConvertProgress {
  uint64_t images_done = 0;     // source images of this shard handled, converted or skipped
  uint64_t images_total = 0;    // source images of this shard
  uint64_t images_resumed = 0;  // of images_done, in files kept from an interrupted run
  uint64_t bytes_read = 0;      // source bytes read by this run
};

struct ConvertImagesOptions {
  std::string src_dir;              // ImageFolder root, or the root of --list paths
  std::string list_file;            // CSV "path,label" lines; empty: use class folders
  // In class folders, take every file that starts with a JPEG signature
  // (FF D8 FF) rather than the files named .jpg, .jpeg, .jpe or .jfif.
  bool by_content = false;
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
  // Convert only part `shard_index` of `num_shards` (see ConvertImages).
  uint64_t shard_index = 0;
  uint64_t num_shards = 1;
  // Called after each batch of images, from the converting thread.
  std::function<void(const ConvertProgress&)> progress;
};

struct ConvertImagesSummary {
  uint64_t images = 0;
  uint64_t records = 0;
  uint64_t files = 0;
  uint64_t input_bytes = 0;   // of the converted source files
  uint64_t output_bytes = 0;  // of the .pcr files
  std::vector<std::pair<std::string, std::string>> skipped;  // (path, reason)
  uint64_t resumed_files = 0;  // finished by an interrupted run and kept
  // Files in class folders that were not taken as images (by name, or by
  // content with by_content), and the first few of their keys in sorted order.
  uint64_t ignored_files = 0;
  std::vector<std::string> ignored_examples;
};

// The built-in script `name_or_file` names, else the script in that file
// (its name is the file name). InvalidArgument when it is neither.
Result<ScanScript> LoadScanScript(const std::string& name_or_file);

// Converts every JPEG of the source into OUT_DIR. Never modifies the source.
//
// Source image i (in list order, after --shuffle) belongs to record
// i / images_per_record and file records-<i / (images_per_record *
// records_per_file)>.pcr, so every file's bytes depend only on its own
// sources: the output is the same for any `jobs`, and a file whose images
// were all skipped is not written. With num_shards > 1, this call converts
// the contiguous run of files [F * shard_index / num_shards, F * (shard_index
// + 1) / num_shards) of the F files and writes part.pcrd instead of
// dataset.pcrd; MergeParts joins the parts.
//
// The manifest is written last. On an error, or killed at any point, OUT_DIR
// holds no manifest; the files finished so far stay, listed in the journal,
// and the same call again keeps them and converts the rest.
Result<ConvertImagesSummary> ConvertImages(const ConvertImagesOptions& options);

}  // namespace pcr
