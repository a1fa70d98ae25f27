// Checksums of pcr files: XXH3-64 with seed 0.
#pragma once

#include <cstdint>
#include <string>

#include "format/coding.h"

namespace pcr {

// XXH3_64bits(data, seed 0).
uint64_t Checksum64(ByteSpan data);
// The low 32 bits of Checksum64: used where a field is 4 bytes wide.
uint32_t Checksum32(ByteSpan data);
// Checksum64 as 16 lowercase hex digits: the content ids of datasets and
// tables.
std::string ContentId(ByteSpan data);

}  // namespace pcr
