#include "pcr/verify.h"

#include "format/file_format.h"
#include "reader/image_dataset_rep.h"
#include "reader/table_rep.h"

namespace pcr {

namespace {

// Checks every stream, and every chunk of image stripes, of one open file.
void VerifyFile(const PcrFile& file, VerifyReport* report) {
  report->files++;
  const FileIndex& index = file.index();
  for (size_t s = 0; s < index.stripes.size(); ++s) {
    const StripeInfo& stripe = index.stripes[s];
    report->stripes++;
    Bytes data(stripe.length());
    Status st = file.ReadRange(stripe.offset, data);
    if (!st.ok()) {
      report->errors.push_back(st.ToString());
      continue;
    }
    size_t off = 0;
    for (size_t k = 0; k < stripe.streams.size(); ++k) {
      const ByteSpan stream = ByteSpan(data).subspan(off, stripe.streams[k].length);
      report->streams++;
      st = file.CheckStream(s, k, stream);
      if (!st.ok()) report->errors.push_back(st.ToString());
      size_t chunk_off = 0;
      for (uint64_t i = 0; k > 0 && i < stripe.image_count; ++i) {
        const uint64_t len = stripe.chunk(static_cast<int>(k), i).length;
        report->chunks++;
        st = file.CheckChunk(s, static_cast<int>(k), i, stream.subspan(chunk_off, len));
        if (!st.ok()) report->errors.push_back(st.ToString());
        chunk_off += len;
      }
      off += stripe.streams[k].length;
    }
    report->bytes += data.size();
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
  VerifyFile(*(*table)->rep().file, report);
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
  if (IsTablePath(path)) {
    VerifyTable(path, io, &report);
    return report;
  }
  // Opening checks header, footer, index and manifest, and reads every
  // record's sample metadata.
  auto ds = ImageDataset::Open(path, {.io = io});
  if (!ds.ok()) {
    report.errors.push_back(ds.status().ToString());
    return report;
  }
  for (const auto& file : (*ds)->rep().files) VerifyFile(*file, &report);
  return report;
}

}  // namespace pcr
