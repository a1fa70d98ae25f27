// The writer's choice of stream encodings (spec 13.5): each candidate is
// written for a sample of the stream's values and weighed by its bytes
// after zstd and its read cost.
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include "format/coding.h"
#include "format/stream_encoding.h"

namespace pcr {

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
  Bytes bytes;  // empty when kPlain: the raw bytes are stored as they are
};

// zstd of `in` into *out, ZSTD_compressBound bytes that are never zero-filled
// (pages not written take no memory): the compressed size, or a zstd error.
size_t CompressZstd(ByteSpan in, int level, std::unique_ptr<uint8_t[]>* out);

// Encodes a raw stream of `kind`. REQUIRES: kind is not kStrings, and
// raw.size() is a multiple of ElementWidth(kind). Thread-safe.
EncodedStream EncodeStream(ElementKind kind, ByteSpan raw, const EncodingChoice& choice);
// Encodes the values stream of a string feature; `lengths` is its raw
// lengths stream (u32 per string). When the result is kStringDictionary the
// lengths stream is stored as kDerivedLengths.
EncodedStream EncodeStrings(ByteSpan lengths, ByteSpan values, const EncodingChoice& choice);

}  // namespace pcr
