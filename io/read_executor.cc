#include "io/read_executor.h"

#include <algorithm>
#include <map>
#include <utility>


namespace pcr {

ReadRange StreamRange(const PcrFile& file, size_t stripe, size_t stream, uint64_t unit) {
  const StripeInfo& s = file.index().stripes[stripe];
  return {&file, s.stream_offset(stream), s.streams[stream].length,
          {.kind = RangeCheck::Kind::kStream, .stripe = stripe, .stream = stream}, unit};
}

ReadRange ChunkRange(const PcrFile& file, size_t stripe, int group, uint64_t image, uint64_t unit) {
  const StripeInfo& s = file.index().stripes[stripe];
  return {&file, file.ChunkOffset(stripe, group, image), s.chunk(group, image).length,
          {.kind = RangeCheck::Kind::kChunk, .stripe = stripe, .stream = static_cast<size_t>(group), .image = image},
          unit};
}

namespace {

Status Check(const ReadRange& r, ByteSpan bytes) {
  switch (r.check.kind) {
    case RangeCheck::Kind::kNone:
      return Status::OK();
    case RangeCheck::Kind::kStream:
      return r.file->CheckStream(r.check.stripe, r.check.stream, bytes);
    case RangeCheck::Kind::kChunk:
      return r.file->CheckChunk(r.check.stripe, static_cast<int>(r.check.stream), r.check.image, bytes);
  }
  return Status::OK();
}

}  // namespace

Status ExecuteReads(IoEngine& engine, std::span<const ReadRange> ranges, const CoalesceOptions& coalesce,
                    ReadBatch* batch, bool keep_going) {
  // The planner never merges across its file numbers: one per (file, unit).
  std::map<std::pair<const PcrFile*, uint64_t>, size_t> number;
  std::vector<const PcrFile*> files;
  std::vector<RangeRequest> requests(ranges.size());
  for (size_t i = 0; i < ranges.size(); ++i) {
    const ReadRange& r = ranges[i];
    auto [it, added] = number.emplace(std::pair(r.file, r.unit), files.size());
    if (added) files.push_back(r.file);
    requests[i] = {it->second, r.offset, r.length};
  }
  // A call reads one dataset or table: its files are all remote or all local.
  CoalesceOptions options = coalesce;
  if (std::any_of(files.begin(), files.end(), [](const PcrFile* f) { return f->file().remote(); })) {
    const RemoteOptions& remote = engine.options().remote;
    options = {.hole_limit = coalesce.hole_limit == 0 ? 0 : std::max(coalesce.hole_limit, remote.hole_limit),
               .max_read = std::max(coalesce.max_read, remote.max_read)};
  }
  batch->plan_ = PlanReads(requests, options);
  const ReadPlan& plan = batch->plan_;
  // One buffer for every read, each at an aligned place in it, kept for the
  // batch's next execution: a fresh buffer costs a page fault per 4 KiB.
  std::vector<ReadRequest> reads(plan.reads.size());
  std::vector<uint64_t> lead(plan.reads.size());  // bytes read before the planned read's start
  std::vector<uint64_t>& at = batch->at_;
  at.assign(plan.reads.size(), 0);
  uint64_t total = 0;
  for (size_t k = 0; k < plan.reads.size(); ++k) {
    const PlannedRead& p = plan.reads[k];
    const PcrFile& file = *files[p.file];
    uint64_t begin = p.offset, end = p.offset + p.length;
    if (file.file().direct()) {
      const uint64_t b = begin / kDirectAlignment * kDirectAlignment;
      const uint64_t e = (end + kDirectAlignment - 1) / kDirectAlignment * kDirectAlignment;
      if (e <= file.size()) begin = b, end = e;
    }
    lead[k] = p.offset - begin;
    at[k] = total;
    reads[k] = {&file.file(), begin, end - begin, nullptr};
    total += (end - begin + kDirectAlignment - 1) / kDirectAlignment * kDirectAlignment;
  }
  batch->buffer_.Resize(total);
  for (size_t k = 0; k < reads.size(); ++k) reads[k].out = batch->buffer_.data() + at[k];
  if (Status read = engine.Read(reads); !read.ok()) {
    // A read short of a file rewritten while open says so.
    for (size_t k = 0; k < reads.size(); ++k) {
      if (!reads[k].status.ok()) return files[plan.reads[k].file]->ExplainFailure(std::move(read));
    }
    return read;
  }
  batch->spans_.assign(ranges.size(), ByteSpan());
  batch->checks_.assign(ranges.size(), Status::OK());
  std::vector<std::vector<size_t>> failed(reads.size());  // by read: its ranges that fail their checks
  std::vector<std::vector<size_t>> held(reads.size());    // by read: every range it holds
  for (size_t i = 0; i < ranges.size(); ++i) {
    const RequestSlice& slice = plan.slices[i];
    if (slice.read != RequestSlice::kNoRead) {
      batch->spans_[i] = ByteSpan(batch->buffer_.data() + at[slice.read] + lead[slice.read] + slice.offset_in_read,
                                  ranges[i].length);
    }
    batch->checks_[i] = Check(ranges[i], batch->spans_[i]);
    if (slice.read == RequestSlice::kNoRead) continue;
    held[slice.read].push_back(i);
    if (!batch->checks_[i].ok()) failed[slice.read].push_back(i);
  }
  // A remote read whose bytes fail a check is read again (LoadRereading),
  // and every range it holds checked again: the new bytes replace those that
  // passed too.
  for (size_t k = 0; k < reads.size(); ++k) {
    if (failed[k].empty() || !reads[k].file->remote()) continue;
    auto check_read = [&]() -> Status {
      failed[k].clear();
      for (const size_t i : held[k]) {
        batch->checks_[i] = Check(ranges[i], batch->spans_[i]);
        if (!batch->checks_[i].ok()) failed[k].push_back(i);
      }
      return failed[k].empty() ? Status::OK() : batch->checks_[failed[k][0]];
    };
    unsigned damaged_reads = 0;
    const Status loaded = LoadRereading(engine, {&reads[k], 1}, check_read, &damaged_reads);
    // A read that failed (not a check, which stays in batch->checks_).
    const Status& last = failed[k].empty() ? Status() : batch->checks_[failed[k][0]];
    if (damaged_reads == 0 && (loaded.code() != last.code() || loaded.message() != last.message())) return loaded;
    for (const size_t i : damaged_reads > 0 ? failed[k] : std::vector<size_t>()) {
      batch->checks_[i] = Status::DataLoss(batch->checks_[i].message() + DamagedBetween(damaged_reads));
    }
  }
  for (size_t i = 0; i < ranges.size() && !keep_going; ++i) {
    if (!batch->checks_[i].ok()) return batch->checks_[i];
  }
  return Status::OK();
}

}  // namespace pcr
