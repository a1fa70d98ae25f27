#include "format/stream_encoding.h"

#include <array>
#include <bit>
#include <cmath>
#include <string_view>

namespace pcr {

ValueKind ValueKindOf(ElementKind kind) {
  switch (kind) {
    case ElementKind::kU32:
      return {32, false};
    case ElementKind::kF32:
      return {32, true};
    case ElementKind::kF64:
      return {64, true};
    default:
      return {64, false};
  }
}

bool NestedAllowed(ValueKind kind, StreamEncoding e) {
  switch (e) {
    case StreamEncoding::kPlain:
    case StreamEncoding::kConstant:
    case StreamEncoding::kRle:
    case StreamEncoding::kDictionary:
    case StreamEncoding::kSplit:
      return true;
    case StreamEncoding::kBitPack:
    case StreamEncoding::kDelta:
      return !kind.is_float;
    case StreamEncoding::kDecimal:
      return kind.is_float;
    default:
      return false;
  }
}

namespace {

// The powers of ten kDecimal divides by.
constexpr std::array<double, kMaxDecimalExponent + 1> kPow10 = {
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18};

}  // namespace

uint64_t DecimalValue(int64_t digits, int e, int bits) {
  const double d = static_cast<double>(digits) / kPow10[static_cast<size_t>(e)];
  if (bits == 32) return std::bit_cast<uint32_t>(static_cast<float>(d));
  return std::bit_cast<uint64_t>(d);
}

bool DecimalDigits(uint64_t pattern, int e, int bits, int64_t* digits) {
  const double v = bits == 32 ? static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(pattern)))
                              : std::bit_cast<double>(pattern);
  const double m = v * kPow10[static_cast<size_t>(e)];
  if (!(std::fabs(m) < 9007199254740992.0)) return false;  // 2^53, and not NaN
  *digits = static_cast<int64_t>(std::nearbyint(m));
  return DecimalValue(*digits, e, bits) == pattern;
}

size_t ElementWidth(ElementKind kind) {
  switch (kind) {
    case ElementKind::kU32:
    case ElementKind::kF32:
      return 4;
    case ElementKind::kI64:
    case ElementKind::kF64:
      return 8;
    default:
      return 1;
  }
}

const char* EncodingName(StreamEncoding encoding) {
  switch (encoding) {
    case StreamEncoding::kPlain:
      return "plain";
    case StreamEncoding::kConstant:
      return "constant";
    case StreamEncoding::kBitPack:
      return "bitpack";
    case StreamEncoding::kDelta:
      return "delta";
    case StreamEncoding::kRle:
      return "rle";
    case StreamEncoding::kDictionary:
      return "dictionary";
    case StreamEncoding::kSplit:
      return "split";
    case StreamEncoding::kDecimal:
      return "decimal";
    case StreamEncoding::kStringDictionary:
      return "string_dictionary";
    case StreamEncoding::kDerivedLengths:
      return "derived_lengths";
  }
  return "unknown";
}

bool ParseEncodingName(std::string_view name, StreamEncoding* encoding) {
  for (uint8_t e = 0; e <= kMaxStreamEncoding; ++e) {
    if (name == EncodingName(static_cast<StreamEncoding>(e))) {
      *encoding = static_cast<StreamEncoding>(e);
      return true;
    }
  }
  return false;
}

bool TopEncodingAllowed(ElementKind kind, StreamEncoding encoding) {
  if (encoding == StreamEncoding::kPlain) return true;
  switch (kind) {
    case ElementKind::kBytes:
      return false;
    case ElementKind::kStrings:
      return encoding == StreamEncoding::kStringDictionary;
    case ElementKind::kU32:
      if (encoding == StreamEncoding::kDerivedLengths) return true;
      [[fallthrough]];
    default:
      return static_cast<uint8_t>(encoding) <= kMaxStreamEncoding && NestedAllowed(ValueKindOf(kind), encoding);
  }
}

}  // namespace pcr
