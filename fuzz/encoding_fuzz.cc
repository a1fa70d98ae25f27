// Stream encodings (spec 13.5) on arbitrary bytes. Byte 0 picks the element
// kind (low 3 bits) and the mode (bit 7); byte 1 an encoding.
//   decode mode: bytes 2..5 are a raw length, the rest an encoded stream;
//     decoding must refuse it or give exactly that many bytes.
//   round-trip mode: the rest are raw values (for strings, a length byte
//     before each string); encoding them, automatically (byte 1 is 0) or
//     with byte 1's encoding forced, must decode to the same bytes.
//   column mode (bit 6; not decode mode): byte 1 picks an 8-byte scalar type,
//     bytes 2..3 the rows, then a presence bitmap (when byte 1 is odd) and
//     the raw values: DecodeWideScalar, which writes the values in place,
//     must agree with DecodeFeatureStreams, error or column, after rows
//     already in the column.
//   In decode and round-trip modes, DecodeStreamInto must give
//   DecodeStream's bytes.
// Any other outcome aborts.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include <cstring>

#include "format/stream_decoding.h"
#include "format/stream_encoding.h"
#include "format/table_format.h"
#include "writer/stream_encoder.h"

namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "encoding_fuzz: %s\n", what);
    std::abort();
  }
}

constexpr pcr::ElementKind kKinds[] = {pcr::ElementKind::kU32, pcr::ElementKind::kI64, pcr::ElementKind::kF32,
                                       pcr::ElementKind::kF64, pcr::ElementKind::kStrings};

constexpr pcr::FeatureType kWide[] = {pcr::FeatureType::kInt64, pcr::FeatureType::kUInt64,
                                      pcr::FeatureType::kFloat64, pcr::FeatureType::kTimestampNs};

// Both decoders of 8-byte scalars on the same raw streams, after 3 rows.
void CompareColumns(const uint8_t* data, size_t size) {
  if (size < 4) return;
  const pcr::FeatureType type = kWide[data[1] / 2 % 4];
  const uint64_t rows = (data[2] | static_cast<uint64_t>(data[3]) << 8) % 4097;
  size_t at = 4;
  pcr::ByteSpan presence;
  if (data[1] & 1) {
    const size_t n = std::min<size_t>((rows + 7) / 8, size - at);
    presence = pcr::ByteSpan(data + at, n);
    at += n;
  }
  const pcr::ByteSpan values(data + at, size - at);
  pcr::Column a(type), b(type);
  for (pcr::Column* c : {&a, &b}) {
    const uint8_t three[24] = {1, 2, 3};
    Check(pcr::DecodeFeatureStreams(type, 3, {}, {}, pcr::ByteSpan(three, 24), {}, c).ok(), "three rows");
  }
  const pcr::Status old_way = pcr::DecodeFeatureStreams(type, rows, presence, {}, values, {}, &a);
  const pcr::Status in_place = pcr::DecodeWideScalar(
      type, rows, presence, values.size(),
      [&](uint8_t* out) {
        if (!values.empty()) std::memcpy(out, values.data(), values.size());
        return pcr::Status::OK();
      },
      &b);
  Check(old_way.ok() == in_place.ok(), "the two decoders disagree on an error");
  if (!old_way.ok()) {
    Check(old_way.message() == in_place.message(), "the two decoders give other errors");
    return;
  }
  Check(a.rows == b.rows && a.present == b.present && a.ints == b.ints && a.doubles.size() == b.doubles.size() &&
            (a.doubles.empty() || std::memcmp(a.doubles.data(), b.doubles.data(), 8 * a.doubles.size()) == 0),
        "the in-place decoder gives another column");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  if ((data[0] & 0xc0) == 0x40) {
    CompareColumns(data, size);
    return 0;
  }
  const pcr::ElementKind kind = kKinds[(data[0] & 7) % 5];
  const auto encoding = static_cast<pcr::StreamEncoding>(data[1] % (pcr::kMaxStreamEncoding + 1));
  if (data[0] & 0x80) {
    if (size < 6) return 0;
    const uint64_t raw_length = pcr::LoadFixed32(data + 2) & 0x3ffffff;
    const pcr::ByteSpan encoded(data + 6, size - 6);
    pcr::Bytes out, lengths;
    const uint64_t strings = raw_length % 1000;
    const bool decoded = pcr::DecodeStream(kind, encoding, encoded, raw_length, &out, strings, &lengths).ok();
    if (decoded) {
      Check(out.size() == raw_length, "decoded to another length");
      Check(kind != pcr::ElementKind::kStrings || lengths.size() == 4 * strings, "wrong number of string lengths");
    }
    if (pcr::ElementWidth(kind) == 8 && kind != pcr::ElementKind::kStrings && raw_length <= (1 << 20)) {
      pcr::Bytes into(raw_length);
      const bool ok = pcr::DecodeStreamInto(kind, encoding, encoded, raw_length, into.data()).ok();
      Check(ok == decoded && (!ok || into == out), "DecodeStreamInto differs from DecodeStream");
    }
    return 0;
  }
  pcr::EncodingChoice choice;
  if (data[1] != 0) choice.force = encoding;
  choice.zstd_level = 1;
  if (kind == pcr::ElementKind::kStrings) {
    pcr::Bytes lengths, values;
    for (size_t at = 2; at < size;) {
      const size_t n = std::min<size_t>(data[at] % 8, size - at - 1);
      pcr::PutFixed32(&lengths, static_cast<uint32_t>(n));
      values.insert(values.end(), data + at + 1, data + at + 1 + n);
      at += 1 + n;
    }
    const pcr::EncodedStream e = pcr::EncodeStrings(lengths, values, choice);
    if (e.encoding == pcr::StreamEncoding::kPlain) return 0;
    pcr::Bytes out, out_lengths;
    Check(pcr::DecodeStream(kind, e.encoding, e.bytes, values.size(), &out, lengths.size() / 4, &out_lengths).ok(),
          "string dictionary does not decode");
    Check(out == values && out_lengths == lengths, "string dictionary decodes to other strings");
    return 0;
  }
  const size_t w = pcr::ElementWidth(kind);
  const pcr::ByteSpan raw(data + 2, (size - 2) / w * w);
  const pcr::EncodedStream e = pcr::EncodeStream(kind, raw, choice);
  if (e.encoding == pcr::StreamEncoding::kPlain) {
    Check(e.bytes.empty(), "plain stream has encoded bytes");
    return 0;
  }
  pcr::Bytes out;
  Check(pcr::DecodeStream(kind, e.encoding, e.bytes, raw.size(), &out).ok(), "encoded stream does not decode");
  Check(out.size() == raw.size() && std::equal(raw.begin(), raw.end(), out.begin()), "decodes to other values");
  return 0;
}
