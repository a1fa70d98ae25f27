#include "io/location.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "io/pcr_file.h"
#include "io/remote_path.h"

namespace pcr {

namespace fs = std::filesystem;

std::string Location::Join(std::string_view name) const {
  return remote ? JoinRemotePath(path, name) : (fs::path(path) / name).string();
}

Result<std::string> Location::TableFile() const {
  if (!directory || remote) return path;
  if (dataset_manifest) {
    return Status::InvalidArgument(path + ": an image dataset (" + kDatasetManifestName + "), not a table");
  }
  PCR_RETURN_IF_ERROR(list_error);
  if (pcr_files.size() != 1) {
    return Status::InvalidArgument(path + ": expected one table (.pcr) file, found " +
                                   std::to_string(pcr_files.size()));
  }
  return pcr_files[0];
}

Result<Location> Locate(const std::string& path) {
  Location where{.path = path, .remote = IsRemotePath(path)};
  if (where.remote) {
    where.directory = !path.ends_with(kRecordFileExtension);
    return where;
  }
  std::error_code ec;
  where.directory = fs::is_directory(path, ec);
  if (!where.directory) return where;
  const std::string manifest = where.Join(kDatasetManifestName);
  struct stat st;
  if (stat(manifest.c_str(), &st) == 0) {
    where.dataset_manifest = true;
  } else if (errno != ENOENT) {
    return Status::IOError(manifest + ": cannot open: " + std::strerror(errno));
  }
  where.part_manifest = fs::exists(where.Join(kPartManifestName), ec);
  if (where.dataset_manifest) return where;
  for (const auto& e : fs::directory_iterator(path, ec)) {
    if (e.path().extension() == kRecordFileExtension) where.pcr_files.push_back(e.path().string());
  }
  if (ec) where.list_error = Status::IOError("cannot list " + path + ": " + ec.message());
  std::sort(where.pcr_files.begin(), where.pcr_files.end());
  return where;
}

Result<FileKind> ReadFileKind(const std::string& file, IoEngine& engine) {
  PCR_ASSIGN_OR_RETURN(auto raf, engine.Open(file));
  if (raf->size() < kFileHeaderSize) return Status::Corruption(file + ": shorter than a pcr file header");
  Bytes head(kFileHeaderSize);
  ReadRequest read{raf.get(), 0, head.size(), head.data()};
  PCR_RETURN_IF_ERROR(engine.Read({&read, 1}));
  FileKind kind{};
  PCR_RETURN_IF_ERROR(LoadRereading(engine, {&read, 1}, [&] {
    const Result<FileHeader> header = FileHeader::DecodeFrom(head);
    if (!header.ok()) return header.status().WithPrefix(file);
    kind = header->kind;
    return Status::OK();
  }));
  return kind;
}

}  // namespace pcr
