// pcr.Table.
#pragma once

#include "common.h"

namespace pcr_python {

class PyTable {
 public:
  PyTable(const std::filesystem::path& path_arg, const std::string& engine, bool direct, const py::object& remote,
          const std::optional<std::filesystem::path>& access_log, const std::optional<std::string>& job) {
    const std::string path = path_arg.string();
    if (job && !access_log) throw py::value_error("job names the job in access log lines: give access_log too");
    if (job && job->empty()) throw py::value_error("job must not be empty");
    if (access_log) {  // refused now, not at the first read
      std::error_code ec;
      const std::filesystem::path dir = std::filesystem::absolute(*access_log, ec).parent_path();
      if (!std::filesystem::is_directory(dir, ec)) {
        throw py::value_error("access_log " + access_log->string() + ": its directory does not exist");
      }
      if (std::filesystem::is_directory(*access_log, ec)) {
        throw py::value_error("access_log " + access_log->string() + ": a directory; give the log file's path");
      }
    }
    const pcr::TableReaderOptions options{.io = IoOptions(engine, direct, remote),
                                          .access_log = access_log ? pcr::FileAccessLog(access_log->string()) : nullptr,
                                          .job = job.value_or("")};
    table_ = Unlocked([&] { return pcr::Table::Open(path, options); });
  }

  py::list schema() const { return SchemaList(table_->schema()); }
  uint64_t num_rows() const { return table_->schema().row_count; }
  py::dict io_counters() const { return CountersDict(table_->io_counters()); }
  const std::string& content_id() const { return table_->content_id(); }
  size_t num_stripes() const { return table_->stripe_count(); }
  std::vector<uint64_t> stripe_rows() const {
    std::vector<uint64_t> rows(table_->stripe_count());
    for (size_t s = 0; s < rows.size(); ++s) rows[s] = Take(table_->stripe_rows(s));
    return rows;
  }

  // {name: {"values": ..., "presence": ..., ["offsets": ...], ["scores": ...]}}
  py::dict read(const Names& features_arg, size_t first, std::optional<size_t> count) const {
    const std::vector<std::string>& features = features_arg.names;
    const std::vector<uint32_t> index = Take(table_->Resolve(features));
    const size_t n = count.value_or(first <= table_->stripe_count() ? table_->stripe_count() - first : 0);
    pcr::TableBatch batch = Unlocked([&] { return table_->Read(index, first, n); });
    py::dict out;
    for (size_t j = 0; j < features.size(); ++j) {
      py::dict d = ColumnDict(std::move(batch.columns[j]));
      out[py::str(features[j])] = d;
    }
    return out;
  }

  const pcr::Table& table() const { return *table_; }

 private:
  std::unique_ptr<pcr::Table> table_;
};

}  // namespace pcr_python
