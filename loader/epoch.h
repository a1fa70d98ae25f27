// Which images each rank of a distributed job reads in an epoch, and in
// what order: a pure function of the dataset's record sizes, the options and
// (seed, epoch), identical on every machine.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "format/status.h"

namespace pcr {

// How ranks get equal shares when the images do not divide evenly.
enum class UnevenShares : uint8_t {
  kPad,   // every rank gets ceil(S / (W * B)) batches; the shortfall repeats the epoch's first images
  kDrop,  // every rank gets floor(S / (W * B)) batches; the remainder sits this epoch out
};

struct EpochOptions {
  uint64_t rank = 0;        // 0..world_size-1
  uint64_t world_size = 1;  // ranks (times data-loading workers per rank, if each reads alone)
  uint64_t batch_size = 1;  // every batch is full
  UnevenShares uneven = UnevenShares::kPad;
  bool shuffle = true;  // false: records and images in dataset order
  // Images each rank mixes across record boundaries; 0 or 1: records are
  // shuffled but read through in order.
  uint64_t shuffle_buffer = 4096;
};

// Where a rank stands in its epoch. All ranks of a job advance together, so
// one state (rank 0's, say) resumes them all.
struct IterationState {
  uint64_t seed = 0;
  uint64_t epoch = 0;
  uint64_t position = 0;  // images delivered so far in `epoch`, a multiple of batch_size

  bool operator==(const IterationState&) const = default;
  // "seed=S epoch=E position=P"
  std::string ToString() const;
  static Result<IterationState> Parse(std::string_view text);
};

// InvalidArgument unless world_size >= 1, rank < world_size, batch_size >= 1
// and world_size * batch_size <= 2^48.
Status ValidateEpochOptions(const EpochOptions& options);

// Images each rank delivers per epoch: whole batches, the same on every rank.
uint64_t ImagesPerRank(uint64_t num_images, const EpochOptions& options);

struct RankEpoch {
  std::vector<uint64_t> input;  // dataset-wide image indices in the order the rank reads them
  std::vector<uint64_t> order;  // delivery position -> index into `input`
};

// The epoch's global order is the records, permuted by (seed, epoch), each
// read front to back; positions past the last image wrap to the first.
// Rank r takes positions [r * n, (r + 1) * n) of it (n = ImagesPerRank), so
// ranks share at most the records at the ends of their runs, and delivers
// them through a shuffle buffer seeded by (seed, epoch, rank).
// REQUIRES: ValidateEpochOptions(options).ok()
RankEpoch PlanRankEpoch(std::span<const uint64_t> record_sizes, const EpochOptions& options, uint64_t seed,
                        uint64_t epoch);

}  // namespace pcr
