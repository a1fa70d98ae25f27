// Iterating a dataset record by record with reads ahead of the caller.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "reader/image_dataset.h"

namespace pcr {

struct RecordIteratorOptions {
  int fidelity = 0;                         // scan groups to read; 0: all
  size_t records_in_flight = 16;            // records read ahead of the caller, at most
  uint64_t max_bytes_in_flight = 256 << 20;  // read-ahead memory bound; one record may exceed it
  std::optional<uint64_t> shuffle_seed;     // shuffle record order and images within records
};

// A background thread reads the next records (several per engine call, so
// they are in flight together) while the caller works on earlier ones; the
// caller's thread checks and cuts each record in Next().
class RecordIterator {
 public:
  // REQUIRES: `dataset` outlives the iterator.
  static Result<std::unique_ptr<RecordIterator>> Create(const ImageDataset& dataset,
                                                        const RecordIteratorOptions& options = {});
  ~RecordIterator();
  RecordIterator(const RecordIterator&) = delete;
  RecordIterator& operator=(const RecordIterator&) = delete;

  // Fills `batch` with the next record, reusing its buffer; false after the
  // last record. An error ends the iteration.
  Result<bool> Next(RecordBatch* batch);
  // The order records are delivered in.
  const std::vector<uint64_t>& order() const { return order_; }

 private:
  RecordIterator(const ImageDataset& dataset, const RecordIteratorOptions& options);
  void ReadAhead();
  uint64_t RecordCost(uint64_t record) const;
  // Whether record order_[scheduled_] fits the count and byte bounds; always
  // true when nothing is in flight. REQUIRES: mu_ held, scheduled_ < order_.size()
  bool CanSchedule() const;

  const ImageDataset& dataset_;
  const RecordIteratorOptions options_;
  std::vector<uint64_t> order_;

  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<std::pair<uint64_t, RecordPrefix>> ready_;  // read, not yet taken; parsed by Next()
  std::vector<IoBuffer> spare_;     // buffers of parsed records, reused for reads
  size_t scheduled_ = 0;            // records handed to the reader so far
  size_t delivered_ = 0;            // records returned by Next()
  uint64_t bytes_in_flight_ = 0;    // of records scheduled and not yet delivered
  Status error_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace pcr
