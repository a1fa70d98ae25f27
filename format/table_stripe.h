// Decoding the stored streams of a table stripe into columns: what a table
// reader and a table reorder both check before they trust a stripe.
#pragma once

#include <span>
#include <string_view>

#include "format/file_format.h"

namespace pcr {

// Decompresses feature `feature`'s stored streams of `stripe` (number
// `stripe_number` of file `file`) and appends its rows to `column`.
// `stored[role]` holds the stored bytes of each role the feature's type has;
// `stream_of` is stripe.TableStreamIndex(schema.features.size()); `scratch`
// holds kRoleCount + 1 buffers reused across calls. Corruption names the file,
// stripe, stream, role, feature and offset at fault.
Status DecodeStoredFeature(std::string_view file, const TableSchema& schema, const StripeInfo& stripe,
                           size_t stripe_number, std::span<const size_t> stream_of, uint32_t feature,
                           const ByteSpan* stored, Bytes* scratch, Column* column);

}  // namespace pcr
