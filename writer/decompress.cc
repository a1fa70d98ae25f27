#include "writer/decompress.h"

#include <zlib.h>
#include <zstd.h>

#include <vector>

namespace pcr {

namespace {

constexpr size_t kOutputPiece = 1 << 20;
constexpr uint64_t kGzipHeaderBytes = 10;  // without optional fields

Status BadAt(const std::string& input, const char* format, uint64_t offset, const std::string& why) {
  return Status::InvalidArgument(input + ": not valid " + format + " at compressed byte " + std::to_string(offset) +
                                 ": " + why);
}

Status CutShort(const std::string& input, const char* what, uint64_t offset) {
  return Status::InvalidArgument(input + ": ends inside a " + what + " at compressed byte " + std::to_string(offset) +
                                 ": the file is cut short or damaged");
}

class GzipDecompressor final : public Decompressor {
 public:
  explicit GzipDecompressor(const std::string& input) : input_(input), out_(kOutputPiece) {}
  ~GzipDecompressor() override {
    if (ready_) inflateEnd(&z_);
  }

  Status Init() {
    if (inflateInit2(&z_, 16 + MAX_WBITS) != Z_OK) return Status::IOError(input_ + ": cannot start gzip decompression");
    ready_ = true;
    return Status::OK();
  }

  Status Feed(std::string_view compressed, const Sink& out) override {
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
    z_.avail_in = static_cast<uInt>(compressed.size());
    const uint64_t base = offset_;
    while (true) {
      const uInt in_before = z_.avail_in;
      if (in_before == 0 && !full_) break;
      z_.next_out = reinterpret_cast<Bytef*>(out_.data());
      z_.avail_out = static_cast<uInt>(out_.size());
      in_member_ = true;
      const int r = inflate(&z_, Z_NO_FLUSH);
      const size_t produced = out_.size() - z_.avail_out;
      offset_ = base + compressed.size() - z_.avail_in;
      full_ = z_.avail_out == 0;
      if (produced > 0) PCR_RETURN_IF_ERROR(out(std::string_view(out_.data(), produced)));
      if (r == Z_STREAM_END) {
        inflateReset(&z_);  // another member may follow
        in_member_ = false;
        full_ = false;
        continue;
      }
      if (r == Z_BUF_ERROR && produced == 0 && z_.avail_in == in_before) {
        if (in_before == 0) break;
        return BadAt(input_, "gzip", offset_, "no progress");
      }
      if (r != Z_OK && r != Z_BUF_ERROR) {
        // In a member's header, at the member's first byte; else where inflate stopped.
        const uint64_t at = z_.total_in <= kGzipHeaderBytes ? offset_ - z_.total_in : offset_;
        return BadAt(input_, "gzip", at, z_.msg ? z_.msg : "corrupt data");
      }
    }
    return Status::OK();
  }

  Status Finish() override { return in_member_ ? CutShort(input_, "gzip member", offset_) : Status::OK(); }

 private:
  std::string input_;
  z_stream z_{};
  bool ready_ = false;
  bool in_member_ = false;
  bool full_ = false;  // the last call filled the output: more may be pending
  uint64_t offset_ = 0;
  std::vector<char> out_;
};

class ZstdDecompressor final : public Decompressor {
 public:
  explicit ZstdDecompressor(const std::string& input) : input_(input), d_(ZSTD_createDCtx()), out_(kOutputPiece) {}
  ~ZstdDecompressor() override { ZSTD_freeDCtx(d_); }

  Status Feed(std::string_view compressed, const Sink& out) override {
    if (d_ == nullptr) return Status::IOError(input_ + ": cannot start zstd decompression");
    ZSTD_inBuffer in{compressed.data(), compressed.size(), 0};
    while (in.pos < in.size || full_) {
      ZSTD_outBuffer o{out_.data(), out_.size(), 0};
      const size_t r = ZSTD_decompressStream(d_, &o, &in);
      if (ZSTD_isError(r)) return BadAt(input_, "zstd", offset_ + in.pos, ZSTD_getErrorName(r));
      if (o.pos > 0) PCR_RETURN_IF_ERROR(out(std::string_view(out_.data(), o.pos)));
      in_frame_ = r != 0;
      full_ = o.pos == o.size;
    }
    offset_ += compressed.size();
    return Status::OK();
  }

  Status Finish() override { return in_frame_ ? CutShort(input_, "zstd frame", offset_) : Status::OK(); }

 private:
  std::string input_;
  ZSTD_DCtx* d_;
  bool in_frame_ = false;
  bool full_ = false;
  uint64_t offset_ = 0;
  std::vector<char> out_;
};

}  // namespace

Compression CompressionOf(std::string_view head) {
  if (head.starts_with("\x1f\x8b")) return Compression::kGzip;
  if (head.starts_with("\x28\xb5\x2f\xfd")) return Compression::kZstd;
  return Compression::kNone;
}

const char* CompressionName(Compression c) {
  return c == Compression::kGzip ? "gzip" : c == Compression::kZstd ? "zstd" : "none";
}

bool HasCompressionSuffix(std::string_view name, std::string_view* stem) {
  for (const std::string_view suffix : {".gz", ".zst", ".zstd"}) {
    if (name.ends_with(suffix)) {
      if (stem) *stem = name.substr(0, name.size() - suffix.size());
      return true;
    }
  }
  if (stem) *stem = name;
  return false;
}

Result<std::unique_ptr<Decompressor>> Decompressor::Create(Compression c, const std::string& input) {
  if (c == Compression::kGzip) {
    auto d = std::make_unique<GzipDecompressor>(input);
    PCR_RETURN_IF_ERROR(d->Init());
    return std::unique_ptr<Decompressor>(std::move(d));
  }
  if (c == Compression::kZstd) return std::unique_ptr<Decompressor>(std::make_unique<ZstdDecompressor>(input));
  return Status::InvalidArgument(input + ": not compressed");
}

}  // namespace pcr
