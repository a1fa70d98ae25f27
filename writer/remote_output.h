// Conversions into object storage: converted in a local work directory,
// then uploaded with the manifest last, journaled so that a rerun resumes.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "pcr/convert.h"
#include "pcr/io.h"
#include "pcr/status.h"

namespace pcr {

// True for outputs in object storage (s3://).
bool IsObjectStoreOutput(std::string_view out_dir);

// Uploads every regular file of `local` whose name does not start with '.'
// as `remote`/NAME, the files named in `last` after all others and in that
// order, each checked (S3Uploader::Upload). `journal` (a local file) records
// each file uploaded (its size and modification time) and each multipart
// upload started; a run aborts the uploads left open, and sends again only
// the files the journal lacks or the store does not hold at their size.
// Cancelled once `cancel` holds true, checked before each file.
Status PublishDirectory(const std::string& local, const std::string& remote, const std::vector<std::string>& last,
                        const std::string& journal, const RemoteOptions& remote_options,
                        const UploadOptions& upload, const std::atomic<bool>* cancel);

// ConvertImages or ConvertWebDataset (`convert`) into options.out_dir in
// object storage: into ConversionWorkDir's out/ (kept from an earlier run
// when it finished there), then PublishDirectory with the manifest (the
// part manifest of a sharded conversion) last.
Result<ConvertImagesSummary> ConvertImagesToObjectStore(
    const ConvertImagesOptions& options, Result<ConvertImagesSummary> (*convert)(const ConvertImagesOptions&));

// ConvertTable (`convert`) into options.out_dir in object storage, as
// ConvertImagesToObjectStore.
Result<TableConvertReport> ConvertTableToObjectStore(
    const TableConvertOptions& options, const std::function<Result<TableConvertReport>(const TableConvertOptions&)>& convert);

// MergeParts into options.out_dir in object storage: `merge` into
// ConversionWorkDir's out/ (a manifest, and record files or links to them),
// then PublishDirectory with the manifest last.
Result<MergeSummary> MergeToObjectStore(const MergeOptions& options,
                                        const std::function<Result<MergeSummary>(const std::string& out)>& merge);

}  // namespace pcr
