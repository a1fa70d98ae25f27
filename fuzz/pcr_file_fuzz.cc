// Decodes arbitrary bytes as a whole pcr file: header, footer, index, the
// sample metadata of every image stripe, and every feature of every table
// stripe and every field of every image stripe. Must never crash or over-read.
#include <cstddef>
#include <cstdint>

#include "format/checksum.h"
#include "format/file_format.h"

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
  pcr::Bytes raw[pcr::kRoleCount];
  for (const pcr::StripeInfo& s : decoded->stripes) {
    if (kind == pcr::FileKind::kImages) {
      const pcr::ByteSpan meta = file.subspan(s.offset, s.streams[0].length);
      (void)pcr::Checksum64(meta);
      (void)pcr::DecodeSampleMetadata(meta, s.image_count);
    }
    for (size_t f = 0; f < decoded->schema.features.size(); ++f) {
      bool ok = true;
      for (auto& r : raw) r.clear();
      for (size_t k = 0; k < s.table_streams.size(); ++k) {
        const pcr::TableStream& t = s.table_streams[k];
        if (t.feature != f) continue;
        const size_t stream = s.first_table_stream + k;
        const pcr::ByteSpan stored = file.subspan(s.stream_offset(stream), s.streams[stream].length);
        ok = ok && pcr::DecompressStream(stored, t.codec, t.raw_length, &raw[static_cast<size_t>(t.role)]).ok();
      }
      pcr::Column column(decoded->schema.features[f].type);
      if (ok) (void)pcr::DecodeFeatureStreams(column.type, s.row_count, raw[0], raw[1], raw[2], raw[3], &column);
    }
  }
  return 0;
}
