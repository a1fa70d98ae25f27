// How reader/'s own units reach the inside of an ImageDataset or a Table,
// which the public headers keep private. Only reader/ includes this and the
// *_rep.h headers (tests/check_layers.sh); the layers above use
// reader/record_reads.h (loader/) and reader/inspect.h (tools and tests).
#pragma once

#include <memory>

#include "pcr/image_dataset.h"
#include "pcr/table.h"

namespace pcr {

struct ReaderInternals {
  using DatasetRep = ImageDataset::Rep;
  using TableRep = Table::Rep;
  static const DatasetRep& Of(const ImageDataset& dataset) { return *dataset.rep_; }
  static std::shared_ptr<const DatasetRep> Share(const ImageDataset& dataset) { return dataset.rep_; }
  // Another handle on the same open dataset, which keeps it open.
  static std::shared_ptr<const ImageDataset> Handle(const ImageDataset& dataset) {
    return std::shared_ptr<const ImageDataset>(new ImageDataset(dataset.rep_));
  }
  static const TableRep& Of(const Table& table) { return *table.rep_; }
  // Another handle on the same open table, which keeps it open.
  static std::shared_ptr<const Table> Handle(const Table& table) {
    return std::shared_ptr<const Table>(new Table(table.rep_));
  }
};

}  // namespace pcr
