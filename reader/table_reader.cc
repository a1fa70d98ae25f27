#include "reader/table_rep.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <unordered_map>

#include "format/popularity.h"
#include "format/table_stripe.h"
#include "io/location.h"
#include "io/read_executor.h"

namespace pcr {

namespace {

class FileAccessLogSink final : public AccessLogSink {
 public:
  explicit FileAccessLogSink(std::string path) : path_(std::move(path)) {}
  Status Append(const AccessLogEntry& entry) override {
    const std::string line = FormatAccessLogEntry(entry);
    const int fd = open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return Status::IOError("cannot open access log " + path_ + ": " + std::strerror(errno));
    const ssize_t n = write(fd, line.data(), line.size());
    const int err = errno;
    close(fd);
    if (n != static_cast<ssize_t>(line.size())) {
      return Status::IOError("cannot append to access log " + path_ + ": " + std::strerror(err));
    }
    return Status::OK();
  }

 private:
  const std::string path_;
};

}  // namespace

AccessLogSink::~AccessLogSink() = default;

std::shared_ptr<AccessLogSink> FileAccessLog(std::string path) {
  return std::make_shared<FileAccessLogSink>(std::move(path));
}

std::string DefaultJobId() {
  if (const char* job = std::getenv("PCR_JOB_ID"); job != nullptr && *job != '\0') return job;
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) std::strcpy(host, "localhost");
  return std::string(host) + ":" + std::to_string(getpid());
}

Result<bool> IsTablePath(const std::string& path, const IoEngineOptions& io) {
  PCR_ASSIGN_OR_RETURN(const Location where, Locate(path));
  const Result<std::string> file = where.TableFile();  // an error for a dataset
  if (!file.ok()) return false;
  PCR_ASSIGN_OR_RETURN(auto engine, MakeIoEngine(io));
  // A file that is no pcr file is no table; opening it says why.
  const Result<FileKind> kind = ReadFileKind(*file, *engine);
  return kind.ok() && *kind == FileKind::kTable;
}

Table::Table(std::shared_ptr<Rep> rep) : rep_(std::move(rep)) {}
Table::~Table() = default;

Result<std::unique_ptr<Table>> Table::Open(const std::string& path, const TableReaderOptions& options) {
  return Rep::Open(path, options, nullptr);
}

namespace {
// Read buffers a table keeps between reads: enough for as many threads.
constexpr size_t kSpareReads = 4;
constexpr std::string_view kNotATable = ", not a table: open it as an image dataset (pcr::ImageDataset, "
                                        "pcr.ImageDataset in Python)";
}  // namespace

Result<std::unique_ptr<Table>> Table::Rep::Open(const std::string& path, const TableReaderOptions& options,
                                                IoEngine* engine) {
  std::unique_ptr<IoEngine> owned;
  if (engine == nullptr) {
    PCR_ASSIGN_OR_RETURN(owned, MakeIoEngine(options.io));
    engine = owned.get();
  }
  PCR_ASSIGN_OR_RETURN(const Location where, Locate(path));
  if (where.dataset_manifest) return Status::InvalidArgument(path + ": an image dataset" + std::string(kNotATable));
  PCR_ASSIGN_OR_RETURN(const std::string file, where.TableFile());
  PCR_ASSIGN_OR_RETURN(auto opened, PcrFile::Open(file, engine));
  return FromFile(std::move(opened), options, engine, std::move(owned));
}

Result<std::unique_ptr<Table>> Table::Rep::FromFile(std::unique_ptr<PcrFile> file, const TableReaderOptions& options,
                                                    IoEngine* engine, std::unique_ptr<IoEngine> owned) {
  const std::string path = file->path();
  if (file->header().kind == FileKind::kImages) {
    return Status::InvalidArgument(path + ": image records" + std::string(kNotATable));
  }
  if (file->header().kind != FileKind::kTable) return Status::InvalidArgument(path + ": not a table file");
  auto rep = std::make_shared<Rep>();
  Rep* t = rep.get();
  std::unique_ptr<Table> table(new Table(std::move(rep)));
  t->options = options;
  t->engine = engine;
  t->owned_engine = std::move(owned);
  t->file = std::move(file);
  const FileIndex& index = t->file->index();
  for (const StripeInfo& stripe : index.stripes) {
    t->stream_of.push_back(stripe.TableStreamIndex(index.schema.features.size()));
  }
  t->content_id = TableContentId(index);
  if (t->options.access_log && t->options.job.empty()) t->options.job = DefaultJobId();
  return table;
}

const TableSchema& Table::schema() const { return rep_->file->index().schema; }
const std::string& Table::content_id() const { return rep_->content_id; }
size_t Table::stripe_count() const { return rep_->file->index().stripes.size(); }
Result<uint64_t> Table::stripe_rows(size_t stripe) const {
  if (stripe >= stripe_count()) {
    return Status::InvalidArgument(rep_->file->path() + ": stripe " + std::to_string(stripe) + " out of range (" +
                                   std::to_string(stripe_count()) + " stripes)");
  }
  return rep_->file->index().stripes[stripe].row_count;
}
IoCounters Table::io_counters() const { return rep_->engine->counters(); }

Result<std::vector<uint32_t>> Table::Resolve(const std::vector<std::string>& names) const {
  std::unordered_map<std::string_view, uint32_t> by_name;
  const auto& features = schema().features;
  for (uint32_t f = 0; f < features.size(); ++f) by_name.emplace(features[f].name, f);
  std::vector<uint32_t> out;
  for (const std::string& n : names) {
    const auto it = by_name.find(n);
    if (it == by_name.end()) {
      // A name that differs only in case or punctuation is suggested.
      auto folded = [](std::string_view s) {
        std::string out;
        for (const char c : s) {
          if (std::isalnum(static_cast<unsigned char>(c))) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        }
        return out;
      };
      for (const FeatureInfo& f : features) {
        if (folded(f.name) == folded(n)) {
          return Status::InvalidArgument(rep_->file->path() + ": no feature '" + n + "'; did you mean '" + f.name +
                                         "'?");
        }
      }
      constexpr size_t kListed = 20;
      std::string known;
      for (size_t f = 0; f < std::min(features.size(), kListed); ++f) {
        known += (f ? ", " : "") + features[f].name;
      }
      if (features.size() > kListed) known += ", ... (" + std::to_string(features.size()) + " in all)";
      return Status::InvalidArgument(rep_->file->path() + ": no feature '" + n + "' (features: " +
                                     (known.empty() ? "none" : known) + ")");
    }
    out.push_back(it->second);
  }
  return out;
}

Status Table::Rep::CheckProjection(std::span<const uint32_t> features, size_t first, size_t count) const {
  const size_t stripes = file->index().stripes.size();
  for (const uint32_t f : features) {
    if (f >= file->index().schema.features.size()) {
      return Status::InvalidArgument(file->path() + ": no feature " + std::to_string(f) + " (" +
                                     std::to_string(file->index().schema.features.size()) + " features)");
    }
  }
  if (first > stripes || count > stripes - first) {
    return Status::InvalidArgument(file->path() + ": stripes [" + std::to_string(first) + ", +" +
                                   std::to_string(count) + ") out of " + std::to_string(stripes));
  }
  return Status::OK();
}

Result<uint64_t> Table::SelectedBytes(std::span<const uint32_t> features, size_t first, size_t count) const {
  PCR_RETURN_IF_ERROR(rep_->CheckProjection(features, first, count));
  uint64_t bytes = 0;
  for (size_t s = first; s < first + count; ++s) {
    const StripeInfo& stripe = rep_->file->index().stripes[s];
    for (const uint32_t f : features) {
      for (const StreamRole role : RolesOf(schema().features[f].type)) {
        bytes += stripe.streams[rep_->StreamIndex(s, f, role)].length;
      }
    }
  }
  return bytes;
}

Status Table::Rep::LogAccess(std::span<const uint32_t> features) const {
  std::vector<uint32_t> key(features.begin(), features.end());
  std::sort(key.begin(), key.end());
  {
    std::lock_guard lock(mu);
    if (!logged.insert(key).second) return Status::OK();
  }
  AccessLogEntry entry{.table = file->path(), .table_id = content_id, .job = options.job};
  for (const uint32_t f : features) entry.features.push_back(file->index().schema.features[f].name);
  Status appended = options.access_log->Append(entry);
  if (!appended.ok()) {
    std::lock_guard lock(mu);
    logged.erase(key);  // the next read of this projection tries again
  }
  return appended;
}

namespace {

// Large buffers fault in huge pages where the kernel gives them on request
// (transparent_hugepage "madvise"): a read's columns are written once, at
// a page fault per 2 MiB instead of per 4 KiB.
template <typename V>
void AdviseHugePages(const V& v) {
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  const auto begin = (reinterpret_cast<uintptr_t>(v.data()) + kHuge - 1) & ~(kHuge - 1);
  const auto end = (reinterpret_cast<uintptr_t>(v.data() + v.capacity())) & ~(kHuge - 1);
  if (begin < end) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

// Room in `columns` for the rows and values of stripes [first, first +
// count), from the index: a read grows each column once, not per stripe.
void ReserveColumns(const PcrFile& file, const std::vector<std::vector<size_t>>& stream_of,
                    std::span<const uint32_t> features, size_t first, size_t count, std::vector<Column>* columns) {
  const auto& stripes = file.index().stripes;
  const auto& all = file.index().schema.features;
  uint64_t rows = 0;
  for (size_t s = first; s < first + count; ++s) rows += stripes[s].row_count;
  for (size_t j = 0; j < features.size(); ++j) {
    const FeatureType type = all[features[j]].type;
    Column& c = (*columns)[j];
    uint64_t values = 0;
    for (size_t s = first; s < first + count; ++s) {
      const size_t k = stream_of[s][features[j] * kRoleCount + static_cast<size_t>(StreamRole::kValues)];
      if (k != SIZE_MAX) values += stripes[s].table_streams[k].raw_length;
    }
    c.present.reserve(rows);
    if (IsScalarType(type)) {
      if (type == FeatureType::kFloat64) {
        c.doubles.reserve(rows);
        AdviseHugePages(c.doubles);
      } else if (type == FeatureType::kFloat32) {
        c.floats.reserve(rows);
        AdviseHugePages(c.floats);
      } else {
        c.ints.reserve(rows);
        AdviseHugePages(c.ints);
      }
      continue;
    }
    c.offsets.reserve(rows + 1);
    if (IsStringType(type)) continue;  // a dictionary's raw length is not the strings'
    const uint64_t elements = values / RawValueBytes(type);
    if (type == FeatureType::kFloat32List) {
      c.floats.reserve(elements);
    } else if (type == FeatureType::kFloat64List) {
      c.doubles.reserve(elements);
    } else {
      c.ints.reserve(elements);
    }
  }
}

}  // namespace

Result<TableBatch> Table::Read(std::span<const uint32_t> features, size_t first, size_t count) const {
  const Rep& t = *rep_;
  const auto& all = schema().features;
  PCR_RETURN_IF_ERROR(t.CheckProjection(features, first, count));
  if (t.options.access_log) PCR_RETURN_IF_ERROR(t.LogAccess(features));

  std::vector<ReadRange> ranges;
  for (size_t s = first; s < first + count; ++s) {
    for (const uint32_t f : features) {
      for (const StreamRole role : RolesOf(all[f].type)) ranges.push_back(StreamRange(*t.file, s, t.StreamIndex(s, f, role)));
    }
  }
  std::unique_ptr<ReadBatch> spare;
  {
    std::lock_guard lock(t.mu);
    if (!t.spare_reads.empty()) {
      spare = std::move(t.spare_reads.back());
      t.spare_reads.pop_back();
    }
  }
  if (!spare) spare = std::make_unique<ReadBatch>();
  struct GiveBack {  // the buffers go back for the next read, however this one ends
    const Rep& t;
    std::unique_ptr<ReadBatch>& batch;
    ~GiveBack() {
      std::lock_guard lock(t.mu);
      if (t.spare_reads.size() < kSpareReads) t.spare_reads.push_back(std::move(batch));
    }
  } give_back{t, spare};
  ReadBatch& stored = *spare;
  PCR_RETURN_IF_ERROR(ExecuteReads(*t.engine, ranges, t.options.coalesce, &stored));

  TableBatch batch;
  Bytes scratch[kRoleCount + 1];
  for (const uint32_t f : features) batch.columns.emplace_back(all[f].type);
  try {
    ReserveColumns(*t.file, t.stream_of, features, first, count, &batch.columns);
  } catch (const std::exception&) {  // more than memory holds: decoding says what is wrong
  }
  size_t next = 0;
  for (size_t s = first; s < first + count; ++s) {
    const StripeInfo& stripe = t.file->index().stripes[s];
    batch.rows += stripe.row_count;
    for (size_t j = 0; j < features.size(); ++j) {
      ByteSpan stored_by_role[kRoleCount];
      for (const StreamRole role : RolesOf(all[features[j]].type)) {
        stored_by_role[static_cast<size_t>(role)] = stored[next];
        batch.bytes_selected += stored[next].size();
        ++next;
      }
      PCR_RETURN_IF_ERROR(DecodeStoredFeature(t.file->path(), schema(), stripe, s, t.stream_of[s], features[j],
                                              stored_by_role, scratch, &batch.columns[j]));
    }
  }
  return batch;
}

}  // namespace pcr
