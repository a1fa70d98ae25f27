// Reading text inputs of conversions: whole files mapped, CSV records, and
// numbers as the converters accept them. Errors name the input, line and
// column.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "format/coding.h"
#include "writer/decompress.h"
#include "pcr/io.h"
#include "pcr/status.h"
#include "pcr/types.h"

namespace pcr {

class HttpClient;

// A read-only view of a whole input file, or of an http(s):// or s3://
// object read into memory in ranged GETs, or of standard input ("-"). An
// input compressed with gzip or zstd (by its first bytes) is viewed
// decompressed, from a file in $TMPDIR (else /tmp) that no name reaches.
// Not thread-safe.
class MappedInput {
 public:
  // With `sparse`, an object's bytes are fetched only where Fetch asks and
  // read as zeros elsewhere (memory is taken only where fetched); a local
  // file is mapped whole either way. A sparse open of standard input or of
  // a compressed input is refused: their bytes cannot be reached apart.
  static Result<std::unique_ptr<MappedInput>> Open(const std::string& path, const RemoteOptions& remote = {},
                                                   bool sparse = false);
  ~MappedInput();
  MappedInput(const MappedInput&) = delete;
  MappedInput& operator=(const MappedInput&) = delete;
  std::string_view text() const { return text_; }
  // Fetches what of text()[begin, end) a sparse input has not fetched yet.
  Status Fetch(uint64_t begin, uint64_t end);
  // Whether text()[begin, end) holds the input's bytes.
  bool Has(uint64_t begin, uint64_t end) const;
  // A local file's pages within text()[begin, end) leave memory, to be read
  // from the file again where text() is read there; nothing for an object.
  void Release(uint64_t begin, uint64_t end) const;

 private:
  MappedInput() = default;
  // Standard input, or the input `in` viewed when compressed with `c`,
  // written to a file in $TMPDIR and mapped.
  static Result<std::unique_ptr<MappedInput>> FromStdin();
  static Result<std::unique_ptr<MappedInput>> Decompressed(const std::string& path, Compression c,
                                                           std::unique_ptr<MappedInput> in);
  std::string_view text_;
  bool mapped_ = false;
  Bytes owned_;  // an object's bytes
  // A sparse object: where it comes from, and the ranges fetched (sorted,
  // apart from each other).
  std::string path_;
  std::unique_ptr<HttpClient> client_;
  bool sparse_ = false;
  std::vector<std::pair<uint64_t, uint64_t>> fetched_;
};

// The name a conversion's output takes from its input: the file name
// without its extension and a .gz, .zst or .zstd before it; "stdin" for "-".
std::string InputStem(const std::string& input);

Status InputError(const std::string& input, uint64_t line, uint64_t column, const std::string& what);

// A cell's text for a message: whole up to 80 bytes, else its first 60 and
// its length; bytes of no UTF-8 character as \xNN.
std::string Shown(std::string_view text);

// CSV (RFC 4180).
struct CsvCell {
  std::string text;
  bool quoted = false;
  uint64_t line = 0;
  uint64_t column = 0;  // 1-based byte column of the cell's first character

  // Unquoted empty cells and unquoted NA are missing values.
  bool missing() const { return !quoted && (text.empty() || text == "NA"); }
};

// A buffer of a cell or value kept for the next row at most; a larger one,
// left by a huge cell, is freed rather than held while the rest is
// converted.
constexpr size_t kKeptBufferCapacity = 1 << 20;
template <typename T>
void FreeIfHuge(T* buffer) {
  if (buffer->capacity() * sizeof(typename T::value_type) > kKeptBufferCapacity) T().swap(*buffer);
}

// Frees the buffers that huge cells left, as CsvReader::Next does before
// reading a record.
void FreeHugeCells(std::vector<CsvCell>* cells);

// Records end at LF, CRLF or a bare CR (as Python's csv module and DuckDB
// read them); a line break inside quotes is part of the cell.
class CsvReader {
 public:
  CsvReader(std::string_view text, const std::string& input) : text_(text), input_(input) {}
  // Reads from the record at text[pos], on line `line`, cells separated by
  // `delimiter` (not a quote or line break).
  CsvReader(std::string_view text, const std::string& input, size_t pos, uint64_t line, char delimiter = ',')
      : text_(text), input_(input), pos_(pos), line_(line), line_start_(pos), record_line_(line),
        delimiter_(delimiter), stops_{delimiter, '\n', '\r', '"'} {}

  // Reads the next record into cells[0, *count); false at the end of the text.
  Result<bool> Next(std::vector<CsvCell>* cells, size_t* count);
  uint64_t record_line() const { return record_line_; }
  size_t pos() const { return pos_; }  // where the next record starts
  uint64_t line() const { return line_; }
  // OK when the record just read holds `want` cells, else an error naming it.
  Status CheckCellCount(const std::vector<CsvCell>& cells, size_t count, size_t want) const;

 private:
  std::string_view text_;
  const std::string& input_;
  size_t pos_ = 0;
  uint64_t line_ = 1;
  size_t line_start_ = 0;
  uint64_t record_line_ = 1;
  char delimiter_ = ',';
  char stops_[4] = {',', '\n', '\r', '"'};  // what ends an unquoted cell
};

// An optional '-' and decimal digits.
bool IsIntegerLiteral(std::string_view s);
// `what` names the float64 feature and why it is float64: "column 'a' (float64
// because of 0.5 at line 9, column 3)" or "dense feature 7".
Status InexactInteger(const std::string& input, uint64_t line, uint64_t column, std::string_view integer,
                      const std::string& what, const std::string& fix);
bool ParseInt(std::string_view s, int64_t* v);
// A decimal number (an optional '-', digits with an optional fraction, an
// optional exponent; no '+', hexadecimal or spaces), or nan, inf or
// infinity in any case with an optional sign. Rounded to nearest as IEEE 754
// says: beyond the largest double is an infinity, below the smallest
// subnormal a zero of the number's sign. NaN is the quiet NaN of that sign.
bool ParseFloat(std::string_view s, double* v);

// Decimal digits of an integer above INT64_MAX that fits uint64 (smaller
// ones are int64).
bool ParseBigUInt64(std::string_view s, uint64_t* v);
// true or false in any case; with `loose`, also t, f, yes, no, y, n, on, off
// (any case), 1 and 0, as PostgreSQL casts text to booleans.
bool ParseBool(std::string_view s, bool loose, bool* v);

// ISO 8601 text: a date YYYY-MM-DD (a year beyond 0000..9999 as + or -
// and 4 to 12 digits), optionally followed by 'T' or a space,
// hh:mm, optionally :ss and a fraction of up to 9 digits, then optionally Z
// or an offset +hh:mm, +hhmm or +hh. Without an offset the time is UTC.
struct TimestampText {
  int64_t seconds = 0;  // since 1970-01-01T00:00:00Z
  int64_t nanos = 0;    // 0..999999999
  int digits = 0;       // of the fraction as written
};
bool ParseTimestamp(std::string_view s, TimestampText* t);
// `t` in ticks of `type` (a timestamp type); false when the text has more
// fraction digits than the unit holds or the ticks overflow int64.
bool TimestampTicks(const TimestampText& t, FeatureType type, int64_t* ticks);

}  // namespace pcr
