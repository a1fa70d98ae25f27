#include "io/pcr_file.h"

#include <unistd.h>

#include <filesystem>

#include "format/checksum.h"
#include "io/location.h"

namespace pcr {

namespace fs = std::filesystem;

std::string DamagedBetween(unsigned reads) {
  return "; its bytes differed between " + std::to_string(reads) + " reads: the store or the network damages them";
}

Status LoadRereading(IoEngine& engine, std::span<ReadRequest> reads, const std::function<Status()>& load,
                     unsigned* damaged_reads) {
  Status loaded = load();
  if (loaded.ok() || loaded.code() != StatusCode::kCorruption || !reads[0].file->remote()) return loaded;
  auto sum = [&] {
    uint64_t h = 0;
    for (const ReadRequest& r : reads) h = h * 31 + Checksum64(ByteSpan(r.out, r.length));
    return h;
  };
  const uint64_t first = sum();
  bool differed = false;
  unsigned attempt = 1;
  for (; attempt <= engine.options().remote.retries && !loaded.ok(); ++attempt) {
    std::vector<ReadRequest> again(reads.begin(), reads.end());
    PCR_RETURN_IF_ERROR(engine.Read(again));
    differed |= sum() != first;
    loaded = load();
  }
  if (loaded.ok() || !differed) return loaded;
  if (damaged_reads != nullptr) *damaged_reads = attempt;
  return Status::DataLoss(loaded.message() + DamagedBetween(attempt));
}

Result<std::unique_ptr<PcrFile>> PcrFile::Open(const std::string& path, IoEngine* engine) {
  PCR_ASSIGN_OR_RETURN(auto raf, engine->Open(path));
  return Open(std::move(raf), engine);
}

Result<std::unique_ptr<PcrFile>> PcrFile::OpenTableFile(const std::string& path, IoEngine* engine) {
  PCR_ASSIGN_OR_RETURN(const Location where, Locate(path));
  PCR_ASSIGN_OR_RETURN(const std::string file, where.TableFile());
  PCR_ASSIGN_OR_RETURN(auto opened, Open(file, engine));
  if (opened->header().kind != FileKind::kTable) return Status::InvalidArgument(file + ": not a table file");
  return opened;
}

Result<std::unique_ptr<PcrFile>> PcrFile::Open(std::unique_ptr<RandomAccessFile> raf, IoEngine* engine) {
  std::vector<std::unique_ptr<RandomAccessFile>> one;
  one.push_back(std::move(raf));
  PCR_ASSIGN_OR_RETURN(auto files, OpenAll(std::move(one), engine));
  return std::move(files[0]);
}

Result<std::vector<std::unique_ptr<PcrFile>>> PcrFile::OpenAll(std::vector<std::unique_ptr<RandomAccessFile>> files,
                                                               IoEngine* engine) {
  std::vector<std::unique_ptr<PcrFile>> out;
  for (auto& raf : files) {
    const uint64_t size = raf->size();
    if (size < kMinFileSize) {
      return Status::Corruption(raf->path() + ": file is " + std::to_string(size) +
                                " bytes, too short for a pcr file (truncated?)");
    }
    out.emplace_back(new PcrFile(std::move(raf)));
  }
  // In groups of kOpenBatch files: each group's headers and tails in one
  // engine call, then the indexes not in the tails in another.
  for (size_t first = 0; first < out.size(); first += kOpenBatch) {
    const size_t n = std::min(kOpenBatch, out.size() - first);
    std::vector<Bytes> heads(n, Bytes(kFileHeaderSize)), tails(n);
    std::vector<ReadRequest> reads;
    for (size_t i = 0; i < n; ++i) {
      const RandomAccessFile& file = out[first + i]->file();
      tails[i].resize(file.remote() ? std::min(file.size() - kFileHeaderSize, kRemoteTail) : kFooterSize);
      reads.push_back({&file, 0, kFileHeaderSize, heads[i].data()});
      reads.push_back({&file, file.size() - tails[i].size(), tails[i].size(), tails[i].data()});
    }
    PCR_RETURN_IF_ERROR(engine->Read(reads));
    std::vector<Bytes> indexes(n);
    std::vector<ReadRequest> index_reads;
    std::vector<size_t> index_read(n, SIZE_MAX);  // file i's in index_reads, or SIZE_MAX: in its tail
    for (size_t i = 0; i < n; ++i) {
      PcrFile& f = *out[first + i];
      PCR_RETURN_IF_ERROR(LoadRereading(*engine, {&reads[2 * i], 2}, [&] {
        return f.LoadHead(heads[i], ByteSpan(tails[i]).last(kFooterSize));
      }));
      if (f.footer_.index_offset >= f.size() - tails[i].size()) continue;
      indexes[i].resize(f.footer_.index_length);
      index_read[i] = index_reads.size();
      index_reads.push_back({&f.file(), f.footer_.index_offset, indexes[i].size(), indexes[i].data()});
    }
    PCR_RETURN_IF_ERROR(engine->Read(index_reads));
    for (size_t i = 0; i < n; ++i) {
      PcrFile& f = *out[first + i];
      if (index_read[i] != SIZE_MAX) {
        PCR_RETURN_IF_ERROR(
            LoadRereading(*engine, {&index_reads[index_read[i]], 1}, [&] { return f.LoadIndex(indexes[i]); }));
        continue;
      }
      const uint64_t at = f.footer_.index_offset - (f.size() - tails[i].size());
      PCR_RETURN_IF_ERROR(LoadRereading(*engine, {&reads[2 * i + 1], 1}, [&] {
        return f.LoadIndex(ByteSpan(tails[i]).subspan(at, f.footer_.index_length));
      }));
    }
  }
  return out;
}

uint64_t PcrFile::MemoryBytes() const {
  uint64_t n = sizeof(*this) + path().capacity();
  for (const FeatureInfo& f : index_.schema.features) n += sizeof(f) + f.name.capacity();
  for (size_t s = 0; s < index_.stripes.size(); ++s) {
    const StripeInfo& stripe = index_.stripes[s];
    n += sizeof(stripe) + stripe.streams.capacity() * sizeof(StreamInfo) +
         stripe.chunks.capacity() * sizeof(ChunkInfo) + stripe.table_streams.capacity() * sizeof(TableStream);
  }
  for (const auto& offsets : chunk_offsets_) n += sizeof(offsets) + offsets.capacity() * sizeof(uint64_t);
  return n;
}

Status PcrFile::LoadHead(ByteSpan head, ByteSpan foot) {
  auto header = FileHeader::DecodeFrom(head);
  if (!header.ok()) return header.status().WithPrefix(path());
  header_ = *header;
  auto footer = Footer::DecodeFrom(foot, size());
  if (!footer.ok()) return footer.status().WithPrefix(path());
  footer_ = *footer;
  return Status::OK();
}

Status PcrFile::LoadIndex(ByteSpan index) {
  const std::string& path = this->path();
  const uint64_t computed = Checksum64(index);
  if (computed != footer_.index_checksum) {
    return Status::Corruption(path + ": at offset " + std::to_string(footer_.index_offset) +
                              ": index checksum mismatch over " + std::to_string(index.size()) +
                              " bytes (stored " + std::to_string(footer_.index_checksum) +
                              ", computed " + std::to_string(computed) + ")");
  }
  if (header_.kind == FileKind::kDataset || header_.kind == FileKind::kDatasetPart) {
    if (footer_.index_offset != kFileHeaderSize) {
      return Status::Corruption(path + ": a dataset manifest holds no stripes");
    }
    if (header_.kind == FileKind::kDatasetPart) {
      auto p = PartManifest::DecodeFrom(index);
      if (!p.ok()) return p.status().WithPrefix(path);
      part_ = std::move(p).value();
      return Status::OK();
    }
    auto m = DatasetManifest::DecodeFrom(index, header_.version_minor >= kRecordsVersionMinor);
    if (!m.ok()) return m.status().WithPrefix(path);
    manifest_ = std::move(m).value();
    return Status::OK();
  }
  auto idx = FileIndex::DecodeFrom(index, header_.kind, header_.version_minor, footer_.index_offset);
  if (!idx.ok()) return idx.status().WithPrefix(path);
  index_ = std::move(idx).value();
  for (const StripeInfo& s : index_.stripes) {
    std::vector<uint64_t> offs(s.chunks.size());
    const int groups = index_.script.group_count() + (s.has_segments ? 1 : 0);
    for (int g = 0; g < groups && s.image_count > 0; ++g) {
      uint64_t off = 0;
      for (uint64_t i = 0; i < s.image_count; ++i) {
        offs[g * s.image_count + i] = off;
        off += s.chunks[g * s.image_count + i].length;
      }
    }
    chunk_offsets_.push_back(std::move(offs));
  }
  return Status::OK();
}

Status PcrFile::ExplainFailure(Status failed) const {
  if (failed.ok()) return failed;
  bool changed = file_->ChangedOnDisk();
  if (!changed && file_->fd() >= 0 && !file_->direct() && size() >= kFooterSize) {
    // Rewritten with the same size and time (cp -p): its footer tells.
    Bytes expected, now(kFooterSize);
    footer_.EncodeTo(&expected);
    const ssize_t n = pread(file_->fd(), now.data(), now.size(), static_cast<off_t>(size() - kFooterSize));
    changed = n == static_cast<ssize_t>(now.size()) && now != expected;
  }
  if (!changed) return failed;
  return Status::IOError(path() + ": changed while open (rewritten in place since it was opened, so its index no "
                                  "longer describes it): open it again");
}

Status PcrFile::CheckStream(size_t stripe, size_t stream, ByteSpan data) const {
  const StripeInfo& s = index_.stripes[stripe];
  const uint64_t computed = Checksum64(data);
  if (computed == s.streams[stream].checksum) return Status::OK();
  return ExplainFailure(Status::Corruption(path() + ": stripe " + std::to_string(stripe) + " stream " +
                            std::to_string(stream) + " at offset " +
                            std::to_string(s.stream_offset(stream)) + " length " +
                            std::to_string(data.size()) + ": checksum mismatch (stored " +
                            std::to_string(s.streams[stream].checksum) + ", computed " +
                            std::to_string(computed) + ")"));
}

Status PcrFile::CheckChunk(size_t stripe, int group, uint64_t image, ByteSpan data) const {
  const ChunkInfo& c = index_.stripes[stripe].chunk(group, image);
  const uint32_t computed = Checksum32(data);
  if (computed == c.checksum) return Status::OK();
  return ExplainFailure(Status::Corruption(path() + ": stripe " + std::to_string(stripe) + " stream " +
                            std::to_string(index_.stripes[stripe].group_stream(group)) + " image " +
                            std::to_string(image) +
                            (group > index_.script.group_count() ? std::string(" (segments)")
                                                                 : " (scan group " + std::to_string(group) + ")") +
                            " at offset " + std::to_string(ChunkOffset(stripe, group, image)) +
                            " length " + std::to_string(data.size()) +
                            ": chunk checksum mismatch (stored " + std::to_string(c.checksum) +
                            ", computed " + std::to_string(computed) + ")"));
}

uint64_t PcrFile::ChunkOffset(size_t stripe, int group, uint64_t image) const {
  const StripeInfo& s = index_.stripes[stripe];
  return s.stream_offset(s.group_stream(group)) + chunk_offsets_[stripe][(group - 1) * s.image_count + image];
}

}  // namespace pcr
