#include "reader/table_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <unordered_map>

#include "format/popularity.h"
#include "format/table_stripe.h"
#include "io/stream_reader.h"

namespace pcr {

Result<std::unique_ptr<Table>> Table::Open(const std::string& path, const TableReaderOptions& options) {
  std::unique_ptr<IoEngine> owned;
  IoEngine* engine = options.engine;
  if (engine == nullptr) {
    PCR_ASSIGN_OR_RETURN(owned, MakeIoEngine(options.io));
    engine = owned.get();
  }
  std::unique_ptr<Table> t(new Table(std::move(owned), engine, options));
  PCR_ASSIGN_OR_RETURN(const std::string file, FindTableFile(path));
  PCR_ASSIGN_OR_RETURN(t->file_, PcrFile::Open(file, engine));
  if (t->file_->header().kind != FileKind::kTable) {
    return Status::InvalidArgument(file + ": not a table file");
  }
  const FileIndex& index = t->file_->index();
  for (const StripeInfo& stripe : index.stripes) {
    t->stream_of_.push_back(stripe.TableStreamIndex(index.schema.features.size()));
  }
  return t;
}

Result<std::vector<uint32_t>> Table::Resolve(const std::vector<std::string>& names) const {
  std::unordered_map<std::string_view, uint32_t> by_name;
  const auto& features = schema().features;
  for (uint32_t f = 0; f < features.size(); ++f) by_name.emplace(features[f].name, f);
  std::vector<uint32_t> out;
  for (const std::string& n : names) {
    const auto it = by_name.find(n);
    if (it == by_name.end()) return Status::InvalidArgument(file_->path() + ": no feature '" + n + "'");
    out.push_back(it->second);
  }
  return out;
}

uint64_t Table::SelectedBytes(std::span<const uint32_t> features, size_t first, size_t count) const {
  uint64_t bytes = 0;
  for (size_t s = first; s < first + count; ++s) {
    const StripeInfo& stripe = file_->index().stripes[s];
    for (const uint32_t f : features) {
      for (const StreamRole role : RolesOf(schema().features[f].type)) {
        bytes += stripe.streams[StreamIndex(s, f, role)].length;
      }
    }
  }
  return bytes;
}

Status Table::LogAccess(std::span<const uint32_t> features) {
  std::vector<uint32_t> key(features.begin(), features.end());
  std::sort(key.begin(), key.end());
  if (!logged_.insert(key).second) return Status::OK();
  std::vector<std::string> names;
  for (const uint32_t f : features) names.push_back(schema().features[f].name);
  const std::string line = FormatAccessLogEntry(names);
  const int fd = open(options_.access_log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IOError("cannot open access log " + options_.access_log + ": " + std::strerror(errno));
  const ssize_t n = write(fd, line.data(), line.size());
  const int err = errno;
  close(fd);
  if (n != static_cast<ssize_t>(line.size())) {
    return Status::IOError("cannot append to access log " + options_.access_log + ": " + std::strerror(err));
  }
  return Status::OK();
}

Result<TableBatch> Table::Read(std::span<const uint32_t> features, size_t first, size_t count) {
  const auto& all = schema().features;
  for (const uint32_t f : features) {
    if (f >= all.size()) return Status::InvalidArgument(file_->path() + ": no feature " + std::to_string(f));
  }
  if (first > stripe_count() || count > stripe_count() - first) {
    return Status::InvalidArgument(file_->path() + ": stripes [" + std::to_string(first) + ", +" +
                                   std::to_string(count) + ") out of " + std::to_string(stripe_count()));
  }
  if (!options_.access_log.empty()) PCR_RETURN_IF_ERROR(LogAccess(features));

  std::vector<StreamRequest> requests;
  for (size_t s = first; s < first + count; ++s) {
    for (const uint32_t f : features) {
      for (const StreamRole role : RolesOf(all[f].type)) requests.push_back({file_.get(), s, StreamIndex(s, f, role)});
    }
  }
  PCR_ASSIGN_OR_RETURN(std::vector<Bytes> stored, ReadStreams(*engine_, requests, options_.coalesce));

  TableBatch batch;
  for (const uint32_t f : features) batch.columns.emplace_back(all[f].type);
  size_t next = 0;
  for (size_t s = first; s < first + count; ++s) {
    batch.rows += file_->index().stripes[s].row_count;
    for (size_t j = 0; j < features.size(); ++j) {
      ByteSpan stored_by_role[kRoleCount];
      for (const StreamRole role : RolesOf(all[features[j]].type)) {
        stored_by_role[static_cast<size_t>(role)] = stored[next];
        batch.bytes_selected += stored[next].size();
        ++next;
      }
      PCR_RETURN_IF_ERROR(DecodeFeature(s, features[j], stored_by_role, &batch.columns[j]));
    }
  }
  return batch;
}

Status Table::DecodeFeature(size_t s, uint32_t f, const ByteSpan* stored, Column* column) {
  return DecodeStoredFeature(file_->path(), schema(), file_->index().stripes[s], s, stream_of_[s], f, stored, scratch_,
                             column);
}

}  // namespace pcr
