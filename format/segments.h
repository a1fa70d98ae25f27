// The APPn and COM segments an image file keeps apart from its scan groups
// (spec 6.2): what a decoder does not need, stored per image in the segments
// stream with the position each had among the original's segments.
#pragma once

#include <cstdint>
#include <optional>

#include "format/coding.h"
#include "pcr/status.h"

namespace pcr {

// Whether an APPn segment (marker 0xE0..0xEF, payload after the length) is
// one decoding needs for correct pixels and colour, kept in scan group 1:
// JFIF (APP0 "JFIF\0"), ICC profile (APP2 "ICC_PROFILE\0") or Adobe (APP14
// "Adobe").
bool IsDecodingSegment(uint8_t marker, ByteSpan payload);

// Appends one SegmentEntry: the segment's position among the image's
// segments, then the segment (FF, marker, length, payload).
void PutSegmentEntry(uint64_t position, uint8_t marker, ByteSpan payload, Bytes* out);

// Appends to `out` the image's scan group 1 chunk `group1` with the segments
// of `segments` (a run of SegmentEntries) put back among the APPn and COM
// segments that follow its SOI, each at its position. Corruption when
// `group1` does not start with SOI and whole segments, or `segments` does
// not parse.
Status InsertSegments(ByteSpan group1, ByteSpan segments, Bytes* out);

// The EXIF orientation (1..8) of an APP1 payload starting "Exif\0\0", if it
// has one.
std::optional<int> ExifOrientation(ByteSpan app1_payload);

}  // namespace pcr
