// Per-sample fields of an image conversion: their values in memory, and the
// CSV or JSON Lines file (--fields) that gives them keyed by image path.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "format/table_format.h"
#include "pcr/status.h"
#include "pcr/types.h"

namespace pcr {

// One present field of one sample; the member its type uses holds the value.
struct FieldValue {
  uint32_t field = 0;          // index into the schema's features
  int64_t i = 0;               // int64
  double d = 0;                // float32, float64
  std::string s;               // string, bytes
  std::vector<int64_t> ids;    // id_list
  std::vector<double> floats;  // float32_list, float64_list
};
// The present fields of one sample, each at most once, in any order.
using FieldRow = std::vector<FieldValue>;

// Appends `row` as row `row_number` of the stripe being built: streams[f]
// holds feature f. Returns the raw bytes added.
size_t AppendFieldRow(const TableSchema& schema, const FieldRow& row, uint32_t row_number,
                      std::vector<FeatureStreams>* streams);

// The field types a user may declare: every FeatureType but the scored lists.
Result<FeatureType> ParseFieldType(const std::string& name);

struct FieldsFile {
  TableSchema schema;  // names and types; counts are left 0
  std::unordered_map<std::string, FieldRow> rows;  // by image key
  std::vector<std::string> keys;                   // in file order
  std::vector<uint64_t> lines;                     // line of keys[i]
};

// Reads `path` (.csv with a header row, or .jsonl / .ndjson objects).
// `key_column` holds each image's path relative to the source root (its
// key); every other column or member is a field. A field's type is
// `declared[name]` when given, else inferred as for tables: int64, float64
// (float32 with `float32`) or string; JSON arrays of numbers are id_list, or
// float64_list when one element is not an integer. Errors name the line and
// column; a key given twice is an error.
Result<FieldsFile> ReadFieldsFile(const std::string& path, const std::string& key_column,
                                  const std::map<std::string, FeatureType>& declared, bool float32);

// A checksum of the fields' names, types and values (row by row, in `keys`
// order) and of the stream order, for a conversion's plan checksum.
uint64_t FieldsChecksum(const FieldsFile& fields, const std::vector<std::string>& stream_order);

}  // namespace pcr
