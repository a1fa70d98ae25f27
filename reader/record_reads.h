// The two halves of a record read, for the loader's read-ahead: reading the
// streams of several records in one engine call, and cutting one record's
// streams into a batch later, on another thread. Not part of the API.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>
#include <span>

#include "io/read_executor.h"
#include "pcr/image_dataset.h"
#include "pcr/table.h"

namespace pcr {

// Streams a record read of `selection` takes: the sample metadata, the
// streams of each field, and scan groups 1..fidelity.
size_t StreamsPerRecord(const ImageDataset& dataset, const RecordSelection& selection);
// Reads those streams of several records in one engine call, each stream
// checked: record i's streams start at (*out)[i * StreamsPerRecord()] ...
Status ReadRecordStreams(const ImageDataset& dataset, std::span<const uint64_t> records,
                         const RecordSelection& selection, ReadBatch* out);
// ... and cuts one record's checked streams into `batch`, checking every
// chunk (as verify does), decoding the fields and reusing the batch's buffer.
Status ParseRecord(const ImageDataset& dataset, uint64_t record, const RecordSelection& selection,
                   std::span<const ByteSpan> streams, RecordBatch* batch);
// ImageDataset::ReadImages, but an image whose chunks fail their checksums
// is left empty with its error (naming it) in (*failed)[i].
Result<std::vector<Image>> ReadImagesOrFailures(const ImageDataset& dataset, std::span<const ImageRequest> requests,
                                                std::vector<Status>* failed);
// Another handle on the open dataset, which keeps it open: iterators hold
// one, so that the caller may destroy its own first.
std::shared_ptr<const ImageDataset> ShareDataset(const ImageDataset& dataset);
// The same for a table: a TableLoader holds one.
std::shared_ptr<const Table> ShareTable(const Table& table);
// Images in record `record`. REQUIRES: record < dataset.num_records()
uint64_t RecordImageCount(const ImageDataset& dataset, uint64_t record);

// RecordImageCount of every record, in order.
std::vector<uint64_t> RecordImageCounts(const ImageDataset& dataset);

}  // namespace pcr
