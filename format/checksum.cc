#include "format/checksum.h"

#include <xxhash.h>

namespace pcr {

uint64_t Checksum64(ByteSpan data) { return XXH3_64bits(data.data(), data.size()); }

uint32_t Checksum32(ByteSpan data) { return static_cast<uint32_t>(Checksum64(data)); }

}  // namespace pcr
