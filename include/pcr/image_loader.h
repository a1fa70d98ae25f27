// Batches of decoded, cropped and resized images for training or evaluation:
// one rank's (and one worker's) share of an epoch, shuffled, read and decoded
// ahead of the caller, resumable from a small state. pcr.torch.ImageLoader
// is this loader.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "pcr/export.h"
#include "pcr/image_dataset.h"
#include "pcr/sample_iterator.h"
#include "pcr/status.h"
#include "pcr/transform.h"

namespace pcr {

struct ImageLoaderOptions {
  // Rank, world size, batch size, workers, uneven shares and shuffling, as
  // SampleIterator takes them. A worker's batches are the rank's batches
  // start + worker, start + worker + num_workers, ... (start: the resumed
  // LoaderState's batches), so taking one batch from each worker in turn,
  // worker 0 first, gives the rank's batches in order.
  EpochOptions epoch;
  int fidelity = kFullFidelity;  // scan groups 1..fidelity, or kFullFidelity
  // RandomResizedCrop and a random flip (training), or Resize and
  // CenterCrop (evaluation), chosen before decoding; the decoding threads.
  BatchTransformOptions transform;
  uint64_t read_ahead = 2048;       // as SampleIteratorOptions::read_ahead
  std::vector<std::string> fields;  // fields to deliver with the images
  // An image whose chunks fail their checksums, or that does not decode, is
  // left out of its batch and listed in skipped() rather than ending the
  // epoch with an error naming it.
  bool skip_corrupt = false;
  // With skip_corrupt: batches keep their size, the places of skipped images
  // taken by the batch's first good images again, in order (a batch with
  // none ends the epoch with the last image's error).
  bool replace_skipped = false;
  // This worker's batches delivered at most, from the start on (0: to the
  // end of the epoch): a part of the share, with nothing after it read or
  // decoded.
  uint64_t max_batches = 0;
  // kResized: every image as `transform` makes it (size x size). kDecoded:
  // each image whole, decoded at 1/decoded_scale of its size (DCT scaling:
  // 1, 2, 4 or 8), RGB, height x width x 3 bytes, the images back to back
  // in LoaderBatch::images (a ragged batch: LoaderBatch::shapes and
  // offsets). The transform's crop, flip, dtype and layout then do not
  // apply; its threads and decoder do.
  enum class Output { kResized, kDecoded } output = Output::kResized;
  int decoded_scale = 1;
  // Bytes one batch's images may take; the loader holds two batches (the
  // one the caller has and the next). kResized: Create refuses a batch_size
  // whose batches would take more. kDecoded: a batch whose images' headers
  // say they would take more ends the iteration with InvalidArgument, before
  // any is decoded.
  uint64_t max_batch_bytes = uint64_t{4} << 30;
};

// Where a rank stands in an epoch. All ranks advance together, so one
// state (rank 0's, say) resumes them all.
struct PCR_EXPORT LoaderState {
  uint64_t seed = 0;
  uint64_t epoch = 0;
  uint64_t batches = 0;  // the rank's batches taken so far this epoch
  // Workers per rank when saved (a batch's images depend on it); 0: not
  // known, not checked on resume.
  uint64_t num_workers = 0;

  bool operator==(const LoaderState&) const = default;
  // "seed=S epoch=E batches=B num_workers=K"
  std::string ToString() const;
  static Result<LoaderState> Parse(std::string_view text);
};

// One batch: N images (N = labels.size(), batch_size but for a rank's last
// batch under UnevenShares::kPad) in one buffer, their labels, dataset-wide
// indices and fields.
struct LoaderBatch {
  uint64_t batch = 0;           // the rank's batch number in the epoch, from 0
  // Output::kResized: N x 3 x size x size, or N x size x size x 3
  // (channels_last), values of the transform's dtype. kDecoded: each image's
  // height x width x 3 bytes at offsets[j].
  std::vector<uint8_t> images;
  std::vector<int64_t> labels;
  std::vector<uint64_t> indices;
  // One column per ImageLoaderOptions::fields; row j belongs to image j.
  std::vector<Column> fields;
  // Output::kDecoded: image j's shape and the offset of its first byte in
  // `images`. Empty for kResized.
  std::vector<ImageShape> shapes;
  std::vector<uint64_t> offsets;
};

// Thread safety: Next() may be called from one thread at a time; state(),
// num_batches() and skipped() from any thread. The loader keeps the dataset open
// (ImageDataset, Lifetime).
class PCR_EXPORT ImageLoader {
 public:
  // Checks every option (InvalidArgument naming it and its range) and that
  // `start` fits them: its batches at most num_batches(), its num_workers
  // (when known) equal to the options'. Batch i of an epoch decodes with
  // the seed of (seed, epoch, rank, i), so the same arguments give the same
  // batches whatever the number of decoding threads.
  static Result<std::unique_ptr<ImageLoader>> Create(const ImageDataset& dataset, const ImageLoaderOptions& options,
                                                     const LoaderState& start = {});
  ~ImageLoader();
  ImageLoader(const ImageLoader&) = delete;
  ImageLoader& operator=(const ImageLoader&) = delete;

  // Fills `batch` with this worker's next batch, decoded while the caller
  // worked on the last one, and takes the caller's buffers for the batch
  // after; false at the end of the epoch. A decode error names the image
  // (key and dataset index) and ends the iteration.
  // InvalidArgument when batch is null.
  Result<bool> Next(LoaderBatch* batch);
  // The state after the last batch Next() returned (its batch + 1), or the
  // start before any. With several workers, save the state of the last batch
  // taken from any of them.
  LoaderState state() const;
  // The rank's batches per epoch, the same on every rank and for any number
  // of workers.
  uint64_t num_batches() const;
  // Images left out so far (ImageLoaderOptions::skip_corrupt).
  std::vector<SkippedImage> skipped() const;

 private:
  struct Rep;
  explicit ImageLoader(std::unique_ptr<Rep> rep);
  std::unique_ptr<Rep> rep_;
};

}  // namespace pcr
