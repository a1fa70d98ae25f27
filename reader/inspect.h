// What pcr's tools and tests look at inside image datasets and tables: their
// files, engines and record locations, and opening one on a shared engine.
// Not part of the API: tools/, tests/, fuzz/ and bench/ include it, the
// library layers do not (tests/check_layers.sh).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "io/io_engine.h"
#include "io/pcr_file.h"
#include "pcr/image_dataset.h"
#include "pcr/table.h"

namespace pcr {

// Where a record of a dataset lies.
struct RecordLocation {
  size_t file = 0;
  size_t stripe = 0;
  uint64_t first_image = 0;  // dataset-wide index of the record's first image
  uint64_t image_count = 0;
};

// Opens `path` reading through `engine` (not owned, and it must outlive the
// result; nullptr: an engine of its own from options.io). Without `samples`,
// no record is read.
Result<std::unique_ptr<ImageDataset>> OpenImageDataset(const std::string& path, const ImageReaderOptions& options,
                                                       IoEngine* engine, bool samples = true);
Result<std::unique_ptr<Table>> OpenTable(const std::string& path, const TableReaderOptions& options,
                                         IoEngine* engine);

// The dataset's files in record order, its engine and record `record`'s
// place. REQUIRES: record < dataset.num_records()
const std::vector<std::unique_ptr<PcrFile>>& DatasetFiles(const ImageDataset& dataset);
IoEngine& DatasetEngine(const ImageDataset& dataset);
const RecordLocation& DatasetRecord(const ImageDataset& dataset, uint64_t record);
// How errors about an image name it: "<file>: image <image> (record <r>, key
// <key>)". REQUIRES: image < dataset.num_images()
std::string DescribeImage(const ImageDataset& dataset, uint64_t image);

const PcrFile& TableFile(const Table& table);
IoEngine& TableEngine(const Table& table);

}  // namespace pcr
