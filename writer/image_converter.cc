#include "writer/image_converter.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <set>

#include "format/checksum.h"
#include "format/coding.h"
#include "format/file_format.h"
#include "format/permutation.h"
#include "io/io_engine.h"
#include "writer/file_writer.h"
#include "writer/transcode.h"

namespace pcr {

namespace fs = std::filesystem;

namespace {

struct Source {
  std::string key;  // path relative to src_dir
  int64_t label = -1;
};

bool IsJpegName(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".jpe" || ext == ".jfif";
}

bool IsHidden(const fs::path& p) { return p.filename().string().starts_with("."); }

// True when the regular file at `path` starts with the JPEG signature FF D8 FF.
bool HasJpegSignature(const std::string& path) {
  const Result<int> fd = OpenRegularFile(path);
  if (!fd.ok()) return false;
  uint8_t head[3];
  const bool jpeg = pread(*fd, head, sizeof(head), 0) == 3 && head[0] == 0xFF && head[1] == 0xD8 && head[2] == 0xFF;
  close(*fd);
  return jpeg;
}

// Files of class folders that are not taken as images.
struct Ignored {
  static constexpr size_t kExamples = 5;
  uint64_t count = 0;
  std::vector<std::string> examples;  // the smallest keys, sorted

  void Add(std::string key) {
    ++count;
    examples.insert(std::upper_bound(examples.begin(), examples.end(), key), std::move(key));
    if (examples.size() > kExamples) examples.pop_back();
  }
};

Status ListImageFolder(const std::string& root, bool by_content, std::vector<std::string>* classes,
                       std::vector<Source>* out, Ignored* ignored) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return Status::InvalidArgument(root + ": not a directory");
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (entry.is_directory() && !IsHidden(entry.path())) {
      classes->push_back(entry.path().filename().string());
    }
  }
  if (ec) return Status::IOError(root + ": " + ec.message());
  std::sort(classes->begin(), classes->end());
  for (size_t label = 0; label < classes->size(); ++label) {
    std::vector<std::string> keys;
    const fs::path dir = fs::path(root) / (*classes)[label];
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it); it.increment(ec)) {
      if (IsHidden(it->path())) {
        if (it->is_directory()) it.disable_recursion_pending();
        continue;
      }
      if (!it->is_regular_file()) continue;
      std::string key = fs::relative(it->path(), root).generic_string();
      if (!(by_content ? HasJpegSignature(it->path().string()) : IsJpegName(it->path()))) {
        ignored->Add(std::move(key));
        continue;
      }
      if (key.size() > kMaxKeyLength) {
        return Status::InvalidArgument(it->path().string() + ": path longer than " +
                                       std::to_string(kMaxKeyLength) + " bytes");
      }
      keys.push_back(std::move(key));
    }
    if (ec) return Status::IOError(dir.string() + ": " + ec.message());
    std::sort(keys.begin(), keys.end());
    for (auto& k : keys) out->push_back({std::move(k), static_cast<int64_t>(label)});
  }
  return Status::OK();
}

// A key is a relative, normalised path: no leading '/', no empty, "." or
// ".." parts, so that it names a file below SRC_DIR and below any directory
// an image is extracted into.
bool IsNormalKey(const std::string& key) {
  if (key.empty() || key.front() == '/' || key.back() == '/') return false;
  for (size_t start = 0; start <= key.size();) {
    const size_t slash = std::min(key.find('/', start), key.size());
    const std::string_view part(key.data() + start, slash - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = slash + 1;
  }
  return true;
}

Status ReadList(const std::string& list_file, std::vector<Source>* out) {
  std::ifstream in(list_file);
  if (!in) return Status::InvalidArgument(list_file + ": cannot open list file: " + std::strerror(errno));
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const size_t comma = line.rfind(',');
    auto bad = [&](const std::string& what) {
      return Status::InvalidArgument(list_file + " line " + std::to_string(line_no) + ": " + what);
    };
    if (comma == std::string::npos || comma == 0) return bad("expected 'path,label'");
    Source s{line.substr(0, comma), 0};
    try {
      size_t used = 0;
      s.label = std::stoll(line.substr(comma + 1), &used);
      if (used != line.size() - comma - 1) return bad("label is not an integer");
    } catch (const std::exception&) {
      return bad("label is not an integer");
    }
    if (s.key.size() > kMaxKeyLength) return bad("path longer than " + std::to_string(kMaxKeyLength));
    if (!IsNormalKey(s.key)) {
      return bad("path '" + s.key + "' is not a relative path below SRC_DIR in normal form (no leading '/', "
                 "no empty, '.' or '..' parts)");
    }
    out->push_back(std::move(s));
  }
  return Status::OK();
}

struct Converted {
  Result<TranscodedImage> image = Status::OK();
  uint64_t input_bytes = 0;
};

// Transcodes sources[begin, end) on `jobs` threads; result i is sources[begin + i].
std::vector<Converted> TranscodeBatch(const std::vector<Source>& sources, size_t begin, size_t end,
                                      const std::string& root, const ScanScript& script,
                                      const TranscodeOptions& topts, int jobs) {
  std::vector<Converted> out(end - begin);
  std::atomic<size_t> next{begin};
  auto work = [&] {
    for (size_t i = next++; i < end; i = next++) {
      Converted& c = out[i - begin];
      const std::string path = (fs::path(root) / sources[i].key).string();
      Result<Bytes> data = ReadRegularFile(path);
      if (!data.ok()) {
        // The reason alone: the caller names the file.
        const Status failed = data.status();
        const std::string& m = failed.message();
        c.image = failed.WithMessage(m.starts_with(path + ": ") ? m.substr(path.size() + 2) : m);
        continue;
      }
      c.input_bytes = data->size();
      c.image = TranscodeToScanGroups(*data, script, topts);
    }
  };
  std::vector<std::thread> threads;
  const int n = std::max(1, std::min<int>(jobs, static_cast<int>(end - begin)));
  for (int t = 1; t < n; ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  return out;
}

std::string RecordFileName(uint64_t n) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "records-%05llu%s", static_cast<unsigned long long>(n),
                kRecordFileExtension);
  return buf;
}

// True for the names ConvertImages writes: records-NNNNN.pcr and the skip list.
bool IsConversionOutput(const std::string& name) {
  if (name == kSkippedListName) return true;
  const std::string_view ext = kRecordFileExtension;
  if (!name.starts_with("records-") || !name.ends_with(ext)) return false;
  const std::string digits = name.substr(8, name.size() - 8 - ext.size());
  return digits.size() >= 5 && digits.find_first_not_of("0123456789") == std::string::npos;
}

// The conversion's identity: the source list and the options that decide
// the output bytes. Limits (--max-pixels, --memory-mb) and --skip-bad only
// decide which images are refused, so a conversion that failed on a bad
// image can be resumed with --skip-bad.
uint64_t PlanChecksum(const ConvertImagesOptions& options, const ScanScript& script,
                      const std::vector<std::string>& class_names, const std::vector<Source>& sources) {
  Bytes plan;
  PutLengthPrefixed(&plan, "pcr-convert images plan 1");
  PutVarint64(&plan, options.images_per_record);
  PutVarint64(&plan, options.records_per_file);
  PutVarint64(&plan, options.strip_metadata ? 1 : 0);
  EncodeScanScript(script, &plan);
  PutVarint64(&plan, class_names.size());
  for (const std::string& c : class_names) PutLengthPrefixed(&plan, c);
  PutVarint64(&plan, sources.size());
  for (const Source& s : sources) {
    PutLengthPrefixed(&plan, s.key);
    PutVarint64(&plan, static_cast<uint64_t>(s.label));
  }
  return Checksum64(plan);
}

// Writes `text` as the file `path`, atomically.
Status WriteTextFile(const fs::path& path, const std::string& text) {
  PCR_ASSIGN_OR_RETURN(auto file, AtomicFile::Create(path.string(), Replace::kYes));
  PCR_RETURN_IF_ERROR(file->Append(ByteSpan(reinterpret_cast<const uint8_t*>(text.data()), text.size())));
  return file->Commit();
}

// A file finished by this or an earlier run, as the journal lists it.
struct FinishedFile {
  uint64_t file = 0;          // its number: records-<file>.pcr
  DatasetFileEntry entry;     // size 0: every image was skipped, no file
  uint64_t input_bytes = 0;
  std::vector<std::pair<uint64_t, std::string>> skipped;  // (source index, reason)
};

// The journal (kConversionMarkerName): a first line naming the conversion,
// a second naming what decides which images are skipped, then per finished
// file its skipped sources and a "done" line, appended and synced after the
// file is committed. Only whole lines count.
class Journal {
 public:
  static std::string FirstLine(uint64_t plan, uint64_t shard, uint64_t shards) {
    char buf[96];
    std::snprintf(buf, sizeof(buf), "pcr-convert journal 1 plan %016llx shard %llu of %llu",
                  static_cast<unsigned long long>(plan), static_cast<unsigned long long>(shard),
                  static_cast<unsigned long long>(shards));
    return buf;
  }

  static std::string LimitsLine(bool skip_bad, uint64_t max_pixels, uint64_t memory_per_job) {
    return "limits skip-bad " + std::to_string(skip_bad ? 1 : 0) + " max-pixels " + std::to_string(max_pixels) +
           " memory " + std::to_string(memory_per_job);
  }

  // The finished files a journal whose first line is `first_line` lists,
  // numbered consecutively from `first_file`; nothing when the journal is
  // absent or belongs to another conversion. A file with skipped images
  // ends the list unless the journal's limits line is `limits_line`: other
  // limits might have converted those images.
  static std::vector<FinishedFile> Read(const fs::path& path, const std::string& first_line,
                                        const std::string& limits_line, uint64_t first_file, uint64_t source_count) {
    const Result<Bytes> bytes = ReadRegularFile(path.string());
    if (!bytes.ok()) return {};
    const std::string text(bytes->begin(), bytes->end());
    std::vector<FinishedFile> files;
    FinishedFile pending;
    size_t pos = 0;
    size_t line_no = 0;
    bool same_limits = false;
    for (size_t nl; (nl = text.find('\n', pos)) != std::string::npos; pos = nl + 1) {
      const std::string line = text.substr(pos, nl - pos);
      if (++line_no == 1) {
        if (line != first_line) return {};
        continue;
      }
      if (line_no == 2) {
        same_limits = line == limits_line;
        continue;
      }
      std::istringstream fields(line);
      std::string tag;
      fields >> tag;
      if (tag == "skip") {
        uint64_t source = 0;
        std::string reason;
        if (!(fields >> source) || source >= source_count) break;
        std::getline(fields >> std::ws, reason);
        pending.skipped.emplace_back(source, reason);
      } else if (tag == "done") {
        DatasetFileEntry& e = pending.entry;
        if (!(fields >> pending.file >> e.size >> e.image_count >> e.stripe_count >> std::hex >>
              e.index_checksum >> std::dec >> pending.input_bytes) ||
            pending.file != first_file + files.size() || (!pending.skipped.empty() && !same_limits)) {
          break;
        }
        if (e.size > 0) e.name = RecordFileName(pending.file);
        files.push_back(std::move(pending));
        pending = {};
      } else {
        break;
      }
    }
    return files;
  }

  // Starts a journal holding the two header lines and `kept`, replacing any journal.
  static Result<std::unique_ptr<Journal>> Create(const fs::path& path, const std::string& first_line,
                                                 const std::string& limits_line,
                                                 const std::vector<FinishedFile>& kept) {
    std::string text = first_line + "\n" + limits_line + "\n";
    for (const FinishedFile& f : kept) text += Lines(f);
    PCR_RETURN_IF_ERROR(WriteTextFile(path, text));
    const int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0) return Status::IOError(path.string() + ": cannot open: " + std::strerror(errno));
    return std::unique_ptr<Journal>(new Journal(path.string(), fd));
  }

  ~Journal() { close(fd_); }
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // Appends `f`'s lines and syncs them. REQUIRES: f's file is committed.
  Status Add(const FinishedFile& f) {
    const std::string text = Lines(f);
    if (write(fd_, text.data(), text.size()) != static_cast<ssize_t>(text.size()) || fdatasync(fd_) != 0) {
      return Status::IOError(path_ + ": cannot append: " + std::strerror(errno));
    }
    return Status::OK();
  }

 private:
  Journal(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}

  static std::string Lines(const FinishedFile& f) {
    std::string text;
    for (const auto& [source, reason] : f.skipped) text += "skip " + std::to_string(source) + " " + reason + "\n";
    char buf[160];
    std::snprintf(buf, sizeof(buf), "done %llu %llu %llu %llu %016llx %llu\n",
                  static_cast<unsigned long long>(f.file), static_cast<unsigned long long>(f.entry.size),
                  static_cast<unsigned long long>(f.entry.image_count),
                  static_cast<unsigned long long>(f.entry.stripe_count),
                  static_cast<unsigned long long>(f.entry.index_checksum),
                  static_cast<unsigned long long>(f.input_bytes));
    return text + buf;
  }

  std::string path_;
  int fd_;
};

// The index checksum in the footer of the file at `path`, if it has `size` bytes.
std::optional<uint64_t> FooterIndexChecksum(const fs::path& path, uint64_t size) {
  std::error_code ec;
  if (size < kMinFileSize || fs::file_size(path, ec) != size || ec) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  Bytes tail(kFooterSize);
  in.seekg(static_cast<std::streamoff>(size - kFooterSize));
  if (!in.read(reinterpret_cast<char*>(tail.data()), kFooterSize)) return std::nullopt;
  auto footer = Footer::DecodeFrom(tail, size);
  if (!footer.ok()) return std::nullopt;
  return footer->index_checksum;
}

// Makes OUT_DIR ready and returns the finished files to keep: those a
// journal of the same conversion lists that are still whole on disk. Every
// other record file and skip list of a conversion is removed. A directory
// with a manifest, or with .pcr files and no journal, is refused.
// REQUIRES: `dir` exists.
Result<std::vector<FinishedFile>> PrepareOutDir(const fs::path& dir, const std::string& first_line,
                                                const std::string& limits_line, uint64_t first_file,
                                                uint64_t source_count) {
  std::error_code ec;
  for (const char* manifest : {kDatasetManifestName, kPartManifestName}) {
    if (fs::exists(dir / manifest, ec)) {
      return Status::InvalidArgument(dir.string() + " already holds a pcr dataset (" + manifest + ")");
    }
  }
  const bool interrupted = fs::exists(dir / kConversionMarkerName, ec);
  std::vector<FinishedFile> kept;
  if (interrupted) {
    kept = Journal::Read(dir / kConversionMarkerName, first_line, limits_line, first_file, source_count);
  }
  for (size_t i = 0; i < kept.size(); ++i) {
    const DatasetFileEntry& e = kept[i].entry;
    if (e.size > 0 && FooterIndexChecksum(dir / e.name, e.size) != e.index_checksum) {
      kept.resize(i);
      break;
    }
  }
  std::set<std::string> keep;
  for (const FinishedFile& f : kept) keep.insert(f.entry.name);
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (interrupted && IsConversionOutput(name)) {
      if (!keep.contains(name) && !fs::remove(entry.path(), ec)) {
        return Status::IOError(entry.path().string() + ": cannot remove: " + ec.message());
      }
    } else if (entry.path().extension() == kRecordFileExtension) {
      return Status::InvalidArgument(dir.string() + " already holds a pcr dataset (" + name + ")");
    }
  }
  if (ec) return Status::IOError(dir.string() + ": " + ec.message());
  return kept;
}

// The part manifest of PART_DIR, checked like any pcr file.
Result<PartManifest> ReadPartManifest(const fs::path& part_dir) {
  const fs::path path = part_dir / kPartManifestName;
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    if (fs::exists(part_dir / kDatasetManifestName, ec)) {
      return Status::InvalidArgument(part_dir.string() + ": a whole dataset, not a part of a sharded conversion");
    }
    return Status::InvalidArgument(part_dir.string() + ": no " + kPartManifestName +
                                   " (not a part, or its conversion did not finish: run it again to resume)");
  }
  const Result<Bytes> file = ReadRegularFile(path.string());
  if (!file.ok()) return file.status();
  auto index = DecodeIndexOnlyFile(*file, FileKind::kDatasetPart);
  if (!index.ok()) return index.status().WithPrefix(path.string());
  auto part = PartManifest::DecodeFrom(*index);
  if (!part.ok()) return part.status().WithPrefix(path.string());
  return part;
}

// Hard-links the part file `from`, described by `entry`, as `to`. A file
// already at `to` with the entry's size and index checksum (left by an
// interrupted merge) is kept.
Status LinkFile(const fs::path& from, const fs::path& to, const DatasetFileEntry& entry) {
  if (link(from.c_str(), to.c_str()) == 0) return Status::OK();
  const int err = errno;
  if (err == EEXIST && FooterIndexChecksum(to, entry.size) == entry.index_checksum) return Status::OK();
  if (err == EXDEV) {
    return Status::InvalidArgument(from.string() + " and " + to.parent_path().string() +
                                   " are on different filesystems; merge links record files instead of "
                                   "copying them, so OUT_DIR must be on the parts' filesystem");
  }
  return Status::IOError(to.string() + ": cannot link to " + from.string() + ": " + std::strerror(err));
}

}  // namespace

Result<ScanScript> LoadScanScript(const std::string& name_or_file) {
  const auto names = BuiltinScanScriptNames();
  if (std::find(names.begin(), names.end(), name_or_file) != names.end()) {
    return BuiltinScanScript(name_or_file);
  }
  std::ifstream in(name_or_file);
  if (!in) {
    return Status::InvalidArgument("--scan-script " + name_or_file +
                                   ": neither a built-in name (spectral5, spectral, libjpeg) nor a readable file");
  }
  std::stringstream text;
  text << in.rdbuf();
  return ParseScanScript(text.str(), fs::path(name_or_file).filename().string());
}

Result<ConvertImagesSummary> ConvertImages(const ConvertImagesOptions& options) {
  if (options.images_per_record == 0 || options.records_per_file == 0) {
    return Status::InvalidArgument("--images-per-record and --records-per-file must be positive");
  }
  if (options.num_shards == 0 || options.shard_index >= options.num_shards) {
    return Status::InvalidArgument("--shard must be below --num-shards");
  }
  PCR_ASSIGN_OR_RETURN(ScanScript script, LoadScanScript(options.scan_script));
  DatasetManifest manifest;
  manifest.script = script;
  std::vector<Source> sources;
  Ignored ignored;
  if (options.list_file.empty()) {
    PCR_RETURN_IF_ERROR(ListImageFolder(options.src_dir, options.by_content, &manifest.class_names, &sources,
                                        &ignored));
  } else {
    PCR_RETURN_IF_ERROR(ReadList(options.list_file, &sources));
  }
  if (sources.empty()) {
    std::string others;
    if (ignored.count > 0) {
      others = "; ignored " + std::to_string(ignored.count) + " other files, e.g. " + ignored.examples[0] +
               (options.by_content ? "" : " (--by-content takes files by their JPEG signature)");
    }
    return Status::InvalidArgument(
        options.list_file.empty()
            ? options.src_dir + ": no JPEG images in class folders (expected SRC_DIR/<class>/<image>.jpg, or --list)" +
                  others
            : options.list_file + ": lists no images");
  }
  if (options.shuffle_seed) {
    std::vector<Source> shuffled;
    for (uint64_t i : SeededPermutation(sources.size(), *options.shuffle_seed)) {
      shuffled.push_back(std::move(sources[i]));
    }
    sources = std::move(shuffled);
  }

  // Source i goes to record i / images_per_record, file i / per_file.
  const uint64_t count = sources.size();
  uint64_t per_file = 0;
  if (__builtin_mul_overflow(options.images_per_record, options.records_per_file, &per_file)) per_file = count;
  per_file = std::min(per_file, count);
  const uint64_t file_count = (count + per_file - 1) / per_file;
  const uint64_t first_file = file_count * options.shard_index / options.num_shards;
  const uint64_t end_file = file_count * (options.shard_index + 1) / options.num_shards;
  const bool part = options.num_shards > 1;

  const int jobs = options.jobs > 0 ? options.jobs
                                    : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  uint64_t memory = options.memory_bytes;
  if (memory == 0) {
    const uint64_t ram = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    memory = std::min<uint64_t>(static_cast<uint64_t>(jobs) << 30, std::max<uint64_t>(ram / 2, uint64_t{1} << 30));
  }
  const TranscodeOptions topts{.keep_metadata = !options.strip_metadata,
                               .max_memory_bytes = static_cast<size_t>(memory / static_cast<uint64_t>(jobs)),
                               .max_pixels = options.max_pixels};

  const fs::path out_dir(options.out_dir);
  const uint64_t plan = PlanChecksum(options, script, manifest.class_names, sources);
  const std::string first_line = Journal::FirstLine(plan, options.shard_index, options.num_shards);
  const std::string limits_line = Journal::LimitsLine(options.skip_bad, options.max_pixels, topts.max_memory_bytes);
  PCR_ASSIGN_OR_RETURN(DirectoryLock lock, DirectoryLock::Take(out_dir.string()));
  PCR_ASSIGN_OR_RETURN(std::vector<FinishedFile> finished,
                       PrepareOutDir(out_dir, first_line, limits_line, first_file, count));
  PCR_ASSIGN_OR_RETURN(auto journal,
                       Journal::Create(out_dir / kConversionMarkerName, first_line, limits_line, finished));

  ConvertImagesSummary summary;
  summary.resumed_files = finished.size();
  summary.ignored_files = ignored.count;
  summary.ignored_examples = ignored.examples;

  FinishedFile current{.file = first_file + finished.size()};
  std::unique_ptr<ImageFileWriter> writer;
  uint64_t record = 0;
  std::vector<SampleMetadata> samples;
  std::vector<TranscodedImage> images;
  auto flush_record = [&]() -> Status {
    if (images.empty()) return Status::OK();
    if (!writer) {
      const std::string path = (out_dir / RecordFileName(current.file)).string();
      PCR_ASSIGN_OR_RETURN(writer, ImageFileWriter::Create(path, script));
    }
    PCR_RETURN_IF_ERROR(writer->AddRecord(samples, images));
    samples.clear();
    images.clear();
    return Status::OK();
  };
  // Commits the current file, journals it and starts the next.
  auto finish_file = [&]() -> Status {
    PCR_RETURN_IF_ERROR(flush_record());
    if (writer) {
      PCR_ASSIGN_OR_RETURN(current.entry, writer->Finish());
      writer.reset();
    }
    Status journaled = journal->Add(current);
    if (!journaled.ok()) {
      std::error_code ec;
      if (current.entry.size > 0) fs::remove(out_dir / current.entry.name, ec);  // unlisted: never kept
      return journaled;
    }
    finished.push_back(std::move(current));
    current = {.file = finished.back().file + 1};
    return Status::OK();
  };

  const uint64_t shard_begin = first_file * per_file;
  const uint64_t shard_end = std::min(count, end_file * per_file);
  ConvertProgress progress{.images_total = shard_end - shard_begin};
  const uint64_t begin = std::min(shard_end, current.file * per_file);
  progress.images_done = progress.images_resumed = begin - shard_begin;
  // Batches are independent of the files, so small records still keep every job busy.
  const size_t batch = std::max<size_t>(options.images_per_record, 4 * static_cast<size_t>(jobs));
  Status failed;
  for (uint64_t b = begin; b < shard_end && failed.ok(); b += batch) {
    const uint64_t e = std::min<uint64_t>(shard_end, b + batch);
    std::vector<Converted> done = TranscodeBatch(sources, b, e, options.src_dir, script, topts, jobs);
    for (uint64_t i = b; i < e && failed.ok(); ++i) {
      Converted& c = done[i - b];
      while (current.file < i / per_file && failed.ok()) failed = finish_file();
      if (i / options.images_per_record != record) {
        if (failed.ok()) failed = flush_record();
        record = i / options.images_per_record;
      }
      if (!failed.ok()) break;
      if (!c.image.ok()) {
        if (!options.skip_bad) {
          failed = c.image.status().WithPrefix((fs::path(options.src_dir) / sources[i].key).string());
        } else {
          std::string reason = c.image.status().ToString();
          std::replace(reason.begin(), reason.end(), '\n', ' ');  // one line in the journal and skip list
          current.skipped.emplace_back(i, std::move(reason));
        }
        continue;
      }
      current.input_bytes += c.input_bytes;
      progress.bytes_read += c.input_bytes;
      samples.push_back({sources[i].label, sources[i].key});
      images.push_back(std::move(c.image).value());
    }
    progress.images_done += e - b;
    if (options.progress && failed.ok()) options.progress(progress);
  }
  while (failed.ok() && current.file < end_file) failed = finish_file();
  writer.reset();
  if (!failed.ok()) {
    journal.reset();
    std::error_code ec;
    if (finished.empty()) fs::remove(out_dir / kConversionMarkerName, ec);
    return failed;
  }

  std::string skip_list;
  for (const FinishedFile& f : finished) {
    summary.input_bytes += f.input_bytes;
    for (const auto& [source, reason] : f.skipped) {
      summary.skipped.emplace_back(sources[source].key, reason);
      skip_list += sources[source].key + "\t" + reason + "\n";
    }
    if (f.entry.size == 0) continue;
    summary.files++;
    summary.records += f.entry.stripe_count;
    summary.images += f.entry.image_count;
    summary.output_bytes += f.entry.size;
    manifest.files.push_back(f.entry);
  }
  if (summary.images == 0 && !part) {
    journal.reset();
    std::error_code ec;
    fs::remove(out_dir / kConversionMarkerName, ec);  // nothing worth resuming
    return Status::InvalidArgument("no image could be converted");
  }
  if (!skip_list.empty()) PCR_RETURN_IF_ERROR(WriteTextFile(out_dir / kSkippedListName, skip_list));
  if (part) {
    PCR_RETURN_IF_ERROR(WritePartManifest(
        (out_dir / kPartManifestName).string(),
        {.shard_index = options.shard_index, .shard_count = options.num_shards, .plan_checksum = plan,
         .dataset = std::move(manifest)}));
  } else {
    PCR_RETURN_IF_ERROR(WriteDatasetManifest((out_dir / kDatasetManifestName).string(), manifest));
  }
  journal.reset();
  std::error_code ec;
  fs::remove(out_dir / kConversionMarkerName, ec);
  return summary;
}

Result<MergeSummary> MergeParts(const std::string& out_dir, const std::vector<std::string>& part_dirs) {
  if (part_dirs.empty()) return Status::InvalidArgument("merge needs at least one part directory");
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
      PCR_RETURN_IF_ERROR(LinkFile(shard_dirs[i] / e.name, out / e.name, e));
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

}  // namespace pcr
