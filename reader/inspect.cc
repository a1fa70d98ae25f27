#include "reader/inspect.h"

#include "reader/image_dataset_rep.h"
#include "reader/table_rep.h"

namespace pcr {

Result<std::unique_ptr<ImageDataset>> OpenImageDataset(const std::string& path, const ImageReaderOptions& options,
                                                       IoEngine* engine, bool samples) {
  return ReaderInternals::DatasetRep::Open(path, options, engine, samples);
}

Result<std::unique_ptr<Table>> OpenTable(const std::string& path, const TableReaderOptions& options,
                                         IoEngine* engine) {
  return ReaderInternals::TableRep::Open(path, options, engine);
}

const std::vector<std::unique_ptr<PcrFile>>& DatasetFiles(const ImageDataset& dataset) {
  return ReaderInternals::Of(dataset).files;
}

IoEngine& DatasetEngine(const ImageDataset& dataset) { return *ReaderInternals::Of(dataset).engine; }

const RecordLocation& DatasetRecord(const ImageDataset& dataset, uint64_t record) {
  return ReaderInternals::Of(dataset).record(record);
}

std::string DescribeImage(const ImageDataset& dataset, uint64_t image) {
  return ReaderInternals::Of(dataset).DescribeImage(image);
}

const PcrFile& TableFile(const Table& table) { return *ReaderInternals::Of(table).file; }

IoEngine& TableEngine(const Table& table) { return *ReaderInternals::Of(table).engine; }

}  // namespace pcr
