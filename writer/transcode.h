// Lossless JPEG transcoding into scan groups.
#pragma once

#include <optional>
#include <vector>

#include "format/coding.h"
#include "format/scan_script.h"
#include "pcr/status.h"
#include "jpeg/jpeg_limits.h"

namespace pcr {

struct TranscodeOptions {
  // Keep every APPn and COM segment: those decoding needs (JFIF, ICC, Adobe)
  // in scan group 1, the rest in `segments`. Else keep only JFIF and Adobe.
  bool keep_metadata = true;
  size_t max_memory_bytes = size_t{1} << 30;     // libjpeg working memory limit
  int max_input_scans = 1000;                    // refuse inputs with more scans
  uint64_t max_pixels = kDefaultMaxPixels;       // refuse larger frames after the header
};

struct TranscodedImage {
  // chunks[k - 1] is the image's share of scan group k: the scans of group k
  // with the Huffman tables before them; chunks[0] starts with the JPEG header
  // (SOI through SOF). A group with no scan for this image is empty. The
  // concatenation of chunks 1..k plus an EOI marker is a progressive JPEG.
  std::vector<Bytes> chunks;
  // The APPn and COM segments kept apart from scan group 1: SegmentEntries
  // (format/segments.h) in the original's order.
  Bytes segments;
  std::optional<int> orientation;  // the EXIF orientation, 1..8, if the original has one
  int width = 0;
  int height = 0;
  int components = 0;

  // The image at fidelity k: chunks 1..k and EOI. REQUIRES: 1 <= k <= chunks.size()
  Bytes AtFidelity(int k) const;
  // The full-fidelity image with its segments put back: every APPn and COM
  // segment of the original, in its order.
  Result<Bytes> Original() const;
};

// Transcodes `jpeg` (any 8-bit DCT JPEG libjpeg-turbo reads: baseline,
// extended, progressive, arithmetic) to a progressive JPEG following
// `script` without touching the DCT coefficients. Errors name the reason
// but not the file: NotSupported for 12-bit, lossless and hierarchical
// JPEGs, frames over max_pixels (refused before the coefficients are read)
// and files or images needing more than max_memory_bytes of working memory,
// Corruption for data libjpeg-turbo cannot read losslessly.
// REQUIRES: ValidateScanScript(script).ok()
Result<TranscodedImage> TranscodeToScanGroups(ByteSpan jpeg, const ScanScript& script,
                                              const TranscodeOptions& options = {});

}  // namespace pcr
