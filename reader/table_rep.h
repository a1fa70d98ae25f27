// The inside of a Table, for reader/'s own units only.
#pragma once

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "format/table_format.h"
#include "io/io_engine.h"
#include "io/pcr_file.h"
#include "io/read_executor.h"
#include "pcr/table.h"
#include "reader/internals.h"

namespace pcr {

struct [[gnu::visibility("hidden")]] Table::Rep {
  // Opens `path` reading through `engine` (not owned; nullptr: an engine of
  // its own from options.io).
  static Result<std::unique_ptr<Table>> Open(const std::string& path, const TableReaderOptions& options,
                                             IoEngine* engine);
  // The table file `file`, read through `engine` (which `owned`, when given,
  // is); an error for a file of another kind.
  static Result<std::unique_ptr<Table>> FromFile(std::unique_ptr<PcrFile> file, const TableReaderOptions& options,
                                                 IoEngine* engine, std::unique_ptr<IoEngine> owned = nullptr);

  // Index of the stream holding (feature, role) in `stripe`.
  size_t StreamIndex(size_t stripe, uint32_t feature, StreamRole role) const {
    return stream_of[stripe][feature * kRoleCount + static_cast<size_t>(role)];
  }
  Status LogAccess(std::span<const uint32_t> features) const;
  // InvalidArgument, naming the file, unless every feature is in the schema
  // and [first, first + count) within the stripes.
  Status CheckProjection(std::span<const uint32_t> features, size_t first, size_t count) const;

  std::unique_ptr<IoEngine> owned_engine;
  IoEngine* engine = nullptr;
  TableReaderOptions options;
  std::unique_ptr<PcrFile> file;
  std::vector<std::vector<size_t>> stream_of;
  std::string content_id;
  mutable std::mutex mu;                            // guards logged and spare_reads
  mutable std::set<std::vector<uint32_t>> logged;  // projections already appended to the access log
  // Read buffers of finished reads, for the next ones: a fresh buffer of a
  // large coalesced read costs a page fault per 4 KiB.
  mutable std::vector<std::unique_ptr<ReadBatch>> spare_reads;
};

}  // namespace pcr
