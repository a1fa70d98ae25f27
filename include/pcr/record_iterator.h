// Iterating a dataset record by record with reads ahead of the caller.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pcr/export.h"
#include "pcr/image_dataset.h"
#include "pcr/status.h"

namespace pcr {

struct RecordIteratorOptions {
  int fidelity = kFullFidelity;              // 1..num_scan_groups(), kFullFidelity or kFieldsOnly
  std::vector<std::string> fields;           // fields to read into RecordBatch::fields
  size_t records_in_flight = 16;             // records read ahead of the caller, at most
  uint64_t max_bytes_in_flight = 256 << 20;  // read-ahead memory bound; one record may exceed it
  std::optional<uint64_t> shuffle_seed;      // shuffle record order and images within records
};

// A background thread reads the next records (several per engine call, so
// they are in flight together) while the caller works on earlier ones; the
// caller's thread checks and cuts each record in Next().
//
// Thread safety: Next() may be called from one thread at a time; the
// iterator's own thread only reads.
class PCR_EXPORT RecordIterator {
 public:
  // The iterator keeps the dataset open (ImageDataset, Lifetime).
  static Result<std::unique_ptr<RecordIterator>> Create(const ImageDataset& dataset,
                                                        const RecordIteratorOptions& options = {});
  ~RecordIterator();
  RecordIterator(const RecordIterator&) = delete;
  RecordIterator& operator=(const RecordIterator&) = delete;

  // Fills `batch` with the next record, reusing its buffer; false after the
  // last record. An error ends the iteration.
  // InvalidArgument when batch is null.
  Result<bool> Next(RecordBatch* batch);
  // The order records are delivered in.
  const std::vector<uint64_t>& order() const;

 private:
  struct Rep;
  explicit RecordIterator(std::unique_ptr<Rep> rep);
  std::unique_ptr<Rep> rep_;
};

}  // namespace pcr
