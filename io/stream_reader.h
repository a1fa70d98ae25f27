// Reading whole streams of pcr files: the unit both image and table readers share.
#pragma once

#include <span>
#include <vector>

#include "io/pcr_file.h"
#include "io/read_plan.h"

namespace pcr {

struct StreamRequest {
  const PcrFile* file = nullptr;
  size_t stripe = 0;
  size_t stream = 0;
};

// Performs `plan` in one engine call; PlannedRead::file indexes `files`.
// Result k holds the bytes of plan.reads[k].
Result<std::vector<Bytes>> ReadPlanned(IoEngine& engine, const ReadPlan& plan,
                                       std::span<const PcrFile* const> files);

// Reads every requested stream in one engine call, planned and coalesced
// across files, and checks each against its checksum. Result i holds
// requests[i]. REQUIRES: every file was opened with `engine`.
Result<std::vector<Bytes>> ReadStreams(IoEngine& engine, std::span<const StreamRequest> requests,
                                       const CoalesceOptions& coalesce = {});

}  // namespace pcr
