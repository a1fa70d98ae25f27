// Stream encodings of table and field streams (spec 13.5): the encodings,
// what each applies to, and the value model the writer (writer/
// stream_encoder.h) and the reader (format/stream_decoding.h) share.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "format/coding.h"
#include "pcr/status.h"

namespace pcr {

enum class StreamEncoding : uint8_t {
  kPlain = 0,             // the values as the raw stream holds them
  kConstant = 1,          // one value, repeated
  kBitPack = 2,           // frame of reference: a base plus bit-packed offsets
  kDelta = 3,             // differences of consecutive values, encoded again
  kRle = 4,               // runs: values and run lengths, each encoded again
  kDictionary = 5,        // distinct values and one code per value
  kSplit = 6,             // floats: byte b of every value, then byte b + 1
  kDecimal = 7,           // floats: decimal digits over a power of ten, exceptions kept
  kStringDictionary = 8,  // strings: distinct strings and one code per string
  kDerivedLengths = 9,    // string lengths given by the values stream's dictionary
};
inline constexpr uint8_t kMaxStreamEncoding = 9;
// Encodings nest at most this deep, the stream's own encoding counting as 1.
inline constexpr int kMaxEncodingDepth = 4;
// An encoded stream's raw_length / this is below its stored length, checked
// when the index is read (kMaxStoredExpansion), and below the length of its
// Encoding with zstd undone, checked when it is decoded (kMaxEncodedExpansion).
inline constexpr uint64_t kMaxStoredExpansion = uint64_t{1} << 24;
inline constexpr uint64_t kMaxEncodedExpansion = uint64_t{1} << 24;

// What the raw bytes of a stream hold.
enum class ElementKind : uint8_t {
  kBytes,    // bytes without structure (presence bitmaps)
  kU32,      // little-endian uint32 values (lengths)
  kI64,      // little-endian int64 values (int64 values, ids)
  kF32,      // IEEE 754 binary32 values
  kF64,      // IEEE 754 binary64 values
  kStrings,  // string bytes back to back, cut by the lengths stream
};

// Bytes of one raw element: 4, 8, or 1 for kBytes and kStrings.
size_t ElementWidth(ElementKind kind);
const char* EncodingName(StreamEncoding encoding);
bool ParseEncodingName(std::string_view name, StreamEncoding* encoding);
// Whether `encoding` may be a stream's own encoding for raw streams of `kind`
// (spec 13.5). kDerivedLengths is allowed for kU32 here; only a string
// feature's lengths stream may use it.
bool TopEncodingAllowed(ElementKind kind, StreamEncoding encoding);

// The values of an encoding node: integers of `bits` bits, or the bit
// patterns of floats of `bits` bits, held in uint64_t.
struct ValueKind {
  int bits;
  bool is_float;
};
inline constexpr ValueKind kCodes{64, false};  // codes, run lengths, digits, positions
ValueKind ValueKindOf(ElementKind kind);
// Whether a node of `kind` values may have encoding `e` (spec 13.5).
bool NestedAllowed(ValueKind kind, StreamEncoding e);

// kDecimal's largest exponent.
inline constexpr int kMaxDecimalExponent = 18;
// kDecimal's value of `digits` at exponent e, as a bit pattern of `bits`.
uint64_t DecimalValue(int64_t digits, int e, int bits);
// Digits of `pattern` at exponent e, if kDecimal gives it back bit for bit.
bool DecimalDigits(uint64_t pattern, int e, int bits, int64_t* digits);

}  // namespace pcr
