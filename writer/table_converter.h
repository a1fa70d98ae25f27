// Converting CSV and JSON Lines tables into a kTable pcr file.
#pragma once

#include <string>
#include <vector>

#include "format/file_format.h"
#include "writer/table_writer.h"

namespace pcr {

struct TableConvertOptions {
  std::string input;    // .csv (header row) or .jsonl / .ndjson (map features)
  std::string out_dir;  // created if missing; the table is <input stem>.pcr inside
  TableWriterOptions writer;
  bool float32 = false;  // store floating point values as float32 (lossy)
};

struct TableConvertReport {
  std::string path;  // the table written
  TableSchema schema;
  uint64_t stripes = 0;
  uint64_t input_bytes = 0;
  uint64_t output_bytes = 0;
};

// Reads the input twice: once to infer the schema, once to write it.
// Malformed input fails with its line and column; nothing is then left
// under the output name.
Result<TableConvertReport> ConvertTable(const TableConvertOptions& options);

// Rewrites the table at `input` (a file, or a directory holding one) with its
// streams in `stream_order`, copying the stored streams. Each stripe is first
// checked as a reader checks it (checksums, decompression, decoding of every
// feature), so damage is refused, never copied under fresh checksums. `output` is a .pcr
// path, or a directory that receives a file named like the input.
Result<TableConvertReport> ReorderTable(const std::string& input, const std::string& output,
                                        const std::vector<std::string>& stream_order);

// Reads a popularity file (format/popularity.h) into a stream order.
Result<std::vector<std::string>> ReadPopularityFile(const std::string& path);

}  // namespace pcr
