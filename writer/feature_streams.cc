#include "writer/feature_streams.h"

#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>

namespace pcr {

namespace {

void PutFloat(Bytes* out, float f) {
  out->resize(out->size() + 4);
  std::memcpy(out->data() + out->size() - 4, &f, 4);
}

void PutDouble(Bytes* out, double d) {
  out->resize(out->size() + 8);
  std::memcpy(out->data() + out->size() - 8, &d, 8);
}

}  // namespace

void FeatureStreams::Clear() {
  rows.clear();
  lengths.clear();
  values.clear();
  scores.clear();
}

ByteSpan FeatureStreams::Raw(StreamRole role, uint64_t row_count, Bytes* bitmap) const {
  switch (role) {
    case StreamRole::kPresence: {
      if (rows.size() == row_count) return {};
      bitmap->assign((row_count + 7) / 8, 0);
      for (const uint32_t r : rows) (*bitmap)[r / 8] |= static_cast<uint8_t>(1u << (r % 8));
      return *bitmap;
    }
    case StreamRole::kLengths:
      return lengths;
    case StreamRole::kValues:
      return values;
    case StreamRole::kScores:
      return scores;
  }
  return {};
}

size_t FeatureStreams::AddInt64(uint32_t row, int64_t v) {
  rows.push_back(row);
  PutFixed64(&values, static_cast<uint64_t>(v));
  return 8;
}

size_t FeatureStreams::AddFloat(FeatureType type, uint32_t row, double v) {
  rows.push_back(row);
  if (type == FeatureType::kFloat32) {
    PutFloat(&values, static_cast<float>(v));
    return 4;
  }
  PutDouble(&values, v);
  return 8;
}

size_t FeatureStreams::AddBool(uint32_t row, bool v) {
  rows.push_back(row);
  values.push_back(v ? 1 : 0);
  return 1;
}

size_t FeatureStreams::AddString(uint32_t row, std::string_view s) {
  rows.push_back(row);
  PutFixed32(&lengths, static_cast<uint32_t>(s.size()));
  // Room to grow, so that a huge string is not copied again when the next
  // row's is appended (pages not yet written take no memory).
  if (values.capacity() - values.size() < s.size()) values.reserve(2 * (values.size() + s.size()));
  values.insert(values.end(), s.begin(), s.end());
  return 4 + s.size();
}

size_t FeatureStreams::AddIdList(FeatureType type, uint32_t row, std::span<const int64_t> ids,
                                 std::span<const double> scores) {
  rows.push_back(row);
  PutFixed32(&lengths, static_cast<uint32_t>(ids.size()));
  for (const int64_t id : ids) PutFixed64(&values, static_cast<uint64_t>(id));
  size_t added = 4 + 8 * ids.size();
  for (const double d : scores) {
    if (type == FeatureType::kScoredIdList64) {
      PutDouble(&this->scores, d);
      added += 8;
    } else if (type == FeatureType::kScoredIdList32) {
      PutFloat(&this->scores, static_cast<float>(d));
      added += 4;
    }
  }
  return added;
}

size_t FeatureStreams::AddFloatList(FeatureType type, uint32_t row, std::span<const double> list) {
  rows.push_back(row);
  PutFixed32(&lengths, static_cast<uint32_t>(list.size()));
  for (const double d : list) {
    if (type == FeatureType::kFloat32List) {
      PutFloat(&values, static_cast<float>(d));
    } else {
      PutDouble(&values, d);
    }
  }
  return 4 + list.size() * (type == FeatureType::kFloat32List ? 4 : 8);
}

namespace {

// `in` in zstd when that takes fewer than `limit` bytes.
bool Zstd(ByteSpan in, int zstd_level, size_t limit, Bytes* out) {
  std::unique_ptr<uint8_t[]> z;
  const size_t n = CompressZstd(in, zstd_level, &z);
  if (ZSTD_isError(n) || n >= limit) return false;
  out->assign(z.get(), z.get() + n);
  return true;
}

}  // namespace

StoredStream CompressStream(ByteSpan raw, int zstd_level) {
  StoredStream s{.codec = StreamCodec::kNone, .raw_length = raw.size()};
  if (!raw.empty() && Zstd(raw, zstd_level, raw.size(), &s.owned)) {
    s.codec = StreamCodec::kZstd;
  } else {
    s.view = raw;
  }
  return s;
}

namespace {

// zstd over an encoded stream when it saves at least 1/32 of its bytes and
// keeps `bound` (raw_length, or for a string dictionary the larger of its
// raw_length and its lengths') within kMaxStoredExpansion of the stored
// length.
StoredStream Store(EncodedStream e, ByteSpan raw, uint64_t bound, int zstd_level) {
  if (e.encoding == StreamEncoding::kPlain) return CompressStream(raw, zstd_level);
  StoredStream s{.codec = StreamCodec::kNone, .raw_length = raw.size(), .encoding = e.encoding};
  if (e.encoding != StreamEncoding::kDerivedLengths &&
      Zstd(e.bytes, zstd_level, e.bytes.size() - e.bytes.size() / 32, &s.owned) &&
      bound / kMaxStoredExpansion < s.owned.size()) {
    s.codec = StreamCodec::kZstd;
    return s;
  }
  s.owned = std::move(e.bytes);
  return s;
}

}  // namespace

std::vector<StoredStream> StoreFeatureStreams(FeatureType type, const FeatureStreams& streams, uint64_t row_count,
                                              const EncodingChoice& choice) {
  std::vector<StoredStream> out;
  const bool strings = IsStringType(type);
  EncodedStream string_values;
  if (strings) string_values = EncodeStrings(streams.lengths, streams.values, choice);
  const bool derived = string_values.encoding == StreamEncoding::kStringDictionary;
  for (const StreamRole role : RolesOf(type)) {
    Bytes bitmap;
    const ByteSpan raw = streams.Raw(role, row_count, &bitmap);
    EncodedStream e;
    if (strings && role == StreamRole::kValues) {
      e = std::move(string_values);
    } else if (derived && role == StreamRole::kLengths) {
      e.encoding = StreamEncoding::kDerivedLengths;
    } else {
      e = EncodeStream(ElementKindOf(type, role), raw, choice);
    }
    const uint64_t bound = derived ? std::max<uint64_t>(raw.size(), streams.lengths.size()) : raw.size();
    out.push_back(Store(std::move(e), raw, bound, choice.zstd_level));
    if (out.back().owned.empty() && !bitmap.empty()) out.back().owned = std::move(bitmap);
  }
  return out;
}

}  // namespace pcr
