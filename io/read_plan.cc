#include "io/read_plan.h"

#include <algorithm>
#include <numeric>

namespace pcr {

ReadPlan PlanReads(std::span<const RangeRequest> requests, const CoalesceOptions& options) {
  ReadPlan plan;
  plan.slices.resize(requests.size());
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const RangeRequest& x = requests[a];
    const RangeRequest& y = requests[b];
    return x.file != y.file ? x.file < y.file : x.offset < y.offset;
  });
  for (size_t i : order) {
    const RangeRequest& r = requests[i];
    plan.bytes_requested += r.length;
    if (r.length == 0) continue;
    const uint64_t end = r.offset + r.length;
    if (!plan.reads.empty()) {
      PlannedRead& last = plan.reads.back();
      const uint64_t last_end = last.offset + last.length;
      const uint64_t merged_end = std::max(last_end, end);
      const bool overlaps = r.offset < last_end;
      const bool near = overlaps || r.offset - last_end <= options.hole_limit;
      if (last.file == r.file && (overlaps || (near && merged_end - last.offset <= options.max_read))) {
        last.length = merged_end - last.offset;
        plan.slices[i] = {plan.reads.size() - 1, r.offset - last.offset};
        continue;
      }
    }
    plan.reads.push_back({r.file, r.offset, r.length});
    plan.slices[i] = {plan.reads.size() - 1, 0};
  }
  for (const PlannedRead& read : plan.reads) plan.bytes_planned += read.length;
  return plan;
}

}  // namespace pcr
