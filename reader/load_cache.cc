#include "reader/load_cache.h"

#include <algorithm>

namespace pcr {

std::shared_ptr<const void> LoadCache::Find(uint64_t key) {
  std::lock_guard lock(mu_);
  const auto it = entries_.find(key);
  if (it == entries_.end()) return nullptr;
  order_.splice(order_.begin(), order_, it->second.order);
  return it->second.value;
}

void LoadCache::Insert(uint64_t key, std::shared_ptr<const void> value, uint64_t bytes) {
  std::vector<std::shared_ptr<const void>> dropped;  // released after the lock
  std::lock_guard lock(mu_);
  if (const auto it = entries_.find(key); it != entries_.end()) {
    bytes_ -= it->second.bytes;
    order_.erase(it->second.order);
    dropped.push_back(std::move(it->second.value));
    entries_.erase(it);
  }
  order_.push_front(key);
  entries_[key] = {std::move(value), bytes, order_.begin()};
  bytes_ += bytes;
  while (bytes_ > capacity_ && order_.size() > 1) {
    const auto it = entries_.find(order_.back());
    bytes_ -= it->second.bytes;
    dropped.push_back(std::move(it->second.value));
    entries_.erase(it);
    order_.pop_back();
  }
}

uint64_t LoadCache::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

std::vector<std::unique_lock<std::mutex>> LoadCache::LockLoads(std::span<const uint64_t> keys) {
  std::vector<size_t> stripes;
  for (const uint64_t k : keys) stripes.push_back((k * 0x9e3779b97f4a7c15) >> 58);
  std::sort(stripes.begin(), stripes.end());
  stripes.erase(std::unique(stripes.begin(), stripes.end()), stripes.end());
  std::vector<std::unique_lock<std::mutex>> locks;
  for (const size_t s : stripes) locks.emplace_back(load_locks_[s]);
  return locks;
}

}  // namespace pcr
