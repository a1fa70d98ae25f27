#include "writer/image_converter.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <unistd.h>

#include "format/file_format.h"
#include "format/permutation.h"
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

Status ListImageFolder(const std::string& root, std::vector<std::string>* classes,
                       std::vector<Source>* out) {
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
      if (it->is_regular_file() && IsJpegName(it->path())) {
        keys.push_back(fs::relative(it->path(), root).generic_string());
        if (keys.back().size() > kMaxKeyLength) {
          return Status::InvalidArgument(it->path().string() + ": path longer than " +
                                         std::to_string(kMaxKeyLength) + " bytes");
        }
      }
    }
    if (ec) return Status::IOError(dir.string() + ": " + ec.message());
    std::sort(keys.begin(), keys.end());
    for (auto& k : keys) out->push_back({std::move(k), static_cast<int64_t>(label)});
  }
  return Status::OK();
}

Status ReadList(const std::string& list_file, std::vector<Source>* out) {
  std::ifstream in(list_file);
  if (!in) return Status::InvalidArgument(list_file + ": cannot open list file");
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
    out->push_back(std::move(s));
  }
  return Status::OK();
}

Result<Bytes> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IOError("cannot open");
  Bytes data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return Status::IOError("read failed");
  return data;
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
      Result<Bytes> data = ReadWholeFile((fs::path(root) / sources[i].key).string());
      if (!data.ok()) {
        c.image = data.status();
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

// Makes OUT_DIR ready: it must hold no dataset; the remains of an
// interrupted conversion (marked by kConversionMarkerName) are removed. Then
// marks OUT_DIR as being written.
Status PrepareOutDir(const std::string& out_dir) {
  std::error_code ec;
  const fs::path dir(out_dir);
  fs::create_directories(dir, ec);
  if (ec) return Status::IOError(out_dir + ": cannot create directory: " + ec.message());
  if (fs::exists(dir / kDatasetManifestName, ec)) {
    return Status::InvalidArgument(out_dir + " already holds a pcr dataset (" + kDatasetManifestName + ")");
  }
  const bool interrupted = fs::exists(dir / kConversionMarkerName, ec);
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (interrupted && IsConversionOutput(name)) {
      if (!fs::remove(entry.path(), ec)) return Status::IOError(entry.path().string() + ": cannot remove: " + ec.message());
    } else if (entry.path().extension() == kRecordFileExtension) {
      return Status::InvalidArgument(out_dir + " already holds a pcr dataset (" + name + ")");
    }
  }
  if (ec) return Status::IOError(out_dir + ": " + ec.message());
  std::ofstream marker(dir / kConversionMarkerName, std::ios::trunc);
  marker << "pcr-convert images is writing this directory; dataset.pcrd is written last\n";
  if (!marker.flush()) return Status::IOError(out_dir + ": cannot write " + kConversionMarkerName);
  return Status::OK();
}

// Removes the files of a failed conversion.
class OutputCleanup {
 public:
  explicit OutputCleanup(std::string dir) : dir_(std::move(dir)) {}
  ~OutputCleanup() {
    if (done_) return;
    std::error_code ec;
    for (const auto& f : written_) fs::remove(fs::path(dir_) / f, ec);
  }
  void Add(const std::string& name) { written_.push_back(name); }
  void Done() { done_ = true; }

 private:
  std::string dir_;
  std::vector<std::string> written_;
  bool done_ = false;
};

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
  PCR_ASSIGN_OR_RETURN(ScanScript script, LoadScanScript(options.scan_script));
  DatasetManifest manifest;
  manifest.script = script;
  std::vector<Source> sources;
  if (options.list_file.empty()) {
    PCR_RETURN_IF_ERROR(ListImageFolder(options.src_dir, &manifest.class_names, &sources));
  } else {
    PCR_RETURN_IF_ERROR(ReadList(options.list_file, &sources));
  }
  if (sources.empty()) {
    return Status::InvalidArgument(
        options.list_file.empty()
            ? options.src_dir + ": no JPEG images in class folders (expected SRC_DIR/<class>/<image>.jpg, or --list)"
            : options.list_file + ": lists no images");
  }
  if (options.shuffle_seed) {
    std::vector<Source> shuffled;
    for (uint64_t i : SeededPermutation(sources.size(), *options.shuffle_seed)) {
      shuffled.push_back(std::move(sources[i]));
    }
    sources = std::move(shuffled);
  }
  PCR_RETURN_IF_ERROR(PrepareOutDir(options.out_dir));

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
  ConvertImagesSummary summary;
  OutputCleanup cleanup(options.out_dir);
  cleanup.Add(kConversionMarkerName);
  std::unique_ptr<ImageFileWriter> writer;
  uint64_t records_in_file = 0;

  auto finish_file = [&]() -> Status {
    PCR_ASSIGN_OR_RETURN(DatasetFileEntry entry, writer->Finish());
    summary.output_bytes += entry.size;
    manifest.files.push_back(std::move(entry));
    writer.reset();
    return Status::OK();
  };

  std::vector<SampleMetadata> samples;
  std::vector<TranscodedImage> images;
  auto flush_record = [&]() -> Status {
    if (images.empty()) return Status::OK();
    if (!writer) {
      const std::string name = RecordFileName(summary.files++);
      cleanup.Add(name);
      PCR_ASSIGN_OR_RETURN(writer, ImageFileWriter::Create((fs::path(options.out_dir) / name).string(), script));
      records_in_file = 0;
    }
    PCR_RETURN_IF_ERROR(writer->AddRecord(samples, images));
    summary.records++;
    summary.images += images.size();
    samples.clear();
    images.clear();
    if (++records_in_file == options.records_per_file) PCR_RETURN_IF_ERROR(finish_file());
    return Status::OK();
  };

  // Records are cut by the count of converted images, so their boundaries do
  // not depend on the batch size (and so on `jobs`).
  const size_t batch = std::max<size_t>(options.images_per_record, 4 * static_cast<size_t>(jobs));
  for (size_t begin = 0; begin < sources.size(); begin += batch) {
    const size_t end = std::min(sources.size(), begin + batch);
    std::vector<Converted> done =
        TranscodeBatch(sources, begin, end, options.src_dir, script, topts, jobs);
    for (size_t i = 0; i < done.size(); ++i) {
      const Source& src = sources[begin + i];
      if (!done[i].image.ok()) {
        const std::string path = (fs::path(options.src_dir) / src.key).string();
        if (!options.skip_bad) return done[i].image.status().WithPrefix(path);
        summary.skipped.emplace_back(src.key, done[i].image.status().ToString());
        continue;
      }
      summary.input_bytes += done[i].input_bytes;
      samples.push_back({src.label, src.key});
      images.push_back(std::move(done[i].image).value());
      if (images.size() == options.images_per_record) PCR_RETURN_IF_ERROR(flush_record());
    }
    if (options.progress) options.progress(end, sources.size());
  }
  PCR_RETURN_IF_ERROR(flush_record());
  if (writer) PCR_RETURN_IF_ERROR(finish_file());
  if (summary.images == 0) return Status::InvalidArgument("no image could be converted");
  if (options.skip_bad && !summary.skipped.empty()) {
    const std::string path = (fs::path(options.out_dir) / kSkippedListName).string();
    cleanup.Add(kSkippedListName);
    PCR_ASSIGN_OR_RETURN(auto file, AtomicFile::Create(path));
    std::string text;
    for (const auto& [key, reason] : summary.skipped) text += key + "\t" + reason + "\n";
    PCR_RETURN_IF_ERROR(file->Append(ByteSpan(reinterpret_cast<const uint8_t*>(text.data()), text.size())));
    PCR_RETURN_IF_ERROR(file->Commit());
  }
  PCR_RETURN_IF_ERROR(
      WriteDatasetManifest((fs::path(options.out_dir) / kDatasetManifestName).string(), manifest));
  cleanup.Done();
  std::error_code ec;
  fs::remove(fs::path(options.out_dir) / kConversionMarkerName, ec);
  return summary;
}

}  // namespace pcr
