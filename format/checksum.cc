#include "format/checksum.h"

#include <cstdio>

#include <xxhash.h>

namespace pcr {

uint64_t Checksum64(ByteSpan data) { return XXH3_64bits(data.data(), data.size()); }

uint32_t Checksum32(ByteSpan data) { return static_cast<uint32_t>(Checksum64(data)); }

std::string ContentId(ByteSpan data) {
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(Checksum64(data)));
  return hex;
}

}  // namespace pcr
