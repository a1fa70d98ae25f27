// The bit-packing and delta kernels of the stream encodings (spec 13.5,
// kBitPack and kDelta), shared by the writer and the reader.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "format/coding.h"

namespace pcr {

// Blocks of 1024 values as 16 lanes of 64 values: value k * 16 + l of a block
// is value k of lane l, and lane l's values are packed into 64-bit words
// j * 16 + l, so unpacking works on 16 independent lanes at once. The last
// n % 1024 values are one little-endian bit string.
inline constexpr size_t kBlock = 1024;
inline constexpr size_t kLanes = 16;

inline uint64_t Mask(int bits) { return bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1; }
inline int BitWidth(uint64_t v) { return 64 - std::countl_zero(v); }

// Bytes of n values bit-packed at b bits.
uint64_t BitPackedBytes(uint64_t n, int b);
// Unpacks n values of b bits, adding `base` to each. REQUIRES: in holds
// BitPackedBytes(n, b) bytes
void UnpackBits(const uint8_t* in, uint64_t n, int b, uint64_t base, uint64_t* out);
// Appends v less `base`, each in b bits. REQUIRES: every v[i] - base < 2^b
void PackBits(std::span<const uint64_t> v, int b, uint64_t base, Bytes* out);

// Inside each full block of 1024 values, value l * 64 + k is lane l's value
// k, and the child holds the differences in the order k * 16 + l, so that
// the running sums of the 16 lanes are computed side by side. The first
// difference is against `base` (the writer's is the first value).
void DeltaEncode(std::span<const uint64_t> v, int bits, uint64_t base, std::vector<uint64_t>* d);
// Replaces the n differences at v by the values, modulo 2^bits.
void DeltaDecode(uint64_t* v, uint64_t n, int bits, uint64_t base);

}  // namespace pcr
