#include "writer/resume.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <algorithm>
#include <set>

#include "io/io_engine.h"
#include "io/pcr_file.h"
#include "writer/atomic_file.h"

namespace pcr {

namespace fs = std::filesystem;

Result<std::unique_ptr<JournalWriter>> JournalWriter::Create(const std::string& path, const JournalHeader& header,
                                                             const std::vector<FinishedFile>& kept) {
  std::string text = header.first + "\n" + header.limits + "\n" + JournalOptionsLine(header.options) + "\n";
  for (const FinishedFile& f : kept) text += EncodeJournalLines(f);
  PCR_RETURN_IF_ERROR(WriteTextFile(path, text));
  const int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) return Status::IOError(path + ": cannot open: " + std::strerror(errno));
  return std::unique_ptr<JournalWriter>(new JournalWriter(path, fd));
}

JournalWriter::~JournalWriter() { close(fd_); }

Status JournalWriter::Add(const FinishedFile& f) {
  const std::string text = EncodeJournalLines(f);
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = write(fd_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::IOError(path_ + ": cannot append: " + (n < 0 ? std::strerror(errno) : "short write"));
    done += static_cast<size_t>(n);
  }
  if (fdatasync(fd_) != 0) return Status::IOError(path_ + ": cannot sync: " + std::strerror(errno));
  return Status::OK();
}

std::optional<uint64_t> FooterIndexChecksum(const std::string& path, uint64_t size) {
  auto engine = MakeIoEngine({.kind = IoEngineKind::kPread});
  if (!engine.ok()) return std::nullopt;
  auto file = PcrFile::Open(path, engine->get());
  if (!file.ok() || (*file)->size() != size) return std::nullopt;
  return (*file)->footer().index_checksum;
}

namespace {

// Why the journal `text` belongs to another conversion than `header`'s: the
// first option that differs, or the sources.
// The option a journal's key (pcr-convert's spelling) stands for.
std::optional<Option> JournalOption(std::string_view key) {
  static constexpr std::pair<std::string_view, Option> kKeys[] = {
      {"images-per-record", Option::kImagesPerRecord}, {"records-per-file", Option::kRecordsPerFile},
      {"scan-script", Option::kScanScript},            {"strip-metadata", Option::kStripMetadata},
      {"shuffle", Option::kShuffle},                   {"list", Option::kList},
      {"by-content", Option::kByContent},              {"fields", Option::kFields},
      {"fields-key", Option::kFieldsKey},              {"field-order", Option::kFieldOrder},
      {"exif-orientation", Option::kExifOrientation},  {"shard", Option::kShard},
      {"num-shards", Option::kNumShards},              {"shards", Option::kShards},
  };
  for (const auto& [name, option] : kKeys) {
    if (name == key) return option;
  }
  return std::nullopt;
}

std::string Difference(std::string_view text, const JournalHeader& header, const OptionNames& names) {
  std::vector<std::string_view> lines;
  for (size_t pos = 0, nl; (nl = text.find('\n', pos)) != std::string_view::npos && lines.size() < 3; pos = nl + 1) {
    lines.push_back(text.substr(pos, nl - pos));
  }
  const std::optional<JournalOptions> old = lines.size() == 3 ? ParseJournalOptionsLine(lines[2]) : std::nullopt;
  if (!old) return "another conversion (its options were not recorded)";
  for (const auto& option : header.options) {
    const std::string& name = option.first;
    const std::string& value = option.second;
    const auto it = std::find_if(old->begin(), old->end(), [&](const auto& o) { return o.first == name; });
    const std::string before = it == old->end() ? "" : it->second;
    if (before == value) continue;
    if (name == "images") return "other source images (" + before + " then, " + value + " now)";
    auto shown = [&](const std::string& v) {
      if (v.empty()) return std::string("not given");
      return "'" + (v == kUnshuffled ? "none (" + names(Option::kKeepOrder) + ")" : v) + "'";
    };
    const std::optional<Option> named = JournalOption(name);
    return (named ? names(*named) : name) + " " + shown(before) + " (now " + shown(value) + ")";
  }
  return "other source images or fields";
}

}  // namespace

Result<std::vector<FinishedFile>> PrepareOutDir(const std::string& dir_name, const JournalHeader& header,
                                                uint64_t first_file, uint64_t source_count, bool restart,
                                                const OptionNames& names) {
  const fs::path dir(dir_name);
  std::error_code ec;
  for (const char* manifest : {kDatasetManifestName, kPartManifestName}) {
    if (fs::exists(dir / manifest, ec)) {
      return Status::InvalidArgument(dir_name + " already holds a pcr dataset (" + manifest + ")");
    }
  }
  const bool interrupted = fs::exists(dir / kConversionMarkerName, ec);
  std::vector<FinishedFile> kept;
  if (interrupted) {
    const Result<Bytes> journal = ReadRegularFile((dir / kConversionMarkerName).string());
    if (journal.ok()) {
      const std::string_view text(reinterpret_cast<const char*>(journal->data()), journal->size());
      if (!restart && JournalVersion(text) == 1 && JournalVersion(header.first) == 2) {
        return Status::InvalidArgument(dir_name + " holds an interrupted part of a conversion cut by file, as pcr "
                                       "before 0.8 cut parts; parts are now cut by record: start over with " +
                                       names(Option::kRestart));
      }
      if (!restart && !text.starts_with(header.first + "\n")) {
        size_t finished = 0;
        for (size_t pos = 0; (pos = text.find("\ndone ", pos)) != std::string_view::npos; ++pos) ++finished;
        return Status::InvalidArgument(
            dir_name + " holds an interrupted conversion with " + Difference(text, header, names) +
            ": run it again with the same options and inputs to keep its " + std::to_string(finished) +
            " finished files, or start over with " + names(Option::kRestart));
      }
      if (!restart) kept = DecodeJournal(text, header.first, header.limits, first_file, source_count);
    }
  }
  for (size_t i = 0; i < kept.size(); ++i) {
    const DatasetFileEntry& e = kept[i].entry;
    if (e.size > 0 && FooterIndexChecksum((dir / e.name).string(), e.size) != e.index_checksum) {
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
      return Status::InvalidArgument(dir_name + " already holds a pcr dataset (" + name + ")");
    }
  }
  if (ec) return Status::IOError(dir_name + ": " + ec.message());
  return kept;
}

}  // namespace pcr
