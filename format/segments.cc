#include "format/segments.h"

#include <cstring>
#include <vector>

namespace pcr {

namespace {

bool StartsWith(ByteSpan payload, const char* prefix, size_t n) {
  return payload.size() >= n && std::memcmp(payload.data(), prefix, n) == 0;
}

bool IsSegmentMarker(uint8_t m) { return (m >= 0xe0 && m <= 0xef) || m == 0xfe; }

}  // namespace

bool IsDecodingSegment(uint8_t marker, ByteSpan payload) {
  return (marker == 0xe0 && StartsWith(payload, "JFIF\0", 5)) ||
         (marker == 0xe2 && StartsWith(payload, "ICC_PROFILE\0", 12)) ||
         (marker == 0xee && StartsWith(payload, "Adobe", 5));
}

void PutSegmentEntry(uint64_t position, uint8_t marker, ByteSpan payload, Bytes* out) {
  PutVarint64(out, position);
  out->push_back(0xff);
  out->push_back(marker);
  const size_t length = payload.size() + 2;
  out->push_back(static_cast<uint8_t>(length >> 8));
  out->push_back(static_cast<uint8_t>(length));
  PutBytes(out, payload);
}

Status InsertSegments(ByteSpan group1, ByteSpan segments, Bytes* out) {
  if (group1.size() < 2 || group1[0] != 0xff || group1[1] != 0xd8) {
    return Status::Corruption("scan group 1 does not start with SOI");
  }
  // The segments group 1 kept, right after SOI.
  std::vector<ByteSpan> kept;
  size_t pos = 2;
  while (pos + 4 <= group1.size() && group1[pos] == 0xff && IsSegmentMarker(group1[pos + 1])) {
    const size_t length = static_cast<size_t>(group1[pos + 2]) << 8 | group1[pos + 3];
    if (length < 2 || pos + 2 + length > group1.size()) {
      return Status::Corruption("scan group 1: segment at byte " + std::to_string(pos) + " runs past the chunk");
    }
    kept.push_back(group1.subspan(pos, 2 + length));
    pos += 2 + length;
  }
  struct Moved {
    uint64_t position;
    ByteSpan segment;
  };
  std::vector<Moved> moved;
  ByteCursor d(segments);
  while (!d.done()) {
    const size_t at = d.position();
    uint64_t position;
    ByteSpan head;
    if (!d.GetVarint64(&position) || !d.GetBytes(4, &head) || head[0] != 0xff || !IsSegmentMarker(head[1])) {
      return Status::Corruption("segments: bad entry at byte " + std::to_string(at));
    }
    const size_t length = static_cast<size_t>(head[2]) << 8 | head[3];
    ByteSpan payload;
    if (length < 2 || !d.GetBytes(length - 2, &payload)) {
      return Status::Corruption("segments: entry at byte " + std::to_string(at) + " runs past the chunk");
    }
    if ((!moved.empty() && position <= moved.back().position) || position > kept.size() + moved.size()) {
      return Status::Corruption("segments: entry at byte " + std::to_string(at) + " has position " +
                                std::to_string(position) + " out of order");
    }
    moved.push_back({position, ByteSpan(head.data(), 4 + payload.size())});
  }
  if (!moved.empty() && moved.back().position >= kept.size() + moved.size()) {
    return Status::Corruption("segments: position " + std::to_string(moved.back().position) + " past the " +
                              std::to_string(kept.size() + moved.size()) + " segments of the image");
  }
  out->push_back(0xff);
  out->push_back(0xd8);
  size_t next_kept = 0, next_moved = 0;
  for (uint64_t p = 0; next_kept < kept.size() || next_moved < moved.size(); ++p) {
    if (next_moved < moved.size() && moved[next_moved].position == p) {
      PutBytes(out, moved[next_moved++].segment);
    } else {
      PutBytes(out, kept[next_kept++]);
    }
  }
  PutBytes(out, group1.subspan(pos));
  return Status::OK();
}

std::optional<int> ExifOrientation(ByteSpan p) {
  if (!StartsWith(p, "Exif\0\0", 6)) return std::nullopt;
  const ByteSpan tiff = p.subspan(6);
  if (tiff.size() < 8) return std::nullopt;
  const bool little = tiff[0] == 'I' && tiff[1] == 'I';
  if (!little && !(tiff[0] == 'M' && tiff[1] == 'M')) return std::nullopt;
  auto u16 = [&](size_t at) -> uint32_t {
    return little ? (tiff[at] | tiff[at + 1] << 8) : (tiff[at] << 8 | tiff[at + 1]);
  };
  auto u32 = [&](size_t at) -> uint64_t {
    return little ? (uint64_t{tiff[at]} | uint64_t{tiff[at + 1]} << 8 | uint64_t{tiff[at + 2]} << 16 |
                     uint64_t{tiff[at + 3]} << 24)
                  : (uint64_t{tiff[at]} << 24 | uint64_t{tiff[at + 1]} << 16 | uint64_t{tiff[at + 2]} << 8 |
                     uint64_t{tiff[at + 3]});
  };
  if (u16(2) != 42) return std::nullopt;
  const uint64_t ifd = u32(4);
  if (ifd + 2 > tiff.size()) return std::nullopt;
  const uint32_t entries = u16(ifd);
  for (uint32_t e = 0; e < entries; ++e) {
    const uint64_t at = ifd + 2 + 12 * uint64_t{e};
    if (at + 12 > tiff.size()) return std::nullopt;
    if (u16(at) != 0x0112) continue;
    if (u16(at + 2) != 3 || u32(at + 4) != 1) return std::nullopt;  // one SHORT
    const uint32_t v = u16(at + 8);
    if (v >= 1 && v <= 8) return static_cast<int>(v);
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace pcr
