#include "writer/tar.h"

#include <algorithm>
#include <cstring>

namespace pcr {

namespace {

constexpr uint64_t kBlock = 512;

uint64_t RoundUp(uint64_t n) { return (n + kBlock - 1) / kBlock * kBlock; }

// A NUL-terminated (or full-width) header field.
std::string Field(const uint8_t* h, size_t offset, size_t width) {
  const char* p = reinterpret_cast<const char*>(h + offset);
  return std::string(p, strnlen(p, width));
}

// An octal number, space or NUL padded, or GNU base-256 when the first byte
// has its high bit set.
bool Number(const uint8_t* h, size_t offset, size_t width, uint64_t* out) {
  const uint8_t* p = h + offset;
  if (p[0] & 0x80) {
    if (p[0] != 0x80) return false;  // negative, or too wide
    uint64_t v = 0;
    for (size_t i = 1; i < width; ++i) {
      if (v >> 56) return false;
      v = v << 8 | p[i];
    }
    *out = v;
    return true;
  }
  size_t i = 0;
  while (i < width && p[i] == ' ') ++i;
  uint64_t v = 0;
  bool digits = false;
  for (; i < width && p[i] >= '0' && p[i] <= '7'; ++i) {
    if (v >> 61) return false;
    v = v * 8 + (p[i] - '0');
    digits = true;
  }
  for (; i < width; ++i) {
    if (p[i] != ' ' && p[i] != '\0') return false;
  }
  *out = v;
  return digits;
}

// Unsigned and (as some old writers made them) signed sums of the header
// with its checksum field as spaces.
bool ChecksumHolds(const uint8_t* h) {
  uint64_t stored;
  if (!Number(h, 148, 8, &stored)) return false;
  int64_t sum = 0, signed_sum = 0;
  for (size_t i = 0; i < kBlock; ++i) {
    const uint8_t b = i >= 148 && i < 156 ? ' ' : h[i];
    sum += b;
    signed_sum += static_cast<int8_t>(b);
  }
  return static_cast<int64_t>(stored) == sum || static_cast<int64_t>(stored) == signed_sum;
}

// The "path" and "size" records of a pax extended header.
bool ParsePax(std::string_view data, std::string* path, uint64_t* size, bool* has_size) {
  while (!data.empty()) {
    const size_t space = data.find(' ');
    uint64_t length = 0;
    if (space == std::string_view::npos || space == 0) return false;
    for (size_t i = 0; i < space; ++i) {
      if (data[i] < '0' || data[i] > '9' || length > data.size()) return false;
      length = length * 10 + static_cast<uint64_t>(data[i] - '0');
    }
    if (length <= space + 1 || length > data.size() || data[length - 1] != '\n') return false;
    const std::string_view record = data.substr(space + 1, length - space - 2);
    const size_t eq = record.find('=');
    if (eq == std::string_view::npos) return false;
    const std::string_view key = record.substr(0, eq), value = record.substr(eq + 1);
    if (key == "path") *path = std::string(value);
    if (key == "size") {
      uint64_t v = 0;
      if (value.empty() || value.size() > 19) return false;
      for (const char c : value) {
        if (c < '0' || c > '9') return false;
        v = v * 10 + static_cast<uint64_t>(c - '0');
      }
      *size = v;
      *has_size = true;
    }
    data.remove_prefix(length);
  }
  return true;
}

}  // namespace

Result<Bytes> TarReader::ReadRange(uint64_t offset, uint64_t length) {
  Bytes out(length);
  PCR_RETURN_IF_ERROR(source_->ReadAt(offset, out.size(), out.data()));
  return out;
}

Result<bool> TarReader::Next(TarMember* member) {
  if (ended_) return false;
  std::string long_name;
  std::string pax_path;
  uint64_t pax_size = 0;
  bool has_pax_size = false;
  uint64_t first_header = pos_;
  uint8_t h[kBlock];
  auto corrupt = [&](uint64_t at, const std::string& what) {
    return Status::Corruption(path() + ": " + what + " at offset " + std::to_string(at) +
                              (last_.empty() ? " (the first member)" : " (after member " + last_ + ")"));
  };
  while (true) {
    if (pos_ == size_) return corrupt(pos_, "no end-of-archive marker: the tar file is cut short");
    if (pos_ + kBlock > size_) return corrupt(pos_, "truncated tar header");
    PCR_RETURN_IF_ERROR(source_->ReadAt(pos_, kBlock, h));
    if (std::all_of(h, h + kBlock, [](uint8_t b) { return b == 0; })) {
      if (!long_name.empty() || !pax_path.empty() || has_pax_size) {
        return corrupt(pos_, "end of archive after an extended header");
      }
      ended_ = true;  // the end-of-archive marker; what follows is padding
      return false;
    }
    const uint64_t header = pos_;
    if (!ChecksumHolds(h)) return corrupt(header, "bad tar header checksum");
    uint64_t size;
    if (!Number(h, 124, 12, &size)) return corrupt(header, "bad member size in tar header");
    const char type = static_cast<char>(h[156]);
    const bool regular = type == '0' || type == '\0' || type == '7';
    if (has_pax_size && regular) size = pax_size;
    const uint64_t data = header + kBlock;
    std::string name = Field(h, 0, 100);
    if (std::memcmp(h + 257, "ustar\0", 6) == 0) {  // POSIX: old GNU headers keep times there
      const std::string prefix = Field(h, 345, 155);
      if (!prefix.empty()) name = prefix + "/" + name;
    }
    if (!pax_path.empty()) name = pax_path;
    if (!long_name.empty()) name = long_name;
    if (size > size_ - data) {
      cut_ = name;
      return corrupt(header, "member " + name + " of " + std::to_string(size) + " bytes is cut short by the end of the file");
    }
    pos_ = data + RoundUp(size);
    if (type == 'L' || type == 'x') {
      if (size > (1u << 20)) return corrupt(header, "extended header of " + std::to_string(size) + " bytes");
      std::string text(size, '\0');
      PCR_RETURN_IF_ERROR(source_->ReadAt(data, size, reinterpret_cast<uint8_t*>(text.data())));
      if (type == 'L') {
        long_name.assign(text.c_str());
      } else if (!ParsePax(text, &pax_path, &pax_size, &has_pax_size)) {
        return corrupt(header, "malformed pax header");
      }
      continue;
    }
    if (!regular) {
      // Directories, links, devices and global headers hold no member data.
      long_name.clear();
      pax_path.clear();
      has_pax_size = false;
      first_header = pos_;
      continue;
    }
    *member = {.name = name, .header_offset = first_header, .data_offset = data, .size = size};
    last_ = name;
    return true;
  }
}

Result<Bytes> ReadFileRange(const std::string& path, uint64_t offset, uint64_t length) {
  PCR_ASSIGN_OR_RETURN(auto source, OpenByteSource(path, nullptr));
  Bytes out(length);
  PCR_RETURN_IF_ERROR(source->ReadAt(offset, out.size(), out.data()));
  return out;
}

Result<std::vector<std::string>> ExpandBraces(const std::string& pattern) {
  const size_t open = pattern.find('{');
  if (open == std::string::npos) {
    if (pattern.find('}') != std::string::npos) return Status::InvalidArgument(pattern + ": '}' without '{'");
    return std::vector<std::string>{pattern};
  }
  const size_t close = pattern.find('}', open);
  if (close == std::string::npos) return Status::InvalidArgument(pattern + ": unclosed '{'");
  const std::string inside = pattern.substr(open + 1, close - open - 1);
  std::vector<std::string> choices;
  const size_t dots = inside.find("..");
  if (dots != std::string::npos) {
    const std::string a = inside.substr(0, dots), b = inside.substr(dots + 2);
    auto digits = [](const std::string& s) {
      return !s.empty() && s.size() <= 18 && s.find_first_not_of("0123456789") == std::string::npos;
    };
    if (!digits(a) || !digits(b)) return Status::InvalidArgument(pattern + ": {A..B} needs decimal numbers");
    const uint64_t from = std::stoull(a), to = std::stoull(b);
    if (to < from || to - from >= 1000000) {
      return Status::InvalidArgument(pattern + ": range {" + inside + "} is empty or over a million values");
    }
    for (uint64_t v = from; v <= to; ++v) {
      std::string n = std::to_string(v);
      if (n.size() < a.size()) n.insert(0, a.size() - n.size(), '0');
      choices.push_back(std::move(n));
    }
  } else {
    size_t start = 0;
    while (true) {
      const size_t comma = inside.find(',', start);
      choices.push_back(inside.substr(start, comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  PCR_ASSIGN_OR_RETURN(std::vector<std::string> tails, ExpandBraces(pattern.substr(close + 1)));
  if (choices.size() * tails.size() > 1000000) {
    return Status::InvalidArgument(pattern + ": names over a million shards");
  }
  std::vector<std::string> out;
  for (const std::string& c : choices) {
    for (const std::string& t : tails) out.push_back(pattern.substr(0, open) + c + t);
  }
  return out;
}

}  // namespace pcr
