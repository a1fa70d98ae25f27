#include "pcr/table_loader.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <list>
#include <map>
#include <mutex>
#include <numeric>
#include <tuple>

#include "format/table_format.h"
#include "loader/epoch.h"
#include "reader/record_reads.h"

namespace pcr {

struct [[gnu::visibility("hidden")]] TableLoader::Rep {
  std::shared_ptr<const Table> table;  // keeps the table open
  std::vector<uint32_t> features;
  EpochOptions epoch;  // this worker's, with its role
  uint64_t seed = 0, epoch_number = 0;
  uint64_t batches = 0;     // the rank's batches per epoch
  uint64_t next_batch = 0;  // the rank's batch number of this worker's next batch
  std::atomic<uint64_t> taken;
  std::vector<uint64_t> first_row;  // of each stripe, and the row count at the end
  RankEpoch plan;
  uint64_t position = 0;                  // the next delivery position of plan.order
  uint64_t end = 0;                       // positions [.., end) are delivered (max_batches)
  std::vector<uint64_t> remaining;        // per stripe: rows still to deliver from it
  std::map<size_t, std::shared_ptr<const TableBatch>> stripes;  // read stripes with rows still to deliver
  std::shared_ptr<StripeCache> cache;

  size_t StripeOf(uint64_t row) const {
    return static_cast<size_t>(std::upper_bound(first_row.begin(), first_row.end(), row) - first_row.begin()) - 1;
  }
};

Result<std::unique_ptr<TableLoader>> TableLoader::Create(const Table& table, const TableLoaderOptions& options,
                                                         const LoaderState& start) {
  const EpochOptions& e = options.epoch;
  PCR_RETURN_IF_ERROR(ValidateEpochOptions(e));
  if (!e.delivered.empty()) {
    return Status::InvalidArgument("a TableLoader resumes on the world size and workers its state was saved on: "
                                   "epoch.delivered must be empty");
  }
  if (options.shuffle_stripes == 0) return Status::InvalidArgument("shuffle_stripes must be at least 1, not 0");
  auto rep = std::make_unique<Rep>();
  if (options.features.empty()) {
    rep->features.resize(table.schema().features.size());
    std::iota(rep->features.begin(), rep->features.end(), uint32_t{0});
  } else {
    PCR_ASSIGN_OR_RETURN(rep->features, table.Resolve(options.features));
  }
  const uint64_t rows = table.schema().row_count;
  rep->batches = BatchCount(rows, e);
  PCR_ASSIGN_OR_RETURN(const LoaderResume resume, ResumeLoader(start, rep->batches, e));
  const uint64_t k = e.num_workers, role = resume.role, skip = resume.skip;
  rep->epoch = e;
  rep->epoch.worker = role;
  std::vector<uint64_t> stripe_rows(table.stripe_count());
  uint64_t total = 0;
  for (size_t s = 0; s < stripe_rows.size(); ++s) {
    stripe_rows[s] = table.stripe_rows(s).value();  // s < stripe_count()
    rep->first_row.push_back(total);
    total += stripe_rows[s];
  }
  rep->first_row.push_back(total);
  rep->plan = PlanRankEpoch(stripe_rows, rep->epoch, start.seed, start.epoch, options.shuffle_stripes);
  rep->position = std::min(skip * e.batch_size, static_cast<uint64_t>(rep->plan.order.size()));
  rep->end = PartEnd(rep->position, rep->plan.order.size(), MaxImages(options.max_batches, e.batch_size));
  rep->remaining.assign(stripe_rows.size(), 0);
  for (uint64_t p = rep->position; p < rep->end; ++p) {
    rep->remaining[rep->StripeOf(rep->plan.input[rep->plan.order[p]])]++;
  }
  rep->table = ShareTable(table);
  rep->cache = options.stripe_cache;
  rep->seed = start.seed;
  rep->epoch_number = start.epoch;
  rep->next_batch = role + skip * k;
  rep->taken = start.batches;
  return std::unique_ptr<TableLoader>(new TableLoader(std::move(rep)));
}

TableLoader::TableLoader(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}
TableLoader::~TableLoader() = default;

uint64_t TableLoader::num_batches() const { return rep_->batches; }
const std::vector<uint32_t>& TableLoader::features() const { return rep_->features; }

LoaderState TableLoader::state() const {
  return {rep_->seed, rep_->epoch_number, rep_->taken.load(), rep_->epoch.num_workers};
}

Result<bool> TableLoader::Next(TableLoaderBatch* batch) {
  if (batch == nullptr) return Status::InvalidArgument("TableLoader::Next: batch is null");
  Rep& r = *rep_;
  if (r.position >= r.end) return false;
  const uint64_t end = std::min(r.end, r.position + r.epoch.batch_size);
  batch->batch = r.next_batch;
  batch->rows.clear();
  struct Source {
    size_t stripe;
    const TableBatch* read;  // held by `stripes` until erased, after the gather
    uint64_t row;            // in the stripe
  };
  std::vector<Source> sources;
  for (uint64_t p = r.position; p < end; ++p) {
    const uint64_t row = r.plan.input[r.plan.order[p]];
    const size_t s = r.StripeOf(row);
    auto it = r.stripes.find(s);
    if (it == r.stripes.end()) {
      std::shared_ptr<const TableBatch> read;
      if (r.cache != nullptr) {
        PCR_ASSIGN_OR_RETURN(read, r.cache->FindOrRead(r.table->content_id(), r.features, s,
                                                       [&] { return r.table->Read(r.features, s, 1); }));
      } else {
        PCR_ASSIGN_OR_RETURN(TableBatch stripe, r.table->Read(r.features, s, 1));
        read = std::make_shared<const TableBatch>(std::move(stripe));
      }
      it = r.stripes.emplace(s, std::move(read)).first;
    }
    sources.push_back({s, it->second.get(), row - r.first_row[s]});
    batch->rows.push_back(row);
  }
  batch->columns.resize(r.features.size());
  std::vector<RowRef> refs(sources.size());
  for (size_t j = 0; j < r.features.size(); ++j) {
    for (size_t i = 0; i < sources.size(); ++i) refs[i] = {&sources[i].read->columns[j], sources[i].row};
    batch->columns[j] = Column(r.table->schema().features[r.features[j]].type);
    GatherRows(refs, &batch->columns[j]);
  }
  for (const Source& src : sources) {
    if (--r.remaining[src.stripe] == 0) r.stripes.erase(src.stripe);
  }
  r.position = end;
  r.next_batch += r.epoch.num_workers;
  r.taken = batch->batch + 1;
  return true;
}

struct StripeCache::Rep {
  using Key = std::tuple<std::string, std::vector<uint32_t>, size_t>;
  struct Reading {  // a read in progress, and its result for the callers waiting on it
    bool done = false;
    Result<std::shared_ptr<const TableBatch>> result = Status::Cancelled("not read");
  };
  std::mutex mu;
  std::condition_variable read_ended;
  size_t max_stripes = 0;
  std::list<std::pair<Key, std::shared_ptr<const TableBatch>>> used;  // most recent first
  std::map<Key, decltype(used)::iterator> index;
  std::map<Key, std::shared_ptr<Reading>> reading;

  void Keep(Key key, std::shared_ptr<const TableBatch> read) {
    if (max_stripes == 0) return;
    used.emplace_front(key, std::move(read));
    index.emplace(std::move(key), used.begin());
    while (used.size() > max_stripes) {
      index.erase(used.back().first);
      used.pop_back();
    }
  }
};

StripeCache::StripeCache(size_t max_stripes) : rep_(std::make_unique<Rep>()) { rep_->max_stripes = max_stripes; }
StripeCache::~StripeCache() = default;

Result<std::shared_ptr<const TableBatch>> StripeCache::FindOrRead(const std::string& content_id,
                                                                  const std::vector<uint32_t>& features,
                                                                  size_t stripe,
                                                                  const std::function<Result<TableBatch>()>& read) {
  Rep& r = *rep_;
  Rep::Key key{content_id, features, stripe};
  std::unique_lock<std::mutex> lock(r.mu);
  if (auto it = r.index.find(key); it != r.index.end()) {
    r.used.splice(r.used.begin(), r.used, it->second);
    return it->second->second;
  }
  if (auto it = r.reading.find(key); it != r.reading.end()) {
    const std::shared_ptr<Rep::Reading> other = it->second;
    r.read_ended.wait(lock, [&] { return other->done; });
    return other->result;
  }
  auto mine = std::make_shared<Rep::Reading>();
  r.reading.emplace(key, mine);
  lock.unlock();
  struct EndRead {  // on every way out, read() throwing included
    Rep& r;
    const Rep::Key& key;
    Rep::Reading& mine;
    ~EndRead() {
      {
        std::lock_guard<std::mutex> ended(r.mu);
        if (mine.result.ok()) r.Keep(key, *mine.result);
        mine.done = true;
        r.reading.erase(key);
      }
      r.read_ended.notify_all();
    }
  } end_read{r, key, *mine};
  Result<TableBatch> got = read();
  if (got.ok()) {
    mine->result = std::make_shared<const TableBatch>(got.MoveValue());
  } else {
    mine->result = got.status();
  }
  return mine->result;
}

void StripeCache::Reserve(size_t max_stripes) {
  std::lock_guard<std::mutex> lock(rep_->mu);
  rep_->max_stripes = std::max(rep_->max_stripes, max_stripes);
}

}  // namespace pcr
