#include "reader/io_engine.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace pcr {

Result<std::unique_ptr<RandomAccessFile>> RandomAccessFile::Open(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IOError(path + ": cannot open: " + std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int e = errno;
    close(fd);
    return Status::IOError(path + ": cannot stat: " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return Status::InvalidArgument(path + ": not a regular file");
  }
  return std::unique_ptr<RandomAccessFile>(
      new RandomAccessFile(path, fd, static_cast<uint64_t>(st.st_size)));
}

RandomAccessFile::~RandomAccessFile() { close(fd_); }

namespace {

class PreadEngine final : public IoEngine {
 public:
  std::string_view name() const override { return "pread"; }

  Status Read(std::span<const ReadRequest> requests) override {
    for (const ReadRequest& r : requests) {
      uint64_t done = 0;
      while (done < r.length) {
        const ssize_t n = pread(r.file->fd(), r.out + done, r.length - done,
                                static_cast<off_t>(r.offset + done));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
          return Status::IOError(r.file->path() + ": read at offset " + std::to_string(r.offset + done) +
                                 " failed: " + std::strerror(errno));
        }
        if (n == 0) {
          return Status::Corruption(r.file->path() + ": unexpected end of file at offset " +
                                    std::to_string(r.offset + done) + " reading " +
                                    std::to_string(r.length) + " bytes at " + std::to_string(r.offset));
        }
        done += static_cast<uint64_t>(n);
      }
      Count(r.length);
    }
    return Status::OK();
  }
};

}  // namespace

std::unique_ptr<IoEngine> MakePreadEngine() { return std::make_unique<PreadEngine>(); }

}  // namespace pcr
