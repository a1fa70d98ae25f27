// Byte buffers as pcr's interfaces pass them.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "pcr/export.h"

namespace pcr {

using Bytes = std::vector<uint8_t>;
using ByteSpan = std::span<const uint8_t>;

}  // namespace pcr
