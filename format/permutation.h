// Seeded permutations: the shuffled orders of pcr-convert --shuffle and the
// dataset iterators, identical on every platform and standard library.
#pragma once

#include <cstdint>
#include <vector>

namespace pcr {

// The splitmix64 generator (Steele, Lea and Flood 2014).
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // A value in [0, n). REQUIRES: n > 0
  uint64_t Below(uint64_t n) { return Next() % n; }

 private:
  uint64_t state_;
};

// One seed from two values, so that nearby pairs give unrelated streams.
uint64_t MixSeeds(uint64_t a, uint64_t b);

// A permutation of 0..n-1: Fisher-Yates driven by splitmix64 from `seed`.
std::vector<uint64_t> SeededPermutation(uint64_t n, uint64_t seed);

}  // namespace pcr
