// Seeded permutations: the shuffled orders of pcr-convert --shuffle and the
// record iterator, identical on every platform and standard library.
#pragma once

#include <cstdint>
#include <vector>

namespace pcr {

// A permutation of 0..n-1: Fisher-Yates driven by splitmix64 from `seed`.
std::vector<uint64_t> SeededPermutation(uint64_t n, uint64_t seed);

}  // namespace pcr
