// Coalescing: turning many small byte-range requests into few large reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace pcr {

// Defaults measured on the project's reference machine (virtio SSD, fio,
// O_DIRECT): a 4 KiB read costs 48 us at queue depth 1 while sequential reads
// run at 1.1-1.2 GB/s, so skipping a gap pays off only past ~57 KB; and reads
// reach full bandwidth from 1 MiB, so longer merges only delay first bytes.
struct CoalesceOptions {
  // Neighbouring requests whose gap is at most this many bytes share a read;
  // the gap is read and discarded.
  uint64_t hole_limit = 64 << 10;
  // A read grows by merging only while it stays at most this long; a single
  // request longer than this is still one read.
  uint64_t max_read = 4 << 20;
};

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
