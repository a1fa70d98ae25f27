#include "writer/file_writer.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "format/checksum.h"
#include "writer/table_writer.h"

namespace pcr {

namespace {

Status Errno(const std::string& what, const std::string& path) {
  return Status::IOError(what + " " + path + ": " + std::strerror(errno));
}

// Removes `dir`/.<name>.tmp-<pid> files whose process is gone.
void RemoveStaleTemps(const std::filesystem::path& dir, const std::string& name) {
  const std::string prefix = "." + name + ".tmp-";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir.empty() ? "." : dir, ec)) {
    const std::string f = entry.path().filename().string();
    if (!f.starts_with(prefix)) continue;
    const std::string digits = f.substr(prefix.size());
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(digits));
    if (pid != getpid() && kill(pid, 0) != 0 && errno == ESRCH) std::filesystem::remove(entry.path(), ec);
  }
}

// Renames `from` to `to`; with Replace::kNo, atomically refuses an existing
// `to` (by link and unlink where the filesystem lacks RENAME_NOREPLACE).
Status Rename(const std::string& from, const std::string& to, Replace replace) {
  if (replace == Replace::kYes) {
    if (rename(from.c_str(), to.c_str()) != 0) return Errno("cannot rename to", to);
    return Status::OK();
  }
  int r = renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE);
  if (r != 0 && (errno == EINVAL || errno == ENOSYS)) {
    r = link(from.c_str(), to.c_str());
    if (r == 0) unlink(from.c_str());
  }
  if (r == 0) return Status::OK();
  if (errno == EEXIST) return Status::InvalidArgument(to + ": already exists; not replaced");
  return Errno("cannot rename to", to);
}

}  // namespace

Result<std::unique_ptr<AtomicFile>> AtomicFile::Create(const std::string& path, Replace replace) {
  const std::filesystem::path p(path);
  RemoveStaleTemps(p.parent_path(), p.filename().string());
  const std::string temp =
      (p.parent_path() / ("." + p.filename().string() + ".tmp-" + std::to_string(getpid()))).string();
  const int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("cannot create", temp);
  return std::unique_ptr<AtomicFile>(new AtomicFile(path, temp, fd, replace));
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) {
    close(fd_);
    unlink(temp_path_.c_str());
  }
}

Status AtomicFile::Append(ByteSpan data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = write(fd_, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno("cannot write", temp_path_);
    }
    done += static_cast<size_t>(n);
  }
  size_ += data.size();
  return Status::OK();
}

Status AtomicFile::WriteAt(uint64_t offset, ByteSpan data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = pwrite(fd_, data.data() + done, data.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno("cannot write", temp_path_);
    }
    done += static_cast<size_t>(n);
  }
  return Status::OK();
}

Status AtomicFile::Commit() {
  if (fsync(fd_) != 0) return Errno("cannot fsync", temp_path_);
  const int fd = fd_;
  fd_ = -1;
  if (close(fd) != 0) {
    unlink(temp_path_.c_str());
    return Errno("cannot close", temp_path_);
  }
  if (Status s = Rename(temp_path_, path_, replace_); !s.ok()) {
    unlink(temp_path_.c_str());
    return s;
  }
  const std::string dir = std::filesystem::path(path_).parent_path().string();
  const int dfd = open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  return Status::OK();
}

Result<DirectoryLock> DirectoryLock::Take(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IOError(dir + ": cannot create directory: " + ec.message());
  DirectoryLock lock(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (lock.fd_ < 0) return Errno("cannot open", dir);
  if (flock(lock.fd_, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
    return Status::InvalidArgument(dir + ": another pcr-convert is writing this directory");
  }
  return lock;
}

DirectoryLock::DirectoryLock(DirectoryLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) close(fd_);
}

Result<std::unique_ptr<ImageFileWriter>> ImageFileWriter::Create(const std::string& path, ScanScript script,
                                                                 std::vector<FeatureInfo> fields,
                                                                 const FieldWriterOptions& options) {
  PCR_ASSIGN_OR_RETURN(auto file, AtomicFile::Create(path));
  auto writer = std::unique_ptr<ImageFileWriter>(
      new ImageFileWriter(std::move(file), std::move(script), std::move(fields), options));
  // Stamped 0.1 here; Finish stamps the files that need 0.4.
  Bytes header;
  FileHeader{.kind = FileKind::kImages}.EncodeTo(&header);
  PCR_RETURN_IF_ERROR(writer->file_->Append(header));
  return writer;
}

ImageFileWriter::ImageFileWriter(std::unique_ptr<AtomicFile> file, ScanScript script,
                                 std::vector<FeatureInfo> fields, const FieldWriterOptions& options)
    : file_(std::move(file)), options_(options) {
  for (FeatureInfo& f : fields) f.present_count = f.value_count = 0;
  index_.script = std::move(script);
  order_ = StreamOrder(fields, options.stream_order);
  streams_.resize(fields.size());
  index_.schema.features = std::move(fields);
}

Status ImageFileWriter::Append(ByteSpan stream, StripeInfo* stripe) {
  stripe->streams.push_back({stream.size(), Checksum64(stream)});
  return file_->Append(stream);
}

Status ImageFileWriter::AddRecord(const std::vector<SampleMetadata>& samples,
                                  const std::vector<TranscodedImage>& images, std::span<const FieldRow> rows) {
  const int groups = index_.script.group_count();
  StripeInfo stripe;
  stripe.offset = file_->size();
  stripe.image_count = images.size();
  stripe.chunks.resize(images.size() * (groups + 1));
  stripe.first_table_stream = 1;
  stripe.has_segments = true;

  Bytes stream;
  EncodeSampleMetadata(samples, &stream);
  PCR_RETURN_IF_ERROR(Append(stream, &stripe));
  if (!index_.schema.features.empty()) {
    stripe.row_count = images.size();
    if (images.size() > kMaxStripeRows) return Status::InvalidArgument("a record of fields holds at most 2^32 - 1 images");
    for (size_t r = 0; r < rows.size(); ++r) {
      const Status added = AppendFieldRow(index_.schema, rows[r], static_cast<uint32_t>(r), &streams_);
      if (!added.ok()) {
        for (FeatureStreams& fs : streams_) fs.Clear();
        return added.WithPrefix(samples[r].key);
      }
    }
    for (const uint32_t f : order_) {
      FeatureInfo& info = index_.schema.features[f];
      info.present_count += streams_[f].rows.size();
      info.value_count += IsListType(info.type) || RawValueBytes(info.type) == 1
                              ? streams_[f].values.size() / RawValueBytes(info.type)
                              : streams_[f].rows.size();
      const std::vector<StoredStream> stored =
          StoreFeatureStreams(info.type, streams_[f], images.size(), options_.encoding);
      for (size_t r = 0; r < stored.size(); ++r) {
        stripe.table_streams.push_back({f, RolesOf(info.type)[r], stored[r].codec, stored[r].raw_length, stored[r].encoding});
        any_encoded_ |= stored[r].encoding != StreamEncoding::kPlain;
        PCR_RETURN_IF_ERROR(Append(stored[r].bytes, &stripe));
      }
      streams_[f].Clear();
    }
  }
  index_.schema.row_count += images.size();
  // The scan groups, then the segments kept apart (dropped again by Finish
  // when no image of the file has any).
  for (int g = 1; g <= groups + 1; ++g) {
    stream.clear();
    for (size_t i = 0; i < images.size(); ++i) {
      const Bytes& chunk = g <= groups ? images[i].chunks[g - 1] : images[i].segments;
      any_segments_ |= g > groups && !chunk.empty();
      stripe.chunks[(g - 1) * images.size() + i] = {chunk.size(), Checksum32(chunk)};
      PutBytes(&stream, chunk);
    }
    PCR_RETURN_IF_ERROR(Append(stream, &stripe));
  }
  index_.stripes.push_back(std::move(stripe));
  image_count_ += images.size();
  return Status::OK();
}

Result<DatasetFileEntry> ImageFileWriter::Finish() {
  const uint8_t version = ImageFileVersion(index_.schema, any_segments_, any_encoded_);
  if (version < kFieldsVersionMinor) {
    // Every segments stream is empty: the file has the 0.1 layout.
    for (StripeInfo& stripe : index_.stripes) {
      stripe.streams.pop_back();
      stripe.chunks.resize(stripe.chunks.size() - stripe.image_count);
      stripe.has_segments = false;
    }
  } else {
    Bytes header;
    FileHeader{.kind = FileKind::kImages, .version_minor = version}.EncodeTo(&header);
    PCR_RETURN_IF_ERROR(file_->WriteAt(0, header));
  }
  Bytes index;
  index_.EncodeTo(FileKind::kImages, version, &index);
  const Bytes tail = EncodeIndexAndFooter(index, file_->size());
  PCR_RETURN_IF_ERROR(file_->Append(tail));
  DatasetFileEntry entry{
      .name = std::filesystem::path(file_->path()).filename().string(),
      .size = file_->size(),
      .image_count = image_count_,
      .stripe_count = index_.stripes.size(),
      .index_checksum = Checksum64(index),
  };
  PCR_RETURN_IF_ERROR(file_->Commit());
  return entry;
}

namespace {

// Writes a file of kind `header.kind` without stripes whose index is `index`.
Status WriteIndexOnlyFile(const std::string& path, const FileHeader& header, ByteSpan index) {
  PCR_ASSIGN_OR_RETURN(auto file, AtomicFile::Create(path));
  Bytes bytes;
  header.EncodeTo(&bytes);
  const Bytes tail = EncodeIndexAndFooter(index, bytes.size());
  PutBytes(&bytes, tail);
  PCR_RETURN_IF_ERROR(file->Append(bytes));
  return file->Commit();
}

}  // namespace

Status WriteTextFile(const std::string& path, const std::string& text) {
  PCR_ASSIGN_OR_RETURN(auto file, AtomicFile::Create(path, Replace::kYes));
  PCR_RETURN_IF_ERROR(file->Append(ByteSpan(reinterpret_cast<const uint8_t*>(text.data()), text.size())));
  return file->Commit();
}

Status WriteDatasetManifest(const std::string& path, const DatasetManifest& manifest) {
  Bytes index;
  manifest.EncodeTo(&index);
  return WriteIndexOnlyFile(path, {.kind = FileKind::kDataset}, index);
}

Status WritePartManifest(const std::string& path, const PartManifest& part) {
  Bytes index;
  part.EncodeTo(&index);
  return WriteIndexOnlyFile(path, {.kind = FileKind::kDatasetPart, .version_minor = kPartVersionMinor}, index);
}

}  // namespace pcr
