// pcr-convert: datasets in.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

#include "pcr/version.h"
#include "tools/cli.h"
#include "tools/option_spelling.h"
#include "format/file_format.h"
#include "format/journal.h"
#include "writer/remote_output.h"
#include "writer/stream_encoder.h"
#include "io/location.h"
#include "pcr/convert.h"

namespace {

// Each command's usage: the synopsis, a blank line, then every option.
constexpr char kImagesUsage[] =
    "pcr-convert images SRC_DIR OUT_DIR [--list FILE | --by-content] [--images-per-record N]\n"
    "                          [--records-per-file N] [--jobs N] [--scan-script NAME|FILE]\n"
    "                          [--strip-metadata] [--skip-bad] [--shuffle SEED | --keep-order]\n"
    "                          [--restart]\n"
    "                          [--max-pixels N] [--memory-mb N] [--shard I --num-shards N]\n"
    "                          [--fields FILE [--fields-key NAME] [--field-type NAME=TYPE]...\n"
    "                           [--field-order NAME,...]] [--exif-orientation]\n"
    "                          [--work-dir DIR] [--part-size-mib N] [--multipart-threshold-mib N]\n"
    "                          [--upload-concurrency N] [--upload-memory-mib N]\n"
    "                          [--input-endpoint URL] [--output-endpoint URL]\n"
    "\n"
    "  SRC_DIR/<class>/<image>.jpg; label = index of <class> in sorted order.\n"
    "  SRC_DIR may be s3://BUCKET/PREFIX (listed), and --list and --fields s3:// or\n"
    "  http(s):// objects.\n"
    "  OUT_DIR may be s3://BUCKET/PREFIX (AWS_* variables as for reading): the\n"
    "  dataset is converted into --work-dir (default: a directory named after\n"
    "  OUT_DIR under the temp dir), then uploaded with its manifest last; run\n"
    "  again after a failure, the same command resumes from --work-dir.\n"
    "  --part-size-mib N    multipart upload parts (default 16, at least 5)\n"
    "  --multipart-threshold-mib N  files this large go up in parts (default 64)\n"
    "  --upload-concurrency N  files and parts going up at once (default 8)\n"
    "  --upload-memory-mib N   bytes they hold together (default 256; one always goes)\n"
    "  --input-endpoint URL    the store of s3:// inputs, --output-endpoint URL that\n"
    "                       of an s3:// OUT_DIR (default for both: AWS_ENDPOINT_URL_S3,\n"
    "                       AWS_ENDPOINT_URL, the profile's endpoint_url, else AWS)\n"
    "  --list FILE          CSV lines \"path,label\", paths relative to SRC_DIR\n"
    "  --by-content         take files that start like a JPEG (FF D8 FF), whatever\n"
    "                       their names, instead of .jpg, .jpeg, .jpe and .jfif files\n"
    "  --images-per-record  images per record (default 1024)\n"
    "  --records-per-file   records per .pcr file (default 1)\n"
    "  --jobs N             transcoding threads (default: all cores)\n"
    "  --scan-script        spectral5 (default), spectral, libjpeg, or a script file\n"
    "  --strip-metadata     drop APPn/COM segments (EXIF, ICC profiles). Kept, EXIF, XMP,\n"
    "                       comments and the like are stored apart from the scan groups\n"
    "                       and read only when asked for (pcr-dump extract --metadata)\n"
    "  --skip-bad           skip files that cannot be converted; list them in OUT_DIR/skipped.tsv\n"
    "  --shuffle SEED       the seed of the order images are written in (default 0):\n"
    "                       shuffled, so that records mix the classes\n"
    "  --keep-order         write images in source order (sorted keys, or --list order)\n"
    "  --max-pixels N       refuse images of more than N pixels (default 178956970)\n"
    "  --memory-mb N        working memory of all jobs together, split evenly\n"
    "                       (default: 1024 per job, at most half the RAM)\n"
    "  --fields FILE        per-image fields: .csv (header row) or .jsonl, one row per\n"
    "                       image; column NAME (--fields-key, default path) holds the\n"
    "                       image path relative to SRC_DIR, every other column is a field\n"
    "  --field-type NAME=TYPE  declare a field's type: int64, float64, float32, string,\n"
    "                       bytes, id_list, float32_list, float64_list (default: inferred)\n"
    "  --field-order NAMES  store the streams of these fields first, in this order\n"
    "  --exif-orientation   add the int64 field exif_orientation: each image's EXIF\n"
    "                       orientation (1..8), missing where it has none\n"
    "  --shard I --num-shards N  convert only part I (0..N-1) of the records into\n"
    "                       OUT_DIR (local or s3://), a part; join the N parts with merge\n"
    "  --restart            start over in an OUT_DIR holding an interrupted conversion\n"
    "  Run again after an interruption, the same command keeps finished files; other\n"
    "  options are refused, naming the one that differs, unless --restart.\n";
constexpr char kWebdatasetUsage[] =
    "pcr-convert webdataset SHARD... OUT_DIR [the options of images but --list,\n"
    "                          --by-content and --fields]\n"
    "\n"
    "  WebDataset tar shards: files, or s3:// and http(s):// objects (streamed;\n"
    "  brace patterns such as shard-{000000..000099}.tar expanded), read in place. A sample is the members sharing a key; it needs\n"
    "  a .jpg or .jpeg. Other members become fields named by their extension:\n"
    "  .txt a string, .cls an int64 and the label, each member of a .json object\n"
    "  a field of its inferred type, anything else bytes.\n";
constexpr char kMergeUsage[] =
    "pcr-convert merge OUT_DIR PART_DIR... [--work-dir DIR] [--part-size-mib N]\n"
    "                         [--multipart-threshold-mib N] [--upload-concurrency N]\n"
    "                         [--upload-memory-mib N] [--output-endpoint URL]\n"
    "\n"
    "  Joins the parts of a sharded conversion into the dataset OUT_DIR: files a\n"
    "  part holds whole by hard links (same filesystem), files cut between parts\n"
    "  from their pieces: the same bytes as converting on one machine.\n"
    "  OUT_DIR may be s3://BUCKET/PREFIX, as for images: the record files go up\n"
    "  from the parts, the manifest last. Parts in the output's store (shards\n"
    "  converted into s3://) are copied there by the store.\n";
constexpr char kTableUsage[] =
    "pcr-convert table INPUT OUT_DIR [--rows-per-stripe N] [--stripe-mb N] [--split-mb N]\n"
    "                         [--zstd-level N] [--encoding NAME] [--popularity FILE]\n"
    "                         [--float32] [--schema FILE] [--column-type NAME=TYPE]... [--strings]\n"
    "                         [--on-bad-value error|missing] [--delimiter C] [--format F]\n"
    "                         [--work-dir DIR] [--part-size-mib N] [--multipart-threshold-mib N]\n"
    "                         [--upload-concurrency N] [--upload-memory-mib N]\n"
    "                         [--input-endpoint URL] [--output-endpoint URL]\n"
    "\n"
    "  INPUT (a file, or an s3:// or http(s):// object) is .csv or .tsv (header\n"
    "  row; empty and NA are missing) or .jsonl (one object\n"
    "  per line; \"dense\", \"sparse\" and \"scored\" map feature ids to values;\n"
    "  other keys are columns), each also gzip- or zstd-compressed (.gz, .zst;\n"
    "  decompressed into TMPDIR, default /tmp), or - for standard input (with\n"
    "  --format; writes OUT_DIR/stdin.pcr). Writes OUT_DIR/<stem>.pcr. Column types are\n"
    "  inferred (int64, uint64, float64, bool for true/false, timestamp_us or _ns\n"
    "  for ISO 8601 times, else string) unless declared. OUT_DIR may be\n"
    "  s3://BUCKET/PREFIX, as for images.\n"

    "  --rows-per-stripe N  close a stripe after N rows (default 131072; 0: by size only)\n"
    "  --stripe-mb N        close a stripe at N MiB of raw stream bytes (default 128)\n"
    "  --split-mb N         a stripe never holds rows that start in two N MiB splits\n"
    "                       of INPUT (default 64), so that pcr.dask.convert_table,\n"
    "                       which converts whole splits, writes the same file\n"
    "  --zstd-level N       zstd level of every stream (default 3)\n"
    "  --encoding NAME      auto (default: chosen per stream on a sample), or force\n"
    "                       constant, bitpack, delta, rle, dictionary, split,\n"
    "                       decimal or string_dictionary where a stream allows it;\n"
    "                       plain writes files that readers before 0.5 read\n"
    "  --popularity FILE    write the streams of these features first, most used first\n"
    "  --float32            store undeclared floating point values as float32 (lossy)\n"
    "  --delimiter C        the character between CSV cells (default ',', a tab for\n"
    "                       .tsv; \\t or tab for a tab)\n"
    "  --format F           csv, tsv or jsonl: INPUT's format (default: from its name)\n"
    "  --schema FILE        declared types, a JSON object: {\"uid\": \"uint64\",\n"
    "                       \"date\": \"timestamp\", \"dense\": \"float32\"}\n"
    "  --column-type NAME=TYPE  declare one type (wins over --schema). TYPE: bool,\n"
    "                       int64, uint64, float32, float64, timestamp (= timestamp_us),\n"
    "                       timestamp_s, timestamp_ms, timestamp_ns, string, bytes,\n"
    "                       id_list, uint64_id_list, float32_list, float64_list (JSON\n"
    "                       arrays of numbers; uint64_id_list when an id is above int64).\n"
    "                       NAME is a column, a map feature id, or a map: dense=float32,\n"
    "                       scored=float32 (the scores' type); map features also take\n"
    "                       id_list, uint64_id_list (sparse) and scored_id_list32,\n"
    "                       scored_id_list64 (scored)\n"
    "  --strings            undeclared columns are strings, not inferred\n"
    "  --on-bad-value W     a cell that is not of its column's type: error (default;\n"
    "                       names its line, column and value) or missing\n";
constexpr char kReorderUsage[] =
    "pcr-convert reorder IN OUT --popularity FILE\n"
    "\n"
    "  Rewrites table IN with its streams in popularity order, copying compressed\n"
    "  streams. OUT is a .pcr path or a directory. For an image dataset IN, rewrites\n"
    "  it into the directory OUT with its field streams in that order.\n";

struct Command {
  const char* name;
  const char* usage;
};
constexpr Command kCommands[] = {{"images", kImagesUsage},
                                 {"webdataset", kWebdatasetUsage},
                                 {"merge", kMergeUsage},
                                 {"table", kTableUsage},
                                 {"reorder", kReorderUsage}};
const Command* g_command = nullptr;  // the command being run

// The usage of every command, or with `why`, why and the synopsis of the
// command being run.
int Usage(const std::string& why) {
  if (why.empty() || g_command == nullptr) {
    if (!why.empty()) std::fprintf(stderr, "pcr-convert: %s\n", why.c_str());
    for (const Command& c : kCommands) {
      const std::string_view u = c.usage;
      std::fprintf(stderr, "%s%s", &c == kCommands ? "usage: " : "       ",
                   std::string(u.substr(0, u.find("\n\n") + 1)).c_str());
    }
    std::fputs("pcr-convert COMMAND --help gives every option of COMMAND\n", stderr);
    return pcr::cli::kExitUsage;
  }
  const std::string_view u = g_command->usage;
  std::fprintf(stderr, "pcr-convert: %s\nusage: %s(pcr-convert %s --help gives every option)\n", why.c_str(),
               std::string(u.substr(0, u.find("\n\n") + 1)).c_str(), g_command->name);
  return pcr::cli::kExitUsage;
}

// Splits "NAME=TYPE" at its last '='; false without a name or with an unknown type. `table`
// takes ParseTableType's names.
bool NameAndType(const std::string& v, std::string* name, pcr::FeatureType* type, bool table) {
  const size_t eq = v.rfind('=');  // a name may hold '=', a type never does
  if (eq == std::string::npos || eq == 0) return false;
  const std::string t = v.substr(eq + 1);
  if (!(table ? pcr::ParseTableType(t, type) : pcr::ParseFeatureTypeName(t, type))) return false;
  *name = v.substr(0, eq);
  return true;
}

// Takes `a` (and its value) when it is one of the options of uploads and
// endpoints (--input-endpoint only with `input_endpoint`): true with
// *status set to a usage error's exit code when the value is bad.
bool UploadOption(const std::string& a, pcr::cli::Args& args, std::string* work_dir, pcr::UploadOptions* upload,
                  std::string* input_endpoint, int* status) {
  if (a != "--work-dir" && a != "--part-size-mib" && a != "--multipart-threshold-mib" &&
      a != "--upload-concurrency" && a != "--upload-memory-mib" && a != "--output-endpoint" &&
      (a != "--input-endpoint" || input_endpoint == nullptr)) {
    return false;
  }
  const std::string v = args.empty() ? "" : args.next();
  uint64_t n = 0;
  const bool is_number = pcr::cli::ParseUint(v, &n);
  *status = pcr::cli::kExitOk;
  if (a == "--work-dir") {
    if (v.empty()) *status = Usage("--work-dir needs a directory");
    *work_dir = v;
  } else if (a == "--input-endpoint" || a == "--output-endpoint") {
    if (!v.starts_with("http://") && !v.starts_with("https://")) *status = Usage(a + " needs an http(s):// URL");
    *(a == "--input-endpoint" ? input_endpoint : &upload->s3_endpoint) = v;
  } else if (a == "--part-size-mib") {
    if (!is_number || n < 5 || n > 5120) *status = Usage("--part-size-mib needs 5..5120");
    upload->part_size = n << 20;
  } else if (a == "--upload-concurrency") {
    if (!is_number || n < 1 || n > 64) *status = Usage("--upload-concurrency needs 1..64");
    upload->concurrency = static_cast<unsigned>(n);
  } else if (a == "--upload-memory-mib") {
    if (!is_number || n == 0 || n > (uint64_t{1} << 30)) *status = Usage("--upload-memory-mib needs a positive integer");
    upload->memory = n << 20;
  } else {
    if (!is_number || n == 0 || n > (uint64_t{1} << 30)) {
      *status = Usage("--multipart-threshold-mib needs a positive integer");
    }
    upload->multipart_threshold = n << 20;
  }
  return true;
}

// `images SRC_DIR OUT_DIR`, or with `webdataset`, `webdataset SHARD... OUT_DIR`.
int ConvertImagesCommand(pcr::cli::Args& args, bool webdataset) {
  pcr::ConvertImagesOptions o{.option_names = &pcr::cli::kOptionNames};
  std::string input_endpoint;
  std::vector<std::string> positional;
  bool shuffle_given = false, keep_order = false;
  while (!args.empty()) {
    const std::string a = args.next();
    auto value = [&](std::string* out) {
      if (args.empty()) return false;
      *out = args.next();
      return true;
    };
    auto number = [&](uint64_t* out) {
      std::string v;
      return value(&v) && pcr::cli::ParseUint(v, out);
    };
    uint64_t n = 0;
    if (a == "--list") {
      if (!value(&o.list_file)) return Usage("--list needs a file");
    } else if (a == "--by-content") {
      o.by_content = true;
    } else if (a == "--images-per-record") {
      if (!number(&o.images_per_record) || o.images_per_record == 0) {
        return Usage("--images-per-record needs a positive integer");
      }
    } else if (a == "--records-per-file") {
      if (!number(&o.records_per_file) || o.records_per_file == 0) {
        return Usage("--records-per-file needs a positive integer");
      }
    } else if (a == "--jobs") {
      if (!number(&n) || n == 0 || n > 1024) return Usage("--jobs needs an integer in 1..1024");
      o.jobs = static_cast<int>(n);
    } else if (a == "--scan-script") {
      if (!value(&o.scan_script)) return Usage("--scan-script needs a name or file");
    } else if (a == "--strip-metadata") {
      o.strip_metadata = true;
    } else if (a == "--max-pixels") {
      if (!number(&o.max_pixels) || o.max_pixels == 0) return Usage("--max-pixels needs a positive integer");
    } else if (a == "--memory-mb") {
      if (!number(&n) || n == 0 || n > (uint64_t{1} << 40)) return Usage("--memory-mb needs a positive integer");
      o.memory_bytes = n << 20;
    } else if (a == "--skip-bad") {
      o.skip_bad = true;
    } else if (a == "--restart") {
      o.restart = true;
    } else if (a == "--shuffle") {
      if (!number(&n)) return Usage("--shuffle needs an integer seed");
      if (keep_order) return Usage("--shuffle and --keep-order exclude each other");
      o.shuffle_seed = n;
      shuffle_given = true;
    } else if (a == "--keep-order") {
      if (shuffle_given) return Usage("--shuffle and --keep-order exclude each other");
      o.shuffle_seed.reset();
      keep_order = true;
    } else if (a == "--fields") {
      if (!value(&o.fields_file)) return Usage("--fields needs a file");
    } else if (a == "--fields-key") {
      if (!value(&o.fields_key) || o.fields_key.empty()) return Usage("--fields-key needs a column name");
    } else if (a == "--field-type") {
      std::string v, name;
      if (!value(&v) || v.find('=') == std::string::npos || v.find('=') == 0) {
        return Usage("--field-type needs NAME=TYPE");
      }
      pcr::FeatureType type;
      if (!NameAndType(v, &name, &type, false) || type == pcr::FeatureType::kScoredIdList32 ||
          type == pcr::FeatureType::kScoredIdList64 || type >= pcr::FeatureType::kBool) {
        return Usage("--field-type " + v + ": unknown type (int64, float64, float32, string, bytes, id_list, "
                     "float32_list, float64_list)");
      }
      o.field_types[name] = type;
    } else if (a == "--exif-orientation") {
      o.exif_orientation = true;
    } else if (a == "--field-order") {
      std::string v;
      if (!value(&v)) return Usage("--field-order needs field names");
      o.field_order = pcr::cli::SplitCommas(v);
    } else if (a == "--shard") {
      if (!number(&o.shard_index)) return Usage("--shard needs an integer");
    } else if (a == "--num-shards") {
      if (!number(&o.num_shards) || o.num_shards == 0) return Usage("--num-shards needs a positive integer");
    } else if (int status = 0; UploadOption(a, args, &o.work_dir, &o.upload, &input_endpoint, &status)) {
      if (status != pcr::cli::kExitOk) return status;
    } else if (a.starts_with("--")) {
      return Usage("unknown option " + a);
    } else {
      positional.push_back(a);
    }
  }
  if (webdataset) {
    if (positional.size() < 2) return Usage("webdataset needs SHARD... and OUT_DIR");
    if (!o.list_file.empty() || !o.fields_file.empty() || o.by_content) {
      return Usage("webdataset takes its samples and fields from the shards: no --list, --fields or --by-content");
    }
    o.shards.assign(positional.begin(), positional.end() - 1);
    positional = {"", positional.back()};
  } else if (positional.size() != 2) {
    return Usage("images needs SRC_DIR and OUT_DIR");
  }
  if (o.by_content && !o.list_file.empty()) return Usage("--by-content applies to class folders, not to --list");
  if (o.shard_index >= o.num_shards) return Usage("--shard must be below --num-shards");
  if (o.fields_file.empty() && !webdataset && (!o.field_types.empty() || !o.field_order.empty())) {
    return Usage("--field-type and --field-order need --fields");
  }
  o.src_dir = positional[0];
  o.out_dir = positional[1];
  const bool to_store = pcr::IsObjectStoreOutput(o.out_dir);
  // For remote inputs and outputs.
  auto io = pcr::cli::IoOptionsFromEnvironment();
  if (!io.ok()) return pcr::cli::ReportError("pcr-convert", io.status());
  o.remote = io->remote;
  if (!input_endpoint.empty()) o.remote.s3_endpoint = input_endpoint;
  if (to_store) {
    std::fprintf(stderr, "pcr-convert: converting into %s, then uploading to %s\n",
                 pcr::ConversionWorkDir(o.out_dir, o.work_dir).c_str(), o.out_dir.c_str());
  }
  pcr::cli::Progress progress;
  const auto start = std::chrono::steady_clock::now();
  o.progress = [&](const pcr::ConvertProgress& p) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double rate = static_cast<double>(p.images_done - p.images_resumed) / std::max(seconds, 1e-3);
    char text[160];
    std::snprintf(text, sizeof(text), "%llu/%llu images, %s read, %.0f images/s, %s left  ",
                  static_cast<unsigned long long>(p.images_done),
                  static_cast<unsigned long long>(p.images_total), pcr::cli::FormatBytes(p.bytes_read).c_str(), rate,
                  pcr::cli::FormatDuration(static_cast<double>(p.images_total - p.images_done) / rate).c_str());
    progress.Update(text);
  };
  auto result = webdataset ? pcr::ConvertWebDataset(o) : pcr::ConvertImages(o);
  progress.Finish();
  if (!result.ok()) {
    pcr::cli::ReportError("pcr-convert", result.status());
    if (to_store && result.status().code() != pcr::StatusCode::kInvalidArgument &&
        std::filesystem::exists(pcr::ConversionWorkDir(o.out_dir, o.work_dir))) {
      std::fprintf(stderr, "pcr-convert: %s holds no manifest; the same command run again resumes from %s\n",
                   o.out_dir.c_str(), pcr::ConversionWorkDir(o.out_dir, o.work_dir).c_str());
    } else if (std::filesystem::exists(std::filesystem::path(o.out_dir) / pcr::kConversionMarkerName)) {
      std::fprintf(stderr, "pcr-convert: the files finished so far stay in %s; the same command run again keeps them\n",
                   o.out_dir.c_str());
    }
    return pcr::cli::kExitBadInput;
  }
  const auto& s = *result;
  if (s.resumed_files > 0) {
    std::printf("kept %llu files finished by an interrupted run\n", static_cast<unsigned long long>(s.resumed_files));
  }
  std::printf("%llu images in %llu records (%llu files), %llu bytes from %llu input bytes (%.3f)\n",
              static_cast<unsigned long long>(s.images), static_cast<unsigned long long>(s.records),
              static_cast<unsigned long long>(s.files), static_cast<unsigned long long>(s.output_bytes),
              static_cast<unsigned long long>(s.input_bytes),
              s.input_bytes ? static_cast<double>(s.output_bytes) / s.input_bytes : 0.0);
  if (!s.skipped.empty()) {
    std::fprintf(stderr, "pcr-convert: skipped %zu files, listed in %s/%s\n", s.skipped.size(),
                 o.out_dir.c_str(), pcr::kSkippedListName);
  }
  if (s.ignored_files > 0) {
    std::string examples;
    for (const std::string& key : s.ignored_examples) examples += (examples.empty() ? "" : ", ") + key;
    std::fprintf(stderr, "pcr-convert: ignored %llu files %s (e.g. %s)%s\n",
                 static_cast<unsigned long long>(s.ignored_files),
                 o.by_content ? "without a JPEG signature" : "not named .jpg, .jpeg, .jpe or .jfif", examples.c_str(),
                 o.by_content ? "" : "; --by-content takes files by their JPEG signature instead");
  }
  return pcr::cli::kExitOk;
}

int MergeCommand(pcr::cli::Args& args) {
  pcr::MergeOptions o{.option_names = &pcr::cli::kOptionNames};
  std::vector<std::string> positional;
  while (!args.empty()) {
    const std::string a = args.next();
    if (int status = 0; UploadOption(a, args, &o.work_dir, &o.upload, nullptr, &status)) {
      if (status != pcr::cli::kExitOk) return status;
    } else if (a.starts_with("--")) {
      return Usage("unknown option " + a);
    } else {
      positional.push_back(a);
    }
  }
  if (positional.size() < 2) return Usage("merge needs OUT_DIR and at least one PART_DIR");
  o.out_dir = positional[0];
  o.part_dirs.assign(positional.begin() + 1, positional.end());
  if (pcr::IsObjectStoreOutput(o.out_dir)) {
    auto io = pcr::cli::IoOptionsFromEnvironment();
    if (!io.ok()) return pcr::cli::ReportError("pcr-convert", io.status());
    o.remote = io->remote;
    std::fprintf(stderr, "pcr-convert: merging into %s, then uploading to %s\n",
                 pcr::ConversionWorkDir(o.out_dir, o.work_dir).c_str(), o.out_dir.c_str());
  }
  auto result = pcr::MergeParts(o);
  if (!result.ok()) return pcr::cli::ReportError("pcr-convert", result.status());
  std::printf("%llu parts: %llu images in %llu files\n", static_cast<unsigned long long>(result->parts),
              static_cast<unsigned long long>(result->images), static_cast<unsigned long long>(result->files));
  if (result->skipped > 0) {
    std::fprintf(stderr, "pcr-convert: the parts skipped %llu files, listed in %s/%s\n",
                 static_cast<unsigned long long>(result->skipped), positional[0].c_str(), pcr::kSkippedListName);
  }
  return pcr::cli::kExitOk;
}

void PrintTableReport(const pcr::TableConvertReport& r) {
  std::printf("%s: %llu rows, %zu features, %llu stripes, %llu bytes from %llu input bytes (%.3f)\n",
              r.path.c_str(), static_cast<unsigned long long>(r.schema.row_count), r.schema.features.size(),
              static_cast<unsigned long long>(r.stripes), static_cast<unsigned long long>(r.output_bytes),
              static_cast<unsigned long long>(r.input_bytes),
              r.input_bytes ? static_cast<double>(r.output_bytes) / r.input_bytes : 0.0);
}

int ConvertTableCommand(pcr::cli::Args& args, bool reorder) {
  pcr::TableConvertOptions o{.option_names = &pcr::cli::kOptionNames};
  std::string input_endpoint;
  std::vector<std::string> positional;
  std::string popularity;
  while (!args.empty()) {
    const std::string a = args.next();
    uint64_t n = 0;
    auto number = [&]() { return !args.empty() && pcr::cli::ParseUint(args.next(), &n); };
    if (a == "--popularity") {
      if (args.empty()) return Usage("--popularity needs a file");
      popularity = args.next();
    } else if (!reorder && a == "--rows-per-stripe") {
      if (!number() || n > pcr::kMaxStripeRows) return Usage("--rows-per-stripe needs an integer (0: no limit)");
      o.writer.rows_per_stripe = n;
    } else if (!reorder && a == "--stripe-mb") {
      if (!number() || n == 0 || n > (1u << 20)) return Usage("--stripe-mb needs a positive integer");
      o.writer.stripe_bytes = n << 20;
    } else if (!reorder && a == "--split-mb") {
      if (!number() || n == 0 || n > (1u << 30)) return Usage("--split-mb needs a positive integer");
      o.split_bytes = n << 20;
    } else if (!reorder && a == "--zstd-level") {
      if (!number() || n < 1 || n > 22) return Usage("--zstd-level needs an integer in 1..22");
      o.writer.zstd_level = static_cast<int>(n);
    } else if (!reorder && a == "--encoding") {
      pcr::EncodingChoice choice;
      if (args.empty() || !pcr::ParseEncodingChoice(o.writer.stream_encoding = args.next(), &choice)) {
        return Usage("--encoding needs auto, plain or an encoding's name");
      }
    } else if (!reorder && a == "--float32") {
      o.float32 = true;
    } else if (!reorder && a == "--column-type") {
      std::string name;
      pcr::FeatureType type;
      if (args.empty() || !NameAndType(args.next(), &name, &type, true)) {
        return Usage(std::string("--column-type needs NAME=TYPE, TYPE one of ") + pcr::kTableTypeNames);
      }
      o.column_types[name] = type;
    } else if (!reorder && a == "--schema") {
      if (args.empty()) return Usage("--schema needs a file");
      o.schema_file = args.next();
    } else if (!reorder && a == "--strings") {
      o.strings = true;
    } else if (!reorder && a == "--delimiter") {
      const std::string v = args.empty() ? "" : args.next();
      if (v == "\\t" || v == "tab") {
        o.delimiter = '\t';
      } else if (v.size() == 1) {
        o.delimiter = v[0];
      } else {
        return Usage("--delimiter needs one character (or \\t or tab for a tab)");
      }
    } else if (!reorder && a == "--format") {
      o.format = args.empty() ? "" : args.next();
      if (o.format != "csv" && o.format != "tsv" && o.format != "jsonl") return Usage("--format needs csv, tsv or jsonl");
    } else if (!reorder && a == "--on-bad-value") {
      const std::string v = args.empty() ? "" : args.next();
      if (v != "error" && v != "missing") return Usage("--on-bad-value needs error or missing");
      o.on_bad_value = v == "error" ? pcr::BadValue::kError : pcr::BadValue::kMissing;
    } else if (int status = 0; !reorder && UploadOption(a, args, &o.work_dir, &o.upload, &input_endpoint, &status)) {
      if (status != pcr::cli::kExitOk) return status;
    } else if (a.starts_with("--")) {
      return Usage("unknown option " + a);
    } else {
      positional.push_back(a);
    }
  }
  if (positional.size() != 2) return Usage(reorder ? "reorder needs IN and OUT" : "table needs INPUT and OUT_DIR");
  if (reorder && popularity.empty()) return Usage("reorder needs --popularity FILE");
  pcr::PopularityFile counted;
  if (!popularity.empty()) {
    auto read = pcr::ReadPopularityFile(popularity);
    if (!read.ok()) return pcr::cli::ReportError("pcr-convert", read.status());
    counted = std::move(read).value();
    o.writer.stream_order = counted.order;
  }
  auto io = pcr::cli::IoOptionsFromEnvironment();
  if (!io.ok()) return pcr::cli::ReportError("pcr-convert", io.status());
  if (reorder) {
    const auto input = pcr::Locate(positional[0]);
    if (!input.ok()) return pcr::cli::ReportError("pcr-convert", input.status());
    if (input->dataset_manifest) {
      auto images = pcr::ReorderImageFields(positional[0], positional[1], o.writer.stream_order, *io);
      if (!images.ok()) return pcr::cli::ReportError("pcr-convert", images.status());
      std::printf("%llu images in %llu records (%llu files), fields reordered into %s\n",
                  static_cast<unsigned long long>(images->images), static_cast<unsigned long long>(images->records),
                  static_cast<unsigned long long>(images->files), positional[1].c_str());
      return pcr::cli::kExitOk;
    }
  }
  auto result = reorder ? pcr::ReorderTable(positional[0], positional[1], o.writer.stream_order, *io, counted.table_id,
                                            pcr::cli::kOptionNames)
                        : [&] {
                            o.input = positional[0];
                            o.out_dir = positional[1];
                            o.remote = io->remote;
                            if (!input_endpoint.empty()) o.remote.s3_endpoint = input_endpoint;
                            if (pcr::IsObjectStoreOutput(o.out_dir)) {
                              std::fprintf(stderr, "pcr-convert: converting into %s, then uploading to %s\n",
                                           pcr::ConversionWorkDir(o.out_dir, o.work_dir).c_str(), o.out_dir.c_str());
                            }
                            return pcr::ConvertTable(o);
                          }();
  if (!result.ok()) return pcr::cli::ReportError("pcr-convert", result.status());
  PrintTableReport(*result);
  std::fflush(stdout);
  for (const std::string& note : result->notes) {
    std::fprintf(stderr, "pcr-convert: note: %s: %s\n", positional[0].c_str(), note.c_str());
  }
  return pcr::cli::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  pcr::cli::Args args(argc, argv);
  if (args.empty()) return Usage("");
  const std::string command = args.next();
  if (command == "--version") {
    std::printf("pcr-convert %s\n", PCR_VERSION_STRING);
    return pcr::cli::kExitOk;
  }
  if (command == "--help" || command == "-h") {
    for (const Command& c : kCommands) std::printf("%s%s", &c == kCommands ? "usage: " : "\n       ", c.usage);
    return pcr::cli::kExitOk;
  }
  for (const Command& c : kCommands) {
    if (command != c.name) continue;
    g_command = &c;
    if (args.WantsHelp()) {
      std::printf("usage: %s", c.usage);
      return pcr::cli::kExitOk;
    }
  }
  if (command == "images") return ConvertImagesCommand(args, false);
  if (command == "webdataset") return ConvertImagesCommand(args, true);
  if (command == "merge") return MergeCommand(args);
  if (command == "table") return ConvertTableCommand(args, false);
  if (command == "reorder") return ConvertTableCommand(args, true);
  return Usage("unknown command '" + command + "'");
}
