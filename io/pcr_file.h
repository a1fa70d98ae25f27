// An open pcr file: header, footer and index checked, streams readable.
#pragma once

#include <memory>
#include <string>

#include "format/file_format.h"
#include "io/io_engine.h"

namespace pcr {

// `path` if it is not a directory, else the one .pcr file in it;
// InvalidArgument when the directory holds none or several.
Result<std::string> FindTableFile(const std::string& path);

class PcrFile {
 public:
  // Reads and checks header, footer and index. Errors name the file.
  static Result<std::unique_ptr<PcrFile>> Open(const std::string& path, IoEngine* engine);

  const std::string& path() const { return file_->path(); }
  uint64_t size() const { return file_->size(); }
  const FileHeader& header() const { return header_; }
  const Footer& footer() const { return footer_; }
  // Valid for kImages and kTable files.
  const FileIndex& index() const { return index_; }
  // Valid for kDataset files.
  const DatasetManifest& manifest() const { return manifest_; }
  // Valid for kDatasetPart files.
  const PartManifest& part() const { return part_; }
  const RandomAccessFile& file() const { return *file_; }

  // Reads bytes [offset, offset + out.size()).
  Status ReadRange(uint64_t offset, std::span<uint8_t> out) const;
  // OK when `data` is stream `stream` of stripe `stripe`; else Corruption
  // naming file, stripe, stream, offset and both checksums.
  Status CheckStream(size_t stripe, size_t stream, ByteSpan data) const;
  // OK when `data` is image `image`'s chunk of group `group` in `stripe`.
  Status CheckChunk(size_t stripe, int group, uint64_t image, ByteSpan data) const;
  // File offset of image `image`'s chunk of group `group` in `stripe`.
  uint64_t ChunkOffset(size_t stripe, int group, uint64_t image) const;

 private:
  PcrFile(std::unique_ptr<RandomAccessFile> file, IoEngine* engine)
      : file_(std::move(file)), engine_(engine) {}
  std::unique_ptr<RandomAccessFile> file_;
  IoEngine* engine_;
  FileHeader header_;
  Footer footer_;
  FileIndex index_;
  DatasetManifest manifest_;
  PartManifest part_;
  // chunk_offsets_[stripe][(g - 1) * image_count + i]: offset inside stream g.
  std::vector<std::vector<uint64_t>> chunk_offsets_;
};

}  // namespace pcr
