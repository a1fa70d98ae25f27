// Iterating one rank's share of an epoch in batches, for distributed
// training: equal batch counts on every rank, a deterministic shuffle, and
// resumption from a small state.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "loader/epoch.h"
#include "reader/image_dataset.h"

namespace pcr {

struct SampleIteratorOptions {
  EpochOptions epoch;
  int fidelity = 0;  // scan groups to read; 0: all
  // Images read beyond what the next batch needs, at most (and per engine
  // call); memory holds about shuffle_buffer + batch_size + read_ahead images.
  uint64_t read_ahead = 2048;
};

struct SampleBatch {
  std::vector<uint64_t> indices;  // dataset-wide image index of each image
  std::vector<Image> images;
};

class SampleIterator {
 public:
  // Starts the epoch `start.epoch` of `start.seed` after its first
  // `start.position` images. REQUIRES: `dataset` outlives the iterator.
  static Result<std::unique_ptr<SampleIterator>> Create(const ImageDataset& dataset,
                                                        const SampleIteratorOptions& options,
                                                        const IterationState& start = {});
  ~SampleIterator();
  SampleIterator(const SampleIterator&) = delete;
  SampleIterator& operator=(const SampleIterator&) = delete;

  // Fills `batch` with the next batch_size images; false at the end of the
  // epoch. An error ends the iteration.
  Result<bool> Next(SampleBatch* batch);
  // The state after the last batch Next() returned.
  IterationState state() const;
  // This rank's images and batches per epoch, from the index alone.
  uint64_t num_images() const { return plan_.order.size(); }
  uint64_t num_batches() const { return plan_.order.size() / options_.epoch.batch_size; }

 private:
  SampleIterator(const ImageDataset& dataset, const SampleIteratorOptions& options, const IterationState& start);
  void ReadAhead();
  // The last input the reader may read now. REQUIRES: mu_ held
  uint64_t ReadLimit() const;

  const ImageDataset& dataset_;
  const SampleIteratorOptions options_;
  const uint64_t seed_;
  const uint64_t epoch_;
  const uint64_t start_;
  const uint64_t read_ahead_;  // options_.read_ahead within 1..images
  int fidelity_;
  RankEpoch plan_;
  std::vector<uint64_t> delivered_at_;  // input -> delivery position
  std::vector<uint64_t> needed_;        // delivery position q -> max input of positions 0..q

  mutable std::mutex mu_;
  std::condition_variable changed_;
  uint64_t position_;          // images delivered
  uint64_t read_ = 0;          // inputs [0, read_) are read or not needed
  std::unordered_map<uint64_t, Image> held_;  // input -> image read, not yet delivered
  Status error_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace pcr
