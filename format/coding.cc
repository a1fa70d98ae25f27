#include "format/coding.h"

namespace pcr {

void PutFixed8(Bytes* out, uint8_t v) { out->push_back(v); }

void PutFixed32(Bytes* out, uint32_t v) {
  uint8_t b[4];
  StoreFixed32(b, v);
  out->insert(out->end(), b, b + 4);
}

void PutFixed64(Bytes* out, uint64_t v) {
  uint8_t b[8];
  StoreFixed64(b, v);
  out->insert(out->end(), b, b + 8);
}

void PutVarint64(Bytes* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<uint8_t>(v));
}

void PutVarsint64(Bytes* out, int64_t v) {
  PutVarint64(out, (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
}

void PutLengthPrefixed(Bytes* out, std::string_view s) {
  PutVarint64(out, s.size());
  out->insert(out->end(), s.begin(), s.end());
}

void PutBytes(Bytes* out, ByteSpan s) { out->insert(out->end(), s.begin(), s.end()); }

void StoreFixed32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

void StoreFixed64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

bool ByteCursor::GetFixed8(uint8_t* v) {
  if (failed_ || remaining() < 1) return Fail();
  *v = in_[pos_++];
  return true;
}

bool ByteCursor::GetFixed32(uint32_t* v) {
  if (failed_ || remaining() < 4) return Fail();
  *v = LoadFixed32(in_.data() + pos_);
  pos_ += 4;
  return true;
}

bool ByteCursor::GetFixed64(uint64_t* v) {
  if (failed_ || remaining() < 8) return Fail();
  *v = LoadFixed64(in_.data() + pos_);
  pos_ += 8;
  return true;
}

bool ByteCursor::GetVarint64(uint64_t* v) {
  if (failed_) return false;
  uint64_t result = 0;
  for (size_t i = 0; i < kMaxVarint64Length; ++i) {
    if (pos_ >= in_.size()) return Fail();
    const uint8_t byte = in_[pos_++];
    // The tenth byte may only carry the top bit of a 64-bit value.
    if (i == kMaxVarint64Length - 1 && byte > 1) return Fail();
    result |= static_cast<uint64_t>(byte & 0x7f) << (7 * i);
    if ((byte & 0x80) == 0) {
      *v = result;
      return true;
    }
  }
  return Fail();
}

bool ByteCursor::GetVarsint64(int64_t* v) {
  uint64_t u;
  if (!GetVarint64(&u)) return false;
  *v = static_cast<int64_t>((u >> 1) ^ (~(u & 1) + 1));
  return true;
}

bool ByteCursor::GetVarintAtMost(uint64_t max, uint64_t* v) {
  if (!GetVarint64(v)) return false;
  if (*v > max) return Fail();
  return true;
}

bool ByteCursor::GetLengthPrefixed(size_t max_length, std::string* s) {
  uint64_t n;
  if (!GetVarintAtMost(max_length, &n)) return false;
  ByteSpan b;
  if (!GetBytes(n, &b)) return false;
  s->assign(b.begin(), b.end());
  return true;
}

bool ByteCursor::GetBytes(size_t n, ByteSpan* s) {
  if (failed_ || remaining() < n) return Fail();
  *s = in_.subspan(pos_, n);
  pos_ += n;
  return true;
}

}  // namespace pcr
