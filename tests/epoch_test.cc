// Distributed reading: rank shares, deterministic shuffling and resumption.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "format/permutation.h"
#include "loader/epoch.h"
#include "reader/inspect.h"
#include "pcr/sample_iterator.h"
#include "test_util.h"
#include "pcr/convert.h"

namespace pcr {
namespace {

using test::DataDir;
using test::TempDir;

// Record layouts: even, ragged (a converter's short last record and records
// shortened by skipped images), and fewer records than ranks.
const std::vector<std::vector<uint64_t>> kLayouts = {
    {4, 4, 4, 4, 4, 4}, {7, 7, 3, 7, 1, 7, 5}, {5, 5, 5}, {1}, {2, 9}};

uint64_t Total(const std::vector<uint64_t>& sizes) {
  uint64_t t = 0;
  for (uint64_t s : sizes) t += s;
  return t;
}

// A rank's batches as its workers deliver them taken in turn (batch b from
// worker b % workers), each as dataset-wide image indices.
std::vector<std::vector<uint64_t>> RankBatches(const std::vector<uint64_t>& sizes, EpochOptions o, uint64_t workers) {
  std::vector<std::vector<std::vector<uint64_t>>> per_worker(workers);
  o.num_workers = workers;
  for (uint64_t w = 0; w < workers; ++w) {
    o.worker = w;
    const RankEpoch plan = PlanRankEpoch(sizes, o, 17, 3);
    REQUIRE(plan.order.size() == plan.input.size());
    std::vector<uint64_t> sorted = plan.order;
    std::sort(sorted.begin(), sorted.end());
    for (uint64_t q = 0; q < sorted.size(); ++q) REQUIRE(sorted[q] == q);  // a permutation
    for (uint64_t q = 0; q < plan.order.size(); q += o.batch_size) {
      auto& batch = per_worker[w].emplace_back();
      for (uint64_t p = q; p < std::min<uint64_t>(q + o.batch_size, plan.order.size()); ++p) {
        batch.push_back(plan.input[plan.order[p]]);
      }
    }
  }
  std::vector<std::vector<uint64_t>> out;
  for (uint64_t round = 0;; ++round) {
    bool any = false;
    for (uint64_t w = 0; w < workers; ++w) {
      if (round < per_worker[w].size()) {
        out.push_back(per_worker[w][round]);
        any = true;
      }
    }
    if (!any) return out;
  }
}

TEST_CASE("ranks get disjoint, complete and equal shares, whatever the workers") {
  for (const auto& sizes : kLayouts) {
    const uint64_t total = Total(sizes);
    for (uint64_t world : {1, 2, 3, 8}) {
      for (uint64_t batch : {1, 2, 3}) {
        for (UnevenShares uneven : {UnevenShares::kPad, UnevenShares::kDrop}) {
          for (uint64_t workers : {1, 2, 3}) {
            INFO("layout of " << total << " images, world " << world << ", batch " << batch << ", "
                              << (uneven == UnevenShares::kPad ? "pad" : "drop") << ", workers " << workers);
            std::map<uint64_t, uint64_t> times;  // image -> deliveries over all ranks
            for (uint64_t rank = 0; rank < world; ++rank) {
              const EpochOptions o{.rank = rank, .world_size = world, .batch_size = batch, .uneven = uneven,
                                   .shuffle_buffer = 5};
              const auto batches = RankBatches(sizes, o, workers);
              CHECK(batches.size() == BatchesPerRank(total, o).value());  // equal on every rank
              uint64_t images = 0;
              for (size_t b = 0; b < batches.size(); ++b) {
                // Every batch is full but a rank's last.
                if (b + 1 < batches.size()) CHECK(batches[b].size() == batch);
                CHECK((!batches[b].empty() && batches[b].size() <= batch));
                images += batches[b].size();
                for (uint64_t i : batches[b]) {
                  REQUIRE(i < total);
                  times[i]++;
                }
              }
              CHECK(images == ImagesPerRank(total, o));
              // The rank's images do not depend on its workers.
              std::multiset<uint64_t> mine, alone;
              for (const auto& v : batches) mine.insert(v.begin(), v.end());
              for (const auto& v : RankBatches(sizes, o, 1)) alone.insert(v.begin(), v.end());
              CHECK(mine == alone);
            }
            const EpochOptions any{.world_size = world, .batch_size = batch, .uneven = uneven};
            const uint64_t per_rank = ImagesPerRank(total, any);
            if (uneven == UnevenShares::kDrop) {
              CHECK(per_rank == total / (world * batch) * batch);
              for (const auto& [image, n] : times) CHECK(n == 1);  // disjoint
              CHECK(times.size() == world * per_rank);
            } else {
              CHECK(per_rank == (total + world - 1) / world);
              CHECK(times.size() == total);  // complete
              // As DistributedSampler: at most world - 1 repeats, spread evenly.
              CHECK(world * per_rank - total <= world - 1);
              const uint64_t most = (world * per_rank + total - 1) / total;
              for (const auto& [image, n] : times) CHECK(n <= most);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("an epoch resumed on other world sizes and workers delivers every image, repeating only padding") {
  const std::vector<uint64_t> sizes = {7, 7, 3, 7, 1, 7, 5, 9, 4};  // 50 images
  const uint64_t total = Total(sizes), batch = 3;
  // Each run: (world size, workers, batches each rank delivers before the
  // next resume; the last runs to the end).
  using Run = std::tuple<uint64_t, uint64_t, uint64_t>;
  for (const std::vector<Run>& runs : std::vector<std::vector<Run>>{{{1, 1, 5}, {2, 2, 0}},
                                                                   {{2, 2, 3}, {3, 1, 0}},
                                                                   {{4, 2, 2}, {2, 3, 0}},
                                                                   {{2, 1, 0}, {3, 2, 0}},
                                                                   {{3, 2, 1}, {1, 1, 4}, {2, 2, 0}},
                                                                   {{2, 2, 9}, {3, 1, 0}}}) {
    for (const bool shuffle : {true, false}) {
      std::map<uint64_t, uint64_t> times;
      EpochOptions o{.batch_size = batch, .shuffle = shuffle, .shuffle_buffer = 5};
      uint64_t padding = 0;
      for (size_t i = 0; i < runs.size(); ++i) {
        const auto [world, workers, stop] = runs[i];
        const bool last = i + 1 == runs.size();
        const uint64_t images = EpochImages(sizes, o, 17, 3);
        o.world_size = world;
        padding += ImagesPerRank(images, o) * world - images;
        for (uint64_t rank = 0; rank < world; ++rank) {
          o.rank = rank;
          const std::vector<std::vector<uint64_t>> batches = RankBatches(sizes, o, workers);
          REQUIRE(batches.size() == BatchesPerRank(images, o).value());
          for (uint64_t b = 0; b < batches.size() && (last || b < stop); ++b) {
            for (uint64_t image : batches[b]) ++times[image];
          }
        }
        o.rank = 0;
        o.delivered.push_back({world, workers, stop});
      }
      INFO("shuffle " << shuffle << ", first world " << std::get<0>(runs[0]));
      REQUIRE(times.size() == total);  // none lost
      uint64_t repeats = 0;
      for (const auto& [image, n] : times) repeats += n - 1;
      CHECK(repeats <= padding);
    }
  }
  // The remainder is a function of what was delivered, whatever resumes it.
  const EpochOptions after{.world_size = 3, .batch_size = batch, .delivered = {{2, 2, 4}}};
  CHECK(EpochImages(sizes, after, 17, 3) == total - 2 * 4 * batch);
  CHECK(PlanRankEpoch(sizes, after, 17, 3).input == PlanRankEpoch(sizes, after, 17, 3).input);
  EpochOptions bad = after;
  bad.delivered[0].num_workers = 0;
  CHECK(ValidateEpochOptions(bad).message().find("a delivered part of the epoch: num_workers") != std::string::npos);
}

TEST_CASE("workers read contiguous parts of their rank's share") {
  const std::vector<uint64_t> sizes(12, 10);
  const EpochOptions rank{.rank = 1, .world_size = 2, .batch_size = 8};
  std::vector<uint64_t> joined;
  for (uint64_t w = 0; w < 3; ++w) {
    EpochOptions o = rank;
    o.worker = w;
    o.num_workers = 3;
    const RankEpoch plan = PlanRankEpoch(sizes, o, 4, 0);
    joined.insert(joined.end(), plan.input.begin(), plan.input.end());
  }
  CHECK(joined == PlanRankEpoch(sizes, rank, 4, 0).input);
  // 60 images in batches of 8: 8 batches, the last of 4; workers take 3, 3 and 2.
  const WorkerRun last = WorkerShare(60, {.batch_size = 8, .worker = 1, .num_workers = 3});
  CHECK(last.offset == 24);
  CHECK(last.count == 20);
}

TEST_CASE("ranks read whole records except at the ends of their runs") {
  const std::vector<uint64_t> sizes(40, 10);
  std::vector<uint64_t> first(sizes.size());
  for (size_t r = 1; r < sizes.size(); ++r) first[r] = first[r - 1] + sizes[r - 1];
  std::map<uint64_t, std::set<uint64_t>> readers;  // record -> ranks
  for (uint64_t rank = 0; rank < 6; ++rank) {
    const RankEpoch plan = PlanRankEpoch(sizes, {.rank = rank, .world_size = 6}, 1, 0);
    for (uint64_t image : plan.input) readers[image / 10].insert(rank);
  }
  uint64_t shared = 0;
  for (const auto& [record, ranks] : readers) shared += ranks.size() > 1;
  // Six runs of 400/6 images have five inner boundaries and one wrap.
  CHECK(shared <= 6);
  CHECK(readers.size() == 40);
}

TEST_CASE("the shuffle is a function of seed, epoch and world size") {
  const std::vector<uint64_t> sizes = {7, 7, 3, 7, 1, 7, 5, 8, 8};
  const EpochOptions o{.rank = 1, .world_size = 3, .batch_size = 2, .shuffle_buffer = 6};
  auto delivered = [&](const EpochOptions& opts, uint64_t seed, uint64_t epoch) {
    const RankEpoch p = PlanRankEpoch(sizes, opts, seed, epoch);
    std::vector<uint64_t> out;
    for (uint64_t q : p.order) out.push_back(p.input[q]);
    return out;
  };
  CHECK(delivered(o, 5, 2) == delivered(o, 5, 2));
  CHECK(delivered(o, 5, 2) != delivered(o, 5, 3));
  CHECK(delivered(o, 5, 2) != delivered(o, 6, 2));
  EpochOptions wider = o;
  wider.world_size = 4;
  CHECK(delivered(wider, 5, 2) != delivered(o, 5, 2));
  CHECK(delivered(wider, 5, 2) == delivered(wider, 5, 2));
  EpochOptions in_order = o;
  in_order.shuffle = false;
  const auto plain = delivered(in_order, 5, 2);
  CHECK(plain == delivered(in_order, 9, 7));
  // Rank 1 of 3 takes the second third of the images, in dataset order.
  for (size_t i = 0; i < plain.size(); ++i) CHECK(plain[i] == plain.size() + i);

  // The buffer never delivers an image before it could have arrived.
  const RankEpoch p = PlanRankEpoch(sizes, o, 5, 2);
  for (uint64_t q = 0; q < p.order.size(); ++q) CHECK(p.order[q] <= q + o.shuffle_buffer);

  // The generator is splitmix64: its published first output for seed 0.
  CHECK(SplitMix64(0).Next() == 0xe220a8397b1dcdafULL);
}

TEST_CASE("windows of records are each delivered whole, in a uniformly random order") {
  const std::vector<uint64_t> sizes = {7, 7, 3, 7, 1, 7, 5, 8, 8};
  for (const uint64_t mix : {1, 2, 3, 9, 20}) {
    for (const uint64_t rank : {0, 1, 2}) {
      INFO("mix " << mix << ", rank " << rank);
      const EpochOptions o{.rank = rank, .world_size = 3, .batch_size = 2};
      const RankEpoch p = PlanRankEpoch(sizes, o, 5, 2, mix);
      REQUIRE(p.order.size() == p.input.size());
      // The run's record changes where the next index does not follow; a
      // window holds `mix` runs, so no position leaves its window.
      std::vector<uint64_t> window(p.input.size());
      uint64_t runs = 1;
      for (size_t q = 1; q < p.input.size(); ++q) {
        uint64_t record = 0, start = 0;
        while (start + sizes[record] <= p.input[q]) start += sizes[record++];
        if (p.input[q] != p.input[q - 1] + 1 || p.input[q] == start) ++runs;
        window[q] = (runs - 1) / mix;
      }
      std::vector<uint64_t> seen = p.order;
      std::sort(seen.begin(), seen.end());
      for (size_t q = 0; q < seen.size(); ++q) CHECK(seen[q] == q);  // a permutation
      for (size_t q = 0; q < p.order.size(); ++q) CHECK(window[p.order[q]] == window[q]);
      const RankEpoch again = PlanRankEpoch(sizes, o, 5, 2, mix);
      CHECK(again.order == p.order);
    }
  }
  // Every order of a window is as likely: over many epochs, each of the
  // 7 rows of a one-record window is first about 1/7 of the time.
  const std::vector<uint64_t> one = {7};
  std::vector<int> first(7);
  for (uint64_t epoch = 0; epoch < 7000; ++epoch) first[PlanRankEpoch(one, {}, 1, epoch, 4).order[0]]++;
  for (const int n : first) CHECK(std::abs(n - 1000) < 150);
  // Not shuffling: dataset order, windows or not.
  const RankEpoch plain = PlanRankEpoch(sizes, {.shuffle = false}, 5, 2, 3);
  for (size_t q = 0; q < plain.order.size(); ++q) CHECK(plain.order[q] == q);
}

TEST_CASE("iteration state round-trips as text") {
  const IterationState s{.seed = 42, .epoch = 7, .position = 1536};
  CHECK(s.ToString() == "seed=42 epoch=7 position=1536");
  auto back = IterationState::Parse(s.ToString());
  REQUIRE(back.ok());
  CHECK(*back == s);
  for (const char* bad : {"", "seed=1 epoch=2", "seed=1 epoch=2 position=", "seed=1 epoch=2 position=3 ",
                          "seed=-1 epoch=2 position=3", "epoch=2 seed=1 position=3"}) {
    INFO(bad);
    CHECK_FALSE(IterationState::Parse(bad).ok());
  }
}

// The sample converted into records of 3 (8 records of 24 images).
class SampleDataset {
 public:
  SampleDataset() {
    REQUIRE(ConvertImages({.src_dir = DataDir() + "/sample", .out_dir = tmp_ / "ds", .images_per_record = 3,
                           .jobs = 2})
                .ok());
    auto ds = ImageDataset::Open(tmp_ / "ds", {.io = test::Io()});
    REQUIRE(ds.ok());
    ds_ = std::move(ds).value();
  }
  const ImageDataset& operator*() const { return *ds_; }

 private:
  TempDir tmp_;
  std::unique_ptr<ImageDataset> ds_;
};

// Every batch the iterator delivers from `start` to the end of the epoch.
std::vector<SampleBatch> Drain(const ImageDataset& ds, const SampleIteratorOptions& o, const IterationState& start,
                               size_t max_batches = SIZE_MAX, IterationState* stopped = nullptr) {
  auto it = SampleIterator::Create(ds, o, start);
  REQUIRE(it.ok());
  std::vector<SampleBatch> out;
  SampleBatch batch;
  while (out.size() < max_batches) {
    auto more = (*it)->Next(&batch);
    REQUIRE(more.ok());
    if (!*more) break;
    out.push_back(batch);
  }
  if (stopped) *stopped = (*it)->state();
  return out;
}

TEST_CASE("the iterator delivers each rank's planned images, read from the records") {
  SampleDataset ds;
  std::vector<uint64_t> sizes;
  for (uint64_t r = 0; r < (*ds).num_records(); ++r) sizes.push_back(DatasetRecord(*ds, r).image_count);
  for (uint64_t world : {1, 3, 5}) {
    for (int fidelity : {1, kFullFidelity}) {
      for (uint64_t workers : {1, 2}) {
        INFO("world " << world << ", fidelity " << fidelity << ", workers " << workers);
        for (uint64_t rank = 0; rank < world; ++rank) {
          for (uint64_t worker = 0; worker < workers; ++worker) {
            SampleIteratorOptions o{.epoch = {.rank = rank, .world_size = world, .batch_size = 2,
                                              .worker = worker, .num_workers = workers, .shuffle_buffer = 4},
                                    .fidelity = fidelity,
                                    .read_ahead = 3};
            const std::vector<SampleBatch> batches = Drain(*ds, o, {.seed = 9, .epoch = 1});
            const RankEpoch plan = PlanRankEpoch(sizes, o.epoch, 9, 1);
            REQUIRE(batches.size() == (plan.order.size() + 1) / 2);
            size_t q = 0;
            for (const SampleBatch& b : batches) {
              REQUIRE(b.images.size() == std::min<size_t>(2, plan.order.size() - q));
              for (size_t j = 0; j < b.images.size(); ++j, ++q) {
                const uint64_t image = plan.input[plan.order[q]];
                CHECK(b.indices[j] == image);
                CHECK(b.images[j].key == (*ds).sample(image)->key);
                CHECK(b.images[j].label == (*ds).sample(image)->label);
                auto direct = (*ds).ReadImage(image, fidelity);
                REQUIRE(direct.ok());
                CHECK(b.images[j].jpeg == direct->jpeg);
              }
            }
            CHECK(q == plan.order.size());
          }
        }
      }
    }
  }
}

TEST_CASE("a job stopped anywhere resumes with the next unseen image, each image once per epoch") {
  SampleDataset ds;
  // 24 images, 2 ranks, batches of 3: the epoch divides evenly.
  for (uint64_t seed : {1, 2, 3}) {
    SplitMix64 stops(seed);
    std::multiset<uint64_t> seen;
    for (uint64_t rank = 0; rank < 2; ++rank) {
      SampleIteratorOptions o{.epoch = {.rank = rank, .world_size = 2, .batch_size = 3, .shuffle_buffer = 5},
                              .read_ahead = 2};
      const IterationState begin{.seed = seed, .epoch = 4};
      std::vector<uint64_t> uninterrupted;
      for (const SampleBatch& b : Drain(*ds, o, begin)) {
        uninterrupted.insert(uninterrupted.end(), b.indices.begin(), b.indices.end());
      }
      // Stop after a random number of batches, restart from the exported
      // state, three times, then finish.
      std::vector<uint64_t> resumed;
      IterationState state = begin;
      for (int restart = 0; restart < 3; ++restart) {
        IterationState stopped;
        for (const SampleBatch& b : Drain(*ds, o, state, stops.Below(3), &stopped)) {
          resumed.insert(resumed.end(), b.indices.begin(), b.indices.end());
        }
        REQUIRE(stopped.position == resumed.size());
        auto text = IterationState::Parse(stopped.ToString());
        REQUIRE(text.ok());
        state = *text;
      }
      for (const SampleBatch& b : Drain(*ds, o, state)) resumed.insert(resumed.end(), b.indices.begin(), b.indices.end());
      CHECK(resumed == uninterrupted);
      seen.insert(resumed.begin(), resumed.end());
    }
    REQUIRE(seen.size() == (*ds).num_images());
    for (uint64_t i = 0; i < (*ds).num_images(); ++i) CHECK(seen.count(i) == 1);
  }
}

TEST_CASE("open reads the manifest alone; counts read each file's index and no record") {
  TempDir tmp;
  REQUIRE(ConvertImages({.src_dir = DataDir() + "/sample", .out_dir = tmp / "ds", .images_per_record = 5,
                         .records_per_file = 2, .jobs = 1})
              .ok());
  auto engine = MakeIoEngine({});
  REQUIRE(engine.ok());
  auto indexes = OpenImageDataset(tmp / "ds", {}, engine->get());
  REQUIRE(indexes.ok());
  const uint64_t manifest = std::filesystem::file_size(tmp.path() / "ds" / kDatasetManifestName);
  CHECK((*engine)->counters().bytes_read == manifest);
  CHECK(DatasetFilesLoaded(**indexes) == 0);
  CHECK((*indexes)->num_images() == 24);
  CHECK((*indexes)->num_records() == 5);
  const Result<DatasetCounts> counts = (*indexes)->counts();
  REQUIRE(counts.ok());
  CHECK(DatasetFilesLoaded(**indexes) == 3);
  // Then each file's header, footer and index.
  uint64_t expected = manifest;
  auto ds = ImageDataset::Open(tmp / "ds", {.io = test::Io()});
  REQUIRE(ds.ok());
  const auto files = DatasetAllFiles(**ds).MoveValue();
  for (const auto& f : files) expected += kFileHeaderSize + kFooterSize + f->footer().index_length;
  CHECK((*engine)->counters().bytes_read == expected);

  CHECK(counts->images == 24);
  CHECK(counts->images == (*ds)->num_images());
  CHECK(counts->records == (*ds)->num_records());
  CHECK(counts->records == 5);
  CHECK(counts->files == 3);
  CHECK(counts->class_names == (*ds)->class_names());
  CHECK(counts->script == (*ds)->scan_script());
  for (int k = 0; k <= (*ds)->num_scan_groups(); ++k) {
    uint64_t bytes = 0;
    for (uint64_t r = 0; r < (*ds)->num_records(); ++r) bytes += (*ds)->RecordBytes(r, k).value();
    CHECK(counts->BytesAtFidelity(k) == bytes);
  }
  uint64_t file_bytes = 0;
  for (const auto& f : files) file_bytes += f->size();
  CHECK(counts->file_bytes == file_bytes);
}

TEST_CASE("the iterator refuses bad options and states") {
  SampleDataset ds;
  auto refused = [&](const SampleIteratorOptions& o, const IterationState& s) {
    auto it = SampleIterator::Create(*ds, o, s);
    return !it.ok() && it.status().code() == StatusCode::kInvalidArgument;
  };
  CHECK(refused({.epoch = {.rank = 2, .world_size = 2}}, {}));
  CHECK(refused({.epoch = {.world_size = 0}}, {}));
  CHECK(refused({.epoch = {.batch_size = 0}}, {}));
  CHECK(refused({.fidelity = 9}, {}));
  CHECK(refused({.fidelity = kFieldsOnly}, {}));
  CHECK(refused({.epoch = {.worker = 2, .num_workers = 2}}, {}));
  CHECK(refused({.epoch = {.num_workers = 0}}, {}));
  CHECK(refused({.epoch = {.batch_size = 4}}, {.position = 2}));
  CHECK(refused({.epoch = {.batch_size = 4}}, {.position = 28}));
  CHECK(refused({.epoch = {.world_size = uint64_t{1} << 40, .batch_size = uint64_t{1} << 30}}, {}));
  // An unbounded read-ahead reads everything at once.
  CHECK(Drain(*ds, {.epoch = {.batch_size = 4}, .read_ahead = UINT64_MAX}, {}).size() == 6);
  auto it = SampleIterator::Create(*ds, {.epoch = {.rank = 1, .world_size = 5, .batch_size = 4}}, {});
  REQUIRE(it.ok());
  // 24 images over 5 ranks: 5 each (one repeat), in batches of 4 and 1.
  CHECK((*it)->num_batches() == 2);
  CHECK((*it)->num_images() == 5);
}

}  // namespace
}  // namespace pcr
