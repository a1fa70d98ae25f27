#include "io/stream_reader.h"

#include <map>

namespace pcr {

Result<std::vector<Bytes>> ReadPlanned(IoEngine& engine, const ReadPlan& plan,
                                       std::span<const PcrFile* const> files) {
  std::vector<Bytes> buffers(plan.reads.size());
  std::vector<ReadRequest> reads(plan.reads.size());
  for (size_t k = 0; k < plan.reads.size(); ++k) {
    buffers[k].resize(plan.reads[k].length);
    reads[k] = {&files[plan.reads[k].file]->file(), plan.reads[k].offset, plan.reads[k].length,
                buffers[k].data()};
  }
  PCR_RETURN_IF_ERROR(engine.Read(reads));
  return buffers;
}

Result<std::vector<Bytes>> ReadStreams(IoEngine& engine, std::span<const StreamRequest> requests,
                                       const CoalesceOptions& coalesce) {
  std::map<const PcrFile*, size_t> file_number;
  std::vector<const PcrFile*> files;
  std::vector<RangeRequest> ranges(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const StreamRequest& r = requests[i];
    const auto& stripes = r.file->index().stripes;
    if (r.stripe >= stripes.size() || r.stream >= stripes[r.stripe].streams.size()) {
      return Status::InvalidArgument(r.file->path() + ": no stream " + std::to_string(r.stream) +
                                     " in stripe " + std::to_string(r.stripe));
    }
    auto [it, added] = file_number.emplace(r.file, files.size());
    if (added) files.push_back(r.file);
    const StripeInfo& stripe = stripes[r.stripe];
    ranges[i] = {it->second, stripe.stream_offset(r.stream), stripe.streams[r.stream].length};
  }
  const ReadPlan plan = PlanReads(ranges, coalesce);
  PCR_ASSIGN_OR_RETURN(std::vector<Bytes> buffers, ReadPlanned(engine, plan, files));
  std::vector<Bytes> out(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const RequestSlice& slice = plan.slices[i];
    if (slice.read != RequestSlice::kNoRead) {
      const ByteSpan bytes = ByteSpan(buffers[slice.read]).subspan(slice.offset_in_read, ranges[i].length);
      out[i].assign(bytes.begin(), bytes.end());
    }
    PCR_RETURN_IF_ERROR(requests[i].file->CheckStream(requests[i].stripe, requests[i].stream, out[i]));
  }
  return out;
}

}  // namespace pcr
