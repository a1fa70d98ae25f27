#include "pcr/verify.h"

#include <limits>

#include "format/file_format.h"
#include "format/table_format.h"
#include "io/read_executor.h"
#include "reader/inspect.h"

namespace pcr {

namespace {

// Checks every stream, and every chunk of image stripes, of one open file:
// a stripe at a time, in one read.
void VerifyFile(IoEngine& engine, const PcrFile& file, VerifyReport* report) {
  report->files++;
  const FileIndex& index = file.index();
  ReadBatch batch;
  for (size_t s = 0; s < index.stripes.size(); ++s) {
    const StripeInfo& stripe = index.stripes[s];
    report->stripes++;
    std::vector<ReadRange> ranges;
    for (size_t k = 0; k < stripe.streams.size(); ++k) {
      ranges.push_back(StreamRange(file, s, k));
      const bool group = file.header().kind == FileKind::kImages && k >= stripe.group_stream(1);
      for (uint64_t i = 0; group && i < stripe.image_count; ++i) {
        ranges.push_back(ChunkRange(file, s, static_cast<int>(k - stripe.group_stream(1) + 1), i));
      }
    }
    const Status read = ExecuteReads(engine, ranges, {.max_read = std::numeric_limits<uint64_t>::max()}, &batch, true);
    if (!read.ok()) {
      report->errors.push_back(read.ToString());
      continue;
    }
    for (size_t r = 0; r < ranges.size(); ++r) {
      (ranges[r].check.kind == RangeCheck::Kind::kStream ? report->streams : report->chunks)++;
      if (!batch.check(r).ok()) report->errors.push_back(batch.check(r).ToString());
    }
    report->bytes += stripe.length();
  }
  report->bytes += file.footer().index_length + kFileHeaderSize + kFooterSize;
}

// Checks every stream of a table and decodes every feature of every stripe.
void VerifyTable(const std::string& path, const IoEngineOptions& io, VerifyReport* report) {
  auto table = Table::Open(path, {.io = io});
  if (!table.ok()) {
    report->errors.push_back(table.status().ToString());
    return;
  }
  VerifyFile(TableEngine(**table), TableFile(**table), report);
  std::vector<uint32_t> all((*table)->schema().features.size());
  for (uint32_t f = 0; f < all.size(); ++f) all[f] = f;
  for (size_t s = 0; s < (*table)->stripe_count(); ++s) {
    auto batch = (*table)->Read(all, s, 1);
    if (!batch.ok()) report->errors.push_back(batch.status().ToString());
  }
}

}  // namespace

VerifyReport VerifyPath(const std::string& path, const IoEngineOptions& io) {
  VerifyReport report;
  const Result<bool> table = IsTablePath(path, io);
  if (!table.ok()) {
    report.errors.push_back(table.status().ToString());
    return report;
  }
  if (*table) {
    VerifyTable(path, io, &report);
    return report;
  }
  // Opening checks the manifest; each file is checked against it on touch.
  auto ds = ImageDataset::Open(path, {.io = io});
  if (!ds.ok()) {
    report.errors.push_back(ds.status().ToString());
    return report;
  }
  const TableSchema& fields = (*ds)->field_schema();
  TableSchema sums = fields;  // the files' counts
  for (FeatureInfo& f : sums.features) f.present_count = f.value_count = 0;
  bool all_open = true;
  for (size_t f = 0; f < DatasetFileCount(**ds); ++f) {
    const auto file = DatasetFile(**ds, f);
    if (!file.ok()) {
      report.errors.push_back(file.status().ToString());
      all_open = false;
      continue;
    }
    VerifyFile(DatasetEngine(**ds), **file, &report);
    // Opening the file checked its features against the dataset's.
    if (SameFeatures((*file)->index().schema, sums)) AddFeatureCounts((*file)->index().schema, &sums);
  }
  // The manifest's field counts against the files' sums.
  for (size_t k = 0; all_open && k < sums.features.size(); ++k) {
    const FeatureInfo& want = fields.features[k];
    const FeatureInfo& got = sums.features[k];
    if (got.present_count != want.present_count || got.value_count != want.value_count) {
      report.errors.push_back(path + ": field '" + want.name + "': the manifest counts " +
                              std::to_string(want.present_count) + " present and " + std::to_string(want.value_count) +
                              " values, its files " + std::to_string(got.present_count) + " and " +
                              std::to_string(got.value_count));
    }
  }
  const Result<DatasetCounts> counts = (*ds)->counts();
  if (!counts.ok()) {
    if (all_open) report.errors.push_back(counts.status().ToString());  // else reported above
    return report;
  }
  // Every record's sample metadata and fields are decoded, and every
  // image's segments put back, as a reader does.
  const bool segments = counts->segment_bytes > 0;
  RecordSelection all{.fidelity = segments ? 1 : kFieldsOnly, .segments = segments};
  for (uint32_t f = 0; f < (*ds)->field_schema().features.size(); ++f) all.fields.push_back(f);
  for (uint64_t r = 0; r < (*ds)->num_records(); ++r) {
    auto batch = (*ds)->ReadRecordBatches({&r, 1}, all);
    if (!batch.ok()) report.errors.push_back(batch.status().ToString());
  }
  return report;
}

}  // namespace pcr
