#include "writer/remote_output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "format/checksum.h"
#include "format/file_format.h"
#include "format/journal.h"
#include "io/io_engine.h"
#include "io/md5.h"
#include "io/parallel_for.h"
#include "io/pcr_file.h"
#include "io/remote_path.h"
#include "io/s3_upload.h"
#include "writer/atomic_file.h"
#include "writer/sources.h"
#include "writer/text_input.h"

namespace pcr {

namespace fs = std::filesystem;

namespace {

// A local file as the journal knows it.
struct Stamp {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  bool operator==(const Stamp&) const = default;
};

Result<Stamp> StampOf(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return Status::IOError(path + ": cannot stat: " + std::strerror(errno));
  return Stamp{static_cast<uint64_t>(st.st_size), int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec};
}

// The journal: "done\tSIZE\tMTIME_NS\tETAG\tNAME" (an upload finished),
// "open\tUPLOAD_ID\tNAME" (a multipart upload started) and
// "closed\tUPLOAD_ID\tNAME" (one aborted) lines.
struct Uploaded {
  Stamp stamp;
  std::string etag;
};
struct UploadJournal {
  std::map<std::string, Uploaded> done;
  std::vector<std::pair<std::string, std::string>> open;  // (name, upload id), neither done nor closed
};

UploadJournal ReadJournal(const std::string& path) {
  UploadJournal j;
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return j;
  char line[4096];
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    std::string s(line);
    if (!s.ends_with('\n')) break;  // a line cut by a kill
    s.pop_back();
    std::vector<std::string> fields;
    std::stringstream in(s);
    for (std::string field; std::getline(in, field, '\t');) fields.push_back(field);
    if (fields.size() == 5 && fields[0] == "done") {
      j.done[fields[4]] = {{std::strtoull(fields[1].c_str(), nullptr, 10), std::strtoll(fields[2].c_str(), nullptr, 10)},
                           fields[3]};
      std::erase_if(j.open, [&](const auto& o) { return o.first == fields[4]; });
    } else if (fields.size() == 3 && fields[0] == "open") {
      j.open.emplace_back(fields[2], fields[1]);
    } else if (fields.size() == 3 && fields[0] == "closed") {
      std::erase(j.open, std::pair(fields[2], fields[1]));
    }
  }
  std::fclose(f);
  return j;
}

// Appends `line` and syncs it; from several threads at once, whole lines.
Status Append(const std::string& path, const std::string& line) {
  const int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IOError(path + ": cannot open: " + std::strerror(errno));
  const bool ok = write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) && fsync(fd) == 0;
  const int err = errno;
  close(fd);
  return ok ? Status::OK() : Status::IOError(path + ": cannot write: " + std::strerror(err));
}

// Aborts the multipart uploads `journal` holds open, journaling each.
Status AbortOpenUploads(S3Uploader& uploader, const std::string& remote, const std::string& journal) {
  for (const auto& [name, id] : ReadJournal(journal).open) {
    PCR_RETURN_IF_ERROR(uploader.Abort(JoinRemotePath(remote, name), id));
    PCR_RETURN_IF_ERROR(Append(journal, "closed\t" + id + "\t" + name + "\n"));
  }
  return Status::OK();
}

// Uploads the local file `path` as `remote`/NAME and journals it.
Status UploadFile(S3Uploader& uploader, const std::string& path, const std::string& remote,
                  const std::string& journal) {
  const std::string name = fs::path(path).filename().string();
  if (name.find_first_of("\t\n") != std::string::npos) {
    return Status::InvalidArgument(path + ": a file name with a tab or newline");
  }
  PCR_ASSIGN_OR_RETURN(const Stamp stamp, StampOf(path));
  PCR_ASSIGN_OR_RETURN(const std::string etag,
                       uploader.Upload(path, JoinRemotePath(remote, name), [&](const std::string& id) {
                         return Append(journal, "open\t" + id + "\t" + name + "\n");
                       }));
  return Append(journal, "done\t" + std::to_string(stamp.size) + "\t" + std::to_string(stamp.mtime_ns) + "\t" + etag +
                             "\t" + name + "\n");
}

// Uploads files as a conversion finishes them, UploadOptions::concurrency at
// a time in the order given, on threads of its own, while the conversion
// goes on. Its cancel flag, given to the conversion, turns true once an
// upload fails or `cancel` does.
class EagerUploader {
 public:
  EagerUploader(std::unique_ptr<S3Uploader> uploader, std::string remote, std::string journal, unsigned threads,
                const std::atomic<bool>* cancel)
      : uploader_(std::move(uploader)), remote_(std::move(remote)), journal_(std::move(journal)), user_cancel_(cancel) {
    for (unsigned i = 0; i < threads; ++i) threads_.emplace_back([this] { Run(); });
  }
  ~EagerUploader() { (void)Finish(false); }

  const std::atomic<bool>* cancel() const { return &stop_; }

  void Add(const std::string& path) {
    std::lock_guard lock(mu_);
    queue_.push_back(path);
    changed_.notify_one();
  }

  // Waits for the files added (`drain`) or only those being sent; the
  // first upload error.
  Status Finish(bool drain) {
    {
      std::lock_guard lock(mu_);
      finishing_ = true;
      if (!drain) queue_.clear();
      changed_.notify_all();
    }
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
    return failed_;
  }

 private:
  void Run() {
    std::unique_lock lock(mu_);
    while (true) {
      if (user_cancel_ != nullptr && user_cancel_->load()) stop_ = true;
      if (stop_) queue_.clear();
      if (queue_.empty()) {
        if (finishing_) return;
        changed_.wait_for(lock, std::chrono::milliseconds(100));
        continue;
      }
      const std::string path = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      Status s = UploadFile(*uploader_, path, remote_, journal_);
      lock.lock();
      if (!s.ok()) {
        if (failed_.ok()) failed_ = std::move(s);
        stop_ = true;
      }
    }
  }

  const std::unique_ptr<S3Uploader> uploader_;
  const std::string remote_;
  const std::string journal_;
  const std::atomic<bool>* const user_cancel_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<std::string> queue_;  // guarded by mu_
  bool finishing_ = false;         // guarded by mu_
  Status failed_;                  // guarded by mu_; read after the threads are joined
  std::vector<std::thread> threads_;
};

}  // namespace

bool IsObjectStoreOutput(std::string_view out_dir) { return IsS3Path(out_dir); }

std::string ConversionWorkDir(const std::string& out_dir, const std::string& work_dir) {
  if (!work_dir.empty()) return work_dir;
  std::string_view out = out_dir;
  while (out.size() > 5 && out.ends_with('/')) out.remove_suffix(1);
  char name[64];
  std::snprintf(name, sizeof(name), "pcr-convert-%016llx",
                static_cast<unsigned long long>(
                    Checksum64(ByteSpan(reinterpret_cast<const uint8_t*>(out.data()), out.size()))));
  std::error_code ec;
  const fs::path tmp = fs::temp_directory_path(ec);
  return ((ec ? fs::path("/tmp") : tmp) / name).string();
}

Status PublishDirectory(const std::string& local, const std::string& remote, const std::vector<std::string>& last,
                        const std::string& journal, const RemoteOptions& remote_options,
                        const UploadOptions& upload, const std::atomic<bool>* cancel) {
  PCR_ASSIGN_OR_RETURN(auto uploader, S3Uploader::Create(remote_options, upload));
  PCR_RETURN_IF_ERROR(AbortOpenUploads(*uploader, remote, journal));
  const UploadJournal j = ReadJournal(journal);
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(local, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && !name.starts_with('.') &&
        std::find(last.begin(), last.end(), name) == last.end()) {
      names.push_back(name);
    }
  }
  if (ec) return Status::IOError(local + ": cannot list: " + ec.message());
  std::sort(names.begin(), names.end());
  for (const std::string& name : last) {
    if (fs::exists(fs::path(local) / name)) names.push_back(name);
  }
  // Every file but the last ones: sent unless the journal has it up.
  const size_t first_last = names.size() - std::count_if(last.begin(), last.end(), [&](const std::string& n) {
                              return fs::exists(fs::path(local) / n);
                            });
  auto interrupted = [&] { return cancel != nullptr && cancel->load(); };
  const Status stopped = Status::Cancelled("upload to " + remote + " interrupted");
  PCR_RETURN_IF_ERROR(ParallelFor(first_last, upload.concurrency, [&](size_t i) -> Status {
    if (interrupted()) return stopped;
    const std::string path = (fs::path(local) / names[i]).string();
    PCR_ASSIGN_OR_RETURN(const Stamp stamp, StampOf(path));
    if (auto it = j.done.find(names[i]); it != j.done.end() && it->second.stamp == stamp) return Status::OK();
    return UploadFile(*uploader, path, remote, journal);
  }));
  // Then each checked against the store: sent again where it is gone (a
  // store that lost it, or another store), refused where it changed since
  // (another conversion writing to the same output).
  const UploadJournal up = ReadJournal(journal);
  PCR_RETURN_IF_ERROR(ParallelFor(first_last, upload.concurrency, [&](size_t i) -> Status {
    if (interrupted()) return stopped;
    const std::string object = JoinRemotePath(remote, names[i]);
    const Uploaded& u = up.done.at(names[i]);
    auto head = uploader->Head(object);
    if (!head.ok() && head.status().code() == StatusCode::kNotFound) {
      return UploadFile(*uploader, (fs::path(local) / names[i]).string(), remote, journal);
    }
    if (!head.ok()) return head.status();
    if (head->size != u.stamp.size || (!head->etag.empty() && !u.etag.empty() && head->etag != u.etag)) {
      return Status::IOError(object + ": changed in the store since this conversion uploaded it (" +
                             std::to_string(head->size) + " bytes, ETag " + head->etag + "; sent " +
                             std::to_string(u.stamp.size) + " bytes, ETag " + u.etag +
                             "): is another conversion writing to " + remote + "? No manifest was uploaded");
    }
    return Status::OK();
  }));
  for (size_t i = first_last; i < names.size(); ++i) {
    if (interrupted()) return stopped;
    PCR_RETURN_IF_ERROR(UploadFile(*uploader, (fs::path(local) / names[i]).string(), remote, journal));
  }
  return Status::OK();
}

namespace {

// The output's objects, without trailing slashes.
std::string OutputName(const std::string& out_dir) {
  std::string out = out_dir;
  while (out.size() > 5 && out.ends_with('/')) out.pop_back();
  return out;
}

// Refuses an output that already holds `name`, unless it is the file
// `local`/NAME that this conversion uploaded (a run stopped before it
// cleaned up): in `journal`, or of the same MD5.
Status CheckNoObject(const std::string& out_dir, const std::string& name, const std::string& local,
                     const std::string& journal, const RemoteOptions& remote, const UploadOptions& upload) {
  PCR_ASSIGN_OR_RETURN(auto uploader, S3Uploader::Create(remote, upload));
  const std::string object = JoinRemotePath(out_dir, name);
  Result<bool> exists = uploader->Exists(object);
  // Without s3:ListBucket, S3 answers 403 for a key that does not exist;
  // one that exists but may not be read answers 403 too, and a listing,
  // where the role may list, tells them apart.
  if (!exists.ok() && exists.status().message().find("HTTP 403 AccessDenied") != std::string::npos) {
    PCR_ASSIGN_OR_RETURN(const auto where, SplitS3Prefix(OutputName(out_dir)));
    const auto listed = uploader->List(where.first, where.second + name);
    if (!listed.ok() && listed.status().message().find("HTTP 403") != std::string::npos) return Status::OK();
    PCR_RETURN_IF_ERROR(listed.status());
    exists = std::any_of(listed->begin(), listed->end(),
                         [&](const S3Uploader::ListedObject& o) { return o.key == where.second + name; });
  }
  PCR_RETURN_IF_ERROR(exists.status());
  if (!*exists || ReadJournal(journal).done.count(name) > 0) return Status::OK();
  std::error_code ec;
  const fs::path path = fs::path(local) / name;
  const uint64_t size = fs::file_size(path, ec);
  if (!ec && size < upload.multipart_threshold) {  // sent in one PUT: its ETag is its MD5
    const auto mine = ReadRegularFile(path.string());
    const auto head = uploader->Head(object);
    if (mine.ok() && head.ok() &&
        head->etag == Md5Hex(std::string_view(reinterpret_cast<const char*>(mine->data()), mine->size()))) {
      return Status::OK();
    }
  }
  return Status::InvalidArgument(out_dir + " already holds a pcr " +
                                 (name == kPartManifestName         ? "part of a sharded conversion (" + name + ")"
                                  : name.ends_with(".pcrd") ? "dataset (" + name + ")"
                                                            : "table (" + name + ")"));
}

// Writes `identity` as the conversion `work` holds.
Status WriteIdentity(const fs::path& work, const std::string& identity) {
  const fs::path path = work / "conversion";
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const bool ok = fd >= 0 && write(fd, identity.data(), identity.size()) == static_cast<ssize_t>(identity.size()) &&
                  fsync(fd) == 0;
  if (fd >= 0) close(fd);
  return ok ? Status::OK() : Status::IOError(path.string() + ": cannot write");
}


std::string ImagesIdentity(const ConvertImagesOptions& o) {
  std::string s = "images " + OutputName(o.out_dir) + "\n" + o.src_dir + "\n" + o.list_file + "\n";
  for (const std::string& shard : o.shards) s += shard + "\n";
  s += std::to_string(o.images_per_record) + " " + std::to_string(o.records_per_file) + " " + o.scan_script + " " +
       std::to_string(o.strip_metadata) + " " + std::to_string(o.by_content) + " " + std::to_string(o.skip_bad) +
       " " + (o.shuffle_seed ? std::to_string(*o.shuffle_seed) : "-") + " " + std::to_string(o.shard_index) + " " +
       std::to_string(o.num_shards) + " " + std::to_string(o.max_pixels) + " " + std::to_string(o.exif_orientation) +
       "\n" + o.fields_file + "\n" + o.fields_key + "\n";
  for (const auto& [name, type] : o.field_types) s += name + "=" + std::to_string(static_cast<int>(type)) + "\n";
  for (const std::string& f : o.field_order) s += f + ",";
  return s + "\n";
}

std::string TableIdentity(const TableConvertOptions& o) {
  const TableWriterOptions& w = o.writer;
  // Standard input differs from run to run: no run resumes another's.
  const std::string input = o.input == "-" ? "- " + std::to_string(std::random_device()()) : o.input;
  std::string s = "table " + OutputName(o.out_dir) + "\n" + input + " " + o.format + "\n" + o.schema_file + "\n" +
                  std::to_string(static_cast<int>(o.delimiter)) + " " + std::to_string(w.rows_per_stripe) + " " +
                  std::to_string(w.stripe_bytes) + " " + std::to_string(o.split_bytes) + " " + std::to_string(w.zstd_level) + " " + w.stream_encoding +
                  " " + std::to_string(o.float32) + " " + std::to_string(o.strings) + " " +
                  std::to_string(static_cast<int>(o.on_bad_value)) + "\n";
  for (const auto& [name, type] : o.column_types) s += name + "=" + std::to_string(static_cast<int>(type)) + "\n";
  for (const std::string& f : w.stream_order) s += f + ",";
  return s + "\n";
}

// pcr's own names in an output: record files, the manifest and `marker`.
bool IsPcrName(const std::string& name, const std::string& marker) {
  return IsConversionOutput(name) || name == kDatasetManifestName || name == marker;
}

// Aborts the multipart uploads open under the output for pcr's own names:
// those a killed run, a rerun with another work directory or a lost answer
// to CreateMultipartUpload left.
Status AbortStrayUploads(S3Uploader& uploader, const std::string& out_dir, const std::string& marker) {
  PCR_ASSIGN_OR_RETURN(const auto where, SplitS3Prefix(OutputName(out_dir)));
  const auto& [bucket, prefix] = where;
  PCR_ASSIGN_OR_RETURN(const auto uploads, uploader.ListUploads(bucket, prefix));
  for (const S3Uploader::OpenUpload& u : uploads) {
    const std::string name = u.key.substr(std::min(prefix.size(), u.key.size()));
    if (!u.key.starts_with(prefix) || name.find('/') != std::string::npos || !IsPcrName(name, marker)) continue;
    const Status aborted = uploader.Abort("s3://" + bucket + "/" + u.key, u.upload_id);
    // A role that may not abort (s3:AbortMultipartUpload) leaves them to the bucket's lifecycle rule.
    if (!aborted.ok() && aborted.message().find("HTTP 403") == std::string::npos) return aborted;
  }
  return Status::OK();
}

// Deletes the record files (and skip list) under the output that the
// manifest `local`/`marker`, a copy of the one just uploaded, does not list
// (nor `local` hold): left by an earlier conversion, with --restart and
// other options.
Status DeleteStaleRecordFiles(S3Uploader& uploader, const std::string& out_dir, const fs::path& local,
                              const std::string& marker) {
  PCR_ASSIGN_OR_RETURN(auto engine, MakeIoEngine({.kind = IoEngineKind::kPread}));
  PCR_ASSIGN_OR_RETURN(auto file, PcrFile::Open((local / marker).string(), engine.get()));
  std::set<std::string> listed;
  std::error_code ec;
  if (fs::exists(local / kSkippedListName, ec)) listed.insert(kSkippedListName);
  for (const DatasetFileEntry& e : file->header().kind == FileKind::kDatasetPart ? file->part().dataset.files
                                                                                : file->manifest().files) {
    listed.insert(e.name);
  }
  PCR_ASSIGN_OR_RETURN(const auto where, SplitS3Prefix(OutputName(out_dir)));
  const auto& [bucket, prefix] = where;
  const auto objects = uploader.List(bucket, prefix);
  // A role without s3:ListBucket cannot tell which are stale: none are deleted.
  if (!objects.ok() && objects.status().message().find("HTTP 403") != std::string::npos) return Status::OK();
  PCR_RETURN_IF_ERROR(objects.status());
  for (const S3Uploader::ListedObject& o : *objects) {
    const std::string name = o.key.substr(prefix.size());
    if (name.find('/') != std::string::npos || !IsConversionOutput(name) || listed.contains(name)) continue;
    PCR_RETURN_IF_ERROR(uploader.Delete("s3://" + bucket + "/" + o.key));
  }
  return Status::OK();
}

// Puts and deletes a small object under the output, so that a role that
// may not write there fails before anything is converted.
Status CheckWritable(S3Uploader& uploader, const std::string& out_dir) {
  const std::string probe =
      JoinRemotePath(OutputName(out_dir), ".pcr-write-check-" + std::to_string(getpid()) + "-" +
                                              std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
  const auto put = uploader.Put(probe, "pcr-convert checks that it may write here\n");
  if (!put.ok()) {
    return Status::IOError(OutputName(out_dir) + ": cannot write there (s3:PutObject): " + put.status().message());
  }
  const Status deleted = uploader.Delete(probe);
  if (!deleted.ok()) {
    return Status::IOError(OutputName(out_dir) + ": cannot delete there (s3:DeleteObject), which a conversion needs to "
                           "abort its uploads and remove stale files: " + deleted.message());
  }
  return Status::OK();
}

// Where an upload into object storage happens, and how.
struct Destination {
  std::string out_dir;     // s3://BUCKET/PREFIX
  std::string work_dir;    // as given: empty for ConversionWorkDir's
  std::string marker;      // the object whose presence means the output is taken
  std::string identity;    // the conversion: its inputs, options and output
  std::vector<std::string> last;  // uploaded after every other file, in order
  const RemoteOptions& remote;
  const UploadOptions& upload;
  const OptionNames& names;  // how messages name options
  bool restart = false;    // start the work directory over
  // Whether files another conversion left unfinished in out/ stay for this
  // one to judge (as ConvertImages judges an interrupted conversion's).
  bool keep_unfinished = false;
  const std::atomic<bool>* cancel = nullptr;
};

// The sequence every output into object storage shares: the options and
// the output checked, the work directory locked (through the upload) and
// claimed, `produce(out, journal)` writing the local copy into work/out
// (keeping what an earlier run left), then PublishDirectory and, once all is
// up, the work files removed.
//
// The work directory must be new, empty, or one pcr-convert made. One left
// by another conversion is taken over unless that one finished converting
// (its files are not this conversion's to upload); restart first aborts the
// multipart uploads it left open.
template <typename T, typename Produce>
Result<T> ThroughWorkDir(const Destination& d, Produce produce) {
  PCR_RETURN_IF_ERROR(CheckUploadOptions(d.upload));
  const fs::path work = ConversionWorkDir(d.out_dir, d.work_dir);
  const std::string local = (work / "out").string(), journal = (work / "upload.journal").string();
  std::error_code ec;
  const fs::path identity_file = work / "conversion";
  if (fs::exists(work, ec) && !fs::exists(identity_file, ec) && !fs::is_empty(work, ec)) {
    return Status::InvalidArgument(work.string() + ": not empty, and not a work directory of pcr-convert: give a new "
                                   "or empty " + d.names(Option::kWorkDir));
  }
  PCR_RETURN_IF_ERROR(CheckNoObject(d.out_dir, d.marker, local, journal, d.remote, d.upload));
  PCR_ASSIGN_OR_RETURN(DirectoryLock lock, DirectoryLock::Take(work.string()));
  PCR_ASSIGN_OR_RETURN(auto uploader, S3Uploader::Create(d.remote, d.upload));
  PCR_RETURN_IF_ERROR(CheckWritable(*uploader, d.out_dir));
  PCR_RETURN_IF_ERROR(AbortStrayUploads(*uploader, d.out_dir, d.marker));
  if (d.restart) {
    PCR_RETURN_IF_ERROR(AbortOpenUploads(*uploader, d.out_dir, journal));
    fs::remove_all(local, ec);
    fs::remove(journal, ec);
    fs::remove(identity_file, ec);
  }
  if (fs::exists(identity_file, ec)) {
    PCR_ASSIGN_OR_RETURN(const Bytes held, ReadRegularFile(identity_file.string()));
    if (std::string(held.begin(), held.end()) != d.identity) {
      // The marker file is written last, atomically.
      const bool finished = fs::exists(fs::path(local) / d.marker, ec);
      if (finished) {
        return Status::InvalidArgument(work.string() + " holds a finished conversion into " + d.out_dir +
                                       " of other inputs or options, not yet uploaded: run that conversion again to "
                                       "upload it, start over with " + d.names(Option::kRestart) + " (images), or give another " +
                                       d.names(Option::kWorkDir));
      }
      if (!d.keep_unfinished) fs::remove_all(local, ec);
      PCR_RETURN_IF_ERROR(WriteIdentity(work, d.identity));
    }
  } else {
    PCR_RETURN_IF_ERROR(WriteIdentity(work, d.identity));
  }
  PCR_ASSIGN_OR_RETURN(T result, produce(local, journal));
  PCR_RETURN_IF_ERROR(PublishDirectory(local, d.out_dir, d.last, journal, d.remote, d.upload, d.cancel));
  PCR_RETURN_IF_ERROR(AbortStrayUploads(*uploader, d.out_dir, d.marker));
  if (d.marker == kDatasetManifestName || d.marker == kPartManifestName) {
    PCR_RETURN_IF_ERROR(DeleteStaleRecordFiles(*uploader, d.out_dir, local, d.marker));
  }
  fs::remove_all(local, ec);
  fs::remove(journal, ec);
  fs::remove(identity_file, ec);
  if (d.work_dir.empty()) fs::remove(work, ec);
  return result;
}

}  // namespace

Result<ConvertImagesSummary> ConvertImagesToObjectStore(
    const ConvertImagesOptions& options, Result<ConvertImagesSummary> (*convert)(const ConvertImagesOptions&)) {
  const std::string marker = options.num_shards > 1 ? kPartManifestName : kDatasetManifestName;
  const Destination d{.out_dir = options.out_dir,
                      .work_dir = options.work_dir,
                      .marker = marker,
                      .identity = ImagesIdentity(options),
                      .last = {marker},
                      .remote = options.remote,
                      .upload = options.upload,
                      .names = *options.option_names,
                      .restart = options.restart,
                      .keep_unfinished = true,
                      .cancel = options.cancel};
  return ThroughWorkDir<ConvertImagesSummary>(d, [&](const std::string& out, const std::string& journal)
                                                     -> Result<ConvertImagesSummary> {
    const fs::path manifest = fs::path(out) / marker;
    std::error_code ec;
    if (fs::exists(manifest, ec)) {
      // Converted by an earlier run whose upload did not finish (the manifest
      // is written last, atomically; a kill may have left the journal).
      fs::remove(fs::path(out) / kConversionMarkerName, ec);
      PCR_ASSIGN_OR_RETURN(auto engine, MakeIoEngine({.kind = IoEngineKind::kPread}));
      PCR_ASSIGN_OR_RETURN(auto file, PcrFile::Open(manifest.string(), engine.get()));
      const std::vector<DatasetFileEntry>& files =
          file->header().kind == FileKind::kDatasetPart ? file->part().dataset.files : file->manifest().files;
      ConvertImagesSummary summary;
      for (const DatasetFileEntry& e : files) {
        summary.images += e.image_count;
        summary.records += e.stripe_count;
        summary.output_bytes += e.size;
      }
      summary.files = summary.resumed_files = files.size();
      return summary;
    }
    // Each file goes up as soon as it is finished.
    PCR_ASSIGN_OR_RETURN(auto uploader, S3Uploader::Create(options.remote, options.upload));
    PCR_RETURN_IF_ERROR(AbortOpenUploads(*uploader, options.out_dir, journal));
    EagerUploader eager(std::move(uploader), options.out_dir, journal, options.upload.concurrency, options.cancel);
    ConvertImagesOptions local = options;
    local.out_dir = out;
    local.work_dir.clear();
    local.restart = false;
    local.cancel = eager.cancel();
    local.file_done = [&](const std::string& path) {
      eager.Add(path);
      if (options.file_done) options.file_done(path);
    };
    Result<ConvertImagesSummary> converted = convert(local);
    PCR_RETURN_IF_ERROR(eager.Finish(converted.ok()));  // a failed upload stopped the conversion
    return converted;
  });
}

Result<TableConvertReport> ConvertTableToObjectStore(
    const TableConvertOptions& options, const std::function<Result<TableConvertReport>(const TableConvertOptions&)>& convert) {
  const std::string name = InputStem(options.input) + ".pcr";
  const Destination d{.out_dir = options.out_dir,
                      .work_dir = options.work_dir,
                      .marker = name,
                      .identity = TableIdentity(options),
                      .remote = options.remote,
                      .upload = options.upload,
                      .names = *options.option_names};
  PCR_ASSIGN_OR_RETURN(TableConvertReport report,
                       ThroughWorkDir<TableConvertReport>(d, [&](const std::string& out, const std::string&)
                                                                 -> Result<TableConvertReport> {
                         const fs::path table = fs::path(out) / name;
                         std::error_code ec;
                         if (fs::exists(table, ec)) {
                           // Converted by an earlier run whose upload did not finish.
                           PCR_ASSIGN_OR_RETURN(auto engine, MakeIoEngine({.kind = IoEngineKind::kPread}));
                           PCR_ASSIGN_OR_RETURN(auto file, PcrFile::Open(table.string(), engine.get()));
                           return TableConvertReport{.schema = file->index().schema,
                                                     .stripes = file->index().stripes.size(),
                                                     .output_bytes = file->size()};
                         }
                         // A table is written whole or not at all: an earlier run left none.
                         fs::remove_all(out, ec);
                         TableConvertOptions local = options;
                         local.out_dir = out;
                         local.work_dir.clear();
                         return convert(local);
                       }));
  report.path = JoinRemotePath(options.out_dir, name);
  return report;
}

Result<MergeSummary> MergeToObjectStore(const MergeOptions& options,
                                        const std::function<Result<MergeSummary>(const std::string& out)>& merge) {
  std::string identity = "merge " + OutputName(options.out_dir) + "\n";
  for (const std::string& part : options.part_dirs) {
    identity += (IsObjectStoreOutput(part) ? part : fs::absolute(part).string()) + "\n";
  }
  const Destination d{.out_dir = options.out_dir,
                      .work_dir = options.work_dir,
                      .marker = kDatasetManifestName,
                      .identity = identity,
                      .last = {kDatasetManifestName},
                      .remote = options.remote,
                      .upload = options.upload,
                      .names = *options.option_names};
  return ThroughWorkDir<MergeSummary>(d, [&](const std::string& out, const std::string&) {
    std::error_code ec;
    fs::remove(fs::path(out) / kDatasetManifestName, ec);  // merged by an earlier run: merged again, links kept
    return merge(out);
  });
}

}  // namespace pcr
