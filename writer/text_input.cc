#include "writer/text_input.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>

#include "format/json.h"
#include "io/http_client.h"
#include "io/io_engine.h"
#include "io/remote_path.h"
#include "writer/remote_input.h"

namespace pcr {

namespace {

// A file in $TMPDIR (else /tmp) that no name reaches, written once.
class TempFile {
 public:
  ~TempFile() {
    if (fd_ >= 0) close(fd_);
  }
  Status Create(const std::string& input) {
    const char* env = std::getenv("TMPDIR");
    dir_ = env && *env ? env : "/tmp";
    input_ = input;
    fd_ = open(dir_.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd_ < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
      std::string name = dir_ + "/pcr-input-XXXXXX";
      fd_ = mkostemp(name.data(), O_CLOEXEC);
      if (fd_ >= 0) unlink(name.c_str());
    }
    if (fd_ < 0) return Failed();
    return Status::OK();
  }
  Status Append(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = write(fd_, bytes.data(), bytes.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Failed();
      bytes.remove_prefix(static_cast<size_t>(n));
      size_ += static_cast<uint64_t>(n);
    }
    return Status::OK();
  }
  // The bytes written, mapped for reading (empty when there are none); the
  // caller unmaps them.
  Result<std::string_view> Map() const {
    if (size_ == 0) return std::string_view();
    void* p = mmap(nullptr, static_cast<size_t>(size_), PROT_READ, MAP_SHARED, fd_, 0);
    if (p == MAP_FAILED) return Status::IOError(input_ + ": cannot map its copy: " + std::strerror(errno));
    madvise(p, static_cast<size_t>(size_), MADV_SEQUENTIAL);
    return std::string_view(static_cast<const char*>(p), static_cast<size_t>(size_));
  }

 private:
  Status Failed() const {
    return Status::IOError(input_ + ": cannot write its bytes to a file in " + dir_ + ": " + std::strerror(errno) +
                           " (set TMPDIR to a directory with room for the input decompressed)");
  }
  int fd_ = -1;
  uint64_t size_ = 0;
  std::string dir_, input_;
};

}  // namespace

Result<std::unique_ptr<MappedInput>> MappedInput::Open(const std::string& path, const RemoteOptions& remote,
                                                       bool sparse) {
  if (path == "-") {
    if (sparse) {
      return Status::InvalidArgument("standard input (-) is read once, so it cannot be converted in shards: "
                                     "convert it in one process");
    }
    return FromStdin();
  }
  std::string_view stem;
  const bool named = HasCompressionSuffix(path, &stem);
  auto compressed = [&](std::unique_ptr<MappedInput> in) -> Result<std::unique_ptr<MappedInput>> {
    const Compression c = CompressionOf(in->text_.substr(0, 4));
    if (c == Compression::kNone && named) {
      return Status::InvalidArgument(path + ": named " + path.substr(stem.size()) +
                                     " but its bytes are neither gzip nor zstd data: rename it");
    }
    if (c == Compression::kNone) return in;
    if (sparse) {
      return Status::InvalidArgument(path + ": " + CompressionName(c) + " data cannot be converted in shards, "
                                     "whose bytes are reached apart: convert it in one process, or decompress it "
                                     "first");
    }
    return Decompressed(path, c, std::move(in));
  };
  if (IsRemotePath(path)) {
    PCR_ASSIGN_OR_RETURN(auto client, HttpClient::Create(remote));
    auto in = std::unique_ptr<MappedInput>(new MappedInput());
    if (!sparse) {
      PCR_ASSIGN_OR_RETURN(in->owned_, ReadWholeObject(path, *client));
      in->text_ = std::string_view(reinterpret_cast<const char*>(in->owned_.data()), in->owned_.size());
      return compressed(std::move(in));
    }
    PCR_ASSIGN_OR_RETURN(const uint64_t size, client->Size(path));
    if (size > 0) {
      void* p = mmap(nullptr, static_cast<size_t>(size), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p == MAP_FAILED) return Status::IOError(path + ": cannot reserve " + std::to_string(size) + " bytes");
      in->text_ = std::string_view(static_cast<const char*>(p), static_cast<size_t>(size));
      in->mapped_ = true;
    }
    in->path_ = path;
    in->client_ = std::move(client);
    in->sparse_ = true;
    PCR_RETURN_IF_ERROR(in->Fetch(0, 4));
    return compressed(std::move(in));
  }
  uint64_t size = 0;
  PCR_ASSIGN_OR_RETURN(const int fd, OpenRegularFile(path, 0, &size));
  auto in = std::unique_ptr<MappedInput>(new MappedInput());
  if (size > 0) {
    void* p = mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int e = errno;
      close(fd);
      return Status::IOError(path + ": cannot map: " + std::strerror(e));
    }
    madvise(p, static_cast<size_t>(size), MADV_SEQUENTIAL);
    in->text_ = std::string_view(static_cast<const char*>(p), static_cast<size_t>(size));
    in->mapped_ = true;
  }
  close(fd);
  return compressed(std::move(in));
}

Result<std::unique_ptr<MappedInput>> MappedInput::FromStdin() {
  const std::string name = "standard input (-)";
  TempFile file;
  PCR_RETURN_IF_ERROR(file.Create(name));
  std::vector<char> piece(1 << 20);
  std::string head;  // the first bytes, until they tell the compression
  std::unique_ptr<Decompressor> decompressor;
  bool told = false;
  const Decompressor::Sink append = [&](std::string_view bytes) { return file.Append(bytes); };
  auto take = [&](std::string_view bytes) -> Status {
    if (!told) {
      head.append(bytes);
      if (head.size() < 4 && !bytes.empty()) return Status::OK();
      told = true;
      const Compression c = CompressionOf(head);
      if (c != Compression::kNone) {
        PCR_ASSIGN_OR_RETURN(decompressor, Decompressor::Create(c, name));
      }
      bytes = head;
    }
    return decompressor ? decompressor->Feed(bytes, append) : file.Append(bytes);
  };
  while (true) {
    const ssize_t n = read(STDIN_FILENO, piece.data(), piece.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IOError(name + ": cannot read: " + std::strerror(errno));
    PCR_RETURN_IF_ERROR(take(std::string_view(piece.data(), static_cast<size_t>(n))));
    if (n == 0) break;
  }
  if (decompressor) PCR_RETURN_IF_ERROR(decompressor->Finish());
  auto in = std::unique_ptr<MappedInput>(new MappedInput());
  PCR_ASSIGN_OR_RETURN(in->text_, file.Map());
  in->mapped_ = !in->text_.empty();
  return in;
}

Result<std::unique_ptr<MappedInput>> MappedInput::Decompressed(const std::string& path, Compression c,
                                                               std::unique_ptr<MappedInput> in) {
  TempFile file;
  PCR_RETURN_IF_ERROR(file.Create(path));
  PCR_ASSIGN_OR_RETURN(auto decompressor, Decompressor::Create(c, path));
  const std::string_view all = in->text_;
  constexpr size_t kPiece = 4 << 20;
  for (size_t at = 0; at < all.size(); at += kPiece) {
    PCR_RETURN_IF_ERROR(decompressor->Feed(all.substr(at, kPiece), [&](std::string_view b) { return file.Append(b); }));
    in->Release(at, at + kPiece);
  }
  PCR_RETURN_IF_ERROR(decompressor->Finish());
  in.reset();
  auto out = std::unique_ptr<MappedInput>(new MappedInput());
  PCR_ASSIGN_OR_RETURN(out->text_, file.Map());
  out->mapped_ = !out->text_.empty();
  return out;
}

MappedInput::~MappedInput() {
  if (mapped_) munmap(const_cast<char*>(text_.data()), text_.size());
}

Status MappedInput::Fetch(uint64_t begin, uint64_t end) {
  end = std::min<uint64_t>(end, text_.size());
  if (!sparse_ || begin >= end) return Status::OK();
  std::vector<std::pair<uint64_t, uint64_t>> merged;
  uint64_t at = begin;
  for (const auto& [b, e] : fetched_) {
    if (e < begin || b > end) {
      merged.emplace_back(b, e);
      continue;
    }
    if (b > at) {
      char* out = const_cast<char*>(text_.data()) + at;
      PCR_RETURN_IF_ERROR(ReadObjectRange(path_, *client_, text_.size(), at, b - at, reinterpret_cast<uint8_t*>(out)));
    }
    at = std::max(at, e);
    begin = std::min(begin, b);
    end = std::max(end, e);
  }
  if (at < end) {
    char* out = const_cast<char*>(text_.data()) + at;
    PCR_RETURN_IF_ERROR(ReadObjectRange(path_, *client_, text_.size(), at, end - at, reinterpret_cast<uint8_t*>(out)));
  }
  merged.emplace_back(begin, end);
  std::sort(merged.begin(), merged.end());
  fetched_ = std::move(merged);
  return Status::OK();
}

bool MappedInput::Has(uint64_t begin, uint64_t end) const {
  end = std::min<uint64_t>(end, text_.size());
  if (!sparse_ || begin >= end) return true;
  return std::any_of(fetched_.begin(), fetched_.end(), [&](const auto& r) { return r.first <= begin && end <= r.second; });
}

void MappedInput::Release(uint64_t begin, uint64_t end) const {
  if (!mapped_ || sparse_) return;
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t first = (begin + page - 1) / page * page, last = std::min<uint64_t>(end, text_.size()) / page * page;
  if (first < last) madvise(const_cast<char*>(text_.data()) + first, last - first, MADV_DONTNEED);
}

std::string InputStem(const std::string& input) {
  if (input == "-") return "stdin";
  std::string_view stem;
  HasCompressionSuffix(input, &stem);
  return std::filesystem::path(stem).stem().string();
}

Status InputError(const std::string& input, uint64_t line, uint64_t column, const std::string& what) {
  return Status::InvalidArgument(input + ": line " + std::to_string(line) + ", column " +
                                 std::to_string(column) + ": " + what);
}

std::string Shown(std::string_view text) {
  if (text.size() <= 80) return EscapeInvalidUtf8(text);
  return EscapeInvalidUtf8(text.substr(0, 60)) + "... (" + std::to_string(text.size()) + " bytes)";
}

Status CsvReader::CheckCellCount(const std::vector<CsvCell>& cells, size_t count, size_t want) const {
  if (count == want) return Status::OK();
  const CsvCell& at = cells[std::min(count, want) - 1];
  return InputError(input_, record_line_, at.column,
                    "row has " + std::to_string(count) + " cells, the header " + std::to_string(want) +
                        ": every row needs a cell per column, and a cell holding a comma, quote or line break "
                        "must be in double quotes (RFC 4180)");
}

void FreeHugeCells(std::vector<CsvCell>* cells) {
  for (CsvCell& cell : *cells) FreeIfHuge(&cell.text);
}

Result<bool> CsvReader::Next(std::vector<CsvCell>* cells, size_t* count) {
  if (pos_ >= text_.size()) return false;
  record_line_ = line_;
  *count = 0;
  FreeHugeCells(cells);
  while (true) {
    if (*count == cells->size()) cells->emplace_back();
    CsvCell& cell = (*cells)[(*count)++];
    cell.text.clear();
    cell.line = line_;
    cell.column = pos_ - line_start_ + 1;
    cell.quoted = pos_ < text_.size() && text_[pos_] == '"';
    if (cell.quoted) {
      ++pos_;
      while (true) {
        const size_t q = text_.find('"', pos_);
        if (q == std::string_view::npos) {
          return InputError(input_, cell.line, cell.column, "quoted field is never closed");
        }
        for (size_t i = pos_; i < q; ++i) {
          if (text_[i] == '\n' || (text_[i] == '\r' && (i + 1 == q || text_[i + 1] != '\n'))) {
            ++line_;
            line_start_ = i + 1;
          }
        }
        const size_t after = cell.text.size() + (q - pos_);
        if (after >= kKeptBufferCapacity && cell.text.capacity() <= after) {
          // A huge quoted cell: room for the rest of it at once, rather than
          // copies as it doubles.
          size_t close = q;
          while (close != std::string_view::npos && close + 1 < text_.size() && text_[close + 1] == '"') {
            close = text_.find('"', close + 2);
          }
          if (close != std::string_view::npos) cell.text.reserve(cell.text.size() + (close - pos_));
        }
        cell.text.append(text_.substr(pos_, q - pos_));
        pos_ = q + 1;
        if (pos_ < text_.size() && text_[pos_] == '"') {
          cell.text.push_back('"');
          ++pos_;
          continue;
        }
        break;
      }
    } else {
      const size_t end = text_.find_first_of(std::string_view(stops_, sizeof(stops_)), pos_);
      const size_t stop = end == std::string_view::npos ? text_.size() : end;
      if (stop < text_.size() && text_[stop] == '"') {
        return InputError(input_, line_, stop - line_start_ + 1, "quote inside an unquoted field");
      }
      cell.text.assign(text_.substr(pos_, stop - pos_));
      pos_ = stop;
    }
    if (pos_ >= text_.size()) return true;
    if (text_[pos_] == delimiter_) {
      ++pos_;
      continue;
    }
    if (text_[pos_] == '\r' || text_[pos_] == '\n') {
      pos_ += text_[pos_] == '\r' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '\n' ? 2 : 1;
      ++line_;
      line_start_ = pos_;
      return true;
    }
    return InputError(input_, line_, pos_ - line_start_ + 1, "text after a closing quote");
  }
}

bool IsIntegerLiteral(std::string_view s) {
  if (s.starts_with('-')) s.remove_prefix(1);
  return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
}

Status InexactInteger(const std::string& input, uint64_t line, uint64_t column, std::string_view integer,
                      const std::string& what, const std::string& fix) {
  return InputError(input, line, column,
                    "integer " + Shown(integer) + " in float64 " + what + " has no exact double: " + fix);
}

bool ParseInt(std::string_view s, int64_t* v) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
  return !s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool ParseFloat(std::string_view s, double* v) {
  const bool negative = !s.empty() && s[0] == '-';
  std::string_view body = s.substr(!s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0);
  if (!body.empty() && NamedFloatLength(body) == body.size()) {
    *v = std::copysign((body[0] | 0x20) == 'n' ? std::numeric_limits<double>::quiet_NaN()
                                                : std::numeric_limits<double>::infinity(),
                       negative ? -1.0 : 1.0);
    return true;
  }
  if (s.starts_with('+') || body.empty() || !((body[0] >= '0' && body[0] <= '9') || body[0] == '.')) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
  if (r.ptr != s.data() + s.size()) return false;
  if (r.ec == std::errc()) return true;
  if (r.ec != std::errc::result_out_of_range) return false;
  *v = NearestDouble(s);
  return true;
}

bool ParseBigUInt64(std::string_view s, uint64_t* v) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
  return !s.empty() && s[0] != '-' && s[0] != '+' && r.ec == std::errc() && r.ptr == s.data() + s.size() &&
         *v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
}

bool ParseBool(std::string_view s, bool loose, bool* v) {
  auto is = [&](std::string_view word) {
    return s.size() == word.size() &&
           std::equal(s.begin(), s.end(), word.begin(), [](char a, char b) { return std::tolower(a) == b; });
  };
  if (is("true") || (loose && (is("t") || is("yes") || is("y") || is("on") || s == "1"))) {
    *v = true;
    return true;
  }
  if (is("false") || (loose && (is("f") || is("no") || is("n") || is("off") || s == "0"))) {
    *v = false;
    return true;
  }
  return false;
}

namespace {

// Reads exactly n digits at s[*pos].
bool Digits(std::string_view s, size_t* pos, int n, int64_t* v) {
  if (*pos + n > s.size()) return false;
  *v = 0;
  for (int k = 0; k < n; ++k) {
    const char c = s[*pos + k];
    if (c < '0' || c > '9') return false;
    *v = *v * 10 + (c - '0');
  }
  *pos += n;
  return true;
}

// Days from 1970-01-01 to year-month-day of the proleptic Gregorian calendar.
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

bool LeapYear(int64_t y) { return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0); }

}  // namespace

bool ParseTimestamp(std::string_view s, TimestampText* t) {
  size_t p = 0;
  int64_t year, month, day, hour = 0, minute = 0, second = 0;
  // Years beyond 0000..9999 carry a sign and more digits (ISO 8601 expanded).
  const bool signed_year = !s.empty() && (s[0] == '+' || s[0] == '-');
  if (signed_year) ++p;
  const size_t year_digits = std::min<size_t>(s.find('-', p), s.size()) - p;
  if (year_digits < 4 || year_digits > (signed_year ? 12 : 4) ||
      !Digits(s, &p, static_cast<int>(year_digits), &year)) {
    return false;
  }
  if (signed_year && s[0] == '-') year = -year;
  if (p >= s.size() || s[p++] != '-' || !Digits(s, &p, 2, &month) || p >= s.size() || s[p++] != '-' ||
      !Digits(s, &p, 2, &day)) {
    return false;
  }
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month < 1 || month > 12 || day < 1 || day > kDays[month - 1] + (month == 2 && LeapYear(year))) return false;
  t->nanos = 0;
  t->digits = 0;
  if (p < s.size() && (s[p] == 'T' || s[p] == 't' || s[p] == ' ')) {
    ++p;
    if (!Digits(s, &p, 2, &hour) || p >= s.size() || s[p++] != ':' || !Digits(s, &p, 2, &minute)) return false;
    if (p < s.size() && s[p] == ':') {
      ++p;
      if (!Digits(s, &p, 2, &second)) return false;
      if (p < s.size() && s[p] == '.') {
        ++p;
        while (p < s.size() && s[p] >= '0' && s[p] <= '9') {
          if (++t->digits > 9) return false;
          t->nanos = t->nanos * 10 + (s[p++] - '0');
        }
        if (t->digits == 0) return false;
        for (int k = t->digits; k < 9; ++k) t->nanos *= 10;
      }
    }
    if (hour > 23 || minute > 59 || second > 59) return false;
  }
  int64_t offset = 0;
  if (p < s.size() && (s[p] == 'Z' || s[p] == 'z')) {
    ++p;
  } else if (p < s.size() && (s[p] == '+' || s[p] == '-')) {
    const int64_t sign = s[p++] == '-' ? -1 : 1;
    int64_t oh, om = 0;
    if (!Digits(s, &p, 2, &oh)) return false;
    if (p < s.size() && s[p] == ':') ++p;
    if (p < s.size() && !Digits(s, &p, 2, &om)) return false;
    if (oh > 23 || om > 59) return false;
    offset = sign * (oh * 3600 + om * 60);
  }
  if (p != s.size()) return false;
  int64_t seconds;
  return !__builtin_mul_overflow(DaysFromCivil(year, month, day), 86400, &seconds) &&
         !__builtin_add_overflow(seconds, hour * 3600 + minute * 60 + second - offset, &t->seconds);
}

bool TimestampTicks(const TimestampText& t, FeatureType type, int64_t* ticks) {
  const int64_t per_second = TicksPerSecond(type);
  const int64_t nanos_per_tick = 1000000000 / per_second;
  if (t.nanos % nanos_per_tick != 0) return false;
  int64_t whole;
  return !__builtin_mul_overflow(t.seconds, per_second, &whole) &&
         !__builtin_add_overflow(whole, t.nanos / nanos_per_tick, ticks);
}

}  // namespace pcr
