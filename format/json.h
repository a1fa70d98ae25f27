// JSON text: a pull parser over one value (RFC 8259) and string quoting.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "pcr/status.h"

namespace pcr {

// JSON Lines in text[begin, ...): calls fn(line, number, offset) for every
// line that starts before `end` and holds more than white space, numbering
// lines from `number`; stops at the first error fn returns. *next, when
// given, is set to the offset of the first line not read.
template <typename Fn>
Status ForEachJsonLineIn(std::string_view text, size_t begin, size_t end, uint64_t number, Fn fn, size_t* next) {
  size_t pos = begin;
  for (; pos < text.size() && pos < end; ++number) {
    const size_t stop = std::min(text.find('\n', pos), text.size());
    const std::string_view line = text.substr(pos, stop - pos);
    const size_t offset = pos;
    pos = std::min(stop + 1, text.size());
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    PCR_RETURN_IF_ERROR(fn(line, number, offset));
  }
  if (next) *next = pos;
  return Status::OK();
}

// JSON Lines: calls fn(line, number) for every line holding more than white
// space, numbering lines from 1; stops at the first error fn returns. A
// leading UTF-8 byte order mark is skipped.
template <typename Fn>
Status ForEachJsonLine(std::string_view text, Fn fn) {
  return ForEachJsonLineIn(
      text, text.starts_with("\xEF\xBB\xBF") ? 3 : 0, text.size(), 1,
      [&](std::string_view line, uint64_t number, size_t) { return fn(line, number); }, nullptr);
}

// The offset of the first byte of `s` that starts no well-formed UTF-8
// character (RFC 3629: no overlong forms, surrogates or code points above
// U+10FFFF), or std::string_view::npos when `s` is UTF-8 text.
size_t InvalidUtf8At(std::string_view s);
// `s` with each byte of no UTF-8 character written as \xNN, for messages.
std::string EscapeInvalidUtf8(std::string_view s);

// Appends `s` as a JSON string literal. A byte that is no part of a UTF-8
// character is written as the lone surrogate \udcXX (Python's
// surrogateescape), which JsonCursor::String reads back as the byte.
void AppendJsonString(std::string_view s, std::string* out);

struct JsonNumber {
  bool is_int = false;  // no fraction or exponent, and fits int64
  int64_t i = 0;
  double d = 0;  // the value, also set for integers
  // False for an integer literal (no fraction or exponent) that d does not
  // hold exactly.
  bool exact = true;
};

// True when `digits`, an optional '-' and decimal digits, is exactly `value`.
bool IntegerLiteralIsExact(std::string_view digits, double value);

// The double nearest the decimal number `text`, as IEEE 754 rounds, also
// beyond the double range where from_chars fails: an infinity, a subnormal
// or a zero of the number's sign. REQUIRES: `text` is a decimal number.
double NearestDouble(std::string_view text);

// The length of the nan, inf or infinity (any case) that `text` starts with,
// as a whole word; 0 when it starts with none.
size_t NamedFloatLength(std::string_view text);

// Reads JSON from `text` token by token. Every method returns false on
// malformed input, after which error() says what was expected and
// position() is the byte offset of the fault.
class JsonCursor {
 public:
  enum class Kind { kObject, kArray, kString, kNumber, kTrue, kFalse, kNull, kEnd, kInvalid };

  explicit JsonCursor(std::string_view text) : text_(text) {}

  // Skips white space; the kind of the next value, kEnd at the end of the text.
  Kind Peek();
  bool BeginObject();
  // Inside an object: reads the next member's key and its ':'; *done when the
  // object's '}' was consumed instead.
  bool NextMember(std::string* key, bool* done);
  bool BeginArray();
  // Inside an array: *done when its ']' was consumed, else a value follows.
  bool NextElement(bool* done);
  // Also \udc80..\udcff alone, as the byte 80..ff (see AppendJsonString).
  bool String(std::string* out);
  // Also NaN, Infinity and -Infinity, as Python's json module writes them,
  // and the spellings CSV cells take: nan, inf and infinity in any case,
  // after an optional '-' or '+' (a NaN keeps its sign).
  bool Number(JsonNumber* out);
  // true, false or null.
  bool Literal(Kind* kind);
  bool SkipValue();
  // OK when only white space remains.
  bool End();

  size_t position() const { return pos_; }
  std::string_view text() const { return text_; }
  const std::string& error() const { return error_; }
  bool Fail(std::string what);

 private:
  void SkipSpace();
  bool Consume(char c, const char* what);
  std::string_view text_;
  size_t pos_ = 0;
  int depth_ = 0;
  bool need_comma_ = false;
  std::string error_;
};

}  // namespace pcr
