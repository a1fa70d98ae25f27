// Batches of table rows for training (recommendation models): one rank's
// (and one worker's) share of an epoch, shuffled, resumable from a small
// state. pcr.torch.TableLoader is this loader.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "pcr/export.h"
#include "pcr/image_loader.h"
#include "pcr/sample_iterator.h"
#include "pcr/status.h"
#include "pcr/table.h"
#include "pcr/types.h"

namespace pcr {

// Stripes of projections read by the TableLoaders that share it, kept
// for the next of them: pcr.dask.RemoteLoader makes one loader for each
// run of batches, and runs of one shuffle window need its stripes again.
// Holds at most max_stripes, the least recently used dropped first.
// Thread safety: any thread.
class PCR_EXPORT StripeCache {
 public:
  explicit StripeCache(size_t max_stripes);
  ~StripeCache();
  StripeCache(const StripeCache&) = delete;
  StripeCache& operator=(const StripeCache&) = delete;

  // The stripe of the table with this content id read with this
  // projection: the one held, or else what `read` returns, kept. Callers
  // asking for a stripe while another thread reads it wait for that read
  // and get its result, error included. `read` runs on the calling thread
  // without the cache's lock; an error is not kept, so a later call reads
  // again.
  Result<std::shared_ptr<const TableBatch>> FindOrRead(const std::string& content_id,
                                                       const std::vector<uint32_t>& features, size_t stripe,
                                                       const std::function<Result<TableBatch>()>& read);
  // Holds at most max(max_stripes, the current bound) from now on.
  void Reserve(size_t max_stripes);

 private:
  struct Rep;
  std::unique_ptr<Rep> rep_;
};

struct TableLoaderOptions {
  // Rank, world size, batch size, workers, uneven shares and shuffling as
  // for images, with rows for images and stripes for records: each epoch
  // permutes the stripes. epoch.shuffle_buffer is not used: each worker
  // cuts its run of the stripes into windows of `shuffle_stripes` stripes
  // and delivers each window's rows in a uniformly random order, so that a
  // table written sorted (by date, say) still gives batches of rows from
  // far apart. A worker's batches are the rank's batches start + worker,
  // start + worker + num_workers, ... epoch.delivered must be empty: a
  // table loader resumes only where it was saved.
  EpochOptions epoch;
  // Memory holds about this many stripes of the projection per worker.
  uint64_t shuffle_stripes = 8;
  // This worker's batches delivered at most, from the start on (0: to the
  // end of the epoch): a part of the share, with no stripe read for rows
  // after it.
  uint64_t max_batches = 0;
  // Stripes are looked up here before they are read, and kept here after.
  std::shared_ptr<StripeCache> stripe_cache = nullptr;
  std::vector<std::string> features;  // the projection; empty: every feature
};

// One batch: N rows (batch_size but for a rank's last batch under
// UnevenShares::kPad), one column per feature, row j of each being table
// row rows[j].
struct TableLoaderBatch {
  uint64_t batch = 0;  // the rank's batch number in the epoch, from 0
  std::vector<uint64_t> rows;
  std::vector<Column> columns;
};

// Thread safety: Next() may be called from one thread at a time; state()
// and num_batches() from any thread. The loader keeps the table open
// (Table, Lifetime): it reads through it, so the table's access log records
// the projection.
class PCR_EXPORT TableLoader {
 public:
  // Checks every option (InvalidArgument naming it and its range), the
  // feature names, and that `start` fits: its batches at most num_batches(),
  // its num_workers (when known) equal to the options'.
  static Result<std::unique_ptr<TableLoader>> Create(const Table& table, const TableLoaderOptions& options,
                                                     const LoaderState& start = {});
  ~TableLoader();
  TableLoader(const TableLoader&) = delete;
  TableLoader& operator=(const TableLoader&) = delete;

  // Fills `batch` with this worker's next batch; false at the end of the
  // epoch. Each stripe is read once (or found in options.stripe_cache),
  // when its first row is needed, and dropped after its last. A read error
  // names the table and stripe and ends the iteration.
  // InvalidArgument when batch is null.
  Result<bool> Next(TableLoaderBatch* batch);
  // The state after the last batch Next() returned, or the start before any.
  LoaderState state() const;
  // The rank's batches per epoch, the same on every rank and for any number
  // of workers.
  uint64_t num_batches() const;
  // The projection's feature indices, in the order of the batches' columns.
  const std::vector<uint32_t>& features() const;

 private:
  struct Rep;
  explicit TableLoader(std::unique_ptr<Rep> rep);
  std::unique_ptr<Rep> rep_;
};

}  // namespace pcr
