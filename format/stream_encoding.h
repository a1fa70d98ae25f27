// Stream encodings of table and field streams (spec 13.5): how the values of
// a raw stream are stored, and the rule that chooses one per stream by
// measuring the candidates on a sample of its values.
#pragma once

#include <cstdint>
#include <optional>
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
// An encoded stream's raw_length is at most this many times its stored length.
inline constexpr uint64_t kMaxEncodingExpansion = uint64_t{1} << 24;

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

struct EncodingChoice {
  // Unset: chosen per stream by the rule of spec 13.5. Set: used for every
  // stream whose kind and values allow it, the rule elsewhere.
  std::optional<StreamEncoding> force;
  // The zstd level that candidates are weighed with, as the writer will
  // compress them; 0 weighs them without zstd.
  int zstd_level = 3;
};

// "auto" (no force) or an encoding's name; false for any other name.
bool ParseEncodingChoice(std::string_view name, EncodingChoice* choice);

struct EncodedStream {
  StreamEncoding encoding = StreamEncoding::kPlain;
  Bytes bytes;  // the raw bytes themselves when kPlain
};

// Encodes a raw stream of `kind`. REQUIRES: kind is not kStrings, and
// raw.size() is a multiple of ElementWidth(kind). Thread-safe.
EncodedStream EncodeStream(ElementKind kind, ByteSpan raw, const EncodingChoice& choice);
// Encodes the values stream of a string feature; `lengths` is its raw
// lengths stream (u32 per string). When the result is kStringDictionary the
// lengths stream is stored as kDerivedLengths.
EncodedStream EncodeStrings(ByteSpan lengths, ByteSpan values, const EncodingChoice& choice);

// Decodes `encoded`, whose encoding is `top` (not kPlain or
// kDerivedLengths), into exactly raw_length raw bytes in `out`. For
// kStringDictionary, `string_count` is the number of strings (the lengths
// stream's raw_length / 4) and `lengths` receives their lengths as a raw
// lengths stream. Corruption says what is wrong at which offset of
// `encoded`. Thread-safe.
Status DecodeStream(ElementKind kind, StreamEncoding top, ByteSpan encoded, uint64_t raw_length, Bytes* out,
                    uint64_t string_count = 0, Bytes* lengths = nullptr);

// The encoding tree of `encoded`, as "dictionary(entries: delta(bitpack 4),
// codes: bitpack 3)"; "?" where the bytes do not parse.
std::string DescribeEncoding(ElementKind kind, StreamEncoding top, ByteSpan encoded);

}  // namespace pcr
