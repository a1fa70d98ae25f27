#include "format/permutation.h"

#include <numeric>
#include <utility>

namespace pcr {

uint64_t MixSeeds(uint64_t a, uint64_t b) {
  SplitMix64 g(a);
  return SplitMix64(g.Next() ^ b).Next();
}

std::vector<uint64_t> SeededPermutation(uint64_t n, uint64_t seed) {
  std::vector<uint64_t> order(n);
  std::iota(order.begin(), order.end(), uint64_t{0});
  SplitMix64 g(seed);
  for (uint64_t i = n; i > 1; --i) std::swap(order[i - 1], order[g.Below(i)]);
  return order;
}

}  // namespace pcr
