// Decoding encoded streams (spec 13.5) back into raw streams.
#pragma once

#include <cstdint>
#include <string>

#include "format/coding.h"
#include "format/stream_encoding.h"
#include "pcr/status.h"

namespace pcr {

// Decodes `encoded`, whose encoding is `top` (not kPlain or
// kDerivedLengths), into exactly raw_length raw bytes in `out`. For
// kStringDictionary, `string_count` is the number of strings (the lengths
// stream's raw_length / 4) and `lengths` receives their lengths as a raw
// lengths stream. Corruption says what is wrong at which offset of
// `encoded`. Thread-safe.
Status DecodeStream(ElementKind kind, StreamEncoding top, ByteSpan encoded, uint64_t raw_length, Bytes* out,
                    uint64_t string_count = 0, Bytes* lengths = nullptr);

// DecodeStream of 8-byte elements into `out`, which holds raw_length bytes.
Status DecodeStreamInto(ElementKind kind, StreamEncoding top, ByteSpan encoded, uint64_t raw_length, uint8_t* out);

// The encoding tree of `encoded`, as "dictionary(entries: delta(bitpack 4),
// codes: bitpack 3)"; "?" where the bytes do not parse.
std::string DescribeEncoding(ElementKind kind, StreamEncoding top, ByteSpan encoded);

}  // namespace pcr
