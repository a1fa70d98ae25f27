#include "pcr/convert.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>

#include "format/checksum.h"
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

// One part of a sharded conversion: where it is, its manifest and the
// manifest's stamp (kPiecesVersionMinor: cut by record, so its first and
// last files may be pieces).
struct Part {
  std::string dir;
  PartManifest manifest;
  uint8_t version_minor = 0;
};

// The part manifest of PART_DIR, checked like any pcr file.
Result<Part> ReadPartManifest(const fs::path& part_dir) {
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
  return Part{part_dir.string(), file->part(), file->header().version_minor};
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

// The parts `part_dirs` (each read by `read`) in shard order: one
// conversion's, every shard exactly once.
Result<std::vector<Part>> OrderParts(const std::vector<std::string>& part_dirs,
                                     const std::function<Result<Part>(const std::string&)>& read) {
  if (part_dirs.empty()) return Status::InvalidArgument("merge needs at least one part directory");
  std::vector<std::optional<Part>> shards;
  const Part* first = nullptr;  // the first part given
  for (const std::string& dir : part_dirs) {
    PCR_ASSIGN_OR_RETURN(Part read_part, read(dir));
    const PartManifest& p = read_part.manifest;
    if (first != nullptr &&
        (read_part.version_minor >= kPiecesVersionMinor) != (first->version_minor >= kPiecesVersionMinor)) {
      return Status::InvalidArgument(dir + ": a part stamped 0." + std::to_string(read_part.version_minor) + ", and " +
                                     part_dirs.front() + " one stamped 0." +
                                     std::to_string(first->version_minor) +
                                     ": parts cut by file (before 0.8) and by record do not merge; convert every "
                                     "shard with one version of pcr");
    }
    if (shards.empty()) {
      shards.resize(p.shard_count);
    } else if (p.shard_count != shards.size() || p.plan_checksum != first->manifest.plan_checksum ||
               !(p.dataset.script == first->manifest.dataset.script) ||
               p.dataset.class_names != first->manifest.dataset.class_names) {
      return Status::InvalidArgument(dir + ": shard " + std::to_string(p.shard_index) + " of " +
                                     std::to_string(p.shard_count) + " is from another conversion than " +
                                     part_dirs.front() + " (different input, options or shard count)");
    }
    std::optional<Part>& slot = shards[p.shard_index];
    if (slot) {
      return Status::InvalidArgument(dir + ": shard " + std::to_string(p.shard_index) + " is also " + slot->dir);
    }
    slot = std::move(read_part);
    if (first == nullptr) first = &*slot;
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

// A file of the merged dataset: one part's file, or the pieces of one file
// that parts cut by record wrote, in shard order.
struct MergedFile {
  std::vector<std::string> paths;                // of the pieces
  std::vector<const DatasetFileEntry*> pieces;   // their entries in the parts
  std::string manifest;                          // the part.pcrd listing the first piece
  DatasetFileEntry entry;                        // the merged file's
};

// The files of `parts` in shard order; `join(dir, name)` is the path of a
// part's file. Entries of one name in consecutive parts are pieces of one
// file.
Result<std::vector<MergedFile>> MergedFiles(const std::vector<Part>& parts,
                                           const std::function<std::string(const std::string&, const std::string&)>& join) {
  std::vector<MergedFile> files;
  std::set<std::string> names;
  for (const Part& part : parts) {
    for (const DatasetFileEntry& e : part.manifest.dataset.files) {
      const std::string path = join(part.dir, e.name);
      const bool piece = !files.empty() && files.back().entry.name == e.name;
      if (piece && part.version_minor < kPiecesVersionMinor) {
        return Status::Corruption(path + ": also listed by " + files.back().manifest +
                                  "; parts cut by file never share a file");
      }
      if (!piece && !names.insert(e.name).second) {
        return Status::Corruption(path + ": " + e.name + " is also listed by an earlier part, not the one before");
      }
      if (!piece) files.push_back({.manifest = join(part.dir, kPartManifestName), .entry = e});
      files.back().paths.push_back(path);
      files.back().pieces.push_back(&e);
    }
  }
  return files;
}

// The image file joining the pieces of one file (each opened with every
// check of section 2.1): their stripes in order under one index, stamped as
// the writer of the whole file stamps it.
struct JoinedFile {
  uint8_t version_minor = 1;
  FileIndex index;  // stripe offsets in the joined file
  Bytes index_bytes;
  DatasetFileEntry entry;
};

Result<JoinedFile> PlanJoin(const std::string& name, const std::vector<std::unique_ptr<PcrFile>>& pieces) {
  JoinedFile j;
  const FileIndex& first = pieces[0]->index();
  j.index.script = first.script;
  j.index.schema.features = first.schema.features;
  for (FeatureInfo& f : j.index.schema.features) f.present_count = f.value_count = 0;
  bool segments = false, encoded = false;
  uint64_t offset = kFileHeaderSize;
  for (const auto& piece : pieces) {
    const FileIndex& index = piece->index();
    const bool same_fields = std::equal(
        index.schema.features.begin(), index.schema.features.end(), first.schema.features.begin(),
        first.schema.features.end(), [](const FeatureInfo& a, const FeatureInfo& b) {
          return a.name == b.name && a.type == b.type && a.has_id == b.has_id && a.id == b.id;
        });
    if (piece->header().kind != FileKind::kImages || !(index.script == first.script) || !same_fields) {
      return Status::Corruption(piece->path() + ": a piece of " + name +
                                " whose kind, scan script or fields differ from those of " + pieces[0]->path());
    }
    for (size_t f = 0; f < index.schema.features.size(); ++f) {
      j.index.schema.features[f].present_count += index.schema.features[f].present_count;
      j.index.schema.features[f].value_count += index.schema.features[f].value_count;
    }
    const int groups = index.script.group_count();
    for (const StripeInfo& s : index.stripes) {
      for (uint64_t i = 0; s.has_segments && i < s.image_count; ++i) segments |= s.chunk(groups + 1, i).length > 0;
      for (const TableStream& t : s.table_streams) encoded |= t.encoding != StreamEncoding::kPlain;
      j.index.stripes.push_back(s);
      j.index.stripes.back().offset = offset;
      offset += s.length();
      j.index.schema.row_count += s.image_count;
      j.entry.image_count += s.image_count;
    }
  }
  j.version_minor = ImageFileVersion(j.index.schema, segments, encoded);
  // Pieces without segments of their own have the 0.1 layout.
  const bool with_segments = j.version_minor >= kFieldsVersionMinor;
  for (StripeInfo& s : j.index.stripes) {
    if (s.has_segments == with_segments) continue;
    if (with_segments) {
      s.streams.push_back({0, Checksum64(ByteSpan())});
      s.chunks.resize(s.chunks.size() + s.image_count, {0, Checksum32(ByteSpan())});
    } else {
      s.streams.pop_back();
      s.chunks.resize(s.chunks.size() - s.image_count);
    }
    s.has_segments = with_segments;
  }
  j.index.EncodeTo(FileKind::kImages, j.version_minor, &j.index_bytes);
  j.entry.name = name;
  j.entry.size = offset + j.index_bytes.size() + kFooterSize;
  j.entry.stripe_count = j.index.stripes.size();
  j.entry.index_checksum = Checksum64(j.index_bytes);
  return j;
}

// Writes `joined` at the local path `to`, copying the pieces' stripes a
// window at a time, each stream checked against its piece's index first.
Status WriteJoined(const std::string& to, const JoinedFile& joined, const std::vector<std::unique_ptr<PcrFile>>& pieces,
                   IoEngine& engine) {
  constexpr uint64_t kWindow = uint64_t{64} << 20;
  PCR_ASSIGN_OR_RETURN(auto file, AtomicFile::Create(to));
  Bytes bytes;
  FileHeader{.kind = FileKind::kImages, .version_minor = joined.version_minor}.EncodeTo(&bytes);
  PCR_RETURN_IF_ERROR(file->Append(bytes));
  for (const auto& piece : pieces) {
    const std::vector<StripeInfo>& stripes = piece->index().stripes;
    for (size_t s = 0, e; s < stripes.size(); s = e) {
      uint64_t length = stripes[s].length();
      for (e = s + 1; e < stripes.size() && length + stripes[e].length() <= kWindow; ++e) length += stripes[e].length();
      bytes.resize(length);
      ReadRequest read{.file = &piece->file(), .offset = stripes[s].offset, .length = length, .out = bytes.data()};
      PCR_RETURN_IF_ERROR(engine.Read(std::span(&read, 1)));
      for (size_t k = s; k < e; ++k) {
        for (size_t t = 0; t < stripes[k].streams.size(); ++t) {
          const uint64_t at = stripes[k].stream_offset(t) - stripes[s].offset;
          PCR_RETURN_IF_ERROR(piece->CheckStream(k, t, ByteSpan(bytes.data() + at, stripes[k].streams[t].length)));
        }
      }
      PCR_RETURN_IF_ERROR(file->Append(bytes));
    }
  }
  PCR_RETURN_IF_ERROR(file->Append(EncodeIndexAndFooter(joined.index_bytes, file->size())));
  return file->Commit();
}

// Joins the pieces of `merged` into the local `to`, and sets its entry. A
// file already at `to` with the joined size and index checksum (left by an
// interrupted merge) is kept.
Status Join(MergedFile& merged, const std::string& to, IoEngine& engine) {
  std::vector<std::unique_ptr<PcrFile>> pieces;
  for (size_t i = 0; i < merged.paths.size(); ++i) {
    PCR_ASSIGN_OR_RETURN(auto piece, PcrFile::Open(merged.paths[i], &engine));
    if (piece->size() != merged.pieces[i]->size || piece->footer().index_checksum != merged.pieces[i]->index_checksum) {
      return Status::Corruption(merged.paths[i] + ": size or index checksum differs from its part.pcrd");
    }
    pieces.push_back(std::move(piece));
  }
  PCR_ASSIGN_OR_RETURN(const JoinedFile joined, PlanJoin(merged.entry.name, pieces));
  merged.entry = joined.entry;
  if (FooterIndexChecksum(to, joined.entry.size) == joined.entry.index_checksum) return Status::OK();
  std::error_code ec;
  fs::remove(to, ec);
  return WriteJoined(to, joined, pieces, engine);
}

// Writes the dataset manifest of `files` (in shard order, of `parts`) and,
// when not empty, the concatenated `skip_list` into the local `out_dir`;
// files not in `out_dir` are read in `files_dir` through `engine`.
Result<MergeSummary> WriteMerged(const fs::path& out, const std::vector<Part>& parts,
                                 const std::vector<MergedFile>& files, const std::string& skip_list,
                                 const std::string& files_dir = "", IoEngine* engine = nullptr) {
  std::error_code ec;
  if (fs::exists(out / kDatasetManifestName, ec)) {
    return Status::InvalidArgument(out.string() + " already holds a pcr dataset (" + kDatasetManifestName + ")");
  }
  DatasetManifest manifest;
  manifest.script = parts[0].manifest.dataset.script;
  manifest.class_names = parts[0].manifest.dataset.class_names;
  MergeSummary summary{.parts = parts.size()};
  for (const MergedFile& f : files) {
    summary.images += f.entry.image_count;
    summary.output_bytes += f.entry.size;
    manifest.files.push_back(f.entry);
  }
  summary.files = manifest.files.size();
  summary.skipped = static_cast<uint64_t>(std::count(skip_list.begin(), skip_list.end(), '\n'));
  if (summary.images == 0) return Status::InvalidArgument("the parts hold no images");
  if (!skip_list.empty()) PCR_RETURN_IF_ERROR(WriteTextFile(out / kSkippedListName, skip_list));
  PCR_RETURN_IF_ERROR(WriteDatasetManifest((out / kDatasetManifestName).string(), manifest, files_dir, engine));
  return summary;
}

// MergeParts of local parts into the local directory `out_dir`: a part's
// whole file is linked, symbolically or not; the pieces of a file are joined
// into a new one.
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
  PCR_ASSIGN_OR_RETURN(std::vector<MergedFile> files,
                       MergedFiles(parts, [](const std::string& dir, const std::string& name) {
                         return (fs::path(dir) / name).string();
                       }));
  for (const MergedFile& f : files) {
    for (size_t i = 0; i < f.paths.size(); ++i) {
      if (FooterIndexChecksum(f.paths[i], f.pieces[i]->size) != f.pieces[i]->index_checksum) {
        return Status::Corruption(f.paths[i] + ": size or index checksum differs from " +
                                  (fs::path(f.paths[i]).parent_path() / kPartManifestName).string());
      }
    }
  }
  const fs::path out(out_dir);
  fs::create_directories(out, ec);
  if (ec) return Status::IOError(out_dir + ": cannot create directory: " + ec.message());
  PCR_RETURN_IF_ERROR(CheckMergeOutput(out_dir));
  PCR_ASSIGN_OR_RETURN(auto engine, MakeIoEngine({.kind = IoEngineKind::kPread}));
  for (MergedFile& f : files) {
    if (f.paths.size() == 1) {
      PCR_RETURN_IF_ERROR(LinkFile(f.paths[0], out / f.entry.name, f.entry, symbolic));
    } else {
      PCR_RETURN_IF_ERROR(Join(f, (out / f.entry.name).string(), *engine));
    }
  }
  std::string skip_list;
  for (const Part& part : parts) {
    const fs::path skipped = fs::path(part.dir) / kSkippedListName;
    if (fs::exists(skipped, ec)) {
      PCR_ASSIGN_OR_RETURN(const Bytes text, ReadRegularFile(skipped.string()));
      skip_list.append(text.begin(), text.end());
    }
  }
  return WriteMerged(out, parts, files, skip_list);
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
// store) into options.out_dir: a part's whole file is copied by the store
// (S3Uploader::Copy), and checked before and after; the pieces of a file are
// read and joined into the local `out`, which also gets the dataset manifest
// and skip list, for the upload.
Result<MergeSummary> MergeInStore(const MergeOptions& options, const std::string& out) {
  const RemoteOptions remote = OutputRemote(options.remote, options.upload);
  PCR_ASSIGN_OR_RETURN(auto engine, MakeIoEngine({.kind = IoEngineKind::kPread, .remote = remote}));
  PCR_ASSIGN_OR_RETURN(auto client, HttpClient::Create(remote));
  PCR_ASSIGN_OR_RETURN(auto uploader, S3Uploader::Create(options.remote, options.upload));
  auto read = [&](const std::string& dir) -> Result<Part> {
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
    return Part{dir, (*file)->part(), (*file)->header().version_minor};
  };
  PCR_ASSIGN_OR_RETURN(const std::vector<Part> parts, OrderParts(options.part_dirs, read));
  PCR_ASSIGN_OR_RETURN(std::vector<MergedFile> files, MergedFiles(parts, JoinRemotePath));
  struct Copy {
    std::string from, to;
    const DatasetFileEntry* entry;
    std::string manifest;
  };
  std::vector<Copy> copies;
  for (const MergedFile& f : files) {
    if (f.paths.size() == 1) {
      copies.push_back({f.paths[0], JoinRemotePath(options.out_dir, f.entry.name), &f.entry, f.manifest});
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
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) return Status::IOError(out + ": cannot create directory: " + ec.message());
  for (MergedFile& f : files) {
    if (f.paths.size() > 1) PCR_RETURN_IF_ERROR(Join(f, (fs::path(out) / f.entry.name).string(), *engine));
  }
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
  // The copies are read in the store, the joined files here.
  return WriteMerged(out, parts, files, skip_list, options.out_dir, engine.get());
}

}  // namespace

Status CheckMergeOutput(const std::string& out_dir) {
  std::error_code ec;
  if (IsObjectStoreOutput(out_dir) || !fs::exists(fs::path(out_dir) / kDatasetManifestName, ec)) return Status::OK();
  return Status::InvalidArgument(out_dir + " already holds a pcr dataset (" + kDatasetManifestName + ")");
}

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
