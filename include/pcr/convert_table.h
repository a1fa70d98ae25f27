// Table conversion: CSV and JSON Lines tables into table files, in one
// process or in shards, and table reordering. Conversion never modifies its
// input, and its output appears only when complete.
//
// Thread safety: every function may be called from several threads at once
// for different outputs; two conversions into one directory refuse each
// other.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pcr/export.h"
#include "pcr/io.h"
#include "pcr/option_names.h"
#include "pcr/status.h"
#include "pcr/types.h"

namespace pcr {

struct TableWriterOptions {
  // A stripe is closed when it holds this many rows (0: no row limit) ...
  // Parquet writers close row groups at about 1 Mi rows or 128 MB; stripes
  // are smaller in rows so that a table has enough of them for
  // TableLoader to mix rows of far-apart stripes.
  uint64_t rows_per_stripe = 131072;
  // ... or when its raw (uncompressed) streams reach this many bytes. The
  // writer holds one stripe's raw and compressed streams in memory.
  uint64_t stripe_bytes = 128ull << 20;
  int zstd_level = 3;
  // How streams are encoded (spec 13.5): "auto" chooses per stream by
  // measuring every encoding on a sample of its values; an encoding's name
  // ("dictionary", "bitpack", ...) forces it wherever a stream allows it.
  // "plain" writes the streams as files before 0.5 did, which older
  // readers read.
  std::string stream_encoding = "auto";
  // Features whose streams come first, in this order; the rest follow in
  // schema order. Names not in the schema are ignored.
  std::vector<std::string> stream_order;
};

// What a CSV conversion does with a cell that does not fit its column's
// type (a word in a column of numbers).
enum class BadValue : uint8_t {
  kError,    // fail, naming the line, column and value
  kMissing,  // store the cell as missing
};

struct TableConvertOptions {
  // .csv or .tsv (header row), or .jsonl / .ndjson (map features), each
  // also compressed with gzip or zstd (.gz, .zst, .zstd; known by its first
  // bytes, decompressed into $TMPDIR), or "-" for standard input (with
  // `format`; the table is then stdin.pcr). A local file, http(s):// or s3://.
  std::string input;
  // "csv", "tsv" or "jsonl": the input's format; empty: from its name.
  std::string format;
  std::string out_dir;  // created if missing; the table is <input stem>.pcr inside
  TableWriterOptions writer;
  bool float32 = false;  // store undeclared floating point values as float32 (lossy)
  // Declared types instead of inferred ones, by column name: bool, int64,
  // uint64, float32, float64, the timestamps, string or bytes. In JSON Lines
  // also by map feature id, or by map ("dense": float32 or float64,
  // "scored": float32 or float64 for the scores) for every feature of it.
  std::map<std::string, FeatureType> column_types;
  // A JSON file of more declared types, {"name": "type", ...} (see
  // ReadTableSchemaFile); column_types win over it.
  std::string schema_file;
  bool strings = false;  // undeclared columns are strings, not inferred
  // The byte between CSV cells: 0 for ',' (.csv) or a tab (.tsv); not a
  // quote or line break.
  char delimiter = 0;
  BadValue on_bad_value = BadValue::kError;
  // The input is cut into splits of this many bytes, and a stripe never
  // holds rows that start in two splits: a sharded conversion converts
  // whole splits and writes the same stripes (SurveyTableShard).
  uint64_t split_bytes = 64ull << 20;
  // out_dir may be s3://BUCKET/PREFIX, as for ConvertImagesOptions.
  std::string work_dir;
  RemoteOptions remote;
  UploadOptions upload;
  // How messages name these options (pcr/option_names.h).
  const OptionNames* option_names = &kLibraryOptionNames;
};

// FeatureTypeName's names, and "timestamp" for timestamp_us.
PCR_EXPORT bool ParseTableType(std::string_view name, FeatureType* type);
// The names ParseTableType takes, for messages.
inline constexpr char kTableTypeNames[] =
    "bool, int64, uint64, float32, float64, timestamp (timestamp_us), timestamp_s, timestamp_ms, timestamp_ns, "
    "string, bytes, id_list, uint64_id_list, float32_list, float64_list; for maps also scored_id_list32, "
    "scored_id_list64";
// A schema file: one JSON object of names to type names (ParseTableType).
// Errors name the file and the offset at fault.
PCR_EXPORT Result<std::map<std::string, FeatureType>> ReadTableSchemaFile(const std::string& path);

// Values of one feature that BadValue::kMissing stored as missing.
struct MissingValues {
  size_t index = 0;  // the feature's, in the schema
  std::string feature;
  FeatureType type = FeatureType::kString;
  uint64_t count = 0;
  uint64_t line = 0, column = 0;  // the first
  std::string first;              // as messages show it
};
// The note a conversion makes of `m`.
PCR_EXPORT std::string MissingValuesNote(const MissingValues& m);

struct TableConvertReport {
  std::string path;  // the table written
  TableSchema schema;
  std::vector<std::string> notes;  // choices the input left open, such as the type of a column without values
  std::vector<MissingValues> missing;  // noted in `notes` too
  uint64_t stripes = 0;
  uint64_t input_bytes = 0;
  uint64_t output_bytes = 0;
};

// Reads the input twice: once to infer the schema, once to write it.
// Malformed input fails with its line and column; nothing is then left
// under the output name.
PCR_EXPORT Result<TableConvertReport> ConvertTable(const TableConvertOptions& options);

// A table conversion in shards, as pcr.dask.convert_table runs it, with the
// same result as ConvertTable byte for byte; ConvertTable takes these steps
// in one process. The input's bytes are cut into num_shards ranges of whole
// splits (options.split_bytes), and a shard holds the rows that start in
// its range. Surveys and plans are bytes (spec section 15), to pass between processes;
// every step is deterministic, reads the input itself (of an object in
// storage, only the header and the shard's bytes) and shares nothing with
// the others but its arguments, so steps may run in any threads or
// processes at once.
//  0. CheckTableShards: what the steps would refuse, for a driver to check
//     before any runs: the options, an input that cannot be reached in
//     shards (standard input, compressed data), and a local out_dir that is
//     not a directory or holds the table already, or another table (files
//     named part_prefix... are this conversion's parts, not tables).
//  1. SurveyTableShard: the first pass over one shard's rows. Its first row is
//     `start` when given, else the one after the first line break of its
//     range, which PlanTableShards checks.
//  2. PlanTableShards: every shard's survey, in shard order, into the schema
//     and notes; or, when a CSV shard's first line break was inside a
//     quoted cell, `rescan` names the shards to survey again from the offset
//     given (then plan again).
//  3. ConvertTableShard: one shard's rows into a table file at part_path;
//     input bytes changed since the shard's survey (its checksum) are refused.
//     An s3:// part_path (in the output's store) is written under the temp
//     dir, uploaded, checked, and removed locally.
//  4. MergeTableParts: every shard's part, in shard order, into the table
//     ConvertTable writes under options.out_dir (local or s3://). Parts may
//     be s3:// paths in the output's store; files named part_prefix... in
//     out_dir are parts (of this conversion or an earlier one), not tables.
// Errors name the input, line and column, as ConvertTable's.
struct TableShardPlan {
  std::string plan;                                   // empty when shards are to be surveyed again
  std::vector<std::pair<uint32_t, uint64_t>> rescan;  // shard, start
  std::vector<std::string> notes;
  uint64_t input_bytes = 0;
};
PCR_EXPORT Status CheckTableShards(const TableConvertOptions& options, std::string_view part_prefix = "");
PCR_EXPORT Result<std::string> SurveyTableShard(const TableConvertOptions& options, uint32_t shard, uint32_t num_shards,
                                              std::optional<uint64_t> start = {});
PCR_EXPORT Result<TableShardPlan> PlanTableShards(const TableConvertOptions& options,
                                                  const std::vector<std::string>& surveys);
PCR_EXPORT Result<TableConvertReport> ConvertTableShard(const TableConvertOptions& options, const std::string& plan,
                                                        uint32_t shard, const std::string& part_path);
PCR_EXPORT Result<TableConvertReport> MergeTableParts(const TableConvertOptions& options,
                                                      const std::vector<std::string>& part_paths,
                                                      std::string_view part_prefix = "");

// Rewrites the table at `input` (a file, or a directory holding one) with its
// streams in `stream_order`, copying the stored streams. Each stripe is first
// checked as a reader checks it (checksums, decompression, decoding of every
// feature), so damage is refused, never copied under fresh checksums. `output` is a .pcr
// path, or a directory that receives a file named like the input.
// `counted_on`, when not empty, is the content id (Table::content_id) of the
// table whose access logs gave the order (PopularityFile::table_id): a table
// of other contents is refused, naming both. A stream order that names no
// feature of the table is noted in the report.
PCR_EXPORT Result<TableConvertReport> ReorderTable(const std::string& input, const std::string& output,
                                        const std::vector<std::string>& stream_order,
                                        const IoEngineOptions& io = {}, const std::string& counted_on = "",
                                        const OptionNames& names = kLibraryOptionNames);

}  // namespace pcr
