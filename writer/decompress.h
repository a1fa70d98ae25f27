// Inputs compressed with gzip (RFC 1952, members one after another) or zstd
// (frames one after another), known by their first bytes. Each member's
// CRC-32 and length, and each zstd frame's checksum where it has one, are
// checked.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "pcr/status.h"

namespace pcr {

enum class Compression { kNone, kGzip, kZstd };

// By the magic number that `head` (an input's first bytes; 4 suffice)
// starts with.
Compression CompressionOf(std::string_view head);
const char* CompressionName(Compression c);
// Whether `name` ends in .gz, .zst or .zstd; `stem` gets the name without it.
bool HasCompressionSuffix(std::string_view name, std::string_view* stem = nullptr);

// Decompresses one input fed in pieces. Not thread-safe.
class Decompressor {
 public:
  using Sink = std::function<Status(std::string_view)>;
  // `input` names the input in errors.
  static Result<std::unique_ptr<Decompressor>> Create(Compression c, const std::string& input);
  virtual ~Decompressor() = default;
  // Decompresses the input's next bytes, handing what they decode to `out`
  // in pieces. Errors name the input and the compressed byte offset.
  virtual Status Feed(std::string_view compressed, const Sink& out) = 0;
  // An error when the input ended inside a member or frame.
  virtual Status Finish() = 0;
};

}  // namespace pcr
