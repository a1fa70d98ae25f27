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
// result; nullptr: an engine of its own from options.io).
Result<std::unique_ptr<ImageDataset>> OpenImageDataset(const std::string& path, const ImageReaderOptions& options,
                                                       IoEngine* engine);
Result<std::unique_ptr<Table>> OpenTable(const std::string& path, const TableReaderOptions& options,
                                         IoEngine* engine);

// The number of the dataset's files; file `file` (in record order), opened
// and checked on first touch; its engine; record `record`'s place.
// REQUIRES: file < DatasetFileCount(dataset), record < dataset.num_records()
size_t DatasetFileCount(const ImageDataset& dataset);
Result<std::shared_ptr<const PcrFile>> DatasetFile(const ImageDataset& dataset, size_t file);
// Every file, opened and checked.
Result<std::vector<std::shared_ptr<const PcrFile>>> DatasetAllFiles(const ImageDataset& dataset);
IoEngine& DatasetEngine(const ImageDataset& dataset);
const RecordLocation& DatasetRecord(const ImageDataset& dataset, uint64_t record);
// Files whose index the dataset has read since it was opened (again after
// being dropped from memory), and the bytes of what it keeps in memory.
uint64_t DatasetFilesLoaded(const ImageDataset& dataset);
uint64_t DatasetCacheBytes(const ImageDataset& dataset);
// How errors about an image name it: "<file>: image <image> (record <r>, key
// <key>)". REQUIRES: image < dataset.num_images()
std::string DescribeImage(const ImageDataset& dataset, uint64_t image);

const PcrFile& TableFile(const Table& table);
IoEngine& TableEngine(const Table& table);

}  // namespace pcr
