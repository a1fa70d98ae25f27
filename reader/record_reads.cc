#include "reader/record_reads.h"

#include "reader/image_dataset_rep.h"

namespace pcr {

size_t StreamsPerRecord(const ImageDataset& dataset, const RecordSelection& selection) {
  return ReaderInternals::Of(dataset).StreamsPerRecord(selection);
}

Status ReadRecordStreams(const ImageDataset& dataset, std::span<const uint64_t> records,
                         const RecordSelection& selection, ReadBatch* out) {
  return ReaderInternals::Of(dataset).ReadRecordStreams(records, selection, out);
}

Status ParseRecord(const ImageDataset& dataset, uint64_t record, const RecordSelection& selection,
                   std::span<const ByteSpan> streams, RecordBatch* batch) {
  return ReaderInternals::Of(dataset).ParseRecord(record, selection, streams, batch);
}

Result<std::vector<Image>> ReadImagesOrFailures(const ImageDataset& dataset, std::span<const ImageRequest> requests,
                                                std::vector<Status>* failed) {
  return ReaderInternals::Of(dataset).ReadImages(requests, {}, failed);
}

std::shared_ptr<const ImageDataset> ShareDataset(const ImageDataset& dataset) {
  return ReaderInternals::Handle(dataset);
}

std::shared_ptr<const Table> ShareTable(const Table& table) { return ReaderInternals::Handle(table); }

uint64_t RecordImageCount(const ImageDataset& dataset, uint64_t record) {
  return ReaderInternals::Of(dataset).record(record).image_count;
}

std::vector<uint64_t> RecordImageCounts(const ImageDataset& dataset) {
  std::vector<uint64_t> counts(dataset.num_records());
  for (uint64_t r = 0; r < counts.size(); ++r) counts[r] = RecordImageCount(dataset, r);
  return counts;
}

}  // namespace pcr
