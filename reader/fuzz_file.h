// The pcr_file fuzz target's body: any bytes read as a pcr file through the
// reader's own path, in memory.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pcr {

// Makes the checksums of `data` match first (RefixChecksums), so that damage
// reaches the index and stream decoders; then opens it with PcrFile::Open
// and reads it as readers do. An image file: every record at each fidelity
// (0, fields alone, to full) with every field, with and without its segments
// put back, and the same images read one by one without coalescing; a table:
// every feature over all stripes in one read, and stripe by stripe without
// coalescing. Errors are expected and ignored; two reads of the same bytes
// that both succeed but disagree abort.
void FuzzPcrFile(const uint8_t* data, size_t size);

}  // namespace pcr
