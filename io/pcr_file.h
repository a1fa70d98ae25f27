// An open pcr file: header, footer and index checked, streams readable.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "format/file_format.h"
#include "io/io_engine.h"

namespace pcr {

// `load` of bytes `reads` just read. Where it fails with Corruption on a
// remote file, the reads are made again (up to RemoteOptions::retries) and
// `load` called again: bytes that differed between reads were damaged on
// their way (DataLoss once the retries are spent); the same bytes each time
// are stored so (load's Corruption). `damaged_reads`, when given, is set
// to the number of reads in the DataLoss case.
Status LoadRereading(IoEngine& engine, std::span<ReadRequest> reads, const std::function<Status()>& load,
                     unsigned* damaged_reads = nullptr);
// "; its bytes differed between N reads: ...", LoadRereading's DataLoss.
std::string DamagedBetween(unsigned reads);

// Thread safety: after Open, every method may be called from several threads.
class PcrFile {
 public:
  // Reads and checks header, footer and index. Errors name the file.
  static Result<std::unique_ptr<PcrFile>> Open(const std::string& path, IoEngine* engine);
  // The table file `path` names: the file itself, or a directory's one .pcr
  // file (Location::TableFile); InvalidArgument for a pcr file of another kind.
  static Result<std::unique_ptr<PcrFile>> OpenTableFile(const std::string& path, IoEngine* engine);
  // The same as Open for a file already open: on disk, or in memory
  // (IoEngine::OpenMemory), so a whole file read once is checked as any.
  static Result<std::unique_ptr<PcrFile>> Open(std::unique_ptr<RandomAccessFile> file, IoEngine* engine);
  // Opens many files with few engine calls: the headers and footers of
  // kOpenBatch files at a time in one call, then their indexes in one more.
  // A remote file's footer comes with its last kRemoteTail bytes, so an
  // index that fits there needs no call of its own: one round trip for
  // such files, two for others, however many. The first failure is the
  // result.
  static Result<std::vector<std::unique_ptr<PcrFile>>> OpenAll(std::vector<std::unique_ptr<RandomAccessFile>> files,
                                                               IoEngine* engine);
  static constexpr size_t kOpenBatch = 1024;
  static constexpr uint64_t kRemoteTail = 64 << 10;

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
  // Memory the open file takes, its index most of it.
  uint64_t MemoryBytes() const;

  // `failed` (a read's error), or IOError "changed while open" when the file
  // was rewritten in place since it was opened: its size or modification
  // time differs, or its footer (and so its index) does.
  Status ExplainFailure(Status failed) const;
  // OK when `data` is stream `stream` of stripe `stripe`; else Corruption
  // naming file, stripe, stream, offset and both checksums, or the
  // ExplainFailure of that.
  Status CheckStream(size_t stripe, size_t stream, ByteSpan data) const;
  // OK when `data` is image `image`'s chunk of group `group` in `stripe`.
  Status CheckChunk(size_t stripe, int group, uint64_t image, ByteSpan data) const;
  // File offset of image `image`'s chunk of group `group` in `stripe`.
  uint64_t ChunkOffset(size_t stripe, int group, uint64_t image) const;

 private:
  explicit PcrFile(std::unique_ptr<RandomAccessFile> file) : file_(std::move(file)) {}
  // Decodes and checks the header and footer, then the index.
  Status LoadHead(ByteSpan head, ByteSpan foot);
  Status LoadIndex(ByteSpan index);
  std::unique_ptr<RandomAccessFile> file_;
  FileHeader header_;
  Footer footer_;
  FileIndex index_;
  DatasetManifest manifest_;
  PartManifest part_;
  // chunk_offsets_[stripe][(g - 1) * image_count + i]: offset inside stream g.
  std::vector<std::vector<uint64_t>> chunk_offsets_;
};

}  // namespace pcr
