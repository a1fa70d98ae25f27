#include "writer/remote_output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>

#include "format/checksum.h"
#include "format/file_format.h"
#include "format/journal.h"
#include "io/io_engine.h"
#include "io/pcr_file.h"
#include "io/remote_path.h"
#include "io/s3_upload.h"

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

// The journal: "done\tSIZE\tMTIME_NS\tNAME" and "open\tUPLOAD_ID\tNAME" lines.
struct UploadJournal {
  std::map<std::string, Stamp> done;
  std::vector<std::pair<std::string, std::string>> open;  // (name, upload id)
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
    if (fields.size() == 4 && fields[0] == "done") {
      j.done[fields[3]] = {std::strtoull(fields[1].c_str(), nullptr, 10), std::strtoll(fields[2].c_str(), nullptr, 10)};
    } else if (fields.size() == 3 && fields[0] == "open") {
      j.open.emplace_back(fields[2], fields[1]);
    }
  }
  std::fclose(f);
  return j;
}

// Appends `line` and syncs it.
Status Append(const std::string& path, const std::string& line) {
  const int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IOError(path + ": cannot open: " + std::strerror(errno));
  const bool ok = write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) && fsync(fd) == 0;
  const int err = errno;
  close(fd);
  return ok ? Status::OK() : Status::IOError(path + ": cannot write: " + std::strerror(err));
}

}  // namespace

bool IsObjectStoreOutput(std::string_view out_dir) { return out_dir.starts_with("s3://"); }

std::string ConversionWorkDir(const std::string& out_dir, const std::string& work_dir) {
  if (!work_dir.empty()) return work_dir;
  char name[64];
  std::snprintf(name, sizeof(name), "pcr-convert-%016llx",
                static_cast<unsigned long long>(Checksum64(ByteSpan(reinterpret_cast<const uint8_t*>(out_dir.data()),
                                                                    out_dir.size()))));
  std::error_code ec;
  const fs::path tmp = fs::temp_directory_path(ec);
  return ((ec ? fs::path("/tmp") : tmp) / name).string();
}

Status PublishDirectory(const std::string& local, const std::string& remote, const std::vector<std::string>& last,
                        const std::string& journal, const RemoteOptions& remote_options,
                        const UploadOptions& upload) {
  PCR_ASSIGN_OR_RETURN(auto uploader, S3Uploader::Create(remote_options, upload));
  UploadJournal j = ReadJournal(journal);
  for (const auto& [name, id] : j.open) {
    if (j.done.count(name) == 0) PCR_RETURN_IF_ERROR(uploader->Abort(JoinRemotePath(remote, name), id));
  }
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
  for (const std::string& name : names) {
    if (name.find_first_of("\t\n") != std::string::npos) {
      return Status::InvalidArgument(local + "/" + name + ": a file name with a tab or newline");
    }
    const std::string path = (fs::path(local) / name).string();
    PCR_ASSIGN_OR_RETURN(const Stamp stamp, StampOf(path));
    if (auto it = j.done.find(name); it != j.done.end() && it->second == stamp) continue;
    const std::string object = JoinRemotePath(remote, name);
    PCR_RETURN_IF_ERROR(uploader->Upload(path, object, [&](const std::string& id) {
      return Append(journal, "open\t" + id + "\t" + name + "\n");
    }));
    PCR_RETURN_IF_ERROR(Append(journal, "done\t" + std::to_string(stamp.size) + "\t" + std::to_string(stamp.mtime_ns) +
                                            "\t" + name + "\n"));
  }
  return Status::OK();
}

Result<ConvertImagesSummary> ConvertImagesToObjectStore(
    const ConvertImagesOptions& options, Result<ConvertImagesSummary> (*convert)(const ConvertImagesOptions&)) {
  PCR_RETURN_IF_ERROR(CheckUploadOptions(options.upload));
  const fs::path work = ConversionWorkDir(options.out_dir, options.work_dir);
  ConvertImagesOptions local = options;
  local.out_dir = (work / "out").string();
  local.work_dir.clear();
  const std::string manifest = options.num_shards > 1 ? kPartManifestName : kDatasetManifestName;
  const fs::path manifest_path = fs::path(local.out_dir) / manifest;
  std::error_code ec;
  {
    PCR_ASSIGN_OR_RETURN(auto uploader, S3Uploader::Create(options.remote, options.upload));
    PCR_ASSIGN_OR_RETURN(const bool exists, uploader->Exists(JoinRemotePath(options.out_dir, manifest)));
    if (exists) return Status::InvalidArgument(options.out_dir + " already holds a pcr dataset (" + manifest + ")");
  }
  ConvertImagesSummary summary;
  if (fs::exists(manifest_path, ec) && !fs::exists(fs::path(local.out_dir) / kConversionMarkerName, ec)) {
    // Converted by an earlier run whose upload did not finish.
    PCR_ASSIGN_OR_RETURN(auto engine, MakeIoEngine({.kind = IoEngineKind::kPread}));
    PCR_ASSIGN_OR_RETURN(auto file, PcrFile::Open(manifest_path.string(), engine.get()));
    const DatasetManifest& m = options.num_shards > 1 ? file->part().dataset : file->manifest();
    for (const DatasetFileEntry& e : m.files) {
      summary.images += e.image_count;
      summary.records += e.stripe_count;
      summary.output_bytes += e.size;
    }
    summary.files = summary.resumed_files = m.files.size();
  } else {
    PCR_ASSIGN_OR_RETURN(summary, convert(local));
  }
  PCR_RETURN_IF_ERROR(PublishDirectory(local.out_dir, options.out_dir, {manifest}, (work / "upload.journal").string(),
                                       options.remote, options.upload));
  // Uploaded: the local copy goes.
  fs::remove_all(local.out_dir, ec);
  fs::remove(work / "upload.journal", ec);
  if (options.work_dir.empty()) fs::remove(work, ec);
  return summary;
}

}  // namespace pcr
