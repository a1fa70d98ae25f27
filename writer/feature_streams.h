// Building a table stripe's streams row by row, and storing them: each
// encoded as the writer chooses (writer/stream_encoder.h), then compressed
// with zstd where that pays.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "format/table_format.h"
#include "writer/stream_encoder.h"

namespace pcr {

// Raw (uncompressed) streams of one feature in one stripe, being built row by row.
struct FeatureStreams {
  std::vector<uint32_t> rows;  // rows of the stripe holding the feature, increasing
  Bytes lengths;
  Bytes values;
  Bytes scores;

  void Clear();
  // Raw stream `role` of a stripe of row_count rows: a view of the stream,
  // or for presence of `*bitmap`, which it fills.
  ByteSpan Raw(StreamRole role, uint64_t row_count, Bytes* bitmap) const;

  // Each Add* appends the value of row `row` (above every row added since
  // Clear) and returns the raw bytes it added. REQUIRES: `type` is the
  // feature's type and has the value's form.
  // kInt64, and the bits of kUInt64 and the ticks of timestamps.
  size_t AddInt64(uint32_t row, int64_t v);
  size_t AddBool(uint32_t row, bool v);
  // Rounded to float for kFloat32.
  size_t AddFloat(FeatureType type, uint32_t row, double v);
  // kString and kBytes. REQUIRES: s.size() < 2^32
  size_t AddString(uint32_t row, std::string_view s);
  // Id lists; `scores` has one entry per id for scored types, else is empty.
  size_t AddIdList(FeatureType type, uint32_t row, std::span<const int64_t> ids, std::span<const double> scores);
  // kFloat32List (rounded to float) and kFloat64List.
  size_t AddFloatList(FeatureType type, uint32_t row, std::span<const double> values);
};

// A stored stream: the raw bytes encoded, then compressed when that makes
// them smaller.
struct StoredStream {
  StreamCodec codec = StreamCodec::kNone;
  uint64_t raw_length = 0;
  StreamEncoding encoding = StreamEncoding::kPlain;
  Bytes owned;    // the stored bytes, unless they are view's
  ByteSpan view;  // a raw stream stored as it is, without a copy
  ByteSpan bytes() const { return owned.empty() ? view : ByteSpan(owned); }
};
// `raw` compressed, or a view of it (valid while raw is) when zstd does not
// make it smaller.
StoredStream CompressStream(ByteSpan raw, int zstd_level);
// The stored streams of one feature of `type` over a stripe of row_count
// rows, in the order of RolesOf(type), valid while `streams` is unchanged:
// each encoded as `choice` says (a string feature's lengths are
// kDerivedLengths when its values are a kStringDictionary), then compressed
// with zstd where that saves at least 1/32 of the bytes.
std::vector<StoredStream> StoreFeatureStreams(FeatureType type, const FeatureStreams& streams, uint64_t row_count,
                                              const EncodingChoice& choice);

}  // namespace pcr
