// Decodes arbitrary bytes as a whole pcr file: header, footer, index, the
// sample metadata of every image stripe, and every feature of every table
// stripe and every field of every image stripe, encoded streams included.
// Must never crash or over-read.
#include <cstddef>
#include <cstdint>

#include "format/checksum.h"
#include "format/file_format.h"
#include "format/table_stripe.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const pcr::ByteSpan file(data, size);
  if (size < pcr::kMinFileSize) return 0;
  auto header = pcr::FileHeader::DecodeFrom(file.first(pcr::kFileHeaderSize));
  // Checksums are not required to match here, so the fuzzer reaches the index
  // decoder with arbitrary bytes.
  auto footer = pcr::Footer::DecodeFrom(file.last(pcr::kFooterSize), size);
  const uint64_t index_offset = footer.ok() ? footer->index_offset : pcr::kFileHeaderSize;
  const pcr::ByteSpan index = file.subspan(index_offset, size - pcr::kFooterSize - index_offset);
  if (header.ok() && header->kind == pcr::FileKind::kDataset) {
    (void)pcr::DatasetManifest::DecodeFrom(index);
    return 0;
  }
  // Without a valid header, the newest image layout (with field streams).
  const pcr::FileKind kind = header.ok() ? header->kind : pcr::FileKind::kImages;
  const uint8_t version = header.ok() ? header->version_minor : pcr::kVersionMinor;
  auto decoded = pcr::FileIndex::DecodeFrom(index, kind, version, index_offset);
  if (!decoded.ok()) return 0;
  pcr::Bytes scratch[pcr::kRoleCount + 1];
  for (size_t i = 0; i < decoded->stripes.size(); ++i) {
    const pcr::StripeInfo& s = decoded->stripes[i];
    if (kind == pcr::FileKind::kImages) {
      const pcr::ByteSpan meta = file.subspan(s.offset, s.streams[0].length);
      (void)pcr::Checksum64(meta);
      (void)pcr::DecodeSampleMetadata(meta, s.image_count);
    }
    const std::vector<size_t> stream_of = s.TableStreamIndex(decoded->schema.features.size());
    for (uint32_t f = 0; f < decoded->schema.features.size(); ++f) {
      pcr::ByteSpan stored[pcr::kRoleCount];
      for (size_t k = 0; k < s.table_streams.size(); ++k) {
        const pcr::TableStream& t = s.table_streams[k];
        if (t.feature != f) continue;
        const size_t stream = s.first_table_stream + k;
        stored[static_cast<size_t>(t.role)] = file.subspan(s.stream_offset(stream), s.streams[stream].length);
      }
      pcr::Column column(decoded->schema.features[f].type);
      (void)pcr::DecodeStoredFeature("fuzz", decoded->schema, s, i, stream_of, f, stored, scratch, &column);
    }
  }
  return 0;
}
