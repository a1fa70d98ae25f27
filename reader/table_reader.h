// Reading a projection of a table file: only the streams of the requested
// features are read, coalesced into few large reads.
#pragma once

#include <limits>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "format/table_format.h"
#include "io/pcr_file.h"
#include "io/read_plan.h"

namespace pcr {

struct TableReaderOptions {
  IoEngine* engine = nullptr;  // not owned; nullptr: MakeIoEngine(io), owned by the table
  IoEngineOptions io;          // used when engine is nullptr
  // A projection is consumed only once all of it has arrived, so merged
  // reads are not capped: one contiguous run of streams is one read, which
  // the engine still splits into max_io_bytes I/Os in flight together.
  CoalesceOptions coalesce{.max_read = std::numeric_limits<uint64_t>::max()};
  // When set, each distinct projection read is appended to this file once
  // (format/popularity.h), for `pcr-dump popularity` to aggregate.
  std::string access_log;
};

// Columns of a projection over consecutive stripes, in projection order.
struct TableBatch {
  uint64_t rows = 0;
  std::vector<Column> columns;
  uint64_t bytes_selected = 0;  // stored bytes of the streams read
};

class Table {
 public:
  // `path` is a table file, or a directory holding exactly one.
  static Result<std::unique_ptr<Table>> Open(const std::string& path, const TableReaderOptions& options = {});

  const TableSchema& schema() const { return file_->index().schema; }
  size_t stripe_count() const { return file_->index().stripes.size(); }
  const PcrFile& file() const { return *file_; }
  IoEngine& engine() const { return *engine_; }

  // Feature indices of `names`; InvalidArgument naming the first unknown one.
  Result<std::vector<uint32_t>> Resolve(const std::vector<std::string>& names) const;
  // Every stream of the features over stripes [first, first + count), read in
  // one engine call, checked, decoded. REQUIRES: first + count <= stripe_count()
  Result<TableBatch> Read(std::span<const uint32_t> features, size_t first, size_t count);
  // Stored bytes of those streams.
  uint64_t SelectedBytes(std::span<const uint32_t> features, size_t first, size_t count) const;
  // Index of the stream holding (feature, role) in `stripe`.
  size_t StreamIndex(size_t stripe, uint32_t feature, StreamRole role) const {
    return stream_of_[stripe][feature * kRoleCount + static_cast<size_t>(role)];
  }

 private:
  Table(std::unique_ptr<IoEngine> owned, IoEngine* engine, TableReaderOptions options)
      : owned_engine_(std::move(owned)), engine_(engine), options_(std::move(options)) {}
  Status LogAccess(std::span<const uint32_t> features);
  // Decompresses feature f's stored streams of stripe s (`stored[role]`) and
  // appends its rows to `column`; errors name the stream.
  Status DecodeFeature(size_t s, uint32_t f, const ByteSpan* stored, Column* column);

  std::unique_ptr<IoEngine> owned_engine_;
  IoEngine* engine_;
  TableReaderOptions options_;
  std::unique_ptr<PcrFile> file_;
  std::vector<std::vector<size_t>> stream_of_;
  std::set<std::vector<uint32_t>> logged_;
  Bytes scratch_[kRoleCount];
};

}  // namespace pcr
