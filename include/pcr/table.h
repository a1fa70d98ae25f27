// Reading a projection of a table file: only the streams of the requested
// features are read, coalesced into few large reads, checked and decoded.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "pcr/export.h"
#include "pcr/io.h"
#include "pcr/status.h"
#include "pcr/types.h"

namespace pcr {

// Receives each distinct projection a Table reads, for `pcr-dump popularity`
// to aggregate into a stream order.
// Thread safety: Append may be called from several threads at once.
class PCR_EXPORT AccessLogSink {
 public:
  virtual ~AccessLogSink();
  // One projection: its features' names in projection order, the table and
  // the job.
  virtual Status Append(const AccessLogEntry& entry) = 0;
};

// The default sink: appends each projection as one line of the access log
// format (spec section 14) to the file at `path`, opened in append mode for
// each line, so that several processes may share one log.
PCR_EXPORT std::shared_ptr<AccessLogSink> FileAccessLog(std::string path);

// The job a reader names in its access log lines when TableReaderOptions::job
// is empty: $PCR_JOB_ID when set, else "<host name>:<process id>".
PCR_EXPORT std::string DefaultJobId();

struct TableReaderOptions {
  IoEngineOptions io;  // the table's own engine
  // A projection is consumed only once all of it has arrived, so merged
  // reads are not capped: one contiguous run of streams is one read, which
  // the engine still splits into max_io_bytes I/Os in flight together.
  CoalesceOptions coalesce{.max_read = std::numeric_limits<uint64_t>::max()};
  // When set, each distinct projection (set of features) is appended once.
  std::shared_ptr<AccessLogSink> access_log;
  // The job named in access log lines; empty: DefaultJobId(). Give every
  // process of one training job the same id, so that popularity counts the
  // job once.
  std::string job;
};

// True when `path` is a table file, or a directory without a dataset
// manifest holding exactly one .pcr file, a table file (so Table::Open, not
// ImageDataset::Open, should read it), read through an engine made from
// `io`. False for anything else, a file that is no pcr file among them
// (opening it says why); an error when the path cannot be looked at.
PCR_EXPORT Result<bool> IsTablePath(const std::string& path, const IoEngineOptions& io = {});

// Columns of a projection over consecutive stripes, in projection order.
struct TableBatch {
  uint64_t rows = 0;
  std::vector<Column> columns;
  uint64_t bytes_selected = 0;  // stored bytes of the streams read
};

// An open table file.
//
// Thread safety: after Open, every method may be called from several threads
// at once.
//
// Lifetime: a TableLoader made from a table keeps the open table (its file
// and engine) alive; the caller may destroy its Table before the loader.
class PCR_EXPORT Table {
 public:
  // `path` is a table file, or a directory holding exactly one.
  static Result<std::unique_ptr<Table>> Open(const std::string& path, const TableReaderOptions& options = {});

  ~Table();
  Table(const Table&) = delete;
  Table& operator=(const Table&) = delete;

  const TableSchema& schema() const;
  // 16 hex digits identifying the table's contents (spec section 14): its
  // schema, stripes and stream checksums. Equal for a table and its
  // reordered copies, different for other values, even of the same shape.
  const std::string& content_id() const;
  size_t stripe_count() const;
  // Rows of stripe `stripe` (with the earlier stripes' rows, its first row's
  // number); InvalidArgument unless stripe < stripe_count().
  Result<uint64_t> stripe_rows(size_t stripe) const;
  // Feature indices of `names`; InvalidArgument naming the first unknown one.
  Result<std::vector<uint32_t>> Resolve(const std::vector<std::string>& names) const;
  // Every stream of the features over stripes [first, first + count), read in
  // one engine call, checked, decoded.
  Result<TableBatch> Read(std::span<const uint32_t> features, size_t first, size_t count) const;
  // Stored bytes of those streams; InvalidArgument, as Read, for a feature
  // or stripe out of range.
  Result<uint64_t> SelectedBytes(std::span<const uint32_t> features, size_t first, size_t count) const;
  // What the table's engine did: reads, I/Os and bytes actually read.
  IoCounters io_counters() const;

 private:
  // reader/ holds the definition; its internal headers give pcr's own layers
  // what they need of it.
  friend struct ReaderInternals;
  struct Rep;
  explicit Table(std::shared_ptr<Rep> rep);
  std::shared_ptr<Rep> rep_;
};

}  // namespace pcr
