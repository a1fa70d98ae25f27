#include "reader/fuzz_file.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <vector>

#include "format/file_format.h"
#include "io/io_engine.h"
#include "io/pcr_file.h"
#include "reader/image_dataset_rep.h"
#include "reader/internals.h"
#include "reader/table_rep.h"

namespace pcr {

namespace {

void Require(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "FuzzPcrFile: %s\n", what);
  std::abort();
}

constexpr CoalesceOptions kUncoalesced{.hole_limit = 0, .max_read = 1};

void ReadImages(const ImageDataset& ds) {
  std::vector<std::vector<uint64_t>> images_of(ds.num_records());
  for (uint64_t i = 0; i < ds.num_images(); ++i) images_of[ds.LocateImage(i)->first].push_back(i);
  std::vector<uint32_t> fields(ds.field_schema().features.size());
  std::iota(fields.begin(), fields.end(), 0);
  for (uint64_t r = 0; r < ds.num_records(); ++r) {
    for (int k = kFieldsOnly; k <= ds.num_scan_groups(); ++k) {
      for (const bool segments : {false, true}) {
        auto batches = ds.ReadRecordBatches({&r, 1}, {.fidelity = k, .fields = fields, .segments = segments});
        if (!batches.ok() || k == kFieldsOnly) continue;
        const RecordBatch& batch = (*batches)[0];
        Require(batch.images.size() == images_of[r].size(), "a record's images differ from its index");
        std::vector<ImageRequest> requests;
        for (const uint64_t i : images_of[r]) requests.push_back({.image = i, .fidelity = k, .segments = segments});
        auto one_by_one = ds.ReadImages(requests, kUncoalesced);
        if (!one_by_one.ok()) continue;
        for (size_t i = 0; i < requests.size(); ++i) {
          const ByteSpan a = batch.images[i].jpeg;
          const Bytes& b = (*one_by_one)[i].jpeg;
          Require(Bytes(a.begin(), a.end()) == b, "a record read and single-image reads give different JPEGs");
        }
      }
    }
  }
}

template <typename T>
bool SameBits(const Buffer<T>& a, const Buffer<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// `whole` read in one call, coalesced; `apart` stripe by stripe, uncoalesced.
void ReadTable(const Table& whole, const Table& apart) {
  std::vector<uint32_t> all(whole.schema().features.size());
  std::iota(all.begin(), all.end(), 0);
  auto read = whole.Read(all, 0, whole.stripe_count());
  if (!read.ok()) return;
  std::vector<Column> joined;
  for (const Column& c : read->columns) joined.emplace_back(c.type);
  for (size_t s = 0; s < apart.stripe_count(); ++s) {
    auto stripe = apart.Read(all, s, 1);
    Require(stripe.ok(), "a table reads whole but not stripe by stripe");
    for (size_t f = 0; f < all.size(); ++f) AppendRows(stripe->columns[f], 0, stripe->columns[f].rows, &joined[f]);
  }
  for (size_t f = 0; f < all.size(); ++f) {
    const Column& a = read->columns[f];
    const Column& b = joined[f];
    Require(a.rows == b.rows && a.present == b.present && a.ints == b.ints && a.offsets == b.offsets &&
                a.bytes == b.bytes && SameBits(a.floats, b.floats) && SameBits(a.doubles, b.doubles),
            "a table read whole and stripe by stripe gives different columns");
  }
}

}  // namespace

void FuzzPcrFile(const uint8_t* data, size_t size) {
  auto engine = MakeIoEngine({.kind = IoEngineKind::kPread});
  if (!engine.ok()) return;
  const Bytes fixed = RefixChecksums(ByteSpan(data, size));
  auto open = [&] { return PcrFile::Open(IoEngine::OpenMemory("fuzz.pcr", fixed), engine->get()); };
  auto file = open();
  if (!file.ok()) return;
  if ((*file)->header().kind == FileKind::kTable) {
    auto whole = ReaderInternals::TableRep::FromFile(std::move(*file), {}, engine->get());
    auto other = open();
    if (!whole.ok() || !other.ok()) return;
    auto apart = ReaderInternals::TableRep::FromFile(std::move(*other), {.coalesce = kUncoalesced}, engine->get());
    Require(apart.ok(), "a table opens once but not twice");
    ReadTable(**whole, **apart);
  } else if ((*file)->header().kind == FileKind::kImages) {
    auto ds = ReaderInternals::DatasetRep::FromFile(std::move(*file), {}, engine->get());
    if (ds.ok()) ReadImages(**ds);
  }
}

}  // namespace pcr
