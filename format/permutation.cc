#include "format/permutation.h"

#include <numeric>
#include <utility>

namespace pcr {

std::vector<uint64_t> SeededPermutation(uint64_t n, uint64_t seed) {
  std::vector<uint64_t> order(n);
  std::iota(order.begin(), order.end(), uint64_t{0});
  uint64_t state = seed;
  auto next = [&state] {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  for (uint64_t i = n; i > 1; --i) std::swap(order[i - 1], order[next() % i]);
  return order;
}

}  // namespace pcr
