#include "pcr/record_iterator.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "format/permutation.h"
#include "loader/threads.h"
#include "reader/record_reads.h"

namespace pcr {

struct [[gnu::visibility("hidden")]] RecordIterator::Rep {
  Rep(const ImageDataset& dataset, const RecordIteratorOptions& options);
  ~Rep();
  void ReadAhead();
  // The bytes a record's read holds; may open its file, so never under mu_.
  uint64_t RecordCost(uint64_t record) const;
  // Whether record order_[scheduled_], of `cost` bytes, fits the count and
  // byte bounds; always true when nothing is in flight.
  // REQUIRES: mu_ held, scheduled_ < order_.size()
  bool CanSchedule(uint64_t cost) const;
  Result<bool> Next(RecordBatch* batch);

  const std::shared_ptr<const ImageDataset> open_;  // keeps the dataset open
  const ImageDataset& dataset_;
  const RecordIteratorOptions options_;
  RecordSelection selection_;
  size_t per_record_ = 0;  // streams read per record
  std::vector<uint64_t> order_;
  std::mutex mu_;
  std::condition_variable changed_;
  // A record read and checked stream by stream, not yet taken; Next() cuts it.
  struct Ready {
    uint64_t record = 0;
    std::shared_ptr<ReadBatch> streams;  // shared by the records read together
    size_t first = 0;                    // the record's stream 0 in `streams`
    uint64_t cost = 0;                   // its share of bytes_in_flight_
  };
  std::deque<Ready> ready_;
  std::vector<std::shared_ptr<ReadBatch>> spare_;  // batches whose records were all taken, reused
  size_t scheduled_ = 0;            // records handed to the reader so far (moved by it alone)
  size_t delivered_ = 0;            // records returned by Next()
  uint64_t bytes_in_flight_ = 0;    // of records scheduled and not yet delivered
  Status error_;
  bool stop_ = false;
  std::thread thread_;
};

Result<std::unique_ptr<RecordIterator>> RecordIterator::Create(const ImageDataset& dataset,
                                                               const RecordIteratorOptions& options) {
  RecordIteratorOptions o = options;
  if (o.fidelity != kFieldsOnly) PCR_RETURN_IF_ERROR(dataset.CheckFidelity(o.fidelity));
  o.fidelity = dataset.ScanGroups(o.fidelity);
  if (o.records_in_flight == 0) return Status::InvalidArgument("records_in_flight must be positive");
  PCR_ASSIGN_OR_RETURN(std::vector<uint32_t> fields, dataset.ResolveFields(o.fields));
  auto rep = std::make_unique<Rep>(dataset, o);
  rep->selection_ = {.fidelity = o.fidelity, .fields = std::move(fields)};
  rep->per_record_ = StreamsPerRecord(dataset, rep->selection_);
  rep->thread_ = ReadAheadThread(rep.get());
  return std::unique_ptr<RecordIterator>(new RecordIterator(std::move(rep)));
}

RecordIterator::RecordIterator(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}
RecordIterator::~RecordIterator() = default;
Result<bool> RecordIterator::Next(RecordBatch* batch) {
  if (batch == nullptr) return Status::InvalidArgument("RecordIterator::Next: batch is null");
  return rep_->Next(batch);
}
const std::vector<uint64_t>& RecordIterator::order() const { return rep_->order_; }

RecordIterator::Rep::Rep(const ImageDataset& dataset, const RecordIteratorOptions& options)
    : open_(ShareDataset(dataset)), dataset_(*open_), options_(options) {
  if (options.shuffle_seed) {
    order_ = SeededPermutation(dataset.num_records(), *options.shuffle_seed);
  } else {
    order_.resize(dataset.num_records());
    for (uint64_t i = 0; i < order_.size(); ++i) order_[i] = i;
  }
}

RecordIterator::Rep::~Rep() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

uint64_t RecordIterator::Rep::RecordCost(uint64_t record) const {
  // A file that fails to open costs nothing here: its read fails, naming it.
  const Result<uint64_t> bytes = dataset_.SelectedBytes(record, selection_);
  return bytes.ok() ? *bytes : 0;
}

bool RecordIterator::Rep::CanSchedule(uint64_t cost) const {
  const size_t in_flight = scheduled_ - delivered_;
  return in_flight == 0 ||
         (in_flight < options_.records_in_flight && bytes_in_flight_ + cost <= options_.max_bytes_in_flight);
}

void RecordIterator::Rep::ReadAhead() {
  while (true) {
    std::vector<uint64_t> batch, costs;
    {
      // This thread alone moves scheduled_, so it reads it without the lock.
      uint64_t cost = scheduled_ < order_.size() ? RecordCost(order_[scheduled_]) : 0;
      std::unique_lock<std::mutex> lock(mu_);
      // Wait until half the slots are free (or nothing is in flight), so each
      // batch is large and one half is read while the caller drains the
      // other; then schedule as many records as the count and memory bounds
      // allow. The next record is always allowed when nothing is in flight.
      const size_t low_water = (options_.records_in_flight + 1) / 2;
      changed_.wait(lock, [&] {
        if (stop_ || !error_.ok() || scheduled_ == order_.size()) return true;
        const size_t free = options_.records_in_flight - (scheduled_ - delivered_);
        return CanSchedule(cost) && (scheduled_ == delivered_ || free >= low_water);
      });
      if (stop_ || !error_.ok() || scheduled_ == order_.size()) return;
      while (CanSchedule(cost)) {
        bytes_in_flight_ += cost;
        costs.push_back(cost);
        batch.push_back(order_[scheduled_++]);
        if (scheduled_ == order_.size()) break;
        lock.unlock();
        cost = RecordCost(order_[scheduled_]);
        lock.lock();
      }
    }
    std::shared_ptr<ReadBatch> streams;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!spare_.empty()) {
        streams = std::move(spare_.back());
        spare_.pop_back();
      }
    }
    if (!streams) streams = std::make_shared<ReadBatch>();
    const Status read = ReadRecordStreams(dataset_, batch, selection_, streams.get());
    std::lock_guard<std::mutex> lock(mu_);
    if (!read.ok()) {
      error_ = read;
    } else {
      for (size_t i = 0; i < batch.size(); ++i) ready_.push_back({batch[i], streams, i * per_record_, costs[i]});
    }
    changed_.notify_all();
  }
}

Result<bool> RecordIterator::Rep::Next(RecordBatch* batch) {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [&] { return !ready_.empty() || !error_.ok() || delivered_ == order_.size(); });
  if (ready_.empty()) {
    if (!error_.ok()) return error_;
    return false;
  }
  Ready ready = std::move(ready_.front());
  ready_.pop_front();
  lock.unlock();
  const Status parsed = ParseRecord(dataset_, ready.record, selection_,
                                                   ready.streams->spans(ready.first, per_record_), batch);
  lock.lock();
  ++delivered_;
  bytes_in_flight_ -= ready.cost;
  if (!parsed.ok() && error_.ok()) error_ = parsed;  // an error ends the iteration
  if (ready.streams.use_count() == 1) spare_.push_back(std::move(ready.streams));
  changed_.notify_all();
  lock.unlock();
  PCR_RETURN_IF_ERROR(parsed);
  if (options_.shuffle_seed) {
    const uint64_t seed = *options_.shuffle_seed ^ (ready.record * 0x9e3779b97f4a7c15ULL);
    const std::vector<ImageView> in_order = batch->images;
    const std::vector<uint64_t> perm = SeededPermutation(in_order.size(), seed);
    for (size_t j = 0; j < perm.size(); ++j) batch->images[j] = in_order[perm[j]];
  }
  return true;
}

}  // namespace pcr
