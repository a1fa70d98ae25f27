#include "pcr/convert.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>

#include "format/journal.h"
#include "io/io_engine.h"
#include "io/location.h"
#include "io/pcr_file.h"
#include "writer/atomic_file.h"
#include "writer/file_writer.h"
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

// MergeParts into the local directory `out_dir`, linking the record files
// symbolically or not.
Result<MergeSummary> MergeInto(const std::string& out_dir, const std::vector<std::string>& part_dirs, bool symbolic) {
  if (part_dirs.empty()) return Status::InvalidArgument("merge needs at least one part directory");
  PCR_RETURN_IF_ERROR(CheckLocalOutput(out_dir));
  std::vector<std::optional<PartManifest>> shards;
  std::vector<fs::path> shard_dirs;
  uint64_t first = 0;  // shard index of the first part given
  std::error_code ec;
  for (const std::string& dir : part_dirs) {
    if (fs::equivalent(dir, out_dir, ec)) {
      return Status::InvalidArgument(out_dir + ": is also given as a part; merge into another directory");
    }
    PCR_ASSIGN_OR_RETURN(PartManifest p, ReadPartManifest(dir));
    if (shards.empty()) {
      shards.resize(p.shard_count);
      shard_dirs.resize(p.shard_count);
      first = p.shard_index;
    } else if (p.shard_count != shards.size() || p.plan_checksum != shards[first]->plan_checksum ||
               !(p.dataset.script == shards[first]->dataset.script) ||
               p.dataset.class_names != shards[first]->dataset.class_names) {
      return Status::InvalidArgument(dir + ": shard " + std::to_string(p.shard_index) + " of " +
                                     std::to_string(p.shard_count) + " is from another conversion than " +
                                     part_dirs.front() + " (different input, options or shard count)");
    }
    if (shards[p.shard_index]) {
      return Status::InvalidArgument(dir + ": shard " + std::to_string(p.shard_index) + " is also " +
                                     shard_dirs[p.shard_index].string());
    }
    shard_dirs[p.shard_index] = dir;
    shards[p.shard_index] = std::move(p);
  }
  std::string missing;
  for (size_t i = 0; i < shards.size(); ++i) {
    if (!shards[i]) missing += (missing.empty() ? "" : ", ") + std::to_string(i);
  }
  if (!missing.empty()) {
    return Status::InvalidArgument("missing shards " + missing + " of " + std::to_string(shards.size()) +
                                   " (every part of the conversion must be given)");
  }

  for (size_t i = 0; i < shards.size(); ++i) {
    for (const DatasetFileEntry& e : shards[i]->dataset.files) {
      const fs::path from = shard_dirs[i] / e.name;
      if (FooterIndexChecksum(from, e.size) != e.index_checksum) {
        return Status::Corruption(from.string() + ": size or index checksum differs from " +
                                  (shard_dirs[i] / kPartManifestName).string());
      }
    }
  }

  const fs::path out(out_dir);
  fs::create_directories(out, ec);
  if (ec) return Status::IOError(out_dir + ": cannot create directory: " + ec.message());
  if (fs::exists(out / kDatasetManifestName, ec)) {
    return Status::InvalidArgument(out_dir + " already holds a pcr dataset (" + kDatasetManifestName + ")");
  }
  DatasetManifest manifest;
  manifest.script = shards[0]->dataset.script;
  manifest.class_names = shards[0]->dataset.class_names;
  MergeSummary summary{.parts = shards.size()};
  std::string skip_list;
  for (size_t i = 0; i < shards.size(); ++i) {
    for (const DatasetFileEntry& e : shards[i]->dataset.files) {
      PCR_RETURN_IF_ERROR(LinkFile(shard_dirs[i] / e.name, out / e.name, e, symbolic));
      summary.images += e.image_count;
      manifest.files.push_back(e);
    }
    if (fs::exists(shard_dirs[i] / kSkippedListName, ec)) {
      const fs::path path = shard_dirs[i] / kSkippedListName;
      const Result<Bytes> text = ReadRegularFile(path.string());
      if (!text.ok()) return text.status();
      skip_list.append(text->begin(), text->end());
      summary.skipped += static_cast<uint64_t>(std::count(text->begin(), text->end(), '\n'));
    }
  }
  summary.files = manifest.files.size();
  if (summary.images == 0) return Status::InvalidArgument("the parts hold no images");
  if (!skip_list.empty()) PCR_RETURN_IF_ERROR(WriteTextFile(out / kSkippedListName, skip_list));
  PCR_RETURN_IF_ERROR(WriteDatasetManifest((out / kDatasetManifestName).string(), manifest));
  return summary;
}

}  // namespace

Result<MergeSummary> MergeParts(const MergeOptions& options) {
  if (IsObjectStoreOutput(options.out_dir)) return MergeToObjectStore(options, MergeInto);
  return MergeInto(options.out_dir, options.part_dirs, false);
}

Result<MergeSummary> MergeParts(const std::string& out_dir, const std::vector<std::string>& part_dirs) {
  return MergeParts(MergeOptions{.out_dir = out_dir, .part_dirs = part_dirs});
}

}  // namespace pcr
