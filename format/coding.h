// Little-endian fixed-width fields and LEB128 varints.
//
// Encoders append to a std::string-like byte buffer (Bytes). ByteCursor reads
// from a span and never reads past its end: every Get* returns false on
// truncation or overlong input and leaves the cursor unusable (failed()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pcr/bytes.h"

namespace pcr {

// Longest encoding of a 64-bit varint.
inline constexpr size_t kMaxVarint64Length = 10;

void PutFixed8(Bytes* out, uint8_t v);
void PutFixed32(Bytes* out, uint32_t v);
void PutFixed64(Bytes* out, uint64_t v);
void PutVarint64(Bytes* out, uint64_t v);
// Zigzag-maps a signed value before varint encoding.
void PutVarsint64(Bytes* out, int64_t v);
// varint length followed by the bytes.
void PutLengthPrefixed(Bytes* out, std::string_view s);
void PutBytes(Bytes* out, ByteSpan s);

// Inline so that decoding loops get one load instead of a call.
inline uint32_t LoadFixed32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[3]) << 24;
}
inline uint64_t LoadFixed64(const uint8_t* p) {
  return static_cast<uint64_t>(LoadFixed32(p)) | static_cast<uint64_t>(LoadFixed32(p + 4)) << 32;
}
void StoreFixed32(uint8_t* p, uint32_t v);
void StoreFixed64(uint8_t* p, uint64_t v);

class ByteCursor {
 public:
  explicit ByteCursor(ByteSpan in) : in_(in) {}

  bool GetFixed8(uint8_t* v);
  bool GetFixed32(uint32_t* v);
  bool GetFixed64(uint64_t* v);
  // Rejects encodings longer than 10 bytes or overflowing 64 bits.
  bool GetVarint64(uint64_t* v);
  bool GetVarsint64(int64_t* v);
  // A varint that must be <= max.
  bool GetVarintAtMost(uint64_t max, uint64_t* v);
  // A length-prefixed string of at most max_length bytes.
  bool GetLengthPrefixed(size_t max_length, std::string* s);
  bool GetBytes(size_t n, ByteSpan* s);

  size_t remaining() const { return in_.size() - pos_; }
  // Bytes consumed so far: the offset of the next field.
  size_t position() const { return pos_; }
  bool failed() const { return failed_; }
  bool done() const { return !failed_ && pos_ == in_.size(); }

 private:
  bool Fail() {
    failed_ = true;
    return false;
  }
  ByteSpan in_;
  size_t pos_ = 0;
  bool failed_ = false;
};

}  // namespace pcr
