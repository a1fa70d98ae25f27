// Transcoding source images on a fixed set of threads, batch after batch.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "format/file_format.h"
#include "writer/fields.h"
#include "writer/transcode.h"

namespace pcr {

// Where a conversion's sources come from: the JPEG bytes and the fields of
// source `index` (its position in the conversion's source list).
// Thread safety: Read is called from several threads at once.
class SourceReader {
 public:
  virtual ~SourceReader() = default;
  // Errors give the reason; the caller names the source.
  virtual Result<Bytes> Read(const SampleMetadata& source, uint64_t index, FieldRow* fields) const = 0;
};

// Files root/key (or what `fetch` returns for the source, when given), with
// the fields `fields` holds for each key (none when nullptr; an error for a
// key without a row).
class FileSourceReader : public SourceReader {
 public:
  using Fetch = std::function<Result<Bytes>(const SampleMetadata& source, uint64_t index)>;
  FileSourceReader(std::string root, const FieldsFile* fields, std::string fields_name, Fetch fetch = nullptr)
      : root_(std::move(root)), fields_(fields), fields_name_(std::move(fields_name)), fetch_(std::move(fetch)) {}
  Result<Bytes> Read(const SampleMetadata& source, uint64_t index, FieldRow* fields) const override;

 private:
  const std::string root_;
  const FieldsFile* fields_;
  const std::string fields_name_;
  const Fetch fetch_;
};

// Its threads start once and wait between batches. Run() may be called
// from one thread at a time.
class TranscodePool {
 public:
  struct Item {
    Result<TranscodedImage> image = Status::OK();  // errors give the reason, not the file
    uint64_t input_bytes = 0;
    FieldRow fields;
  };

  // Transcodes what `reader` reads on `jobs` threads in all: jobs - 1 of its
  // own and the caller's. Once *cancel (when given) holds true, the images
  // not yet started answer Cancelled. REQUIRES: ValidateScanScript(script).ok(),
  // `reader` and `cancel` outlive the pool.
  TranscodePool(int jobs, const SourceReader* reader, ScanScript script, TranscodeOptions options,
                const std::atomic<bool>* cancel = nullptr);
  ~TranscodePool();
  TranscodePool(const TranscodePool&) = delete;
  TranscodePool& operator=(const TranscodePool&) = delete;

  // Reads and transcodes every source; result i answers sources[i], source
  // number first_index + i of the conversion.
  std::vector<Item> Run(std::span<const SampleMetadata> sources, uint64_t first_index);

 private:
  void Loop();
  void Work();

  const SourceReader* reader_;
  const ScanScript script_;
  const TranscodeOptions options_;
  const std::atomic<bool>* cancel_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable start_;
  std::condition_variable done_;
  uint64_t generation_ = 0;  // guarded by mu_; one more per batch
  size_t pending_ = 0;       // guarded by mu_; threads still in the batch
  bool stop_ = false;        // guarded by mu_
  // The batch: set under mu_ before generation_ changes.
  std::span<const SampleMetadata> sources_;
  uint64_t first_index_ = 0;
  std::vector<Item>* out_ = nullptr;
  std::atomic<size_t> next_{0};
};

}  // namespace pcr
