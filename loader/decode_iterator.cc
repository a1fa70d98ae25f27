#include "loader/decode_iterator.h"

#include <algorithm>

namespace pcr {

Result<std::unique_ptr<DecodeIterator>> DecodeIterator::Create(const ImageDataset& dataset,
                                                              const DecodeIteratorOptions& options) {
  PCR_ASSIGN_OR_RETURN(auto records, RecordIterator::Create(dataset, options.records));
  return std::unique_ptr<DecodeIterator>(new DecodeIterator(options, std::move(records)));
}

DecodeIterator::DecodeIterator(DecodeIteratorOptions options, std::unique_ptr<RecordIterator> it)
    : options_(std::move(options)), records_(std::move(it)) {
  const int n = options_.threads > 0 ? options_.threads
                                     : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  for (int t = 0; t < n; ++t) workers_.emplace_back([this] { Work(); });
}

DecodeIterator::~DecodeIterator() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  work_ready_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void DecodeIterator::Work() {
  JpegDecoder decoder;
  std::unique_lock lock(mu_);
  while (true) {
    work_ready_.wait(lock, [&] { return stop_ || next_job_ < jobs_.size(); });
    if (stop_) return;
    const size_t i = next_job_++;
    DecodedBatch* batch = batch_;
    const DecodeOptions options = jobs_[i];
    lock.unlock();
    DecodedView& view = batch->images[i];
    const auto pixels = std::span<uint8_t>(batch->pixels).subspan(
        static_cast<size_t>(view.pixels.data() - batch->pixels.data()), view.shape.bytes());
    auto got = decoder.Decode(batch->source.images[i].jpeg, options, pixels);
    lock.lock();
    if (!got.ok() && error_.ok()) error_ = got.status().WithPrefix(std::string(view.key));
    if (++jobs_done_ == jobs_.size()) work_done_.notify_all();
  }
}

Result<bool> DecodeIterator::Next(DecodedBatch* batch) {
  PCR_ASSIGN_OR_RETURN(const bool more, records_->Next(&batch->source));
  if (!more) return false;
  batch->record = batch->source.record;
  const size_t n = batch->source.images.size();
  batch->images.resize(n);
  std::vector<DecodeOptions> jobs(n, options_.decode);
  std::vector<size_t> offsets(n);
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    const ImageView& img = batch->source.images[i];
    if (options_.crop) {
      DecodeOptions whole = options_.decode;
      whole.crop = {};
      auto scaled = shape_decoder_.Shape(img.jpeg, whole);
      if (!scaled.ok()) return scaled.status().WithPrefix(std::string(img.key));
      jobs[i].crop = options_.crop(*scaled);
    }
    auto shape = shape_decoder_.Shape(img.jpeg, jobs[i]);
    if (!shape.ok()) return shape.status().WithPrefix(std::string(img.key));
    batch->images[i] = {img.label, img.key, *shape, {}};
    offsets[i] = total;
    total += shape->bytes();
  }
  if (batch->pixels.size() < total) batch->pixels.resize(total);
  for (size_t i = 0; i < n; ++i) {
    batch->images[i].pixels = std::span<const uint8_t>(batch->pixels).subspan(offsets[i], batch->images[i].shape.bytes());
  }
  std::unique_lock lock(mu_);
  batch_ = batch;
  jobs_ = std::move(jobs);
  next_job_ = 0;
  jobs_done_ = 0;
  work_ready_.notify_all();
  work_done_.wait(lock, [&] { return jobs_done_ == jobs_.size(); });
  if (!error_.ok()) return error_;
  return true;
}

}  // namespace pcr
