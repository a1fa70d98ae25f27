// The one read path: byte ranges of pcr files, each tagged with the checksum
// that covers it, are planned (coalesced), read in one engine call into
// aligned buffers, checked, and handed back as spans into those buffers.
// Record reads, image reads, table projections, verify and reorder all read
// through ExecuteReads.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "io/io_engine.h"
#include "io/pcr_file.h"
#include "io/read_plan.h"

namespace pcr {

// What covers a range's bytes, checked once they are read.
struct RangeCheck {
  enum class Kind : uint8_t {
    kNone,    // nothing (header, footer and index are checked by PcrFile::Open)
    kStream,  // the whole stream `stream` of `stripe`: its Checksum64
    kChunk,   // image `image`'s chunk of scan group `stream` in `stripe`: its Checksum32
  };
  Kind kind = Kind::kNone;
  size_t stripe = 0;
  size_t stream = 0;
  uint64_t image = 0;
};

struct ReadRange {
  const PcrFile* file = nullptr;
  uint64_t offset = 0;
  uint64_t length = 0;
  RangeCheck check;
  // Ranges of different units are never merged into one read (one unit per
  // record, say, so that each record is one read of its own).
  uint64_t unit = 0;
};

// Stream `stream` of `stripe`, checked against its stream checksum.
// REQUIRES: the stripe and stream exist.
ReadRange StreamRange(const PcrFile& file, size_t stripe, size_t stream, uint64_t unit = 0);
// Image `image`'s chunk of scan group `group` in `stripe`, checked against
// its chunk checksum. REQUIRES: they exist.
ReadRange ChunkRange(const PcrFile& file, size_t stripe, int group, uint64_t image, uint64_t unit = 0);

// The bytes of one ExecuteReads call: span i holds range i. Spans stay valid
// until the batch is executed again or destroyed; executing it again reuses
// its buffers. Not thread-safe.
class ReadBatch {
 public:
  size_t size() const { return spans_.size(); }
  ByteSpan operator[](size_t i) const { return spans_[i]; }
  // Spans first .. first + count - 1.
  std::span<const ByteSpan> spans(size_t first, size_t count) const {
    return std::span<const ByteSpan>(spans_).subspan(first, count);
  }
  // The check of range i: OK, or Corruption naming file, place and checksums.
  const Status& check(size_t i) const { return checks_[i]; }
  uint64_t bytes_requested() const { return plan_.bytes_requested; }
  // Storage reads the ranges became.
  size_t reads() const { return plan_.reads.size(); }

 private:
  friend Status ExecuteReads(IoEngine&, std::span<const ReadRange>, const CoalesceOptions&, ReadBatch*, bool);
  ReadPlan plan_;
  IoBuffer buffer_;          // every planned read's bytes
  std::vector<uint64_t> at_;  // where each planned read's bytes start in it
  std::vector<ByteSpan> spans_;
  std::vector<Status> checks_;
};

// Plans `ranges` (coalesced per `coalesce`, widened for remote files by the
// engine's RemoteOptions, never across files or units;
// on an O_DIRECT file each read widened to whole kDirectAlignment blocks
// where the file allows, so it lands in place), reads them in one engine
// call and checks every range. Returns the first I/O error (or, for a file
// rewritten in place since it was opened, PcrFile::ExplainFailure's) or, unless
// `keep_going`, the first failed check; with `keep_going` failed checks are
// left in batch->check(i) for the caller to report, and OK is returned.
Status ExecuteReads(IoEngine& engine, std::span<const ReadRange> ranges, const CoalesceOptions& coalesce,
                    ReadBatch* batch, bool keep_going = false);

}  // namespace pcr
