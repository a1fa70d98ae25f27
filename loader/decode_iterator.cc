#include "pcr/decode_iterator.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "loader/threads.h"

namespace pcr {

namespace {

// Slots are made up front: their count is bounded.
constexpr size_t kMaxRecordsAhead = 1024;

// One record on its way to the caller.
struct Slot {
  DecodedBatch batch;
  std::vector<DecodeOptions> jobs;  // per image
  size_t pending = 0;               // images not decoded yet
  Status error;                     // the first failure; ends the iteration here
};

}  // namespace

// A feeding thread takes records from the read-ahead iterator, chooses each
// image's crop and output place, and queues the images; decoding threads
// take images in order. At most records_ahead slots exist; Next() hands the
// front slot's batch to the caller by swapping buffers, and the caller's old
// buffers become the slot's.
struct [[gnu::visibility("hidden")]] DecodeIterator::Rep {
  Rep(const DecodeIteratorOptions& options, std::unique_ptr<RecordIterator> records);
  ~Rep();
  void Feed();
  // Reads the next record into `slot` and sets its jobs; false at the end.
  Result<bool> Prepare(Slot* slot);
  void Decode();
  Result<bool> Next(DecodedBatch* batch);

  const DecodeIteratorOptions options_;
  std::unique_ptr<RecordIterator> records_;
  JpegDecoder shape_decoder_;  // header parsing on the feeding thread
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<std::unique_ptr<Slot>> free_;     // slots the feeder may fill
  std::deque<std::unique_ptr<Slot>> ready_;     // filled slots in delivery order
  std::deque<std::pair<Slot*, size_t>> queue_;  // images to decode
  bool finished_ = false;                       // the feeder saw the last record
  Status ended_;                                // the error Next() returned, returned again
  bool stop_ = false;
  std::thread feeder_;
  std::vector<std::thread> workers_;
};

Result<std::unique_ptr<DecodeIterator>> DecodeIterator::Create(const ImageDataset& dataset,
                                                              const DecodeIteratorOptions& options) {
  if (options.records_ahead == 0 || options.records_ahead > kMaxRecordsAhead) {
    return Status::InvalidArgument("records_ahead must be 1.." + std::to_string(kMaxRecordsAhead) + ", not " +
                                   std::to_string(options.records_ahead));
  }
  PCR_RETURN_IF_ERROR(CheckThreads(options.threads));
  PCR_RETURN_IF_ERROR(JpegDecoder::CheckOptions(options.decode));
  // Decoding needs scan groups: kFieldsOnly is no fidelity here.
  PCR_RETURN_IF_ERROR(dataset.CheckFidelity(options.records.fidelity));
  PCR_ASSIGN_OR_RETURN(auto records, RecordIterator::Create(dataset, options.records));
  return std::unique_ptr<DecodeIterator>(new DecodeIterator(std::make_unique<Rep>(options, std::move(records))));
}

DecodeIterator::DecodeIterator(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}
DecodeIterator::~DecodeIterator() = default;
Result<bool> DecodeIterator::Next(DecodedBatch* batch) {
  if (batch == nullptr) return Status::InvalidArgument("DecodeIterator::Next: batch is null");
  return rep_->Next(batch);
}

DecodeIterator::Rep::Rep(const DecodeIteratorOptions& options, std::unique_ptr<RecordIterator> records)
    : options_(options), records_(std::move(records)) {
  for (size_t i = 0; i < options_.records_ahead; ++i) free_.push_back(std::make_unique<Slot>());
  const int n = ResolveThreads(options_.threads);
  for (int t = 0; t < n; ++t) workers_.emplace_back([this] { Decode(); });
  feeder_ = std::thread([this] { Feed(); });
}

DecodeIterator::Rep::~Rep() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  changed_.notify_all();
  feeder_.join();
  for (std::thread& t : workers_) t.join();
}

Result<bool> DecodeIterator::Rep::Prepare(Slot* slot) {
  DecodedBatch& batch = slot->batch;
  PCR_ASSIGN_OR_RETURN(const bool more, records_->Next(&batch.source));
  if (!more) return false;
  batch.record = batch.source.record;
  const size_t n = batch.source.images.size();
  batch.images.resize(n);
  slot->jobs.assign(n, options_.decode);
  std::vector<size_t> offsets(n);
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    const ImageView& img = batch.source.images[i];
    if (options_.crop) {
      DecodeOptions whole = options_.decode;
      whole.crop = {};
      auto scaled = shape_decoder_.Shape(img.jpeg, whole);
      if (!scaled.ok()) return scaled.status().WithPrefix(std::string(img.key));
      slot->jobs[i].crop = options_.crop(*scaled);
    }
    auto shape = shape_decoder_.Shape(img.jpeg, slot->jobs[i]);
    if (!shape.ok()) return shape.status().WithPrefix(std::string(img.key));
    batch.images[i] = {img.label, img.key, *shape, {}, img.row};
    offsets[i] = total;
    total += shape->bytes();
  }
  batch.pixels.Resize(total);  // no zero-fill: every byte is decoded into
  const std::span<const uint8_t> all(batch.pixels.data(), batch.pixels.size());
  for (size_t i = 0; i < n; ++i) batch.images[i].pixels = all.subspan(offsets[i], batch.images[i].shape.bytes());
  return true;
}

void DecodeIterator::Rep::Feed() {
  while (true) {
    std::unique_ptr<Slot> slot;
    {
      std::unique_lock lock(mu_);
      changed_.wait(lock, [&] { return stop_ || !free_.empty(); });
      if (stop_) return;
      slot = std::move(free_.back());
      free_.pop_back();
    }
    slot->error = Status::OK();
    Result<bool> more = Status::OK();
    try {
      more = Prepare(slot.get());
    } catch (const std::bad_alloc&) {
      more = Status::OutOfMemory("decode iterator: out of memory");
    } catch (const std::exception& e) {  // from the crop callback
      more = Status::InvalidArgument(std::string("decode iterator: ") + e.what());
    }
    std::lock_guard lock(mu_);
    if (more.ok() && !*more) {
      finished_ = true;
      changed_.notify_all();
      return;
    }
    Slot* s = slot.get();
    ready_.push_back(std::move(slot));
    if (!more.ok()) {
      s->error = more.status();
      s->pending = 0;
      changed_.notify_all();
      return;
    }
    s->pending = s->jobs.size();
    for (size_t i = 0; i < s->jobs.size(); ++i) queue_.emplace_back(s, i);
    changed_.notify_all();
  }
}

void DecodeIterator::Rep::Decode() {
  JpegDecoder decoder;
  std::unique_lock lock(mu_);
  while (true) {
    changed_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    const auto [slot, i] = queue_.front();
    queue_.pop_front();
    lock.unlock();
    DecodedBatch& batch = slot->batch;
    const DecodedView& view = batch.images[i];
    const auto pixels = std::span<uint8_t>(batch.pixels.data(), batch.pixels.size()).subspan(
        static_cast<size_t>(view.pixels.data() - batch.pixels.data()), view.shape.bytes());
    const ByteSpan jpeg = batch.source.images[i].jpeg;
    const DecodeOptions& job = slot->jobs[i];
    auto got = OutOfMemoryAsStatus("decoding", [&] { return decoder.Decode(jpeg, job, pixels); });
    lock.lock();
    if (!got.ok() && slot->error.ok()) slot->error = got.status().WithPrefix(std::string(view.key));
    if (--slot->pending == 0) changed_.notify_all();
  }
}

Result<bool> DecodeIterator::Rep::Next(DecodedBatch* batch) {
  std::unique_lock lock(mu_);
  if (!ended_.ok()) return ended_;
  changed_.wait(lock, [&] { return (!ready_.empty() && ready_.front()->pending == 0) || (ready_.empty() && finished_); });
  if (ready_.empty()) return false;
  std::unique_ptr<Slot> slot = std::move(ready_.front());
  ready_.pop_front();
  if (!slot->error.ok()) {
    ended_ = slot->error;
    return ended_;
  }
  std::swap(*batch, slot->batch);
  free_.push_back(std::move(slot));
  changed_.notify_all();
  return true;
}

}  // namespace pcr
