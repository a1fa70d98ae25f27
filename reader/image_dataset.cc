#include "reader/image_dataset.h"

#include <algorithm>
#include <filesystem>

namespace pcr {

namespace fs = std::filesystem;

Result<std::unique_ptr<ImageDataset>> ImageDataset::Open(const std::string& path,
                                                         const ImageReaderOptions& options) {
  std::unique_ptr<ImageDataset> ds(new ImageDataset());
  ds->engine_ = options.engine;
  if (ds->engine_ == nullptr) {
    PCR_ASSIGN_OR_RETURN(ds->owned_engine_, MakeIoEngine(options.io));
    ds->engine_ = ds->owned_engine_.get();
  }
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    PCR_ASSIGN_OR_RETURN(auto file, PcrFile::Open(path, ds->engine_));
    if (file->header().kind != FileKind::kImages) {
      return Status::InvalidArgument(path + ": not an image file (kind " +
                                     std::to_string(static_cast<int>(file->header().kind)) + ")");
    }
    ds->script_ = file->index().script;
    PCR_RETURN_IF_ERROR(ds->AddFile(std::move(file)));
    return ds;
  }
  const std::string manifest_path = (fs::path(path) / kDatasetManifestName).string();
  if (!fs::exists(manifest_path, ec)) {
    return Status::InvalidArgument(path + ": no " + std::string(kDatasetManifestName) +
                                   " (not a pcr dataset, or its conversion did not finish)");
  }
  PCR_ASSIGN_OR_RETURN(auto mfile, PcrFile::Open(manifest_path, ds->engine_));
  if (mfile->header().kind != FileKind::kDataset) {
    return Status::Corruption(manifest_path + ": not a dataset manifest");
  }
  const DatasetManifest& m = mfile->manifest();
  ds->script_ = m.script;
  ds->class_names_ = m.class_names;
  for (const DatasetFileEntry& entry : m.files) {
    const std::string fpath = (fs::path(path) / entry.name).string();
    PCR_ASSIGN_OR_RETURN(auto file, PcrFile::Open(fpath, ds->engine_));
    auto mismatch = [&](const std::string& what) {
      return Status::Corruption(manifest_path + ": " + entry.name + ": " + what +
                                " differs from the manifest");
    };
    if (file->header().kind != FileKind::kImages) return mismatch("file kind");
    if (file->size() != entry.size) return mismatch("size " + std::to_string(file->size()));
    if (file->footer().index_checksum != entry.index_checksum) return mismatch("index checksum");
    if (file->index().stripes.size() != entry.stripe_count) return mismatch("record count");
    if (!(file->index().script == m.script)) return mismatch("scan script");
    const uint64_t before = ds->samples_.size();
    PCR_RETURN_IF_ERROR(ds->AddFile(std::move(file)));
    if (ds->samples_.size() - before != entry.image_count) return mismatch("image count");
  }
  return ds;
}

Status ImageDataset::AddFile(std::unique_ptr<PcrFile> file) {
  const FileIndex& index = file->index();
  for (size_t s = 0; s < index.stripes.size(); ++s) {
    const StripeInfo& stripe = index.stripes[s];
    Bytes meta(stripe.streams[0].length);
    PCR_RETURN_IF_ERROR(file->ReadRange(stripe.offset, meta));
    PCR_RETURN_IF_ERROR(file->CheckStream(s, 0, meta));
    auto samples = DecodeSampleMetadata(meta, stripe.image_count);
    if (!samples.ok()) {
      return samples.status().WithPrefix(file->path() + ": stripe " + std::to_string(s) +
                                         " at offset " + std::to_string(stripe.offset));
    }
    records_.push_back({files_.size(), s, samples_.size(), stripe.image_count});
    for (auto& sample : *samples) samples_.push_back(std::move(sample));
  }
  files_.push_back(std::move(file));
  return Status::OK();
}

Status ImageDataset::CheckFidelity(int fidelity) const {
  if (fidelity < 1 || fidelity > num_scan_groups()) {
    return Status::InvalidArgument("fidelity " + std::to_string(fidelity) + " out of range 1.." +
                                   std::to_string(num_scan_groups()));
  }
  return Status::OK();
}

std::vector<uint64_t> ImageDataset::StreamBytes() const {
  std::vector<uint64_t> bytes(num_scan_groups() + 1);
  for (const RecordLocation& loc : records_) {
    const StripeInfo& stripe = files_[loc.file]->index().stripes[loc.stripe];
    for (size_t s = 0; s < bytes.size(); ++s) bytes[s] += stripe.streams[s].length;
  }
  return bytes;
}

uint64_t ImageDataset::RecordBytes(uint64_t record, int fidelity) const {
  const RecordLocation& loc = records_[record];
  const StripeInfo& stripe = files_[loc.file]->index().stripes[loc.stripe];
  uint64_t n = 0;
  for (int s = 0; s <= fidelity; ++s) n += stripe.streams[s].length;
  return n;
}

Result<std::vector<Image>> ImageDataset::ReadRecord(uint64_t record, int fidelity) const {
  PCR_RETURN_IF_ERROR(CheckFidelity(fidelity));
  if (record >= num_records()) {
    return Status::InvalidArgument("record " + std::to_string(record) + " out of range (" +
                                   std::to_string(num_records()) + " records)");
  }
  const RecordLocation& loc = records_[record];
  const PcrFile& file = *files_[loc.file];
  const StripeInfo& stripe = file.index().stripes[loc.stripe];
  Bytes prefix(RecordBytes(record, fidelity));
  PCR_RETURN_IF_ERROR(file.ReadRange(stripe.offset, prefix));
  std::vector<size_t> stream_start(fidelity + 1);
  size_t off = 0;
  for (int s = 0; s <= fidelity; ++s) {
    stream_start[s] = off;
    PCR_RETURN_IF_ERROR(
        file.CheckStream(loc.stripe, s, ByteSpan(prefix).subspan(off, stripe.streams[s].length)));
    off += stripe.streams[s].length;
  }
  std::vector<Image> images(loc.image_count);
  std::vector<size_t> cursor(stream_start.begin(), stream_start.end());
  for (uint64_t i = 0; i < loc.image_count; ++i) {
    Image& img = images[i];
    img.label = samples_[loc.first_image + i].label;
    img.key = samples_[loc.first_image + i].key;
    for (int g = 1; g <= fidelity; ++g) {
      const uint64_t len = stripe.chunk(g, i).length;
      img.jpeg.insert(img.jpeg.end(), prefix.begin() + cursor[g], prefix.begin() + cursor[g] + len);
      cursor[g] += len;
    }
    img.jpeg.insert(img.jpeg.end(), kJpegEndOfImage.begin(), kJpegEndOfImage.end());
  }
  return images;
}

std::pair<uint64_t, uint64_t> ImageDataset::Locate(uint64_t image) const {
  auto it = std::upper_bound(records_.begin(), records_.end(), image,
                             [](uint64_t v, const RecordLocation& r) { return v < r.first_image; });
  const uint64_t r = static_cast<uint64_t>(it - records_.begin()) - 1;
  return {r, image - records_[r].first_image};
}

Result<Image> ImageDataset::ReadImage(uint64_t image, int fidelity) const {
  PCR_RETURN_IF_ERROR(CheckFidelity(fidelity));
  if (image >= num_images()) {
    return Status::InvalidArgument("image " + std::to_string(image) + " out of range (" +
                                   std::to_string(num_images()) + " images)");
  }
  const auto [record, local] = Locate(image);
  const RecordLocation& loc = records_[record];
  const PcrFile& file = *files_[loc.file];
  const StripeInfo& stripe = file.index().stripes[loc.stripe];
  uint64_t total = 0;
  for (int g = 1; g <= fidelity; ++g) total += stripe.chunk(g, local).length;
  Image img{samples_[image].label, samples_[image].key, Bytes(total + kJpegEndOfImage.size())};
  std::vector<ReadRequest> reqs;
  uint64_t off = 0;
  for (int g = 1; g <= fidelity; ++g) {
    const uint64_t len = stripe.chunk(g, local).length;
    if (len > 0) reqs.push_back({&file.file(), file.ChunkOffset(loc.stripe, g, local), len, img.jpeg.data() + off});
    off += len;
  }
  PCR_RETURN_IF_ERROR(engine_->Read(reqs));
  off = 0;
  for (int g = 1; g <= fidelity; ++g) {
    const uint64_t len = stripe.chunk(g, local).length;
    PCR_RETURN_IF_ERROR(file.CheckChunk(loc.stripe, g, local, ByteSpan(img.jpeg).subspan(off, len)));
    off += len;
  }
  std::copy(kJpegEndOfImage.begin(), kJpegEndOfImage.end(), img.jpeg.begin() + total);
  return img;
}

}  // namespace pcr
