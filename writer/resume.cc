#include "writer/resume.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include "io/io_engine.h"
#include "io/pcr_file.h"
#include "writer/file_writer.h"

namespace pcr {

namespace fs = std::filesystem;

Result<std::unique_ptr<JournalWriter>> JournalWriter::Create(const std::string& path, const std::string& first_line,
                                                             const std::string& limits_line,
                                                             const std::vector<FinishedFile>& kept) {
  std::string text = first_line + "\n" + limits_line + "\n";
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

Result<std::vector<FinishedFile>> PrepareOutDir(const std::string& dir_name, const std::string& first_line,
                                                const std::string& limits_line, uint64_t first_file,
                                                uint64_t source_count) {
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
      kept = DecodeJournal(text, first_line, limits_line, first_file, source_count);
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
