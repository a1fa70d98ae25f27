#include "writer/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "io/remote_path.h"

namespace pcr {

namespace {

Status Errno(const std::string& what, const std::string& path) {
  return Status::IOError(what + " " + path + ": " + std::strerror(errno));
}

// Removes `dir`/.<name>.tmp-<pid> files whose process is gone.
void RemoveStaleTemps(const std::filesystem::path& dir, const std::string& name) {
  const std::string prefix = "." + name + ".tmp-";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir.empty() ? "." : dir, ec)) {
    const std::string f = entry.path().filename().string();
    if (!f.starts_with(prefix)) continue;
    const std::string digits = f.substr(prefix.size());
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(digits));
    if (pid != getpid() && kill(pid, 0) != 0 && errno == ESRCH) std::filesystem::remove(entry.path(), ec);
  }
}

// Renames `from` to `to`; with Replace::kNo, atomically refuses an existing
// `to` (by link and unlink where the filesystem lacks RENAME_NOREPLACE).
Status Rename(const std::string& from, const std::string& to, Replace replace) {
  if (replace == Replace::kYes) {
    if (rename(from.c_str(), to.c_str()) != 0) return Errno("cannot rename to", to);
    return Status::OK();
  }
  int r = renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE);
  if (r != 0 && (errno == EINVAL || errno == ENOSYS)) {
    r = link(from.c_str(), to.c_str());
    if (r == 0) unlink(from.c_str());
  }
  if (r == 0) return Status::OK();
  if (errno == EEXIST) return Status::InvalidArgument(to + ": already exists; not replaced");
  return Errno("cannot rename to", to);
}

}  // namespace

Result<std::unique_ptr<AtomicFile>> AtomicFile::Create(const std::string& path, Replace replace) {
  const std::filesystem::path p(path);
  RemoveStaleTemps(p.parent_path(), p.filename().string());
  std::string name = ".";
  name += p.filename().string();
  name += ".tmp-";
  name += std::to_string(getpid());
  const std::string temp = (p.parent_path() / name).string();
  const int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("cannot create", temp);
  return std::unique_ptr<AtomicFile>(new AtomicFile(path, temp, fd, replace));
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) {
    close(fd_);
    unlink(temp_path_.c_str());
  }
}

Status AtomicFile::Append(ByteSpan data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = write(fd_, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno("cannot write", temp_path_);
    }
    done += static_cast<size_t>(n);
  }
  size_ += data.size();
  return Status::OK();
}

Status AtomicFile::WriteAt(uint64_t offset, ByteSpan data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = pwrite(fd_, data.data() + done, data.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno("cannot write", temp_path_);
    }
    done += static_cast<size_t>(n);
  }
  return Status::OK();
}

Status AtomicFile::Commit() {
  if (fsync(fd_) != 0) return Errno("cannot fsync", temp_path_);
  const int fd = fd_;
  fd_ = -1;
  if (close(fd) != 0) {
    unlink(temp_path_.c_str());
    return Errno("cannot close", temp_path_);
  }
  if (Status s = Rename(temp_path_, path_, replace_); !s.ok()) {
    unlink(temp_path_.c_str());
    return s;
  }
  const std::string dir = std::filesystem::path(path_).parent_path().string();
  const int dfd = open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  return Status::OK();
}

Status CheckLocalOutput(const std::string& dir) {
  if (!IsRemotePath(dir) && dir.find("://") == std::string::npos) return Status::OK();
  return Status::InvalidArgument(dir + ": not a local directory; images, webdataset, table and merge also write to "
                                 "s3://BUCKET/PREFIX, the rest only locally (copy the result up with your store's "
                                 "tools)");
}

Result<DirectoryLock> DirectoryLock::Take(const std::string& dir) {
  PCR_RETURN_IF_ERROR(CheckLocalOutput(dir));
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IOError(dir + ": cannot create directory: " + ec.message());
  DirectoryLock lock(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (lock.fd_ < 0) return Errno("cannot open", dir);
  if (flock(lock.fd_, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
    return Status::InvalidArgument(dir + ": another pcr-convert is writing this directory");
  }
  return lock;
}

DirectoryLock::DirectoryLock(DirectoryLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) close(fd_);
}

Status WriteTextFile(const std::string& path, const std::string& text) {
  PCR_ASSIGN_OR_RETURN(auto file, AtomicFile::Create(path, Replace::kYes));
  PCR_RETURN_IF_ERROR(file->Append(ByteSpan(reinterpret_cast<const uint8_t*>(text.data()), text.size())));
  return file->Commit();
}

}  // namespace pcr
