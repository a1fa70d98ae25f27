#include "format/bitpack.h"

#include <array>
#include <cstring>
#include <utility>

namespace pcr {

uint64_t BitPackedBytes(uint64_t n, int b) {
  return (n / kBlock) * kLanes * 8 * static_cast<uint64_t>(b) + ((n % kBlock) * static_cast<uint64_t>(b) + 7) / 8;
}

namespace {

template <int B>
void UnpackBlock(const uint8_t* in, uint64_t base, uint64_t* out) {
  if constexpr (B == 0) {
    for (size_t i = 0; i < kBlock; ++i) out[i] = base;
  } else {
    constexpr uint64_t mask = B == 64 ? ~uint64_t{0} : (uint64_t{1} << B) - 1;
    uint64_t w[kLanes * B];
    std::memcpy(w, in, sizeof(w));
#pragma GCC unroll 64
    for (int k = 0; k < 64; ++k) {
      const int bit = k * B, j = bit / 64, s = bit % 64;
      const uint64_t* lo = w + j * kLanes;
      uint64_t* o = out + k * kLanes;
      if (s + B <= 64) {
        for (size_t l = 0; l < kLanes; ++l) o[l] = ((lo[l] >> s) & mask) + base;
      } else {
        const uint64_t* hi = lo + kLanes;
        for (size_t l = 0; l < kLanes; ++l) o[l] = (((lo[l] >> s) | (hi[l] << (64 - s))) & mask) + base;
      }
    }
  }
}

using UnpackFn = void (*)(const uint8_t*, uint64_t, uint64_t*);
template <size_t... B>
constexpr std::array<UnpackFn, sizeof...(B)> MakeUnpackers(std::index_sequence<B...>) {
  return {&UnpackBlock<static_cast<int>(B)>...};
}
constexpr auto kUnpackers = MakeUnpackers(std::make_index_sequence<65>());

}  // namespace

void UnpackBits(const uint8_t* in, uint64_t n, int b, uint64_t base, uint64_t* out) {
  const uint64_t blocks = n / kBlock;
  for (uint64_t i = 0; i < blocks; ++i) kUnpackers[static_cast<size_t>(b)](in + i * kLanes * 8 * b, base, out + i * kBlock);
  // The tail, copied with zeros after it so that every value is one 8-byte
  // load and, when it straddles that, one more byte.
  const uint64_t rest = n % kBlock;
  if (rest == 0) return;
  const size_t tail_len = (rest * b + 7) / 8;
  std::array<uint8_t, kBlock * 8 + 16> tail;
  std::memcpy(tail.data(), in + blocks * kLanes * 8 * b, tail_len);
  std::memset(tail.data() + tail_len, 0, 16);
  const uint64_t mask = Mask(b);
  for (uint64_t i = 0; i < rest; ++i) {
    const uint64_t bit = i * static_cast<uint64_t>(b);
    const uint8_t* p = tail.data() + bit / 8;
    const int s = static_cast<int>(bit % 8);
    uint64_t x = LoadFixed64(p) >> s;
    if (s + b > 64) x |= static_cast<uint64_t>(p[8]) << (64 - s);
    out[blocks * kBlock + i] = (x & mask) + base;
  }
}

void PackBits(std::span<const uint64_t> v, int b, uint64_t base, Bytes* out) {
  const size_t blocks = v.size() / kBlock;
  std::vector<uint64_t> w(kLanes * 64);
  for (size_t i = 0; i < blocks && b > 0; ++i) {
    std::fill(w.begin(), w.end(), 0);
    for (int k = 0; k < 64; ++k) {
      const int bit = k * b, j = bit / 64, s = bit % 64;
      for (size_t l = 0; l < kLanes; ++l) {
        const uint64_t x = v[i * kBlock + k * kLanes + l] - base;
        w[j * kLanes + l] |= x << s;
        if (s + b > 64) w[(j + 1) * kLanes + l] |= x >> (64 - s);
      }
    }
    for (size_t k = 0; k < kLanes * static_cast<size_t>(b); ++k) PutFixed64(out, w[k]);
  }
  const size_t rest = v.size() % kBlock;
  const size_t start = out->size();
  out->resize(start + (rest * b + 7) / 8, 0);
  for (size_t i = 0; i < rest && b > 0; ++i) {
    const uint64_t x = v[blocks * kBlock + i] - base;
    const size_t at = start + (i * b) / 8;
    const int shift = static_cast<int>((i * b) % 8);
    for (size_t byte = 0; byte < 8 && at + byte < out->size(); ++byte) {
      (*out)[at + byte] |= static_cast<uint8_t>((x << shift) >> (8 * byte));
    }
    if (shift + b > 64) (*out)[at + 8] |= static_cast<uint8_t>(x >> (64 - shift));
  }
}

void DeltaEncode(std::span<const uint64_t> v, int bits, uint64_t base, std::vector<uint64_t>* d) {
  d->resize(v.size());
  const uint64_t mask = Mask(bits);
  const size_t blocks = v.size() / kBlock;
  for (size_t i = 0; i < v.size(); ++i) {
    const uint64_t diff = (v[i] - (i == 0 ? base : v[i - 1])) & mask;
    const size_t b = i / kBlock, r = i % kBlock;
    (*d)[b < blocks ? b * kBlock + (r % 64) * kLanes + r / 64 : i] = diff;
  }
}

void DeltaDecode(uint64_t* v, uint64_t n, int bits, uint64_t base) {
  const uint64_t blocks = n / kBlock;
  uint64_t prev = base;
  std::array<uint64_t, kBlock> t;
  for (uint64_t b = 0; b < blocks; ++b) {
    uint64_t* d = v + b * kBlock;
    std::memcpy(t.data(), d, sizeof(t));
    for (size_t k = 1; k < 64; ++k) {
      for (size_t l = 0; l < kLanes; ++l) t[k * kLanes + l] += t[(k - 1) * kLanes + l];
    }
    for (size_t l = 0; l < kLanes; ++l) {
      for (size_t k = 0; k < 64; ++k) d[l * 64 + k] = prev + t[k * kLanes + l];
      prev = d[l * 64 + 63];
    }
  }
  for (uint64_t i = blocks * kBlock; i < n; ++i) {
    v[i] += prev;
    prev = v[i];
  }
  if (bits < 64) {
    for (uint64_t i = 0; i < n; ++i) v[i] &= Mask(bits);
  }
}

}  // namespace pcr
