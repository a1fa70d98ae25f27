#include "jpeg/huffman.h"

#include <algorithm>

namespace pcr::entropy {

bool BuildTable(const RawTable& raw, bool dc, HuffTable* t) {
  uint8_t size[257];
  uint32_t code_of[257];
  int p = 0;
  for (int l = 1; l <= 16; ++l) {
    if (p + raw.bits[l] > 256) return false;
    for (int i = 0; i < raw.bits[l]; ++i) size[p++] = static_cast<uint8_t>(l);
  }
  size[p] = 0;
  const int count = p;
  uint32_t code = 0;
  int si = size[0];
  p = 0;
  while (size[p]) {
    while (size[p] == si) code_of[p++] = code++;
    if (code >= (1u << si)) return false;
    code <<= 1;
    ++si;
  }
  p = 0;
  for (int l = 1; l <= 16; ++l) {
    if (raw.bits[l]) {
      t->valoffset[l] = p - static_cast<int32_t>(code_of[p]);
      p += raw.bits[l];
      t->maxcode[l] = static_cast<int32_t>(code_of[p - 1]);
    } else {
      t->maxcode[l] = -1;
    }
  }
  t->valoffset[0] = 0;
  t->maxcode[0] = -1;
  t->maxcode[17] = 0xFFFFF;
  std::memcpy(t->values, raw.values, 256);
  if (dc) {
    for (int i = 0; i < count; ++i) {
      if (raw.values[i] > 15) return false;
    }
  }
  uint32_t end = 0;  // past the entries filled so far
  for (int i = 0; i < count && size[i] <= kFastBits; ++i) {
    const int len = size[i];
    const uint8_t sym = raw.values[i];
    const int spare = kFastBits - len;
    const uint32_t first = code_of[i] << spare;
    const int run = dc ? 0 : sym >> 4, s = dc ? sym : sym & 15;
    int32_t* e = t->fast + first;
    end = first + (1u << spare);
    if (s != 0 && len + s <= kFastBits) {
      for (uint32_t j = 0; j < (1u << spare); ++j) {
        const uint32_t r = (j >> (spare - s)) & ((1u << s) - 1);
        e[j] = static_cast<int32_t>(static_cast<uint32_t>(Extend(r, s)) << 16) | run << 8 | (len + s);
      }
      continue;
    }
    int32_t v = sym << 16 | kFastSymbol | len;
    if (dc && s == 0) v = len;
    if (!dc && sym == 0x00) v = kFastEob | len;
    std::fill_n(e, 1u << spare, v);
  }
  // Longer codes, and bits that start no code.
  std::fill(t->fast + end, t->fast + (1 << kFastBits), kFastSymbol);
  return true;
}

}  // namespace pcr::entropy
