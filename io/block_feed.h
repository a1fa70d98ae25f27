// Feeding bytes given in pieces to a hash that consumes 64-byte blocks
// (MD5, SHA-256).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace pcr {

// Calls `compress(block)` on every whole 64-byte block of the bytes given so
// far, keeping the rest in block[0, *buffered); *total counts every byte.
template <typename Compress>
void FeedBlocks(std::string_view data, uint8_t (&block)[64], size_t* buffered, uint64_t* total,
                const Compress& compress) {
  const auto* p = reinterpret_cast<const uint8_t*>(data.data());
  size_t n = data.size();
  *total += n;
  if (*buffered > 0) {
    const size_t take = std::min(n, 64 - *buffered);
    std::memcpy(block + *buffered, p, take);
    *buffered += take;
    p += take;
    n -= take;
    if (*buffered < 64) return;
    compress(block);
    *buffered = 0;
  }
  for (; n >= 64; n -= 64, p += 64) compress(p);
  std::memcpy(block, p, n);
  *buffered = n;
}

}  // namespace pcr
