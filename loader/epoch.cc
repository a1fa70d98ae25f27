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
  return Status::OK();
}

uint64_t ImagesPerRank(uint64_t num_images, const EpochOptions& options) {
  if (options.uneven == UnevenShares::kPad) return (num_images + options.world_size - 1) / options.world_size;
  return num_images / (options.world_size * options.batch_size) * options.batch_size;
}

uint64_t BatchesPerRank(uint64_t num_images, const EpochOptions& options) {
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

RankEpoch PlanRankEpoch(std::span<const uint64_t> record_sizes, const EpochOptions& options, uint64_t seed,
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
  const uint64_t k = options.shuffle ? options.shuffle_buffer : 0;
  if (k <= 1) {
    plan.order.resize(n);
    std::iota(plan.order.begin(), plan.order.end(), uint64_t{0});
    return plan;
  }
  // A shuffle buffer of k images: each arriving image replaces a uniformly
  // chosen one, which is delivered; the last k leave in random order.
  SplitMix64 g(MixSeeds(epoch_seed, options.rank * options.num_workers + options.worker));
  std::vector<uint64_t> buffer;
  buffer.reserve(std::min(k, n));
  for (uint64_t i = 0; i < n; ++i) {
    if (buffer.size() < k) {
      buffer.push_back(i);
      continue;
    }
    uint64_t& slot = buffer[g.Below(k)];
    plan.order.push_back(slot);
    slot = i;
  }
  while (!buffer.empty()) {
    const uint64_t j = g.Below(buffer.size());
    plan.order.push_back(buffer[j]);
    buffer[j] = buffer.back();
    buffer.pop_back();
  }
  return plan;
}

}  // namespace pcr
