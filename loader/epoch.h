// Which images each rank of a distributed job reads in an epoch, and in
// what order: a pure function of the dataset's record sizes, the options and
// (seed, epoch), identical on every machine.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pcr/image_loader.h"
#include "pcr/sample_iterator.h"
#include "pcr/status.h"

namespace pcr {

// InvalidArgument, naming the option and its range, unless world_size >= 1,
// rank < world_size, num_workers >= 1, worker < num_workers, batch_size >= 1
// and world_size * batch_size <= 2^48, and the same of every delivered
// segment's world size and workers.
Status ValidateEpochOptions(const EpochOptions& options);

// Images each rank delivers per epoch, the same on every rank.
uint64_t ImagesPerRank(uint64_t num_images, const EpochOptions& options);
// BatchesPerRank with options already validated.
// REQUIRES: ValidateEpochOptions(options).ok()
uint64_t BatchCount(uint64_t num_images, const EpochOptions& options);

// The images of the epoch the ranks share: all of them, or those
// options.delivered left (see EpochOptions::delivered).
// REQUIRES: ValidateEpochOptions(options).ok()
uint64_t EpochImages(std::span<const uint64_t> record_sizes, const EpochOptions& options, uint64_t seed,
                     uint64_t epoch);

// True when `text` is "NAME1=V1 NAME2=V2 ..." with fields' names in order,
// setting the values.
bool ParseNamedNumbers(std::string_view text, std::span<const std::pair<std::string_view, uint64_t*>> fields);

// The part of a rank's share of `per_rank` images that options.worker
// delivers: positions [offset, offset + count), the rank's batches b with
// b % num_workers == worker.
struct WorkerRun {
  uint64_t offset = 0;
  uint64_t count = 0;
};
WorkerRun WorkerShare(uint64_t per_rank, const EpochOptions& options);

// Where a worker of a loader resumed at `start` begins: it delivers the
// rank's batches start.batches + worker, + num_workers, ..., which are those
// of the share of worker `role` after its first `skip` batches.
struct LoaderResume {
  uint64_t role = 0;
  uint64_t skip = 0;
};
// InvalidArgument unless start.batches <= batches (the rank's batches per
// epoch) and start.num_workers, when known, is options.num_workers.
Result<LoaderResume> ResumeLoader(const LoaderState& start, uint64_t batches, const EpochOptions& options);

// The images (rows) of `max_batches` batches of `batch_size`, or 0 (no
// limit) when max_batches is 0 or the product overflows.
inline uint64_t MaxImages(uint64_t max_batches, uint64_t batch_size) {
  return max_batches > UINT64_MAX / std::max<uint64_t>(batch_size, 1) ? 0 : max_batches * batch_size;
}

// The end of a part of `n` delivery positions from `start` that delivers at
// most `most` of them (0: all to the end).
inline uint64_t PartEnd(uint64_t start, uint64_t n, uint64_t most) {
  return most == 0 ? n : std::min(n, start + std::min(most, n));
}

struct RankEpoch {
  std::vector<uint64_t> input;  // dataset-wide image indices in the order the rank reads them
  std::vector<uint64_t> order;  // delivery position -> index into `input`
};

// The epoch's global order is the records, permuted by (seed, epoch), each
// read front to back (or, after options.delivered, the images they left);
// positions past the last image wrap to the first.
// Rank r takes positions [r * n, (r + 1) * n) of it (n = ImagesPerRank), so
// ranks share at most the records at the ends of their runs; each worker
// takes its WorkerShare of them and delivers it through a shuffle buffer
// seeded by (seed, epoch, rank, worker). With `mix_records` > 0 (and
// shuffling), instead of the buffer, the worker's run is cut into windows
// of that many records' runs, and each window is delivered in a uniformly
// random order, seeded alike: a window's records are all in memory at once.
// REQUIRES: ValidateEpochOptions(options).ok()
RankEpoch PlanRankEpoch(std::span<const uint64_t> record_sizes, const EpochOptions& options, uint64_t seed,
                        uint64_t epoch, uint64_t mix_records = 0);

}  // namespace pcr
