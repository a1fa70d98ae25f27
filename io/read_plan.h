// Coalescing: turning many small byte-range requests into few large reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "pcr/io.h"

namespace pcr {

struct RangeRequest {
  size_t file = 0;  // caller's file number
  uint64_t offset = 0;
  uint64_t length = 0;
};

struct PlannedRead {
  size_t file = 0;
  uint64_t offset = 0;
  uint64_t length = 0;

  bool operator==(const PlannedRead&) const = default;
};

// Where a request's bytes land: `length` bytes at `offset_in_read` of reads[read].
struct RequestSlice {
  static constexpr size_t kNoRead = std::numeric_limits<size_t>::max();
  size_t read = kNoRead;  // kNoRead for an empty request
  uint64_t offset_in_read = 0;

  bool operator==(const RequestSlice&) const = default;
};

struct ReadPlan {
  std::vector<PlannedRead> reads;      // sorted by (file, offset), disjoint
  std::vector<RequestSlice> slices;    // slices[i] serves requests[i]
  uint64_t bytes_requested = 0;        // sum of request lengths
  uint64_t bytes_planned = 0;          // sum of read lengths
};

// Plans reads covering every request: requests are sorted by file and offset
// and merged while the gap to the next is at most hole_limit and the merged
// read stays within max_read. Overlapping requests always share a read, so
// reads are disjoint; only overlap makes a read exceed max_read.
ReadPlan PlanReads(std::span<const RangeRequest> requests, const CoalesceOptions& options = {});

}  // namespace pcr
