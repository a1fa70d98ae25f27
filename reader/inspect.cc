#include "reader/inspect.h"

#include "reader/image_dataset_rep.h"
#include "reader/table_rep.h"

namespace pcr {

Result<std::unique_ptr<ImageDataset>> OpenImageDataset(const std::string& path, const ImageReaderOptions& options,
                                                       IoEngine* engine) {
  return ReaderInternals::DatasetRep::Open(path, options, engine);
}

Result<std::unique_ptr<Table>> OpenTable(const std::string& path, const TableReaderOptions& options,
                                         IoEngine* engine) {
  return ReaderInternals::TableRep::Open(path, options, engine);
}

size_t DatasetFileCount(const ImageDataset& dataset) { return ReaderInternals::Of(dataset).files.size(); }

Result<std::shared_ptr<const PcrFile>> DatasetFile(const ImageDataset& dataset, size_t file) {
  return ReaderInternals::Of(dataset).File(file);
}

Result<std::vector<std::shared_ptr<const PcrFile>>> DatasetAllFiles(const ImageDataset& dataset) {
  const auto& rep = ReaderInternals::Of(dataset);
  std::vector<size_t> all(rep.files.size());
  for (size_t f = 0; f < all.size(); ++f) all[f] = f;
  std::vector<std::shared_ptr<const PcrFile>> out;
  PCR_RETURN_IF_ERROR(rep.Files(all, &out));
  return out;
}

uint64_t DatasetFilesLoaded(const ImageDataset& dataset) { return ReaderInternals::Of(dataset).files_loaded.load(); }

uint64_t DatasetCacheBytes(const ImageDataset& dataset) { return ReaderInternals::Of(dataset).cache->bytes(); }

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
