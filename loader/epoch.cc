#include "loader/epoch.h"

#include <algorithm>
#include <charconv>
#include <numeric>

#include "format/permutation.h"

namespace pcr {

std::string IterationState::ToString() const {
  return "seed=" + std::to_string(seed) + " epoch=" + std::to_string(epoch) + " position=" +
         std::to_string(position);
}

bool ParseNamedNumbers(std::string_view text, std::span<const std::pair<std::string_view, uint64_t*>> fields) {
  std::string_view rest = text;
  for (size_t i = 0; i < fields.size(); ++i) {
    const auto [name, value] = fields[i];
    const std::string_view sep = i + 1 < fields.size() ? " " : "";
    if (!rest.starts_with(name) || !rest.substr(name.size()).starts_with("=")) return false;
    rest.remove_prefix(name.size() + 1);
    const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), *value);
    if (ec != std::errc() || end == rest.data()) return false;
    rest.remove_prefix(static_cast<size_t>(end - rest.data()));
    if (!rest.starts_with(sep)) return false;
    rest.remove_prefix(sep.size());
  }
  return rest.empty();
}

Result<IterationState> IterationState::Parse(std::string_view text) {
  IterationState s;
  const std::pair<std::string_view, uint64_t*> fields[] = {{"seed", &s.seed}, {"epoch", &s.epoch}, {"position", &s.position}};
  if (ParseNamedNumbers(text, fields)) return s;
  return Status::InvalidArgument("iteration state '" + std::string(text) +
                                 "': expected 'seed=S epoch=E position=P'");
}

Status ValidateEpochOptions(const EpochOptions& options) {
  if (options.world_size == 0) return Status::InvalidArgument("world_size must be at least 1, not 0");
  if (options.uneven != UnevenShares::kPad && options.uneven != UnevenShares::kDrop) {
    return Status::InvalidArgument("uneven must be UnevenShares::kPad or kDrop, not " +
                                   std::to_string(static_cast<int>(options.uneven)));
  }
  if (options.rank >= options.world_size) {
    return Status::InvalidArgument("rank must be 0.." + std::to_string(options.world_size - 1) + " (world_size " +
                                   std::to_string(options.world_size) + "), not " + std::to_string(options.rank));
  }
  if (options.num_workers == 0) return Status::InvalidArgument("num_workers must be at least 1, not 0");
  if (options.worker >= options.num_workers) {
    return Status::InvalidArgument("worker must be 0.." + std::to_string(options.num_workers - 1) +
                                   " (num_workers " + std::to_string(options.num_workers) + "), not " +
                                   std::to_string(options.worker));
  }
  if (options.batch_size == 0) return Status::InvalidArgument("batch_size must be at least 1, not 0");
  uint64_t per_step;
  if (__builtin_mul_overflow(options.world_size, options.batch_size, &per_step) || per_step > (uint64_t{1} << 48)) {
    return Status::InvalidArgument("world_size times batch_size must be at most 2^48");
  }
  for (const EpochSegment& segment : options.delivered) {
    EpochOptions o = options;
    o.world_size = segment.world_size;
    o.num_workers = segment.num_workers;
    o.rank = o.worker = 0;
    o.delivered.clear();
    PCR_RETURN_IF_ERROR(ValidateEpochOptions(o).WithPrefix("a delivered part of the epoch"));
  }
  return Status::OK();
}

uint64_t ImagesPerRank(uint64_t num_images, const EpochOptions& options) {
  if (options.uneven == UnevenShares::kPad) return (num_images + options.world_size - 1) / options.world_size;
  return num_images / (options.world_size * options.batch_size) * options.batch_size;
}

Result<uint64_t> BatchesPerRank(uint64_t num_images, const EpochOptions& options) {
  PCR_RETURN_IF_ERROR(ValidateEpochOptions(options));
  return BatchCount(num_images, options);
}

uint64_t BatchCount(uint64_t num_images, const EpochOptions& options) {
  return (ImagesPerRank(num_images, options) + options.batch_size - 1) / options.batch_size;
}

Result<LoaderResume> ResumeLoader(const LoaderState& start, uint64_t batches, const EpochOptions& options) {
  if (start.batches > batches) {
    return Status::InvalidArgument("the state's batches must be 0.." + std::to_string(batches) +
                                   " (the rank's batches per epoch), not " + std::to_string(start.batches));
  }
  if (start.batches > 0 && start.num_workers != 0 && start.num_workers != options.num_workers) {
    return Status::InvalidArgument("the state was saved with " + std::to_string(start.num_workers) +
                                   " worker(s) per rank: resume with num_workers=" +
                                   std::to_string(start.num_workers) + ", not " +
                                   std::to_string(options.num_workers));
  }
  const uint64_t k = options.num_workers, role = (options.worker + start.batches) % k;
  return LoaderResume{.role = role, .skip = start.batches > role ? (start.batches - role + k - 1) / k : 0};
}

WorkerRun WorkerShare(uint64_t per_rank, const EpochOptions& options) {
  const uint64_t b = options.batch_size, k = options.num_workers;
  const uint64_t batches = (per_rank + b - 1) / b;
  auto images = [&](uint64_t u) {  // of worker u: its batches, the last one maybe short
    const uint64_t count = batches / k + (u < batches % k ? 1 : 0);
    const uint64_t short_by = batches * b - per_rank;
    return count * b - (batches > 0 && u == (batches - 1) % k ? short_by : 0);
  };
  WorkerRun run;
  for (uint64_t u = 0; u < options.worker; ++u) run.offset += images(u);
  run.count = images(options.worker);
  return run;
}

namespace {

// Delivery order of n images (positions 0..n-1): in order, or through a
// shuffle buffer of options.shuffle_buffer images seeded by `seed`, in which
// each arriving image replaces a uniformly chosen one, which is delivered;
// the last ones leave in random order.
void Deliver(uint64_t n, const EpochOptions& options, uint64_t seed, std::vector<uint64_t>* order) {
  const uint64_t k = options.shuffle ? options.shuffle_buffer : 0;
  order->reserve(n);
  if (k <= 1) {
    for (uint64_t i = 0; i < n; ++i) order->push_back(i);
    return;
  }
  SplitMix64 g(seed);
  std::vector<uint64_t> buffer;
  buffer.reserve(std::min(k, n));
  for (uint64_t i = 0; i < n; ++i) {
    if (buffer.size() < k) {
      buffer.push_back(i);
      continue;
    }
    uint64_t& slot = buffer[g.Below(k)];
    order->push_back(slot);
    slot = i;
  }
  while (!buffer.empty()) {
    const uint64_t j = g.Below(buffer.size());
    order->push_back(buffer[j]);
    buffer[j] = buffer.back();
    buffer.pop_back();
  }
}

// The seed of the shuffle after `segments` resumes of an epoch.
uint64_t SegmentSeed(uint64_t seed, uint64_t epoch, uint64_t segments) {
  return MixSeeds(MixSeeds(seed, epoch), ~segments);
}

RankEpoch PlanRecords(std::span<const uint64_t> record_sizes, const EpochOptions& options, uint64_t seed,
                      uint64_t epoch, uint64_t mix_records) {
  std::vector<uint64_t> first(record_sizes.size());
  uint64_t total = 0;
  for (size_t r = 0; r < record_sizes.size(); ++r) {
    first[r] = total;
    total += record_sizes[r];
  }
  const uint64_t per_rank = ImagesPerRank(total, options);
  const WorkerRun run = WorkerShare(per_rank, options);
  const uint64_t n = run.count;
  RankEpoch plan;
  if (n == 0) return plan;

  const uint64_t epoch_seed = MixSeeds(seed, epoch);
  std::vector<uint64_t> records(record_sizes.size());
  if (options.shuffle) {
    records = SeededPermutation(record_sizes.size(), epoch_seed);
  } else {
    std::iota(records.begin(), records.end(), uint64_t{0});
  }
  // Walk the global order from the worker's first position (mod total), wrapping.
  uint64_t skip = (options.rank * per_rank + run.offset) % total;
  size_t r = 0;
  while (skip >= record_sizes[records[r]]) skip -= record_sizes[records[r++]];
  plan.input.reserve(n);
  std::vector<uint64_t> run_starts = {0};  // positions where the run enters a record
  for (uint64_t in_record = skip; plan.input.size() < n;) {
    if (in_record == record_sizes[records[r]]) {
      r = (r + 1) % records.size();
      in_record = 0;
      if (run_starts.back() != plan.input.size()) run_starts.push_back(plan.input.size());
      continue;
    }
    plan.input.push_back(first[records[r]] + in_record++);
  }
  run_starts.push_back(n);

  plan.order.reserve(n);
  if (options.shuffle && mix_records > 0) {
    SplitMix64 g(MixSeeds(epoch_seed, options.rank * options.num_workers + options.worker));
    for (size_t w = 0; w + 1 < run_starts.size(); w += mix_records) {
      const uint64_t begin = run_starts[w], end = run_starts[std::min(w + mix_records, run_starts.size() - 1)];
      for (uint64_t q = begin; q < end; ++q) plan.order.push_back(q);
      for (uint64_t j = end - begin; j > 1; --j) {  // Fisher-Yates
        std::swap(plan.order[begin + j - 1], plan.order[begin + g.Below(j)]);
      }
    }
    return plan;
  }
  Deliver(n, options, MixSeeds(epoch_seed, options.rank * options.num_workers + options.worker), &plan.order);
  return plan;
}

// The plan of a rank's worker over an epoch that is the list `images`:
// rank r takes positions [r * n, (r + 1) * n), wrapping, the worker its
// WorkerShare, delivered through a shuffle buffer seeded by `seed`.
RankEpoch PlanList(std::span<const uint64_t> images, const EpochOptions& options, uint64_t seed) {
  RankEpoch plan;
  if (images.empty()) return plan;
  const uint64_t per_rank = ImagesPerRank(images.size(), options);
  const WorkerRun run = WorkerShare(per_rank, options);
  plan.input.reserve(run.count);
  for (uint64_t i = 0; i < run.count; ++i) {
    plan.input.push_back(images[(options.rank * per_rank + run.offset + i) % images.size()]);
  }
  Deliver(run.count, options, MixSeeds(seed, options.rank * options.num_workers + options.worker), &plan.order);
  return plan;
}

// The images of the epoch that options.delivered did not deliver, in the
// order they would have come: each segment's ranks and workers in turn,
// each worker's images in its delivery order, every image once.
std::vector<uint64_t> Remaining(std::span<const uint64_t> record_sizes, const EpochOptions& options, uint64_t seed,
                                uint64_t epoch) {
  uint64_t total = 0;
  for (const uint64_t n : record_sizes) total += n;
  std::vector<uint64_t> left;
  std::vector<bool> delivered(total);
  for (size_t j = 0; j < options.delivered.size(); ++j) {
    const EpochSegment& segment = options.delivered[j];
    EpochOptions o = options;
    o.world_size = segment.world_size;
    o.num_workers = segment.num_workers;
    o.delivered.clear();
    std::vector<uint64_t> undelivered;
    for (o.rank = 0; o.rank < o.world_size; ++o.rank) {
      for (o.worker = 0; o.worker < o.num_workers; ++o.worker) {
        const RankEpoch p = j == 0 ? PlanRecords(record_sizes, o, seed, epoch, 0) : PlanList(left, o, SegmentSeed(seed, epoch, j));
        // The rank's batch b comes from worker b % num_workers.
        const uint64_t batches = segment.batches / o.num_workers + (o.worker < segment.batches % o.num_workers ? 1 : 0);
        const uint64_t done = std::min<uint64_t>(p.order.size(), batches * o.batch_size);
        for (uint64_t q = 0; q < p.order.size(); ++q) {
          const uint64_t image = p.input[p.order[q]];
          if (q < done) {
            delivered[image] = true;
          } else {
            undelivered.push_back(image);
          }
        }
      }
    }
    std::vector<bool> queued(total);
    left.clear();
    for (const uint64_t image : undelivered) {
      if (delivered[image] || queued[image]) continue;
      queued[image] = true;
      left.push_back(image);
    }
  }
  return left;
}

}  // namespace

uint64_t EpochImages(std::span<const uint64_t> record_sizes, const EpochOptions& options, uint64_t seed,
                     uint64_t epoch) {
  if (!options.delivered.empty()) return Remaining(record_sizes, options, seed, epoch).size();
  uint64_t total = 0;
  for (const uint64_t n : record_sizes) total += n;
  return total;
}

RankEpoch PlanRankEpoch(std::span<const uint64_t> record_sizes, const EpochOptions& options, uint64_t seed,
                        uint64_t epoch, uint64_t mix_records) {
  if (options.delivered.empty()) return PlanRecords(record_sizes, options, seed, epoch, mix_records);
  return PlanList(Remaining(record_sizes, options, seed, epoch), options,
                  SegmentSeed(seed, epoch, options.delivered.size()));
}

}  // namespace pcr
