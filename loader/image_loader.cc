#include "pcr/image_loader.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <optional>
#include <thread>
#include <mutex>
#include <initializer_list>
#include <limits>
#include <utility>

#include "format/permutation.h"
#include "format/table_format.h"
#include "loader/epoch.h"
#include "loader/threads.h"
#include "reader/record_reads.h"

namespace pcr {

namespace {

// One seed from several values, each folded in by a splitmix64 step.
uint64_t ChainSeeds(std::initializer_list<uint64_t> values) {
  uint64_t z = 0;
  for (const uint64_t v : values) z = SplitMix64(z ^ v).Next();
  return z;
}

}  // namespace

std::string LoaderState::ToString() const {
  return "seed=" + std::to_string(seed) + " epoch=" + std::to_string(epoch) + " batches=" + std::to_string(batches) +
         " num_workers=" + std::to_string(num_workers);
}

Result<LoaderState> LoaderState::Parse(std::string_view text) {
  LoaderState s;
  const std::pair<std::string_view, uint64_t*> fields[] = {
      {"seed", &s.seed}, {"epoch", &s.epoch}, {"batches", &s.batches}, {"num_workers", &s.num_workers}};
  if (ParseNamedNumbers(text, fields)) return s;
  return Status::InvalidArgument("loader state '" + std::string(text) +
                                 "': expected 'seed=S epoch=E batches=B num_workers=K'");
}

// Batches are read and decoded one ahead of the caller on the loader's own
// thread: Next() waits for it, swaps its buffers with the caller's, and asks
// for the next one into the caller's old buffers.
struct [[gnu::visibility("hidden")]] ImageLoader::Rep {
  // Reads and decodes this worker's next batch into `out`; false at the end.
  Result<bool> Load(LoaderBatch* out);
  // The loading thread: one Load per request.
  void Run();
  // Fills `out` (its images decoded) up to `planned` images with its first
  // ones again (replace_skipped).
  Result<bool> Refill(uint64_t planned, LoaderBatch* out);
  // The images skipped so far, by the iterator and by decoding.
  std::vector<SkippedImage> Skipped() const;
  // Decodes `jpegs` into `out` as options.output says. An image's error sets
  // *failed to its index; an error of the whole batch sets it to jpegs.size().
  Status DecodeBatch(std::span<const ByteSpan> jpegs, uint64_t seed, LoaderBatch* out, size_t* failed);
  // Output::kDecoded: each image whole, on up to `threads` threads.
  Status DecodeWhole(std::span<const ByteSpan> jpegs, LoaderBatch* out, size_t* failed);

  ImageLoaderOptions options;
  uint64_t seed = 0, epoch = 0;
  uint64_t batches = 0;     // the rank's batches per epoch
  uint64_t next_batch = 0;  // the rank's batch number of this worker's next batch
  uint64_t position = 0;    // images of this worker's share delivered or skipped
  std::atomic<uint64_t> taken;  // LoaderState::batches after the last batch Next() returned
  std::unique_ptr<SampleIterator> samples;
  std::unique_ptr<BatchDecoder> decoder;
  int threads = 1;                                    // Output::kDecoded: decoding threads
  std::vector<std::unique_ptr<JpegDecoder>> whole;    // Output::kDecoded: one per thread
  SampleBatch jpegs;        // used by the loading thread only
  LoaderBatch staged;       // the batch being loaded
  Status ended;             // the error Next() returned, returned again
  bool finished = false;    // Next() returned false
  mutable std::mutex mu;
  std::condition_variable changed;
  bool requested = true;               // the thread is to load the next batch
  std::optional<Result<bool>> loaded;  // what its last Load gave, not yet taken
  bool stop = false;
  std::vector<SkippedImage> undecodable;  // skip_corrupt: images that did not decode
  std::thread thread;

  ~Rep() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    changed.notify_all();
    if (thread.joinable()) thread.join();
  }
};

void ImageLoader::Rep::Run() {
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu);
      changed.wait(lock, [&] { return stop || requested; });
      if (stop) return;
      requested = false;
    }
    Result<bool> result = OutOfMemoryAsStatus("loading a batch", [&] { return Load(&staged); });
    std::lock_guard<std::mutex> lock(mu);
    loaded = std::move(result);
    changed.notify_all();
  }
}

Result<std::unique_ptr<ImageLoader>> ImageLoader::Create(const ImageDataset& dataset,
                                                         const ImageLoaderOptions& options, const LoaderState& start) {
  const EpochOptions& e = options.epoch;
  PCR_RETURN_IF_ERROR(ValidateEpochOptions(e));
  if (options.read_ahead == 0) return Status::InvalidArgument("read_ahead must be at least 1, not 0");
  PCR_ASSIGN_OR_RETURN(auto decoder, BatchDecoder::Create(options.transform));
  const uint64_t image_bytes = decoder->image_bytes();
  const bool decoded = options.output == ImageLoaderOptions::Output::kDecoded;
  if (options.output != ImageLoaderOptions::Output::kResized && !decoded) {
    return Status::InvalidArgument("output must be Output::kResized or kDecoded, not " +
                                   std::to_string(static_cast<int>(options.output)));
  }
  if (decoded) {
    PCR_RETURN_IF_ERROR(JpegDecoder::CheckOptions({.scale_denom = options.decoded_scale}).WithPrefix("decoded_scale"));
  }
  if (!decoded && e.batch_size > options.max_batch_bytes / image_bytes) {
    return Status::InvalidArgument("batch_size " + std::to_string(e.batch_size) + " of " +
                                   std::to_string(options.transform.size) + " x " +
                                   std::to_string(options.transform.size) + " images (" +
                                   std::to_string(image_bytes) + " bytes each) needs more than max_batch_bytes (" +
                                   std::to_string(options.max_batch_bytes) + ") per batch: at most " +
                                   std::to_string(options.max_batch_bytes / image_bytes) +
                                   " images of that size, or a smaller size");
  }
  auto rep = std::make_unique<Rep>();
  const uint64_t images = EpochImages(RecordImageCounts(dataset), e, start.seed, start.epoch);
  rep->batches = BatchCount(images, e);
  // The SampleIterator of worker `role`, after its first `skip` batches.
  PCR_ASSIGN_OR_RETURN(const LoaderResume resume, ResumeLoader(start, rep->batches, e));
  const uint64_t k = e.num_workers, role = resume.role, skip = resume.skip;
  EpochOptions epoch = e;
  epoch.worker = role;
  const WorkerRun run = WorkerShare(ImagesPerRank(images, e), epoch);
  const uint64_t position = std::min(skip * e.batch_size, run.count);
  PCR_ASSIGN_OR_RETURN(rep->samples, SampleIterator::Create(dataset,
                                                            {.epoch = epoch,
                                                             .fidelity = options.fidelity,
                                                             .read_ahead = options.read_ahead,
                                                             .max_images = MaxImages(options.max_batches, e.batch_size),
                                                             .fields = options.fields,
                                                             .skip_corrupt = options.skip_corrupt},
                                                            {start.seed, start.epoch, position}));
  rep->options = options;
  rep->options.epoch = epoch;
  rep->seed = start.seed;
  rep->epoch = start.epoch;
  rep->next_batch = role + skip * k;
  rep->position = position;
  rep->taken = start.batches;
  rep->decoder = std::move(decoder);
  rep->threads = ResolveThreads(options.transform.threads);
  rep->thread = std::thread([r = rep.get()] { r->Run(); });
  return std::unique_ptr<ImageLoader>(new ImageLoader(std::move(rep)));
}

ImageLoader::ImageLoader(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}
ImageLoader::~ImageLoader() = default;

uint64_t ImageLoader::num_batches() const { return rep_->batches; }

std::vector<SkippedImage> ImageLoader::Rep::Skipped() const {
  std::vector<SkippedImage> out = samples->skipped();
  std::lock_guard<std::mutex> lock(mu);
  out.insert(out.end(), undecodable.begin(), undecodable.end());
  return out;
}

std::vector<SkippedImage> ImageLoader::skipped() const { return rep_->Skipped(); }

LoaderState ImageLoader::state() const {
  return {rep_->seed, rep_->epoch, rep_->taken.load(), rep_->options.epoch.num_workers};
}

Result<bool> ImageLoader::Next(LoaderBatch* batch) {
  if (batch == nullptr) return Status::InvalidArgument("ImageLoader::Next: batch is null");
  Rep& r = *rep_;
  if (!r.ended.ok()) return r.ended;
  if (r.finished) return false;
  std::unique_lock<std::mutex> lock(r.mu);
  r.changed.wait(lock, [&] { return r.loaded.has_value(); });
  Result<bool> more = std::move(*r.loaded);
  r.loaded.reset();
  if (!more.ok()) {
    r.ended = more.status();
    return more;
  }
  if (!*more) {
    r.finished = true;
    return false;
  }
  std::swap(*batch, r.staged);
  r.taken = batch->batch + 1;
  r.requested = true;
  r.changed.notify_all();
  return true;
}

Result<bool> ImageLoader::Rep::Load(LoaderBatch* out) {
  PCR_ASSIGN_OR_RETURN(const bool more, samples->Next(&jpegs));
  if (!more) return false;
  const uint64_t planned = std::min(options.epoch.batch_size, samples->num_images() - position);
  position += planned;
  out->batch = next_batch;
  next_batch += options.epoch.num_workers;
  out->fields = std::move(jpegs.fields);
  const uint64_t batch_seed = ChainSeeds({seed, epoch, options.epoch.rank, out->batch});
  while (true) {
    const size_t n = jpegs.images.size();
    out->indices = jpegs.indices;
    out->labels.resize(n);
    std::vector<ByteSpan> spans(n);
    for (size_t i = 0; i < n; ++i) {
      out->labels[i] = jpegs.images[i].label;
      spans[i] = jpegs.images[i].jpeg;
    }
    size_t failed = 0;
    Status decoded = DecodeBatch(spans, batch_seed, out, &failed);
    if (decoded.ok()) return options.replace_skipped ? Refill(planned, out) : Result<bool>(true);
    if (failed >= n) return decoded.WithPrefix("the rank's batch " + std::to_string(out->batch));
    decoded = decoded.WithPrefix("dataset image " + std::to_string(jpegs.indices[failed]) + " (key " +
                                 jpegs.images[failed].key + ")");
    if (!options.skip_corrupt) return decoded;
    // Leave the image out and decode the rest again.
    {
      std::lock_guard<std::mutex> lock(mu);
      undecodable.push_back({jpegs.indices[failed], jpegs.images[failed].key, decoded});
    }
    jpegs.indices.erase(jpegs.indices.begin() + static_cast<std::ptrdiff_t>(failed));
    jpegs.images.erase(jpegs.images.begin() + static_cast<std::ptrdiff_t>(failed));
    for (Column& c : out->fields) {
      Column rest(c.type);
      AppendRows(c, 0, failed, &rest);
      AppendRows(c, failed + 1, c.rows - failed - 1, &rest);
      c = std::move(rest);
    }
  }
}

Status ImageLoader::Rep::DecodeBatch(std::span<const ByteSpan> jpegs, uint64_t seed, LoaderBatch* out,
                                     size_t* failed) {
  if (options.output == ImageLoaderOptions::Output::kDecoded) return DecodeWhole(jpegs, out, failed);
  out->shapes.clear();
  out->offsets.clear();
  out->images.resize(jpegs.size() * decoder->image_bytes());
  return decoder->Decode(jpegs, seed, out->images, failed);
}

Status ImageLoader::Rep::DecodeWhole(std::span<const ByteSpan> jpegs, LoaderBatch* out, size_t* failed) {
  const size_t n = jpegs.size();
  const int used = static_cast<int>(std::min<size_t>(static_cast<size_t>(threads), std::max<size_t>(n, 1)));
  while (whole.size() < static_cast<size_t>(used)) whole.push_back(std::make_unique<JpegDecoder>());
  const DecodeOptions o{.scale_denom = options.decoded_scale, .format = PixelFormat::kRgb,
                        .decoder = options.transform.decoder};
  // Every image's shape from its header, and the batch's bytes, before any
  // pixel is allocated.
  out->shapes.resize(n);
  out->offsets.resize(n);
  uint64_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    auto shape = whole[0]->Shape(jpegs[i], o);
    if (!shape.ok()) {
      *failed = i;
      return shape.status();
    }
    out->shapes[i] = *shape;
    out->offsets[i] = total;
    total += shape->bytes();
  }
  if (total > options.max_batch_bytes) {
    *failed = n;
    return Status::InvalidArgument(std::to_string(n) + " images decoded whole take " + std::to_string(total) +
                                   " bytes, more than max_batch_bytes (" + std::to_string(options.max_batch_bytes) +
                                   "): use a larger decoded_scale, a smaller batch_size or a larger max_batch_bytes");
  }
  out->images.resize(total);
  return ParallelFor(
      n, whole,
      [&](JpegDecoder& decoder, size_t i) {
        const std::span<uint8_t> pixels(out->images.data() + out->offsets[i], out->shapes[i].bytes());
        return decoder.Decode(jpegs[i], o, pixels).status();
      },
      failed);
}

Result<bool> ImageLoader::Rep::Refill(uint64_t planned, LoaderBatch* out) {
  const size_t good = out->labels.size();
  if (good == planned) return true;
  if (good == 0) {
    const std::vector<SkippedImage> all = Skipped();
    return all.back().error.WithPrefix("every image of the rank's batch " + std::to_string(out->batch) +
                                       " is unreadable, so none can take the others' places; the last one");
  }
  const bool ragged = options.output == ImageLoaderOptions::Output::kDecoded;
  const size_t bytes = decoder->image_bytes();
  for (size_t i = good; i < planned; ++i) {
    const size_t from = (i - good) % good;
    if (ragged) {
      const uint64_t at = out->images.size(), length = out->shapes[from].bytes();
      out->images.resize(at + length);
      std::copy_n(out->images.begin() + static_cast<std::ptrdiff_t>(out->offsets[from]), length,
                  out->images.begin() + static_cast<std::ptrdiff_t>(at));
      out->shapes.push_back(out->shapes[from]);
      out->offsets.push_back(at);
    } else {
      out->images.resize((i + 1) * bytes);
      std::copy_n(out->images.begin() + static_cast<std::ptrdiff_t>(from * bytes), bytes,
                  out->images.begin() + static_cast<std::ptrdiff_t>(i * bytes));
    }
    out->labels.push_back(out->labels[from]);
    out->indices.push_back(out->indices[from]);
  }
  for (Column& c : out->fields) {
    Column filled = c;
    for (size_t i = good; i < planned; ++i) AppendRows(c, (i - good) % good, 1, &filled);
    c = std::move(filled);
  }
  return true;
}

}  // namespace pcr
