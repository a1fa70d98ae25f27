// How well the epoch order mixes classes, on an ImageNet-shaped layout:
// 1,000 classes of 1,281 images in records of 1,024, read by 8 ranks in
// batches of 256. Compares records converted in class order (--keep-order)
// with records converted shuffled (the default), for several shuffle buffer
// sizes, ranks and data-loading workers, against uniform sampling. Pure
// planning: no files are read.
//
// usage: shuffle_quality [--classes N] [--per-class N] [--record N] [--world N] [--batch N]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "format/permutation.h"
#include "loader/epoch.h"

namespace {

struct Config {
  uint64_t classes = 1000, per_class = 1281, record = 1024, world = 8, batch = 256;
};

// Mean distinct labels per batch over every rank's epoch, and the mean
// distance (in images) between an image's delivery and its read position.
struct Quality {
  double distinct = 0;
  double delay = 0;
};

Quality Measure(const Config& c, const std::vector<uint32_t>& labels, const std::vector<uint64_t>& sizes,
                bool shuffle, uint64_t buffer, uint64_t world, uint64_t workers) {
  Quality q;
  uint64_t batches = 0, images = 0;
  std::vector<uint32_t> stamp(c.classes, UINT32_MAX);
  uint32_t batch_id = 0;
  for (uint64_t share = 0; share < world * workers; ++share) {
    const pcr::EpochOptions o{.rank = share / workers, .world_size = world, .batch_size = c.batch,
                              .worker = share % workers, .num_workers = workers, .shuffle = shuffle,
                              .shuffle_buffer = buffer};
    const pcr::RankEpoch plan = pcr::PlanRankEpoch(sizes, o, 1, 0);
    for (uint64_t start = 0; start < plan.order.size(); start += c.batch, ++batch_id) {
      uint64_t distinct = 0;
      for (uint64_t p = start; p < std::min<uint64_t>(start + c.batch, plan.order.size()); ++p) {
        const uint32_t label = labels[plan.input[plan.order[p]]];
        if (stamp[label] != batch_id) {
          stamp[label] = batch_id;
          ++distinct;
        }
        q.delay += std::fabs(static_cast<double>(p) - static_cast<double>(plan.order[p]));
      }
      q.distinct += static_cast<double>(distinct);
      ++batches;
    }
    images += plan.order.size();
  }
  q.distinct /= static_cast<double>(batches);
  q.delay /= static_cast<double>(images);
  return q;
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  for (int i = 1; i + 1 < argc; i += 2) {
    const uint64_t v = std::strtoull(argv[i + 1], nullptr, 10);
    if (!std::strcmp(argv[i], "--classes")) c.classes = v;
    else if (!std::strcmp(argv[i], "--per-class")) c.per_class = v;
    else if (!std::strcmp(argv[i], "--record")) c.record = v;
    else if (!std::strcmp(argv[i], "--world")) c.world = v;
    else if (!std::strcmp(argv[i], "--batch")) c.batch = v;
    else {
      std::fprintf(stderr, "usage: shuffle_quality [--classes N] [--per-class N] [--record N] [--world N] [--batch N]\n");
      return 2;
    }
  }
  const uint64_t total = c.classes * c.per_class;
  std::vector<uint64_t> sizes(total / c.record, c.record);
  if (total % c.record) sizes.push_back(total % c.record);
  std::vector<uint32_t> sorted(total), shuffled(total);
  for (uint64_t i = 0; i < total; ++i) sorted[i] = static_cast<uint32_t>(i / c.per_class);
  const std::vector<uint64_t> perm = pcr::SeededPermutation(total, 7);
  for (uint64_t i = 0; i < total; ++i) shuffled[i] = sorted[perm[i]];
  // Uniform sampling: expected distinct classes among `batch` draws without replacement.
  double uniform = 0;
  for (uint64_t k = 0; k < c.classes; ++k) {
    double none = 1;
    for (uint64_t j = 0; j < c.batch; ++j) {
      none *= static_cast<double>(total - c.per_class - j) / static_cast<double>(total - j);
    }
    uniform += 1 - none;
  }
  std::printf("%llu classes x %llu images, records of %llu, %llu ranks, batches of %llu; "
              "uniform sampling gives %.1f distinct classes per batch\n\n",
              static_cast<unsigned long long>(c.classes), static_cast<unsigned long long>(c.per_class),
              static_cast<unsigned long long>(c.record), static_cast<unsigned long long>(c.world),
              static_cast<unsigned long long>(c.batch), uniform);
  std::printf("| records written | loader shuffle | buffer | distinct classes per batch | vs uniform | mean move (images) |\n");
  std::printf("|---|---|---|---|---|---|\n");
  struct Row {
    const char* written;
    const std::vector<uint32_t>* labels;
    bool shuffle;
    uint64_t buffer;
  };
  const Row rows[] = {
      {"in class order (--keep-order)", &sorted, false, 0},   {"in class order (--keep-order)", &sorted, true, 0},
      {"in class order (--keep-order)", &sorted, true, 4096}, {"in class order (--keep-order)", &sorted, true, 65536},
      {"shuffled (default)", &shuffled, false, 0},            {"shuffled (default)", &shuffled, true, 0},
      {"shuffled (default)", &shuffled, true, 4096},
  };
  for (const Row& r : rows) {
    const Quality q = Measure(c, *r.labels, sizes, r.shuffle, r.buffer, c.world, 1);
    std::printf("| %s | %s | %llu | %.1f | %.2f | %.0f |\n", r.written, r.shuffle ? "records" : "none",
                static_cast<unsigned long long>(r.buffer), q.distinct, q.distinct / uniform, q.delay);
  }
  // Ranks and workers, with the loader's defaults (records shuffled, buffer 4096).
  std::printf("\n| records written | ranks | workers per rank | distinct classes per batch | vs uniform |\n");
  std::printf("|---|---|---|---|---|\n");
  for (const Row& r : {rows[2], rows[6]}) {
    for (uint64_t world : {1, 2, 3, 8}) {
      for (uint64_t workers : {1, 2, 4}) {
        const Quality q = Measure(c, *r.labels, sizes, true, 4096, world, workers);
        std::printf("| %s | %llu | %llu | %.1f | %.2f |\n", r.written, static_cast<unsigned long long>(world),
                    static_cast<unsigned long long>(workers), q.distinct, q.distinct / uniform);
      }
    }
  }
  return 0;
}
