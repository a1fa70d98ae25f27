// Helpers shared by the test suites.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <string>

#include "format/checksum.h"
#include "format/coding.h"
#include "format/file_format.h"
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

// Replaces the index checksum in the footer and the footer's own checksum so
// that a damaged index reaches the index decoder and the readers behind it.
inline void RefixIndexChecksum(Bytes* file) {
  const size_t footer = file->size() - kFooterSize;
  const uint64_t index_offset = LoadFixed64(file->data() + footer);
  const uint64_t index_length = LoadFixed64(file->data() + footer + 8);
  StoreFixed64(file->data() + footer + 16, Checksum64(ByteSpan(*file).subspan(index_offset, index_length)));
  StoreFixed32(file->data() + footer + 24, Checksum32(ByteSpan(*file).subspan(footer, 24)));
}

// `file` with its index decoded, changed by `edit`, and written again with
// a valid index checksum; `file` unchanged when its index does not decode.
inline Bytes RewriteIndex(const Bytes& file, const std::function<void(FileIndex*)>& edit) {
  auto header = FileHeader::DecodeFrom(ByteSpan(file).first(kFileHeaderSize));
  auto footer = Footer::DecodeFrom(ByteSpan(file).last(kFooterSize), file.size());
  if (!header.ok() || !footer.ok()) return file;
  auto index = FileIndex::DecodeFrom(ByteSpan(file).subspan(footer->index_offset, footer->index_length),
                                     header->kind, header->version_minor, footer->index_offset);
  if (!index.ok()) return file;
  edit(&*index);
  Bytes index_bytes;
  index->EncodeTo(header->kind, header->version_minor, &index_bytes);
  Bytes out(file.begin(), file.begin() + static_cast<ptrdiff_t>(footer->index_offset));
  const Bytes tail = EncodeIndexAndFooter(index_bytes, footer->index_offset);
  out.insert(out.end(), tail.begin(), tail.end());
  return out;
}

// `file` (a valid pcr file whose stripe bytes were then damaged) with every
// stream and chunk checksum recomputed and the index and footer rewritten,
// so the damage reaches the decoders behind the checksums.
inline Bytes RefixChecksums(const Bytes& file) {
  return RewriteIndex(file, [&](FileIndex* index) {
    for (StripeInfo& stripe : index->stripes) {
      for (size_t s = 0; s < stripe.streams.size(); ++s) {
        const ByteSpan stream = ByteSpan(file).subspan(stripe.stream_offset(s), stripe.streams[s].length);
        stripe.streams[s].checksum = Checksum64(stream);
        if (stripe.chunks.empty() || s < stripe.group_stream(1)) continue;
        const size_t group = s - stripe.group_stream(1);
        uint64_t at = 0;
        for (uint64_t i = 0; i < stripe.image_count; ++i) {
          ChunkInfo& chunk = stripe.chunks[group * stripe.image_count + i];
          chunk.checksum = Checksum32(stream.subspan(at, chunk.length));
          at += chunk.length;
        }
      }
    }
  });
}

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

}  // namespace pcr::test
