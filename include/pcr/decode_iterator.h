// Decoded records: a pool of decoding threads on top of the read-ahead
// iterator decodes the next records while the caller works on earlier ones,
// so a training loop never waits while decoding keeps up with it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "pcr/decode.h"
#include "pcr/export.h"
#include "pcr/image_dataset.h"
#include "pcr/io.h"
#include "pcr/record_iterator.h"
#include "pcr/status.h"

namespace pcr {

struct DecodeIteratorOptions {
  RecordIteratorOptions records;
  DecodeOptions decode;  // its crop, when set, applies to every image
  int threads = 0;       // decoding threads; 0: one per core
  // Records decoded, or being decoded, ahead of the caller, at most (1..1024):
  // the pixel memory held is about this many records' worth.
  size_t records_ahead = 2;
  // When set, chooses each image's crop (a RandomResizedCrop, say) from its
  // shape after scaling. Called from one iterator thread, in delivery order.
  std::function<Crop(const ImageShape& scaled)> crop;
};

struct DecodedView {
  int64_t label = -1;
  std::string_view key;
  ImageShape shape;
  std::span<const uint8_t> pixels;
  uint64_t row = 0;  // the image's row in source.fields (DecodeIteratorOptions::records.fields)
};

// One record's images, decoded. Buffers are reused by the next Next(), and
// never zero-filled: only the bytes images[i].pixels view are defined.
struct DecodedBatch {
  uint64_t record = 0;
  std::vector<DecodedView> images;
  IoBuffer pixels;              // every image's rows, back to back
  RecordBatch source;           // the JPEG bytes the images came from, and their fields
};

// Thread safety: Next() may be called from one thread at a time.
class PCR_EXPORT DecodeIterator {
 public:
  // The iterator keeps the dataset open (ImageDataset, Lifetime).
  static Result<std::unique_ptr<DecodeIterator>> Create(const ImageDataset& dataset,
                                                        const DecodeIteratorOptions& options = {});
  ~DecodeIterator();
  DecodeIterator(const DecodeIterator&) = delete;
  DecodeIterator& operator=(const DecodeIterator&) = delete;

  // Fills `batch` with the next record's decoded images; false after the
  // last record. A decode error names the image and ends the iteration.
  // InvalidArgument when batch is null.
  Result<bool> Next(DecodedBatch* batch);

 private:
  struct Rep;
  explicit DecodeIterator(std::unique_ptr<Rep> rep);
  std::unique_ptr<Rep> rep_;
};

}  // namespace pcr
