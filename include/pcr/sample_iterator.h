// Iterating one rank's share of an epoch in batches, for distributed
// training: equal batch counts on every rank, a deterministic shuffle, and
// resumption from a small state.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "pcr/export.h"
#include "pcr/image_dataset.h"
#include "pcr/status.h"

namespace pcr {

// How ranks get equal shares when the images do not divide evenly.
// S images, W ranks, batches of B. As torch's DistributedSampler with and
// without drop_last.
enum class UnevenShares : uint8_t {
  // Every rank gets ceil(S / W) images, the last batch short when B does not
  // divide them: at most W - 1 images of the epoch's start are repeated.
  kPad,
  // Every rank gets floor(S / (W * B)) full batches; the rest sits this epoch out.
  kDrop,
};

// Part of an epoch delivered before a resume on another world size or
// number of workers: each of world_size ranks, with num_workers workers,
// delivered its first `batches` batches.
struct EpochSegment {
  uint64_t world_size = 1;
  uint64_t num_workers = 1;
  uint64_t batches = 0;

  bool operator==(const EpochSegment&) const = default;
};

struct EpochOptions {
  uint64_t rank = 0;        // 0..world_size-1
  uint64_t world_size = 1;  // ranks
  uint64_t batch_size = 1;  // every batch but a rank's last (kPad) is full
  // Data-loading workers of the rank, each with its own iterator: the rank's
  // batch b is delivered by worker b % num_workers, which reads a contiguous
  // part of the rank's share. Taking one batch from each worker in turn (as
  // torch's DataLoader does) gives the rank's batches in order; the rank's
  // images and batch count do not depend on num_workers.
  uint64_t worker = 0;       // 0..num_workers-1
  uint64_t num_workers = 1;
  UnevenShares uneven = UnevenShares::kPad;
  bool shuffle = true;  // false: records and images in dataset order
  // Images each rank mixes across record boundaries; 0 or 1: records are
  // shuffled but read through in order.
  uint64_t shuffle_buffer = 4096;
  // Elastic resume, as MosaicML Streaming's: the parts of this epoch already
  // delivered, oldest first. The epoch then goes on with the images none of
  // them delivered, taken in the order they would have come and split over
  // these ranks and workers (padded or dropped as `uneven` says), each
  // worker's part through its own shuffle buffer. Empty: the whole epoch.
  std::vector<EpochSegment> delivered = {};
};

// Batches each rank delivers per epoch (ImagesPerRank / batch_size, rounded
// up; the same on every rank), from the number of images alone.
// InvalidArgument, naming the option, for options SampleIterator::Create
// would refuse (world_size or batch_size 0, say).
PCR_EXPORT Result<uint64_t> BatchesPerRank(uint64_t num_images, const EpochOptions& options);

// Batches each rank delivers in epoch (seed, epoch) of `dataset`: as above
// for all its images or, after options.delivered, for the images left.
PCR_EXPORT Result<uint64_t> BatchesPerRank(const ImageDataset& dataset, const EpochOptions& options,
                                           uint64_t seed, uint64_t epoch);

// Where a rank stands in its epoch. All ranks of a job advance together, so
// one state (rank 0's, say) resumes them all.
struct PCR_EXPORT IterationState {
  uint64_t seed = 0;
  uint64_t epoch = 0;
  // Images this worker delivered so far in `epoch`: whole batches.
  uint64_t position = 0;

  bool operator==(const IterationState&) const = default;
  // "seed=S epoch=E position=P"
  std::string ToString() const;
  static Result<IterationState> Parse(std::string_view text);
};

struct SampleIteratorOptions {
  EpochOptions epoch;
  int fidelity = kFullFidelity;  // 1..num_scan_groups() or kFullFidelity
  // Images read beyond what the next batch needs, at most, and per engine
  // call unless the next batch needs more (the first batch of a shuffle
  // reads its buffer in one call); each call runs on to its last record's
  // end. Memory holds about shuffle_buffer + batch_size + read_ahead images.
  uint64_t read_ahead = 2048;
  // Images delivered at most, from the start position on (0: to the end of
  // the worker's share): an iteration over part of a share, which reads no
  // image after them.
  uint64_t max_images = 0;
  // Fields to read with the images: each record's streams of these fields
  // are read once, when its first image is.
  std::vector<std::string> fields;
  // An image whose stored chunks fail their checksums is left out of its
  // batch (which is then short, or empty) and listed in skipped(), rather than ending
  // the iteration with an error naming it.
  bool skip_corrupt = false;
};

// An image left out of an epoch, and why.
struct SkippedImage {
  uint64_t index = 0;  // dataset-wide
  std::string key;
  Status error;  // names the file, the image and what failed
};

struct SampleBatch {
  std::vector<uint64_t> indices;  // dataset-wide image index of each image
  std::vector<Image> images;
  // One column per SampleIteratorOptions::fields; row j belongs to images[j].
  std::vector<Column> fields;
};

// Thread safety: Next() may be called from one thread at a time; state() from
// any thread at any time.
class PCR_EXPORT SampleIterator {
 public:
  // Starts the epoch `start.epoch` of `start.seed` after its first
  // `start.position` images. The iterator keeps the dataset open (ImageDataset, Lifetime).
  static Result<std::unique_ptr<SampleIterator>> Create(const ImageDataset& dataset,
                                                        const SampleIteratorOptions& options,
                                                        const IterationState& start = {});
  ~SampleIterator();
  SampleIterator(const SampleIterator&) = delete;
  SampleIterator& operator=(const SampleIterator&) = delete;

  // Fills `batch` with the next batch_size images; false at the end of the
  // epoch. An error ends the iteration.
  // InvalidArgument when batch is null.
  Result<bool> Next(SampleBatch* batch);
  // The state after the last batch Next() returned.
  IterationState state() const;
  // Images left out so far (SampleIteratorOptions::skip_corrupt), in the
  // order of their batches.
  std::vector<SkippedImage> skipped() const;
  // This worker's images and batches per epoch, from the index alone.
  uint64_t num_images() const;
  uint64_t num_batches() const;

 private:
  struct Rep;
  explicit SampleIterator(std::unique_ptr<Rep> rep);
  std::unique_ptr<Rep> rep_;
};

}  // namespace pcr
