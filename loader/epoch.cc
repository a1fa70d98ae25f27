#include "loader/epoch.h"

#include <charconv>
#include <numeric>

#include "format/permutation.h"

namespace pcr {

std::string IterationState::ToString() const {
  return "seed=" + std::to_string(seed) + " epoch=" + std::to_string(epoch) + " position=" +
         std::to_string(position);
}

Result<IterationState> IterationState::Parse(std::string_view text) {
  IterationState s;
  const std::pair<std::string_view, uint64_t*> fields[] = {
      {"seed=", &s.seed}, {"epoch=", &s.epoch}, {"position=", &s.position}};
  std::string_view rest = text;
  for (size_t i = 0; i < 3; ++i) {
    const auto [name, value] = fields[i];
    const std::string_view sep = i < 2 ? " " : "";
    if (!rest.starts_with(name)) break;
    rest.remove_prefix(name.size());
    const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), *value);
    if (ec != std::errc() || end == rest.data()) break;
    rest.remove_prefix(static_cast<size_t>(end - rest.data()));
    if (!rest.starts_with(sep)) break;
    rest.remove_prefix(sep.size());
    if (i == 2 && rest.empty()) return s;
  }
  return Status::InvalidArgument("iteration state '" + std::string(text) +
                                 "': expected 'seed=S epoch=E position=P'");
}

Status ValidateEpochOptions(const EpochOptions& options) {
  if (options.world_size == 0 || options.rank >= options.world_size) {
    return Status::InvalidArgument("rank " + std::to_string(options.rank) + " is not below world size " +
                                   std::to_string(options.world_size));
  }
  if (options.batch_size == 0) return Status::InvalidArgument("batch size must be positive");
  uint64_t per_step;
  if (__builtin_mul_overflow(options.world_size, options.batch_size, &per_step) || per_step > (uint64_t{1} << 48)) {
    return Status::InvalidArgument("world size times batch size is over 2^48");
  }
  return Status::OK();
}

uint64_t ImagesPerRank(uint64_t num_images, const EpochOptions& options) {
  const uint64_t per_step = options.world_size * options.batch_size;
  const uint64_t steps = options.uneven == UnevenShares::kPad ? (num_images + per_step - 1) / per_step
                                                              : num_images / per_step;
  return num_images == 0 ? 0 : steps * options.batch_size;
}

RankEpoch PlanRankEpoch(std::span<const uint64_t> record_sizes, const EpochOptions& options, uint64_t seed,
                        uint64_t epoch) {
  std::vector<uint64_t> first(record_sizes.size());
  uint64_t total = 0;
  for (size_t r = 0; r < record_sizes.size(); ++r) {
    first[r] = total;
    total += record_sizes[r];
  }
  const uint64_t n = ImagesPerRank(total, options);
  RankEpoch plan;
  if (n == 0) return plan;

  const uint64_t epoch_seed = MixSeeds(seed, epoch);
  std::vector<uint64_t> records(record_sizes.size());
  if (options.shuffle) {
    records = SeededPermutation(record_sizes.size(), epoch_seed);
  } else {
    std::iota(records.begin(), records.end(), uint64_t{0});
  }
  // Walk the global order from position rank * n (mod total), wrapping.
  uint64_t skip = options.rank * n % total;
  size_t r = 0;
  while (skip >= record_sizes[records[r]]) skip -= record_sizes[records[r++]];
  plan.input.reserve(n);
  for (uint64_t in_record = skip; plan.input.size() < n;) {
    if (in_record == record_sizes[records[r]]) {
      r = (r + 1) % records.size();
      in_record = 0;
      continue;
    }
    plan.input.push_back(first[records[r]] + in_record++);
  }

  plan.order.reserve(n);
  const uint64_t k = options.shuffle ? options.shuffle_buffer : 0;
  if (k <= 1) {
    plan.order.resize(n);
    std::iota(plan.order.begin(), plan.order.end(), uint64_t{0});
    return plan;
  }
  // A shuffle buffer of k images: each arriving image replaces a uniformly
  // chosen one, which is delivered; the last k leave in random order.
  SplitMix64 g(MixSeeds(epoch_seed, options.rank));
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
