// Image conversion: JPEG datasets (an ImageFolder, a list, WebDataset
// shards) into image datasets, sharded and resumable, then merged; field
// reordering; and the small objects a conversion keeps beside its output
// in object storage. Conversion never modifies its input, and its output
// appears only when complete.
//
// Thread safety: every function may be called from several threads at once
// for different outputs; two conversions into one directory refuse each
// other.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pcr/decode.h"
#include "pcr/export.h"
#include "pcr/io.h"
#include "pcr/option_names.h"
#include "pcr/status.h"
#include "pcr/types.h"

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
  // Drop APPn and COM segments but JFIF and Adobe. Kept, the segments a
  // decoder needs (JFIF, ICC, Adobe) stay in scan group 1 and the others
  // (EXIF, XMP, comments, ...) go to the segments stream, read only when
  // asked for (ImageRequest::segments).
  bool strip_metadata = false;
  bool skip_bad = false;  // skip unconvertible files, listed in OUT_DIR/skipped.tsv
  // Start over in an OUT_DIR holding an interrupted conversion, instead of
  // keeping its finished files (same options) or refusing (other options).
  bool restart = false;
  // Per-image fields: a .csv or .jsonl file with one row per image, keyed by
  // its path relative to src_dir in column `fields_key`. An image without a
  // row, or a row without an image, is an error (skipped and listed with
  // skip_bad). Types are inferred as for tables unless given in field_types.
  std::string fields_file;
  std::string fields_key = "path";
  std::map<std::string, FeatureType> field_types;
  // Fields whose streams come first in each record, in this order.
  std::vector<std::string> field_order;
  // Add the int64 field "exif_orientation": the EXIF orientation (1..8) of
  // each image that has one (with keep metadata, not strip_metadata).
  bool exif_orientation = false;
  // WebDataset tar shards (paths or brace patterns such as
  // "shard-{000000..000099}.tar"), for ConvertWebDataset.
  std::vector<std::string> shards;
  uint64_t max_pixels = kDefaultMaxPixels;  // larger images are refused after their header
  // Working memory of all jobs together (source bytes and libjpeg's arrays);
  // each job gets memory_bytes / jobs. 0: 1 GiB per job, at most half the RAM.
  uint64_t memory_bytes = 0;
  // Shuffles the image order before writing, by this seed, so that every
  // record mixes the classes of a source sorted by class; nullopt keeps the
  // source order.
  std::optional<uint64_t> shuffle_seed = 0;
  // Convert only part `shard_index` of `num_shards` (see ConvertImages).
  uint64_t shard_index = 0;
  uint64_t num_shards = 1;
  // Called after each batch of images, from the converting thread.
  std::function<void(const ConvertProgress&)> progress;
  // When set, polled before each image: once it holds true, the conversion
  // stops as a killed one does (the files finished so far stay, listed in
  // the journal, so the same call again resumes) and returns Cancelled.
  const std::atomic<bool>* cancel = nullptr;
  // When set, called from the converting thread with the path of each record
  // file once it is complete and journaled (never rewritten after); files
  // kept from an interrupted run are not announced again. With an s3://
  // out_dir, the file in the work directory, called before its upload.
  std::function<void(const std::string& path)> file_done;
  // out_dir may be s3://BUCKET/PREFIX: the conversion is written to
  // work_dir (empty: ConversionWorkDir) and then uploaded, every file before
  // the manifest (part.pcrd for a part of a sharded conversion), with
  // `remote`'s credentials and retries and its endpoint
  // (UploadOptions::s3_endpoint's where set); s3:// inputs are read from
  // `remote`'s endpoint.
  std::string work_dir;
  RemoteOptions remote;
  UploadOptions upload;
  // How messages name these options (pcr/option_names.h).
  const OptionNames* option_names = &kLibraryOptionNames;
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
PCR_EXPORT Result<ScanScript> LoadScanScript(const std::string& name_or_file,
                                             const OptionNames& names = kLibraryOptionNames);

// Converts every JPEG of the source into OUT_DIR. Never modifies the source.
//
// Source image i (in list order, after --shuffle) belongs to record
// i / images_per_record and file records-<i / (images_per_record *
// records_per_file)>.pcr, so every file's bytes depend only on its own
// sources: the output is the same for any `jobs`, and a file whose images
// were all skipped is not written. With num_shards > 1 (at most 2^32), this
// call converts the contiguous run of records [R * shard_index / num_shards,
// R * (shard_index + 1) / num_shards) of the R records and writes part.pcrd
// instead of dataset.pcrd: its first and last files are pieces where the run
// starts or ends inside a file. MergeParts joins the parts.
//
// The manifest is written last. On an error, or killed at any point, OUT_DIR
// holds no manifest; the files finished so far stay, listed in the journal,
// and the same call again keeps them and converts the rest.
PCR_EXPORT Result<ConvertImagesSummary> ConvertImages(const ConvertImagesOptions& options);

// What ConvertImages and ConvertWebDataset check of `options` before they
// read any input: positive record and file sizes, a shard below the shard
// count, field types, the scan script, and options that exclude each other.
PCR_EXPORT Status CheckConvertImagesOptions(const ConvertImagesOptions& options);

// The local directory of a conversion into object storage (out_dir
// s3://...): `work_dir` when set, else pcr-convert-<hash of out_dir> under
// the system temp dir. It holds the converted files (out/) and the journal
// of their uploads (upload.journal): the same conversion run again after a
// failure or kill resumes from them, uploads only what is missing and
// aborts the multipart uploads left open; the manifest goes up last, so a
// dataset is never seen before all its files are.
PCR_EXPORT std::string ConversionWorkDir(const std::string& out_dir, const std::string& work_dir);

// Small objects beside a conversion's output in object storage, such as the
// state a distributed conversion keeps with its parts. Each addresses the
// output's store: RemoteOptions with UploadOptions::s3_endpoint where set.
// `path` is s3://BUCKET/KEY. Thread safety: independent calls.
//
// The object's bytes, checked against its digest as conversion inputs are;
// NotFound when it does not exist.
PCR_EXPORT Result<std::string> GetObject(const std::string& path, const RemoteOptions& remote,
                                         const UploadOptions& upload);
// Puts `body` as the object in one PUT, checked (S3Uploader::Put's checks).
PCR_EXPORT Status PutObject(const std::string& path, std::string_view body, const RemoteOptions& remote,
                            const UploadOptions& upload);
// Aborts the multipart uploads and deletes the objects whose keys start
// with the key prefix of `prefix` (s3://BUCKET/KEYPREFIX; a bucket alone is
// refused), each listed once.
PCR_EXPORT Status DeleteObjects(const std::string& prefix, const RemoteOptions& remote, const UploadOptions& upload);

// Converts WebDataset tar shards (options.shards, in order) as ConvertImages
// converts images, reading each member in place. A sample is a run of
// members sharing a key (the member name up to the first dot of its last
// path component); its key is that key. It needs one .jpg or .jpeg member.
// Each other member is a field named by its extension: .txt a string, .cls
// an int64 that is also the label (-1 without one), .json one field per
// top-level member (objects and arrays of non-numbers kept as their JSON
// text), others bytes; field_types declares types as with fields_file. A
// truncated tar, a bad header checksum, or a sample without a JPEG is an
// error naming the shard, the member and its offset; with skip_bad the
// sample, or the rest of a damaged shard, is skipped and listed. list_file,
// fields_file and by_content do not apply.
PCR_EXPORT Result<ConvertImagesSummary> ConvertWebDataset(const ConvertImagesOptions& options);

struct MergeSummary {
  uint64_t parts = 0;
  uint64_t files = 0;
  uint64_t images = 0;
  uint64_t skipped = 0;  // lines of the parts' skip lists
  uint64_t output_bytes = 0;  // of the merged record files
};

// Joins the parts of one sharded conversion, every shard exactly once, into
// the dataset OUT_DIR: a record file one part holds whole is hard-linked
// (never copied, so OUT_DIR must be on the parts' filesystem), the pieces of
// a file cut between parts are joined into a new file (their streams checked
// as they are copied), skip lists are concatenated and the manifest lists the
// files in shard order. Parts in object storage (s3://, as a sharded
// ConvertImages into s3:// writes them) merge into an s3:// OUT_DIR of the
// same store, which copies each whole record file (CopyObject, at most 5 GiB
// a file); each is checked before and after (size, footer and index against
// the part manifest); pieces are read, joined and uploaded. The result equals the one-machine
// conversion of the same input and options, byte for byte. Parts are left
// as they are; an interrupted merge completes when run again.
PCR_EXPORT Result<MergeSummary> MergeParts(const std::string& out_dir, const std::vector<std::string>& part_dirs);

struct MergeOptions {
  std::string out_dir;  // a local directory, or s3://BUCKET/PREFIX
  std::vector<std::string> part_dirs;
  // For an s3:// out_dir, as in ConvertImagesOptions: the dataset is put
  // together in work_dir from symbolic links to local parts' files, then
  // uploaded (parts in the store are copied there), the manifest last; the
  // same call again resumes.
  std::string work_dir;
  RemoteOptions remote;
  UploadOptions upload;
  const OptionNames* option_names = &kLibraryOptionNames;  // how messages name options
};

// MergeParts(options.out_dir, options.part_dirs), into object storage too.
PCR_EXPORT Result<MergeSummary> MergeParts(const MergeOptions& options);
// What MergeParts refuses of `out_dir` before it reads a part, for a driver
// to check before any part is made: a local directory holding a dataset
// (one in object storage is checked by the merge).
PCR_EXPORT Status CheckMergeOutput(const std::string& out_dir);

// Rewrites the image dataset directory `input` into `output` with each
// record's field streams in `stream_order` (names not given follow in schema
// order), copying every stored stream; scan groups and segments are copied
// as they are. Each field is decoded first, so damage is refused, never
// copied under fresh checksums. The manifest is written last.
PCR_EXPORT Result<ConvertImagesSummary> ReorderImageFields(const std::string& input, const std::string& output,
                                                           const std::vector<std::string>& stream_order,
                                                           const IoEngineOptions& io = {});

}  // namespace pcr
