#include "writer/transcode_pool.h"

#include <filesystem>

#include "io/io_engine.h"

namespace pcr {

Result<Bytes> FileSourceReader::Read(const SampleMetadata& source, uint64_t index, FieldRow* fields) const {
  if (fields_ != nullptr) {
    const auto it = fields_->rows.find(source.key);
    if (it == fields_->rows.end()) return Status::InvalidArgument("no row in " + fields_name_);
    *fields = it->second;
  }
  if (fetch_) return fetch_(source, index);
  const std::string path = (std::filesystem::path(root_) / source.key).string();
  Result<Bytes> data = ReadRegularFile(path);
  if (!data.ok()) {
    const Status failed = data.status();
    const std::string& m = failed.message();
    return failed.WithMessage(m.starts_with(path + ": ") ? m.substr(path.size() + 2) : m);
  }
  return data;
}

TranscodePool::TranscodePool(int jobs, const SourceReader* reader, ScanScript script, TranscodeOptions options,
                             const std::atomic<bool>* cancel)
    : reader_(reader), script_(std::move(script)), options_(options), cancel_(cancel) {
  for (int t = 1; t < jobs; ++t) threads_.emplace_back([this] { Loop(); });
}

TranscodePool::~TranscodePool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  start_.notify_all();
  for (std::thread& t : threads_) t.join();
}

std::vector<TranscodePool::Item> TranscodePool::Run(std::span<const SampleMetadata> sources, uint64_t first_index) {
  std::vector<Item> out(sources.size());
  {
    std::lock_guard lock(mu_);
    sources_ = sources;
    first_index_ = first_index;
    out_ = &out;
    next_ = 0;
    pending_ = threads_.size();
    ++generation_;
  }
  start_.notify_all();
  Work();
  std::unique_lock lock(mu_);
  done_.wait(lock, [&] { return pending_ == 0; });
  return out;
}

void TranscodePool::Loop() {
  uint64_t seen = 0;
  while (true) {
    {
      std::unique_lock lock(mu_);
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    Work();
    std::lock_guard lock(mu_);
    if (--pending_ == 0) done_.notify_one();
  }
}

void TranscodePool::Work() {
  for (size_t i = next_++; i < sources_.size(); i = next_++) {
    Item& item = (*out_)[i];
    if (cancel_ != nullptr && cancel_->load(std::memory_order_relaxed)) {
      item.image = Status::Cancelled("conversion cancelled");
      continue;
    }
    Result<Bytes> data = reader_->Read(sources_[i], first_index_ + i, &item.fields);
    if (!data.ok()) {
      item.image = data.status();
      continue;
    }
    item.input_bytes = data->size();
    item.image = TranscodeToScanGroups(*data, script_, options_);
  }
}

}  // namespace pcr
