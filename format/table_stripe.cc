#include "format/table_stripe.h"

#include <optional>
#include <span>

namespace pcr {

Status DecodeStoredFeature(std::string_view file, const TableSchema& schema, const StripeInfo& stripe,
                           size_t stripe_number, std::span<const size_t> stream_of, uint32_t feature,
                           const ByteSpan* stored, Bytes* scratch, Column* column) {
  const FeatureInfo& info = schema.features[feature];
  const auto stream_index = [&](StreamRole role) {
    return stream_of[feature * kRoleCount + static_cast<size_t>(role)];
  };
  ByteSpan raw[kRoleCount];
  const auto where = [&](size_t k) {
    return std::string(file) + ": stripe " + std::to_string(stripe_number) + " stream " +
           std::to_string(stripe.first_table_stream + k) + " (" + StreamRoleName(stripe.table_streams[k].role) +
           " of feature '" + info.name + "') at offset " +
           std::to_string(stripe.stream_offset(stripe.first_table_stream + k));
  };
  // Presence and lengths first, so that an encoded values or scores stream
  // is checked against the elements the lengths give before it is decoded;
  // but a string dictionary's values come first, as they give the lengths
  // that a derived lengths stream stands for.
  const size_t lengths_k = stream_index(StreamRole::kLengths);
  const bool derived = lengths_k != SIZE_MAX && stripe.table_streams[lengths_k].encoding == StreamEncoding::kDerivedLengths;
  Bytes& lengths_buf = scratch[static_cast<size_t>(StreamRole::kLengths)];
  const bool list = lengths_k != SIZE_MAX && !derived;
  std::optional<uint64_t> elements;  // the lengths' sum, when an encoded stream needs it
  static constexpr StreamRole kDictionaryFirst[] = {StreamRole::kValues, StreamRole::kPresence};
  static constexpr StreamRole kLengthsFirst[] = {StreamRole::kPresence, StreamRole::kLengths, StreamRole::kValues,
                                                 StreamRole::kScores};
  const auto feature_error = [&](const Status& st) {
    return st.WithPrefix(std::string(file) + ": stripe " + std::to_string(stripe_number) + " feature '" + info.name +
                         "' at offset " +
                         std::to_string(stripe.stream_offset(stripe.first_table_stream +
                                                             stream_index(StreamRole::kPresence))));
  };
  // 8-byte scalars: the values are decoded straight into the column.
  const size_t values_k = stream_index(StreamRole::kValues);
  const bool wide = IsWideScalar(info.type) && values_k != SIZE_MAX;
  for (const StreamRole role : derived ? std::span<const StreamRole>(kDictionaryFirst)
                                       : std::span<const StreamRole>(kLengthsFirst)) {
    const size_t k = stream_index(role);
    if (k == SIZE_MAX || (wide && role == StreamRole::kValues)) continue;
    const TableStream& t = stripe.table_streams[k];
    if (list && t.encoding != StreamEncoding::kPlain && (role == StreamRole::kValues || role == StreamRole::kScores)) {
      if (!elements) {
        const ByteSpan lengths = raw[static_cast<size_t>(StreamRole::kLengths)];
        elements = 0;
        for (size_t i = 0; i + 4 <= lengths.size(); i += 4) *elements += LoadFixed32(lengths.data() + i);
      }
      const uint64_t width = ElementWidth(ElementKindOf(info.type, role));
      if (t.raw_length / width != *elements) {
        return Status::Corruption("raw length " + std::to_string(t.raw_length) + " for " + std::to_string(*elements) +
                                  " elements of " + std::to_string(width) + " bytes")
            .WithPrefix(where(k));
      }
    }
    Bytes& buf = scratch[static_cast<size_t>(role)];
    Status st = UnpackStream(stored[static_cast<size_t>(role)], t, info.type, &buf, &scratch[kRoleCount],
                             derived ? stripe.table_streams[lengths_k].raw_length / 4 : 0, &lengths_buf);
    if (!st.ok()) return st.WithPrefix(where(k));
    raw[static_cast<size_t>(role)] = buf;
  }
  if (derived) raw[static_cast<size_t>(StreamRole::kLengths)] = lengths_buf;
  if (wide) {
    const TableStream& t = stripe.table_streams[values_k];
    const ByteSpan values = stored[static_cast<size_t>(StreamRole::kValues)];
    if (Status st = CheckRawLength(values.size(), t); !st.ok()) return st.WithPrefix(where(values_k));
    Status unpacked;
    Status st = DecodeWideScalar(info.type, stripe.row_count, raw[static_cast<size_t>(StreamRole::kPresence)],
                                 t.raw_length,
                                 [&](uint8_t* out) {
                                   unpacked = UnpackStreamInto(values, t, info.type, out, &scratch[kRoleCount]);
                                   return unpacked;
                                 },
                                 column);
    if (!unpacked.ok()) return unpacked.WithPrefix(where(values_k));
    return st.ok() ? st : feature_error(st);
  }
  Status st = DecodeFeatureStreams(info.type, stripe.row_count, raw[0], raw[1], raw[2], raw[3], column);
  return st.ok() ? st : feature_error(st);
}

}  // namespace pcr
