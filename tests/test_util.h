// Helpers shared by the test suites.
#pragma once

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <memory>
#include <string>

#include "format/checksum.h"
#include "format/coding.h"
#include "format/file_format.h"
#include "pcr/convert.h"
#include "pcr/image_dataset.h"
#include "pcr/io.h"

namespace pcr::test {

// The engine a suite runs under: meson runs the suites that read through
// the default engine once with PCR_IO_ENGINE=uring and once with =pread.
inline IoEngineOptions Io() {
  IoEngineOptions io;
  const char* env = std::getenv("PCR_IO_ENGINE");
  if (env != nullptr && *env != '\0') {
    const auto kind = ParseIoEngineKind(env);
    if (!kind.ok()) std::abort();
    io.kind = *kind;
  }
  return io;
}

// tests/data in the source tree.
inline std::string DataDir() { return PCR_TEST_DATA_DIR; }

// The shared corpus, or "" when it is absent.
inline std::string CorpusDir() {
  const char* env = std::getenv("PCR_CORPUS_DIR");
  const std::string dir = env != nullptr ? env : PCR_CORPUS_DIR;
  return std::filesystem::is_directory(dir) ? dir : "";
}

inline Bytes ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

inline void WriteFile(const std::filesystem::path& p, ByteSpan data) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

using pcr::RefixIndexChecksum;

using pcr::RewriteIndex;
using pcr::RefixChecksums;

// `dir`: a copy of the bundled sample plus the three bad files as class
// "zbad", which sorts last.
inline void MakeMixedSource(const std::filesystem::path& dir) {
  std::filesystem::copy(DataDir() + "/sample", dir, std::filesystem::copy_options::recursive);
  std::filesystem::copy(DataDir() + "/bad", dir / "zbad");
}

// A fresh directory removed when the object goes away.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "pcr-test-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// The bundled sample (24 images) converted into tmp/ds with
// `images_per_record` per record, and opened.
inline std::unique_ptr<ImageDataset> OpenSample(const TempDir& tmp, uint64_t images_per_record) {
  REQUIRE(ConvertImages({.src_dir = DataDir() + "/sample", .out_dir = tmp / "ds", .images_per_record = images_per_record})
              .ok());
  auto ds = ImageDataset::Open(tmp / "ds", {.io = Io()});
  REQUIRE(ds.ok());
  return std::move(ds).MoveValue();
}

}  // namespace pcr::test
