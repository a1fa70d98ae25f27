#include "pcr/sample_iterator.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "format/table_format.h"
#include "loader/epoch.h"
#include "loader/threads.h"
#include "reader/record_reads.h"

namespace pcr {

struct [[gnu::visibility("hidden")]] SampleIterator::Rep {
  Rep(const ImageDataset& dataset, const SampleIteratorOptions& options, const IterationState& start);
  ~Rep();
  void ReadAhead();
  // The last input the reader may read now. REQUIRES: mu_ held
  uint64_t ReadLimit() const;
  Result<bool> Next(SampleBatch* batch);
  IterationState state() const;

  const std::shared_ptr<const ImageDataset> open_;  // keeps the dataset open
  const ImageDataset& dataset_;
  const SampleIteratorOptions options_;
  const uint64_t seed_;
  const uint64_t epoch_;
  const uint64_t start_;
  uint64_t end_ = 0;           // delivery positions [start_, end_) are delivered
  const uint64_t read_ahead_;  // options_.read_ahead within 1..images
  int fidelity_;
  RankEpoch plan_;
  std::vector<uint64_t> delivered_at_;  // input -> delivery position
  std::vector<uint64_t> needed_;        // delivery position q -> max input of positions 0..q
  mutable std::mutex mu_;
  std::condition_variable changed_;
  uint64_t position_;                         // images delivered
  uint64_t read_ = 0;                         // inputs [0, read_) are read or not needed
  struct Held {
    Image image;
    std::vector<Column> fields;  // one row each
    Status failed;               // skip_corrupt: why the image is left out
  };
  std::vector<SkippedImage> skipped_;
  std::unordered_map<uint64_t, Held> held_;  // input -> image read, not yet delivered
  RecordSelection fields_;                    // kFieldsOnly and the fields asked for
  // The last record whose fields were read (reader thread only).
  uint64_t fields_record_ = UINT64_MAX;
  std::vector<Column> record_fields_;
  Status error_;
  bool stop_ = false;
  std::thread thread_;
};

Result<std::unique_ptr<SampleIterator>> SampleIterator::Create(const ImageDataset& dataset,
                                                              const SampleIteratorOptions& options,
                                                              const IterationState& start) {
  PCR_RETURN_IF_ERROR(ValidateEpochOptions(options.epoch));
  PCR_RETURN_IF_ERROR(dataset.CheckFidelity(options.fidelity));
  const uint64_t images = EpochImages(RecordImageCounts(dataset), options.epoch, start.seed, start.epoch);
  const uint64_t mine = WorkerShare(ImagesPerRank(images, options.epoch), options.epoch).count;
  if (start.position > mine || (start.position % options.epoch.batch_size != 0 && start.position != mine)) {
    return Status::InvalidArgument("iteration state " + start.ToString() + ": position is not a batch boundary in 0.." +
                                   std::to_string(mine));
  }
  PCR_ASSIGN_OR_RETURN(std::vector<uint32_t> fields, dataset.ResolveFields(options.fields));
  auto rep = std::make_unique<Rep>(dataset, options, start);
  rep->fields_.fields = std::move(fields);
  rep->thread_ = ReadAheadThread(rep.get());
  return std::unique_ptr<SampleIterator>(new SampleIterator(std::move(rep)));
}

Result<uint64_t> BatchesPerRank(const ImageDataset& dataset, const EpochOptions& options, uint64_t seed,
                                uint64_t epoch) {
  PCR_RETURN_IF_ERROR(ValidateEpochOptions(options));
  return BatchCount(EpochImages(RecordImageCounts(dataset), options, seed, epoch), options);
}

SampleIterator::SampleIterator(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}
SampleIterator::~SampleIterator() = default;
Result<bool> SampleIterator::Next(SampleBatch* batch) {
  if (batch == nullptr) return Status::InvalidArgument("SampleIterator::Next: batch is null");
  return rep_->Next(batch);
}
IterationState SampleIterator::state() const { return rep_->state(); }
std::vector<SkippedImage> SampleIterator::skipped() const {
  std::lock_guard<std::mutex> lock(rep_->mu_);
  return rep_->skipped_;
}
uint64_t SampleIterator::num_images() const { return rep_->plan_.order.size(); }
uint64_t SampleIterator::num_batches() const {
  const uint64_t b = rep_->options_.epoch.batch_size;
  return (rep_->plan_.order.size() + b - 1) / b;
}

SampleIterator::Rep::Rep(const ImageDataset& dataset, const SampleIteratorOptions& options,
                               const IterationState& start)
    : open_(ShareDataset(dataset)),
      dataset_(*open_),
      options_(options),
      seed_(start.seed),
      epoch_(start.epoch),
      start_(start.position),
      read_ahead_(std::clamp<uint64_t>(options.read_ahead, 1, std::max<uint64_t>(dataset.num_images(), 1))),
      fidelity_(dataset.ScanGroups(options.fidelity)),
      position_(start.position) {
  plan_ = PlanRankEpoch(RecordImageCounts(dataset), options.epoch, seed_, epoch_);
  delivered_at_.resize(plan_.order.size());
  needed_.resize(plan_.order.size());
  for (uint64_t q = 0; q < plan_.order.size(); ++q) {
    delivered_at_[plan_.order[q]] = q;
    needed_[q] = std::max(plan_.order[q], q == 0 ? 0 : needed_[q - 1]);
  }
  end_ = PartEnd(start_, plan_.order.size(), options.max_images);
}

SampleIterator::Rep::~Rep() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

IterationState SampleIterator::Rep::state() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {seed_, epoch_, position_};
}

uint64_t SampleIterator::Rep::ReadLimit() const {
  const uint64_t batch_end = std::min(end_, position_ + options_.epoch.batch_size);
  return batch_end == 0 ? 0 : needed_[batch_end - 1] + read_ahead_;
}

void SampleIterator::Rep::ReadAhead() {
  const uint64_t n = plan_.order.size();
  // Inputs past the last one a delivered position needs are not read.
  const uint64_t last = end_ > start_ ? needed_[end_ - 1] + 1 : 0;
  std::vector<ImageRequest> requests;
  std::vector<uint64_t> inputs;
  while (true) {
    uint64_t begin, end;
    {
      std::unique_lock<std::mutex> lock(mu_);
      changed_.wait(lock, [&] { return stop_ || read_ >= last || read_ < ReadLimit(); });
      if (stop_ || read_ >= last) return;
      begin = read_;
      // What the next batch still needs comes in one call, however long:
      // the first batch of a shuffle needs its whole buffer.
      const uint64_t batch_end = std::min(end_, position_ + options_.epoch.batch_size);
      const uint64_t needed = batch_end == 0 ? 0 : needed_[batch_end - 1] + 1;
      end = std::min({last, ReadLimit(), std::max(begin + read_ahead_, needed)});
    }
    // A window runs on to its last record's end, so that each record is read
    // in one piece: the parts of one read apart would each bring the holes
    // between their chunks.
    while (end < n && dataset_.LocateImage(plan_.input[end])->first ==
                          dataset_.LocateImage(plan_.input[end - 1])->first) {
      ++end;
    }
    requests.clear();
    inputs.clear();
    for (uint64_t i = begin; i < end; ++i) {
      if (delivered_at_[i] < start_ || delivered_at_[i] >= end_) continue;  // not this iteration's
      requests.push_back({plan_.input[i], fidelity_});
      inputs.push_back(i);
    }
    std::vector<Status> failed;
    Result<std::vector<Image>> images = options_.skip_corrupt ? ReadImagesOrFailures(dataset_, requests, &failed)
                                                              : dataset_.ReadImages(requests);
    std::vector<std::vector<Column>> fields(inputs.size());
    for (size_t j = 0; j < requests.size() && images.ok() && !fields_.fields.empty(); ++j) {
      const auto [record, row] = dataset_.LocateImage(requests[j].image).value();  // ReadImages checked it
      if (record != fields_record_) {
        auto read = dataset_.ReadRecordBatches({&record, 1}, fields_);
        if (!read.ok()) {
          images = read.status();
          break;
        }
        record_fields_ = std::move((*read)[0].fields);
        fields_record_ = record;
      }
      for (const Column& c : record_fields_) {
        fields[j].emplace_back(c.type);
        AppendRows(c, row, 1, &fields[j].back());
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (!images.ok()) {
      error_ = images.status();
      changed_.notify_all();
      return;
    }
    for (size_t j = 0; j < inputs.size(); ++j) {
      held_.emplace(inputs[j], Held{std::move((*images)[j]), std::move(fields[j]),
                                    failed.empty() ? Status::OK() : std::move(failed[j])});
    }
    read_ = end;
    changed_.notify_all();
  }
}

Result<bool> SampleIterator::Rep::Next(SampleBatch* batch) {
  std::unique_lock<std::mutex> lock(mu_);
  if (position_ >= end_) return false;
  const uint64_t end = std::min(end_, position_ + options_.epoch.batch_size);
  changed_.wait(lock, [&] { return !error_.ok() || read_ > needed_[end - 1]; });
  if (!error_.ok()) return error_;
  batch->indices.clear();
  batch->images.clear();
  batch->fields.clear();
  for (const uint32_t f : fields_.fields) batch->fields.emplace_back(dataset_.field_schema().features[f].type);
  for (uint64_t q = position_; q < end; ++q) {
    auto node = held_.extract(plan_.order[q]);
    if (!node.mapped().failed.ok()) {
      skipped_.push_back({plan_.input[plan_.order[q]], node.mapped().image.key, node.mapped().failed});
      continue;
    }
    batch->indices.push_back(plan_.input[plan_.order[q]]);
    batch->images.push_back(std::move(node.mapped().image));
    for (size_t j = 0; j < batch->fields.size(); ++j) AppendRows(node.mapped().fields[j], 0, 1, &batch->fields[j]);
  }
  position_ = end;
  changed_.notify_all();
  return true;
}

}  // namespace pcr
