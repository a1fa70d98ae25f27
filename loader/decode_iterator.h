// Decoded records: a pool of decoding threads on top of the read-ahead
// iterator, so a training loop receives pixels while later records are read.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "jpeg/jpeg_decode.h"
#include "loader/record_iterator.h"

namespace pcr {

struct DecodeIteratorOptions {
  RecordIteratorOptions records;
  DecodeOptions decode;  // its crop, when set, applies to every image
  int threads = 0;       // decoding threads; 0: one per core
  // When set, chooses each image's crop (a RandomResizedCrop, say) from its
  // shape after scaling. Called on the caller's thread, in delivery order.
  std::function<Crop(const ImageShape& scaled)> crop;
};

struct DecodedView {
  int64_t label = -1;
  std::string_view key;
  ImageShape shape;
  std::span<const uint8_t> pixels;
};

// One record's images, decoded. Buffers are reused by the next Next().
struct DecodedBatch {
  uint64_t record = 0;
  std::vector<DecodedView> images;
  std::vector<uint8_t> pixels;  // every image's rows, back to back
  RecordBatch source;           // the JPEG bytes the images came from
};

class DecodeIterator {
 public:
  // REQUIRES: `dataset` outlives the iterator.
  static Result<std::unique_ptr<DecodeIterator>> Create(const ImageDataset& dataset,
                                                        const DecodeIteratorOptions& options = {});
  ~DecodeIterator();
  DecodeIterator(const DecodeIterator&) = delete;
  DecodeIterator& operator=(const DecodeIterator&) = delete;

  // Fills `batch` with the next record's decoded images; false after the
  // last record. A decode error names the image's key and ends the iteration.
  Result<bool> Next(DecodedBatch* batch);

 private:
  DecodeIterator(DecodeIteratorOptions options, std::unique_ptr<RecordIterator> it);
  void Work();

  const DecodeIteratorOptions options_;
  std::unique_ptr<RecordIterator> records_;
  JpegDecoder shape_decoder_;  // header parsing on the caller's thread

  std::mutex mu_;
  std::condition_variable work_ready_, work_done_;
  DecodedBatch* batch_ = nullptr;    // being decoded
  std::vector<DecodeOptions> jobs_;  // per image of batch_
  size_t next_job_ = 0;
  size_t jobs_done_ = 0;
  Status error_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace pcr
