// Reading tar archives member by member without unpacking them: POSIX
// ustar, GNU (long names, base-256 sizes) and pax (path and size records).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "format/coding.h"
#include "pcr/status.h"
#include "writer/remote_input.h"

namespace pcr {

struct TarMember {
  std::string name;
  uint64_t header_offset = 0;  // of the member's first header (a long name or pax header included)
  uint64_t data_offset = 0;
  uint64_t size = 0;
};

// The regular-file members of one tar file or object, in order. Not
// thread-safe.
class TarReader {
 public:
  explicit TarReader(std::unique_ptr<ByteSource> source) : source_(std::move(source)), size_(source_->size()) {}
  TarReader(const TarReader&) = delete;
  TarReader& operator=(const TarReader&) = delete;

  // The next regular file; false at the end-of-archive marker (a zero
  // block), which must be there: a file that ends without one is cut short. Directories, links and
  // global pax headers are passed over. Corruption names the file, the
  // member and its offset: a bad header checksum or size, or a member cut
  // short by the end of the file.
  Result<bool> Next(TarMember* member);
  // The data of a member Next returned.
  Result<Bytes> Read(const TarMember& member) { return ReadRange(member.data_offset, member.size); }
  // `length` bytes at `offset`.
  Result<Bytes> ReadRange(uint64_t offset, uint64_t length);
  uint64_t size() const { return size_; }
  ByteSource& source() { return *source_; }
  // After Next failed on a member whose header holds but whose data is cut
  // short: the member's name; else empty.
  const std::string& cut_member() const { return cut_; }

 private:
  const std::string& path() const { return source_->name(); }
  std::unique_ptr<ByteSource> source_;
  uint64_t size_;
  uint64_t pos_ = 0;
  bool ended_ = false;
  std::string last_;  // the previous member's name, for errors
  std::string cut_;
};

// Reads `length` bytes at `offset` of the file at `path`.
Result<Bytes> ReadFileRange(const std::string& path, uint64_t offset, uint64_t length);

// The paths a shard pattern names: each {A..B} (decimal, zero-padded to
// A's width) and {x,y,...} expanded, in order. InvalidArgument for an
// unclosed brace or a range over a million values.
Result<std::vector<std::string>> ExpandBraces(const std::string& pattern);

}  // namespace pcr
