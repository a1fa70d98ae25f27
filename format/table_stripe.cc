#include "format/table_stripe.h"

namespace pcr {

Status DecodeStoredFeature(std::string_view file, const TableSchema& schema, const StripeInfo& stripe,
                           size_t stripe_number, std::span<const size_t> stream_of, uint32_t feature,
                           const ByteSpan* stored, Bytes* scratch, Column* column) {
  const FeatureInfo& info = schema.features[feature];
  const auto stream_index = [&](StreamRole role) {
    return stream_of[feature * kRoleCount + static_cast<size_t>(role)];
  };
  ByteSpan raw[kRoleCount];
  for (const StreamRole role : RolesOf(info.type)) {
    const size_t k = stream_index(role);
    const TableStream& t = stripe.table_streams[k];
    Bytes& buf = scratch[static_cast<size_t>(role)];
    Status st = DecompressStream(stored[static_cast<size_t>(role)], t.codec, t.raw_length, &buf);
    if (!st.ok()) {
      return st.WithPrefix(std::string(file) + ": stripe " + std::to_string(stripe_number) + " stream " +
                           std::to_string(stripe.first_table_stream + k) + " (" + StreamRoleName(role) + " of feature '" + info.name +
                           "') at offset " + std::to_string(stripe.stream_offset(stripe.first_table_stream + k)));
    }
    raw[static_cast<size_t>(role)] = buf;
  }
  Status st = DecodeFeatureStreams(info.type, stripe.row_count, raw[0], raw[1], raw[2], raw[3], column);
  if (!st.ok()) {
    return st.WithPrefix(std::string(file) + ": stripe " + std::to_string(stripe_number) + " feature '" +
                         info.name + "' at offset " +
                         std::to_string(stripe.stream_offset(stripe.first_table_stream +
                                                             stream_index(StreamRole::kPresence))));
  }
  return Status::OK();
}

}  // namespace pcr
