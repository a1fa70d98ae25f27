// The entropy coding of pcr's progressive decoder: Huffman tables built as
// libjpeg-turbo builds them, the bit reader over a destuffed segment, and
// symbol decoding. Inline, for the scan loops of jpeg/coefficients.cc.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace pcr::entropy {

inline constexpr int kFastBits = 10;

// Zigzag index to natural index; entries past 63 catch the band overruns that
// corrupt data produces, as libjpeg's jpeg_natural_order does.
inline constexpr std::array<uint8_t, 80> kNaturalOrder = {
    0,  1,  8,  16, 9,  2,  3,  10, 17, 24, 32, 25, 18, 11, 4,  5,  12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13,
    6,  7,  14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31,
    39, 46, 53, 60, 61, 54, 47, 55, 62, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63};

inline uint64_t LoadBigEndian64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return __builtin_bswap64(v);
}

inline int Extend(uint32_t r, int s) {
  return r < (1u << (s - 1)) ? static_cast<int>(r) - (1 << s) + 1 : static_cast<int>(r);
}

// A Huffman table as DHT defines it.
struct RawTable {
  bool defined = false;
  uint8_t bits[17] = {};
  uint8_t values[256] = {};
};

// fast entries: value << 16 | kFastEob | run << 8 | bits used, for a symbol
// whose value bits fit too; symbol << 16 | kFastSymbol | code length, for one
// whose value bits do not (or a run of zeros, or an EOB run); kFastSymbol
// alone for a code longer than kFastBits.
inline constexpr int32_t kFastEob = 1 << 12;
inline constexpr int32_t kFastSymbol = 1 << 13;

// A decoding table: the next kFastBits bits give the symbol's whole meaning
// (a DC difference, an AC coefficient after its run, or the end of the
// block), or the symbol alone; longer codes go through maxcode as in the JPEG
// standard (F.2.2.3).
struct HuffTable {
  int32_t fast[1 << kFastBits];
  int32_t maxcode[18];
  int32_t valoffset[17];
  uint8_t values[256];
};

// Builds `t` from `raw` with the checks of libjpeg's jpeg_make_d_derived_tbl;
// false where libjpeg refuses the table.
bool BuildTable(const RawTable& raw, bool dc, HuffTable* t);

// Reads the bits of one destuffed entropy-coded segment; past its end it
// reads zeros, as libjpeg does, and overran() tells.
struct BitReader {
  const uint8_t* data = nullptr;
  size_t size = 0;
  size_t pos = 0;    // next byte to load
  uint64_t buf = 0;  // left-aligned
  int bits = 0;

  void Reset(const uint8_t* d, size_t n) {
    data = d;
    size = n;
    pos = 0;
    buf = 0;
    bits = 0;
  }
  void Refill() {
    if (pos + 8 <= size) {
      buf |= LoadBigEndian64(data + pos) >> bits;
      pos += static_cast<size_t>(63 - bits) >> 3;
      bits |= 56;
      return;
    }
    while (bits <= 56) {
      const uint64_t b = pos < size ? data[pos] : 0;
      buf |= b << (56 - bits);
      ++pos;
      bits += 8;
    }
  }
  void Ensure(int n) {
    if (bits < n) Refill();
  }
  uint32_t Peek(int n) const { return static_cast<uint32_t>(buf >> (64 - n)); }
  void Skip(int n) {
    buf <<= n;
    bits -= n;
  }
  uint32_t Get(int n) {
    if (n == 0) return 0;
    const uint32_t v = Peek(n);
    Skip(n);
    return v;
  }
  uint64_t consumed() const { return uint64_t{pos} * 8 - static_cast<uint64_t>(bits); }
  bool overran() const { return consumed() > uint64_t{size} * 8; }
  // Whole bytes of the segment left unread.
  uint64_t unused_bytes() const {
    const uint64_t used = (consumed() + 7) / 8;
    return used >= size ? 0 : size - used;
  }
};

// The symbol of a code whose fast entry `e` has kFastSymbol, or -1 for a
// code libjpeg calls bad. REQUIRES: 16 bits buffered.
inline int DecodeSymbol(BitReader& br, const HuffTable& t, int32_t e) {
  if ((e & 0xff) != 0) {
    br.Skip(e & 0xff);
    return (e >> 16) & 0xff;
  }
  int l = kFastBits + 1;
  int32_t code = static_cast<int32_t>(br.Peek(l));
  while (l <= 16 && code > t.maxcode[l]) {
    ++l;
    code = static_cast<int32_t>(br.Peek(l));
  }
  if (l > 16) {
    br.Skip(16);
    return -1;
  }
  br.Skip(l);
  return t.values[(code + t.valoffset[l]) & 0xff];
}

}  // namespace pcr::entropy
