// What an open dataset loads on first touch (its files' indexes, its
// records' sample metadata), kept under a byte bound, least recently used
// first out. Thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

namespace pcr {

class LoadCache {
 public:
  explicit LoadCache(uint64_t capacity) : capacity_(capacity) {}

  // The value of `key`, now the most recently used; nullptr when absent.
  std::shared_ptr<const void> Find(uint64_t key);
  // Sets each null (*out)[i] (resized to keys.size()) to keys[i]'s value,
  // of type T; returns the keys still absent, each once.
  template <typename T>
  std::vector<uint64_t> FindAll(std::span<const uint64_t> keys, std::vector<std::shared_ptr<const T>>* out) {
    std::vector<uint64_t> absent;
    out->resize(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      if ((*out)[i] == nullptr) (*out)[i] = std::static_pointer_cast<const T>(Find(keys[i]));
      if ((*out)[i] == nullptr && std::find(absent.begin(), absent.end(), keys[i]) == absent.end()) {
        absent.push_back(keys[i]);
      }
    }
    return absent;
  }
  // Keeps `value` (`bytes` of memory) as `key`'s, then drops the least
  // recently used others while over the bound. A value held elsewhere lives
  // on there, so memory exceeds the bound by what callers hold.
  void Insert(uint64_t key, std::shared_ptr<const void> value, uint64_t bytes);
  uint64_t bytes() const;

  // Held while loading `keys`, so that concurrent first touches of a key
  // load it once: find, then load what is still absent, under the lock.
  std::vector<std::unique_lock<std::mutex>> LockLoads(std::span<const uint64_t> keys);

 private:
  struct Entry {
    std::shared_ptr<const void> value;
    uint64_t bytes = 0;
    std::list<uint64_t>::iterator order;
  };
  static constexpr size_t kLoadLocks = 64;
  const uint64_t capacity_;
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, Entry> entries_;
  std::list<uint64_t> order_;  // most recently used first
  uint64_t bytes_ = 0;
  std::mutex load_locks_[kLoadLocks];
};

}  // namespace pcr
