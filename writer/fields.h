// Per-sample fields of an image conversion: their values in memory, and the
// CSV or JSON Lines file (--fields) that gives them keyed by image path.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "writer/feature_streams.h"
#include "writer/table/type_inference.h"
#include "pcr/io.h"
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
// holds feature f. InvalidArgument when the row gives a field twice (or a
// field already has a later row).
Status AppendFieldRow(const TableSchema& schema, const FieldRow& row, uint32_t row_number,
                      std::vector<FeatureStreams>* streams);

// The field types a user may declare: every FeatureType but the scored lists.
Result<FeatureType> ParseFieldType(const std::string& name);

// The fields of an input and their values' kinds, from which it decides
// each field's type: declared, else inferred by the tables' inference
// (ColumnVotes) among the types image files hold: int64 (also booleans),
// float64 or float32, string; arrays of integers id_list, of numbers
// float64_list or float32_list. Two kinds of JSON values in one field are an
// error.
// Errors come from `error`, given a value's line and column, which `at`
// describes inside messages. Not thread-safe while fields are added and
// noted; after Infer(), Convert, Index, Has and features may be called from
// several threads at once.
class FieldInference {
 public:
  using ErrorFn = std::function<Status(uint64_t line, uint64_t column, const std::string& what)>;
  using AtFn = std::function<std::string(const ValuePlace&)>;
  FieldInference(std::map<std::string, FeatureType> declared, bool float32, const OptionNames& names, ErrorFn error,
                 AtFn at = [](const ValuePlace& w) { return w.At(); })
      : declared_(std::move(declared)),
        rules_{.typed = false, .float32 = float32, .bad_values = false, .strings_option = false},
        naming_{.noun = "field",
                .declare = Option::kFieldType,
                .names = &names,
                .error = std::move(error),
                .at = std::move(at)} {}

  // The index of field `name`, added the first time it is named.
  Result<uint32_t> Field(const std::string& name, uint64_t line, uint64_t column);
  bool Has(const std::string& name) const { return index_.count(name) > 0; }
  // REQUIRES: Has(name)
  uint32_t Index(const std::string& name) const { return index_.at(name); }
  // Gives `name` type `type` unless the user declared one.
  void Declare(const std::string& name, FeatureType type) { defaults_.emplace(name, type); }
  // Records the kind of one of the field's values: a JSON value, or a CSV
  // cell read with CellValue(text, false, ...). A field of CSV cells is
  // typed as a table's CSV column is: a number type when all are numbers,
  // else string.
  void Note(uint32_t field, const ColumnValue& v) { votes_[field].NoteValue(v); }
  void NoteCell(uint32_t field, const ColumnValue& cell);
  // Decides every field's type. Fails on a field whose values have
  // two kinds, and on a declared name (--field-type) that is no field.
  Status Infer();
  const std::vector<FeatureInfo>& features() const { return features_; }
  // `raw` as a value of its field's type. REQUIRES: Infer() succeeded, raw
  // is not missing.
  Result<FieldValue> Convert(uint32_t field, ColumnValue raw) const;

 private:
  const std::map<std::string, FeatureType> declared_;
  std::map<std::string, FeatureType> defaults_;
  const InferenceRules rules_;
  const ColumnNaming naming_;
  std::vector<FeatureInfo> features_;
  std::vector<ColumnVotes> votes_;
  std::vector<bool> cells_;  // by field: its values are CSV cells
  std::unordered_map<std::string, uint32_t> index_;
};

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
// column; a key given twice is an error. An http(s):// or s3:// `path` is
// read with `remote`.
Result<FieldsFile> ReadFieldsFile(const std::string& path, const std::string& key_column,
                                  const std::map<std::string, FeatureType>& declared, bool float32,
                                  const RemoteOptions& remote = {}, const OptionNames& names = kLibraryOptionNames);

// A checksum of the fields' names, types and values (row by row, in `keys`
// order) and of the stream order, for a conversion's plan checksum.
uint64_t FieldsChecksum(const FieldsFile& fields, const std::vector<std::string>& stream_order);

}  // namespace pcr
