#include "pcr/convert.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>

#include "format/journal.h"
#include "io/http_client.h"
#include "io/io_engine.h"
#include "io/location.h"
#include "io/parallel_for.h"
#include "io/pcr_file.h"
#include "io/remote_path.h"
#include "io/s3_upload.h"
#include "writer/atomic_file.h"
#include "writer/file_writer.h"
#include "writer/remote_input.h"
#include "writer/remote_output.h"
#include "writer/resume.h"

namespace pcr {

namespace fs = std::filesystem;

namespace {

// The part manifest of PART_DIR, checked like any pcr file.
Result<PartManifest> ReadPartManifest(const fs::path& part_dir) {
  PCR_ASSIGN_OR_RETURN(const Location where, Locate(part_dir.string()));
  const fs::path path = where.Join(kPartManifestName);
  if (!where.part_manifest) {
    if (where.dataset_manifest) {
      return Status::InvalidArgument(part_dir.string() + ": a whole dataset, not a part of a sharded conversion");
    }
    return Status::InvalidArgument(part_dir.string() + ": no " + kPartManifestName +
                                   " (not a part, or its conversion did not finish: run it again to resume)");
  }
  PCR_ASSIGN_OR_RETURN(auto engine, MakeIoEngine({.kind = IoEngineKind::kPread}));
  PCR_ASSIGN_OR_RETURN(auto file, PcrFile::Open(path.string(), engine.get()));
  if (file->header().kind != FileKind::kDatasetPart) {
    return Status::Corruption(path.string() + ": file kind " + std::to_string(static_cast<int>(file->header().kind)) +
                              ", not a part manifest");
  }
  return file->part();
}

// Hard-links (or symbolically links) the part file `from`, described by
// `entry`, as `to`. A file already at `to` with the entry's size and index
// checksum (left by an interrupted merge) is kept.
Status LinkFile(const fs::path& from, const fs::path& to, const DatasetFileEntry& entry, bool symbolic) {
  std::error_code ec;
  if (symbolic ? symlink(fs::absolute(from, ec).c_str(), to.c_str()) == 0 : link(from.c_str(), to.c_str()) == 0) {
    return Status::OK();
  }
  const int err = errno;
  if (err == EEXIST && FooterIndexChecksum(to, entry.size) == entry.index_checksum) return Status::OK();
  if (err == EXDEV) {
    return Status::InvalidArgument(from.string() + " and " + to.parent_path().string() +
                                   " are on different filesystems; merge links record files instead of "
                                   "copying them, so OUT_DIR must be on the parts' filesystem");
  }
  return Status::IOError(to.string() + ": cannot link to " + from.string() + ": " + std::strerror(err));
}

// One part of a sharded conversion: where it is and its manifest.
struct Part {
  std::string dir;
  PartManifest manifest;
};

// The parts `part_dirs` (each read by `read`) in shard order: one
// conversion's, every shard exactly once.
Result<std::vector<Part>> OrderParts(const std::vector<std::string>& part_dirs,
                                     const std::function<Result<PartManifest>(const std::string&)>& read) {
  if (part_dirs.empty()) return Status::InvalidArgument("merge needs at least one part directory");
  std::vector<std::optional<Part>> shards;
  const PartManifest* first = nullptr;  // of the first part given
  for (const std::string& dir : part_dirs) {
    PCR_ASSIGN_OR_RETURN(PartManifest p, read(dir));
    if (shards.empty()) {
      shards.resize(p.shard_count);
    } else if (p.shard_count != shards.size() || p.plan_checksum != first->plan_checksum ||
               !(p.dataset.script == first->dataset.script) || p.dataset.class_names != first->dataset.class_names) {
      return Status::InvalidArgument(dir + ": shard " + std::to_string(p.shard_index) + " of " +
                                     std::to_string(p.shard_count) + " is from another conversion than " +
                                     part_dirs.front() + " (different input, options or shard count)");
    }
    std::optional<Part>& slot = shards[p.shard_index];
    if (slot) {
      return Status::InvalidArgument(dir + ": shard " + std::to_string(p.shard_index) + " is also " + slot->dir);
    }
    slot = Part{dir, std::move(p)};
    if (first == nullptr) first = &slot->manifest;
  }
  std::string missing;
  std::vector<Part> parts;
  for (size_t i = 0; i < shards.size(); ++i) {
    if (!shards[i]) missing += (missing.empty() ? "" : ", ") + std::to_string(i);
    if (shards[i]) parts.push_back(std::move(*shards[i]));
  }
  if (!missing.empty()) {
    return Status::InvalidArgument("missing shards " + missing + " of " + std::to_string(shards.size()) +
                                   " (every part of the conversion must be given)");
  }
  return parts;
}

// Writes the dataset manifest of `parts` (their files in shard order) and,
// when not empty, the concatenated `skip_list` into the local `out_dir`.
Result<MergeSummary> WriteMerged(const fs::path& out, const std::vector<Part>& parts, const std::string& skip_list) {
  std::error_code ec;
  if (fs::exists(out / kDatasetManifestName, ec)) {
    return Status::InvalidArgument(out.string() + " already holds a pcr dataset (" + kDatasetManifestName + ")");
  }
  DatasetManifest manifest;
  manifest.script = parts[0].manifest.dataset.script;
  manifest.class_names = parts[0].manifest.dataset.class_names;
  MergeSummary summary{.parts = parts.size()};
  for (const Part& part : parts) {
    for (const DatasetFileEntry& e : part.manifest.dataset.files) {
      summary.images += e.image_count;
      manifest.files.push_back(e);
    }
  }
  summary.files = manifest.files.size();
  summary.skipped = static_cast<uint64_t>(std::count(skip_list.begin(), skip_list.end(), '\n'));
  if (summary.images == 0) return Status::InvalidArgument("the parts hold no images");
  if (!skip_list.empty()) PCR_RETURN_IF_ERROR(WriteTextFile(out / kSkippedListName, skip_list));
  PCR_RETURN_IF_ERROR(WriteDatasetManifest((out / kDatasetManifestName).string(), manifest));
  return summary;
}

// MergeParts of local parts into the local directory `out_dir`, linking the
// record files symbolically or not.
Result<MergeSummary> MergeInto(const std::string& out_dir, const std::vector<std::string>& part_dirs, bool symbolic) {
  PCR_RETURN_IF_ERROR(CheckLocalOutput(out_dir));
  std::error_code ec;
  for (const std::string& dir : part_dirs) {
    if (fs::equivalent(dir, out_dir, ec)) {
      return Status::InvalidArgument(out_dir + ": is also given as a part; merge into another directory");
    }
  }
  PCR_ASSIGN_OR_RETURN(const std::vector<Part> parts,
                       OrderParts(part_dirs, [](const std::string& dir) { return ReadPartManifest(dir); }));
  for (const Part& part : parts) {
    for (const DatasetFileEntry& e : part.manifest.dataset.files) {
      const fs::path from = fs::path(part.dir) / e.name;
      if (FooterIndexChecksum(from, e.size) != e.index_checksum) {
        return Status::Corruption(from.string() + ": size or index checksum differs from " +
                                  (fs::path(part.dir) / kPartManifestName).string());
      }
    }
  }
  const fs::path out(out_dir);
  fs::create_directories(out, ec);
  if (ec) return Status::IOError(out_dir + ": cannot create directory: " + ec.message());
  if (fs::exists(out / kDatasetManifestName, ec)) {
    return Status::InvalidArgument(out_dir + " already holds a pcr dataset (" + kDatasetManifestName + ")");
  }
  std::string skip_list;
  for (const Part& part : parts) {
    for (const DatasetFileEntry& e : part.manifest.dataset.files) {
      PCR_RETURN_IF_ERROR(LinkFile(fs::path(part.dir) / e.name, out / e.name, e, symbolic));
    }
    const fs::path skipped = fs::path(part.dir) / kSkippedListName;
    if (fs::exists(skipped, ec)) {
      PCR_ASSIGN_OR_RETURN(const Bytes text, ReadRegularFile(skipped.string()));
      skip_list.append(text.begin(), text.end());
    }
  }
  return WriteMerged(out, parts, skip_list);
}

// The index checksum of the pcr file at `path`, if it is one of `size`
// bytes whose header, footer and index check; none where it is missing,
// of another size or damaged. An error where it could not be read.
Result<std::optional<uint64_t>> StoredIndexChecksum(const std::string& path, uint64_t size, IoEngine& engine) {
  auto file = PcrFile::Open(path, &engine);
  if (!file.ok()) {
    const StatusCode code = file.status().code();
    if (code == StatusCode::kNotFound || code == StatusCode::kCorruption || code == StatusCode::kInvalidArgument) {
      return std::optional<uint64_t>();
    }
    return file.status();
  }
  if ((*file)->size() != size) return std::optional<uint64_t>();
  return std::optional<uint64_t>((*file)->footer().index_checksum);
}

// MergeParts of parts in object storage (s3:// prefixes in the output's
// store) into options.out_dir: each record file is copied by the store
// (S3Uploader::Copy), and checked before and after; the dataset manifest
// and skip list are written into the local `out` for the upload.
Result<MergeSummary> MergeInStore(const MergeOptions& options, const std::string& out) {
  const RemoteOptions remote = OutputRemote(options.remote, options.upload);
  PCR_ASSIGN_OR_RETURN(auto engine, MakeIoEngine({.kind = IoEngineKind::kPread, .remote = remote}));
  PCR_ASSIGN_OR_RETURN(auto client, HttpClient::Create(remote));
  PCR_ASSIGN_OR_RETURN(auto uploader, S3Uploader::Create(options.remote, options.upload));
  auto read = [&](const std::string& dir) -> Result<PartManifest> {
    const std::string path = JoinRemotePath(dir, kPartManifestName);
    auto file = PcrFile::Open(path, engine.get());
    if (!file.ok() && file.status().code() == StatusCode::kNotFound) {
      return Status::InvalidArgument(dir + ": no " + kPartManifestName +
                                     " (not a part, or its conversion did not finish: run it again to resume)");
    }
    PCR_RETURN_IF_ERROR(file.status());
    if ((*file)->header().kind != FileKind::kDatasetPart) {
      return Status::InvalidArgument(path + ": file kind " + std::to_string(static_cast<int>((*file)->header().kind)) +
                                     ", not a part manifest");
    }
    return (*file)->part();
  };
  PCR_ASSIGN_OR_RETURN(const std::vector<Part> parts, OrderParts(options.part_dirs, read));
  struct Copy {
    std::string from, to;
    const DatasetFileEntry* entry;
    std::string manifest;
  };
  std::vector<Copy> copies;
  for (const Part& part : parts) {
    for (const DatasetFileEntry& e : part.manifest.dataset.files) {
      copies.push_back({JoinRemotePath(part.dir, e.name), JoinRemotePath(options.out_dir, e.name), &e,
                        JoinRemotePath(part.dir, kPartManifestName)});
    }
  }
  // Every source checked before any is copied; one an interrupted merge
  // copied already is kept.
  std::vector<char> placed(copies.size(), 0);
  PCR_RETURN_IF_ERROR(ParallelFor(copies.size(), options.upload.concurrency, [&](size_t i) -> Status {
    const Copy& c = copies[i];
    PCR_ASSIGN_OR_RETURN(const auto there, StoredIndexChecksum(c.to, c.entry->size, *engine));
    if (there == c.entry->index_checksum) {
      placed[i] = 1;
      return Status::OK();
    }
    PCR_ASSIGN_OR_RETURN(const auto source, StoredIndexChecksum(c.from, c.entry->size, *engine));
    if (source != c.entry->index_checksum) {
      return Status::Corruption(c.from + ": size or index checksum differs from " + c.manifest);
    }
    return Status::OK();
  }));
  PCR_RETURN_IF_ERROR(ParallelFor(copies.size(), options.upload.concurrency, [&](size_t i) -> Status {
    const Copy& c = copies[i];
    if (placed[i]) return Status::OK();
    PCR_RETURN_IF_ERROR(uploader->Copy(c.from, c.to, c.entry->size).status());
    PCR_ASSIGN_OR_RETURN(const auto copied, StoredIndexChecksum(c.to, c.entry->size, *engine));
    if (copied != c.entry->index_checksum) {
      return Status::IOError(c.to + ": the store's copy of " + c.from + " does not have the size and index checksum " +
                             c.manifest + " gives");
    }
    return Status::OK();
  }));
  std::string skip_list;
  for (const Part& part : parts) {
    const std::string path = JoinRemotePath(part.dir, kSkippedListName);
    Result<Bytes> text = ReadWholeObject(path, *client);
    if (!text.ok() && text.status().code() == StatusCode::kNotFound) continue;
    PCR_RETURN_IF_ERROR(text.status());
    skip_list.append(text->begin(), text->end());
  }
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) return Status::IOError(out + ": cannot create directory: " + ec.message());
  return WriteMerged(out, parts, skip_list);
}

}  // namespace

Result<MergeSummary> MergeParts(const MergeOptions& options) {
  const size_t remote_parts = std::count_if(options.part_dirs.begin(), options.part_dirs.end(),
                                            [](const std::string& dir) { return IsObjectStoreOutput(dir); });
  if (remote_parts > 0 && (remote_parts < options.part_dirs.size() || !IsObjectStoreOutput(options.out_dir))) {
    return Status::InvalidArgument(
        "parts in object storage merge into an s3:// output in their store, which copies their files: give every "
        "part as s3:// and an s3:// output, or download the parts and merge them locally");
  }
  if (IsObjectStoreOutput(options.out_dir)) {
    return MergeToObjectStore(options, [&](const std::string& out) {
      return remote_parts > 0 ? MergeInStore(options, out) : MergeInto(out, options.part_dirs, true);
    });
  }
  return MergeInto(options.out_dir, options.part_dirs, false);
}

Result<MergeSummary> MergeParts(const std::string& out_dir, const std::vector<std::string>& part_dirs) {
  return MergeParts(MergeOptions{.out_dir = out_dir, .part_dirs = part_dirs});
}

}  // namespace pcr
