// Rewriting an image dataset with its field streams in another order,
// copying every stored stream.
#include <filesystem>
#include <limits>

#include "format/checksum.h"
#include "format/popularity.h"
#include "format/table_stripe.h"
#include "io/read_executor.h"
#include "pcr/convert.h"
#include "io/location.h"
#include "io/pcr_file.h"
#include "writer/file_writer.h"

namespace pcr {

namespace {

namespace fs = std::filesystem;

// Copies `in` to `out_path` with each stripe's field streams in `order`.
// Every field is decoded first, so damage is refused, never copied under
// fresh checksums.
Result<DatasetFileEntry> ReorderFile(IoEngine& engine, const PcrFile& in, const std::vector<uint32_t>& order,
                                     const std::string& out_path) {
  PCR_ASSIGN_OR_RETURN(auto out, AtomicFile::Create(out_path));
  Bytes bytes;
  in.header().EncodeTo(&bytes);
  PCR_RETURN_IF_ERROR(out->Append(bytes));
  FileIndex index = in.index();
  const TableSchema& schema = index.schema;
  Bytes scratch[kRoleCount + 1];
  ReadBatch read;
  uint64_t images = 0;
  for (size_t s = 0; s < index.stripes.size(); ++s) {
    const StripeInfo& old = in.index().stripes[s];
    std::vector<ReadRange> ranges;
    for (size_t k = 0; k < old.streams.size(); ++k) ranges.push_back(StreamRange(in, s, k));
    PCR_RETURN_IF_ERROR(ExecuteReads(engine, ranges, {.max_read = std::numeric_limits<uint64_t>::max()}, &read));
    const std::vector<size_t> stream_of = old.TableStreamIndex(schema.features.size());
    StripeInfo& stripe = index.stripes[s];
    stripe.offset = out->size();
    stripe.streams = {old.streams[0]};
    stripe.table_streams.clear();
    PCR_RETURN_IF_ERROR(out->Append(read[0]));
    for (const uint32_t f : order) {
      ByteSpan stored[kRoleCount];
      for (const StreamRole role : RolesOf(schema.features[f].type)) {
        stored[static_cast<size_t>(role)] = read[old.first_table_stream + stream_of[f * kRoleCount + static_cast<size_t>(role)]];
      }
      Column column(schema.features[f].type);
      PCR_RETURN_IF_ERROR(DecodeStoredFeature(in.path(), schema, old, s, stream_of, f, stored, scratch, &column));
      for (const StreamRole role : RolesOf(schema.features[f].type)) {
        const size_t k = stream_of[f * kRoleCount + static_cast<size_t>(role)];
        stripe.table_streams.push_back(old.table_streams[k]);
        stripe.streams.push_back(old.streams[old.first_table_stream + k]);
        PCR_RETURN_IF_ERROR(out->Append(read[old.first_table_stream + k]));
      }
    }
    // The scan groups and the segments stream, as they were.
    for (size_t k = old.group_stream(1); k < old.streams.size(); ++k) {
      stripe.streams.push_back(old.streams[k]);
      PCR_RETURN_IF_ERROR(out->Append(read[k]));
    }
    images += stripe.image_count;
  }
  Bytes encoded;
  index.EncodeTo(FileKind::kImages, in.header().version_minor, &encoded);
  PCR_RETURN_IF_ERROR(out->Append(EncodeIndexAndFooter(encoded, out->size())));
  const DatasetFileEntry entry{.name = fs::path(out_path).filename().string(),
                               .size = out->size(),
                               .image_count = images,
                               .stripe_count = index.stripes.size(),
                               .index_checksum = Checksum64(encoded)};
  PCR_RETURN_IF_ERROR(out->Commit());
  return entry;
}

}  // namespace

Result<ConvertImagesSummary> ReorderImageFields(const std::string& input, const std::string& output,
                                                const std::vector<std::string>& stream_order,
                                                const IoEngineOptions& io) {
  PCR_ASSIGN_OR_RETURN(auto engine, MakeIoEngine(io));
  PCR_ASSIGN_OR_RETURN(const Location where, Locate(input));
  const std::string manifest_path = where.Join(kDatasetManifestName);
  PCR_ASSIGN_OR_RETURN(auto in_manifest, PcrFile::Open(manifest_path, engine.get()));
  if (in_manifest->header().kind != FileKind::kDataset) {
    return Status::InvalidArgument(manifest_path + ": not a dataset manifest");
  }
  PCR_ASSIGN_OR_RETURN(DirectoryLock lock, DirectoryLock::Take(output));
  std::error_code ec;
  if (fs::exists(fs::path(output) / kDatasetManifestName, ec)) {
    return Status::InvalidArgument(output + ": already holds a dataset");
  }
  DatasetManifest manifest = in_manifest->manifest();
  ConvertImagesSummary summary;
  std::vector<std::string> written;
  for (DatasetFileEntry& entry : manifest.files) {
    auto reordered = [&]() -> Result<DatasetFileEntry> {
      PCR_ASSIGN_OR_RETURN(auto file, PcrFile::Open((fs::path(input) / entry.name).string(), engine.get()));
      if (file->header().kind != FileKind::kImages || file->footer().index_checksum != entry.index_checksum) {
        return Status::Corruption(file->path() + ": differs from the manifest");
      }
      const std::vector<uint32_t> order = StreamOrder(file->index().schema.features, stream_order);
      return ReorderFile(*engine, *file, order, (fs::path(output) / entry.name).string());
    }();
    if (!reordered.ok()) {
      for (const std::string& name : written) fs::remove(fs::path(output) / name, ec);
      return reordered.status();
    }
    written.push_back(entry.name);
    summary.files++;
    summary.records += reordered->stripe_count;
    summary.images += reordered->image_count;
    summary.input_bytes += entry.size;
    summary.output_bytes += reordered->size;
    entry = *std::move(reordered);
  }
  PCR_RETURN_IF_ERROR(WriteDatasetManifest((fs::path(output) / kDatasetManifestName).string(), manifest));
  return summary;
}

}  // namespace pcr
