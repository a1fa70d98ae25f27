#include "format/stream_encoding.h"

#include <zstd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace pcr {

namespace {

// The values of a node: integers of `bits` bits, or the bit patterns of
// floats of `bits` bits, held in uint64_t.
struct Kind {
  int bits;
  bool is_float;
};
constexpr Kind kCodes{64, false};  // codes, run lengths, digits, positions

Kind KindOf(ElementKind kind) {
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

uint64_t Mask(int bits) { return bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1; }

int BitWidth(uint64_t v) { return 64 - std::countl_zero(v); }

size_t VarintSize(uint64_t v) { return v < 128 ? 1 : 1 + VarintSize(v >> 7); }

// The largest exponent of kDecimal, and the powers of ten it divides by.
constexpr int kMaxDecimalExponent = 18;
constexpr std::array<double, kMaxDecimalExponent + 1> kPow10 = {
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18};

// kDecimal's value of `digits` at exponent e, as a bit pattern of `bits`.
uint64_t DecimalValue(int64_t digits, int e, int bits) {
  const double d = static_cast<double>(digits) / kPow10[static_cast<size_t>(e)];
  if (bits == 32) return std::bit_cast<uint32_t>(static_cast<float>(d));
  return std::bit_cast<uint64_t>(d);
}

// Digits of `pattern` at exponent e, if kDecimal gives it back bit for bit.
bool DecimalDigits(uint64_t pattern, int e, int bits, int64_t* digits) {
  const double v = bits == 32 ? static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(pattern)))
                              : std::bit_cast<double>(pattern);
  const double m = v * kPow10[static_cast<size_t>(e)];
  if (!(std::fabs(m) < 9007199254740992.0)) return false;  // 2^53, and not NaN
  *digits = static_cast<int64_t>(std::nearbyint(m));
  return DecimalValue(*digits, e, bits) == pattern;
}

// ---- Bit-packing (spec 13.5, kBitPack) ----
// Blocks of 1024 values as 16 lanes of 64 values: value k * 16 + l of a block
// is value k of lane l, and lane l's values are packed into 64-bit words
// j * 16 + l, so unpacking works on 16 independent lanes at once. The last
// n % 1024 values are one little-endian bit string.
constexpr size_t kBlock = 1024;
constexpr size_t kLanes = 16;

uint64_t BitPackedBytes(uint64_t n, int b) {
  return (n / kBlock) * kLanes * 8 * static_cast<uint64_t>(b) + ((n % kBlock) * static_cast<uint64_t>(b) + 7) / 8;
}

template <int B>
void UnpackBlock(const uint8_t* in, uint64_t base, uint64_t* out) {
  if constexpr (B == 0) {
    for (size_t i = 0; i < kBlock; ++i) out[i] = base;
  } else {
    constexpr uint64_t mask = B == 64 ? ~uint64_t{0} : (uint64_t{1} << B) - 1;
    uint64_t w[kLanes * B];
    std::memcpy(w, in, sizeof(w));
#pragma GCC unroll 64
    for (int k = 0; k < 64; ++k) {
      const int bit = k * B, j = bit / 64, s = bit % 64;
      const uint64_t* lo = w + j * kLanes;
      uint64_t* o = out + k * kLanes;
      if (s + B <= 64) {
        for (size_t l = 0; l < kLanes; ++l) o[l] = ((lo[l] >> s) & mask) + base;
      } else {
        const uint64_t* hi = lo + kLanes;
        for (size_t l = 0; l < kLanes; ++l) o[l] = (((lo[l] >> s) | (hi[l] << (64 - s))) & mask) + base;
      }
    }
  }
}

using UnpackFn = void (*)(const uint8_t*, uint64_t, uint64_t*);
template <size_t... B>
constexpr std::array<UnpackFn, sizeof...(B)> MakeUnpackers(std::index_sequence<B...>) {
  return {&UnpackBlock<static_cast<int>(B)>...};
}
constexpr auto kUnpackers = MakeUnpackers(std::make_index_sequence<65>());

// REQUIRES: in holds BitPackedBytes(n, b) bytes
void Unpack(const uint8_t* in, uint64_t n, int b, uint64_t base, uint64_t* out) {
  const uint64_t blocks = n / kBlock;
  for (uint64_t i = 0; i < blocks; ++i) kUnpackers[static_cast<size_t>(b)](in + i * kLanes * 8 * b, base, out + i * kBlock);
  // The tail, copied with zeros after it so that every value is one 8-byte
  // load and, when it straddles that, one more byte.
  const uint64_t rest = n % kBlock;
  if (rest == 0) return;
  const size_t tail_len = (rest * b + 7) / 8;
  std::array<uint8_t, kBlock * 8 + 16> tail;
  std::memcpy(tail.data(), in + blocks * kLanes * 8 * b, tail_len);
  std::memset(tail.data() + tail_len, 0, 16);
  const uint64_t mask = Mask(b);
  for (uint64_t i = 0; i < rest; ++i) {
    const uint64_t bit = i * static_cast<uint64_t>(b);
    const uint8_t* p = tail.data() + bit / 8;
    const int s = static_cast<int>(bit % 8);
    uint64_t x = LoadFixed64(p) >> s;
    if (s + b > 64) x |= static_cast<uint64_t>(p[8]) << (64 - s);
    out[blocks * kBlock + i] = (x & mask) + base;
  }
}

void Pack(std::span<const uint64_t> v, int b, uint64_t base, Bytes* out) {
  const size_t blocks = v.size() / kBlock;
  std::vector<uint64_t> w(kLanes * 64);
  for (size_t i = 0; i < blocks && b > 0; ++i) {
    std::fill(w.begin(), w.end(), 0);
    for (int k = 0; k < 64; ++k) {
      const int bit = k * b, j = bit / 64, s = bit % 64;
      for (size_t l = 0; l < kLanes; ++l) {
        const uint64_t x = v[i * kBlock + k * kLanes + l] - base;
        w[j * kLanes + l] |= x << s;
        if (s + b > 64) w[(j + 1) * kLanes + l] |= x >> (64 - s);
      }
    }
    for (size_t k = 0; k < kLanes * static_cast<size_t>(b); ++k) PutFixed64(out, w[k]);
  }
  const size_t rest = v.size() % kBlock;
  const size_t start = out->size();
  out->resize(start + (rest * b + 7) / 8, 0);
  for (size_t i = 0; i < rest && b > 0; ++i) {
    const uint64_t x = v[blocks * kBlock + i] - base;
    const size_t at = start + (i * b) / 8;
    const int shift = static_cast<int>((i * b) % 8);
    for (size_t byte = 0; byte < 8 && at + byte < out->size(); ++byte) {
      (*out)[at + byte] |= static_cast<uint8_t>((x << shift) >> (8 * byte));
    }
    if (shift + b > 64) (*out)[at + 8] |= static_cast<uint8_t>(x >> (64 - shift));
  }
}

// ---- Delta (kDelta) ----
// Inside each full block of 1024 values, value l * 64 + k is lane l's value
// k, and the child holds the differences in the order k * 16 + l, so that
// the running sums of the 16 lanes are computed side by side. The first
// difference is against `base` (the writer's is the first value).
void DeltaEncode(std::span<const uint64_t> v, int bits, uint64_t base, std::vector<uint64_t>* d) {
  d->resize(v.size());
  const uint64_t mask = Mask(bits);
  const size_t blocks = v.size() / kBlock;
  for (size_t i = 0; i < v.size(); ++i) {
    const uint64_t diff = (v[i] - (i == 0 ? base : v[i - 1])) & mask;
    const size_t b = i / kBlock, r = i % kBlock;
    (*d)[b < blocks ? b * kBlock + (r % 64) * kLanes + r / 64 : i] = diff;
  }
}

void DeltaDecode(uint64_t* v, uint64_t n, int bits, uint64_t base) {
  const uint64_t blocks = n / kBlock;
  uint64_t prev = base;
  std::array<uint64_t, kBlock> t;
  for (uint64_t b = 0; b < blocks; ++b) {
    uint64_t* d = v + b * kBlock;
    std::memcpy(t.data(), d, sizeof(t));
    for (size_t k = 1; k < 64; ++k) {
      for (size_t l = 0; l < kLanes; ++l) t[k * kLanes + l] += t[(k - 1) * kLanes + l];
    }
    for (size_t l = 0; l < kLanes; ++l) {
      for (size_t k = 0; k < 64; ++k) d[l * 64 + k] = prev + t[k * kLanes + l];
      prev = d[l * 64 + 63];
    }
  }
  for (uint64_t i = blocks * kBlock; i < n; ++i) {
    v[i] += prev;
    prev = v[i];
  }
  if (bits < 64) {
    for (uint64_t i = 0; i < n; ++i) v[i] &= Mask(bits);
  }
}

// ---- Decoding ----
bool NestedAllowed(Kind kind, StreamEncoding e) {
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

// Decimal digits to values at exponent e (kDecimal), applied by its child
// where the values are fewest: to a run-length node's runs, a dictionary's
// entries or a constant, else to every value.
struct DecimalMap {
  int e, bits;
  uint64_t operator()(uint64_t digits) const { return DecimalValue(static_cast<int64_t>(digits), e, bits); }
};

class NodeDecoder {
 public:
  explicit NodeDecoder(ByteSpan all) : all_(all) {}

  // Decodes the node at [begin, end) of the stream: `count` values of `kind`,
  // passed through `map` when there is one.
  Status Decode(Kind kind, size_t begin, size_t end, uint64_t count, int depth, uint64_t* out,
                const DecimalMap* map = nullptr) {
    pos_ = begin;
    end_ = end;
    if (depth > kMaxEncodingDepth) return Bad("encodings nested deeper than " + std::to_string(kMaxEncodingDepth));
    uint8_t tag;
    if (!Byte(&tag)) return Bad("truncated encoding");
    if (tag > kMaxStreamEncoding || !NestedAllowed(kind, static_cast<StreamEncoding>(tag))) {
      return Bad("encoding " + std::to_string(tag) + " is not allowed for " + (kind.is_float ? "float" : "integer") +
                 " values");
    }
    const size_t w = static_cast<size_t>(kind.bits / 8);
    switch (static_cast<StreamEncoding>(tag)) {
      case StreamEncoding::kPlain: {
        if (Left() / w != count || Left() % w != 0) return Sized(count * w, "plain values");
        for (uint64_t i = 0; i < count; ++i) out[i] = Load(all_.data() + pos_ + i * w, w);
        pos_ = end_;
        break;
      }
      case StreamEncoding::kConstant: {
        if (Left() != w) return Sized(w, "a constant");
        const uint64_t v = Load(all_.data() + pos_, w);
        std::fill(out, out + count, map != nullptr ? (*map)(v) : v);
        map = nullptr;
        pos_ = end_;
        break;
      }
      case StreamEncoding::kBitPack: {
        uint8_t b = 0;
        if (Left() < w + 1) return Bad("truncated bit-packing header");
        const uint64_t base = Load(all_.data() + pos_, w);
        pos_ += w;
        Byte(&b);
        if (b > kind.bits) return Bad("bit width " + std::to_string(b) + " over " + std::to_string(kind.bits));
        const uint64_t want = BitPackedBytes(count, b);
        if (Left() != want) return Sized(want, "bit-packed values");
        Unpack(all_.data() + pos_, count, b, base, out);
        if (kind.bits < 64) {
          for (uint64_t i = 0; i < count; ++i) out[i] &= Mask(kind.bits);
        }
        pos_ = end_;
        break;
      }
      case StreamEncoding::kDelta: {
        if (Left() < w) return Bad("truncated delta base");
        const uint64_t base = Load(all_.data() + pos_, w);
        pos_ += w;
        Status st = Child(kind, count, depth, out);
        if (!st.ok()) return st;
        DeltaDecode(out, count, kind.bits, base);
        break;
      }
      case StreamEncoding::kRle: {
        uint64_t runs;
        if (!Varint(&runs)) return Bad("truncated run count");
        if (runs > count || (runs == 0) != (count == 0)) {
          return Bad(std::to_string(runs) + " runs for " + std::to_string(count) + " values");
        }
        std::vector<uint64_t> values(runs), lengths(runs);
        Status st = Child(kind, runs, depth, values.data());
        if (st.ok()) st = Child(kCodes, runs, depth, lengths.data());
        if (!st.ok()) return st;
        if (map != nullptr) {
          for (uint64_t& v : values) v = (*map)(v);
          map = nullptr;
        }
        uint64_t at = 0;
        for (uint64_t r = 0; r < runs; ++r) {
          if (lengths[r] == 0 || lengths[r] > count - at) {
            return Bad("run " + std::to_string(r) + " of length " + std::to_string(lengths[r]) + " runs past the " +
                       std::to_string(count) + " values");
          }
          std::fill(out + at, out + at + lengths[r], values[r]);
          at += lengths[r];
        }
        if (at != count) return Bad("runs cover " + std::to_string(at) + " of " + std::to_string(count) + " values");
        break;
      }
      case StreamEncoding::kDictionary: {
        uint64_t entries;
        if (!Varint(&entries)) return Bad("truncated dictionary size");
        if (entries > count || (entries == 0) != (count == 0)) {
          return Bad(std::to_string(entries) + " dictionary entries for " + std::to_string(count) + " values");
        }
        std::vector<uint64_t> dict(entries);
        Status st = Child(kind, entries, depth, dict.data());
        if (st.ok()) st = Child(kCodes, count, depth, out);
        if (!st.ok()) return st;
        uint64_t worst = 0;
        for (uint64_t i = 0; i < count; ++i) worst = std::max(worst, out[i]);
        if (count > 0 && worst >= entries) {
          return Bad("dictionary code " + std::to_string(worst) + " out of range of " + std::to_string(entries) +
                     " entries");
        }
        if (map != nullptr) {
          for (uint64_t& v : dict) v = (*map)(v);
          map = nullptr;
        }
        for (uint64_t i = 0; i < count; ++i) out[i] = dict[out[i]];
        break;
      }
      case StreamEncoding::kSplit: {
        uint8_t planes = 0;
        if (!Byte(&planes) || planes == 0 || planes > w) {
          return Bad(std::to_string(planes) + " byte planes for values of " + std::to_string(w) + " bytes");
        }
        if (Left() / planes != count || Left() % planes != 0) return Sized(count * planes, "split values");
        const uint8_t* p = all_.data() + pos_;
        // A cache-sized run of values at a time, plane by plane.
        for (uint64_t first = 0; first < count; first += 4096) {
          const uint64_t n = std::min<uint64_t>(4096, count - first);
          uint64_t* o = out + first;
          for (uint64_t i = 0; i < n; ++i) o[i] = p[first + i];
          for (size_t b = 1; b < planes; ++b) {
            const uint8_t* plane = p + b * count + first;
            for (uint64_t i = 0; i < n; ++i) o[i] |= static_cast<uint64_t>(plane[i]) << (8 * b);
          }
        }
        pos_ = end_;
        break;
      }
      case StreamEncoding::kDecimal: {
        uint8_t e;
        if (!Byte(&e)) return Bad("truncated decimal exponent");
        if (e > kMaxDecimalExponent) return Bad("decimal exponent " + std::to_string(e) + " over 18");
        const DecimalMap digits{e, kind.bits};
        Status st = Child(kCodes, count, depth, out, &digits);
        if (!st.ok()) return st;
        uint64_t exceptions;
        if (!Varint(&exceptions)) return Bad("truncated exception count");
        if (exceptions > count || exceptions > Left() / w) {
          return Bad(std::to_string(exceptions) + " exceptions for " + std::to_string(count) + " values");
        }
        std::vector<uint64_t> at(exceptions);
        st = Child(kCodes, exceptions, depth, at.data());
        if (!st.ok()) return st;
        if (Left() / w != exceptions || Left() % w != 0) return Sized(exceptions * w, "exception values");
        for (uint64_t x = 0; x < exceptions; ++x) {
          if (at[x] >= count || (x > 0 && at[x] <= at[x - 1])) {
            return Bad("exception position " + std::to_string(at[x]) + " out of order or past " +
                       std::to_string(count) + " values");
          }
          out[at[x]] = Load(all_.data() + pos_ + x * w, w);
        }
        pos_ = end_;
        break;
      }
      default:
        return Bad("encoding " + std::to_string(tag) + " is not allowed here");
    }
    if (pos_ != end_) return Bad(std::to_string(end_ - pos_) + " bytes left over");
    // Nodes that map fewer values (runs, entries, a constant) have done so.
    if (map != nullptr) {
      for (uint64_t i = 0; i < count; ++i) out[i] = (*map)(out[i]);
    }
    return Status::OK();
  }

  // Decodes a kStringDictionary stream of `strings` strings into `out` (raw_length bytes) and `lengths`.
  Status DecodeStrings(uint64_t strings, uint64_t raw_length, Bytes* out, Bytes* lengths) {
    pos_ = 1;
    end_ = all_.size();
    uint64_t entries, blob;
    if (!Varint(&entries)) return Bad("truncated dictionary size");
    if (entries > strings || (entries == 0) != (strings == 0)) {
      return Bad(std::to_string(entries) + " dictionary entries for " + std::to_string(strings) + " strings");
    }
    std::vector<uint64_t> sizes(entries), codes(strings);
    Status st = Child({32, false}, entries, 1, sizes.data());
    if (!st.ok()) return st;
    if (!Varint(&blob) || blob > Left()) return Bad("dictionary strings run past the stream");
    const uint8_t* bytes = all_.data() + pos_;
    const size_t blob_at = pos_;
    pos_ += blob;
    std::vector<uint64_t> starts(entries);
    uint64_t sum = 0;
    for (uint64_t i = 0; i < entries; ++i) {
      starts[i] = sum;
      sum += sizes[i];
      if (sum > blob) break;
    }
    if (sum != blob) {
      const size_t here = pos_;
      pos_ = blob_at;
      Status bad = Bad("dictionary entry lengths do not add up to its " + std::to_string(blob) + " bytes");
      pos_ = here;
      return bad;
    }
    st = Child(kCodes, strings, 1, codes.data());
    if (!st.ok()) return st;
    if (pos_ != end_) return Bad(std::to_string(end_ - pos_) + " bytes left over");
    uint64_t total = 0;
    for (uint64_t i = 0; i < strings; ++i) {
      if (codes[i] >= entries) {
        return Bad("dictionary code " + std::to_string(codes[i]) + " out of range of " + std::to_string(entries) +
                   " entries");
      }
      total += sizes[codes[i]];
      if (total > raw_length) break;
    }
    if (total != raw_length) {
      return Bad("strings add up to more or less than the raw length " + std::to_string(raw_length));
    }
    out->resize(raw_length);
    lengths->resize(strings * 4);
    uint8_t* o = out->data();
    for (uint64_t i = 0; i < strings; ++i) {
      const uint64_t n = sizes[codes[i]];
      if (n > 0) std::memcpy(o, bytes + starts[codes[i]], n);
      o += n;
      StoreFixed32(lengths->data() + 4 * i, static_cast<uint32_t>(n));
    }
    return Status::OK();
  }

 private:
  static uint64_t Load(const uint8_t* p, size_t w) { return w == 4 ? LoadFixed32(p) : LoadFixed64(p); }
  size_t Left() const { return end_ - pos_; }
  bool Byte(uint8_t* v) {
    if (pos_ >= end_) return false;
    *v = all_[pos_++];
    return true;
  }
  bool Varint(uint64_t* v) {
    Decoder d(all_.subspan(pos_, end_ - pos_));
    if (!d.GetVarint64(v)) return false;
    pos_ += d.position();
    return true;
  }
  Status Bad(const std::string& what) const {
    return Status::Corruption("encoding at byte " + std::to_string(pos_) + ": " + what);
  }
  Status Sized(uint64_t want, const char* what) const {
    return Bad(std::to_string(Left()) + " bytes of " + what + ", expected " + std::to_string(want));
  }
  // A child: its length as a varint, then the node.
  Status Child(Kind kind, uint64_t count, int depth, uint64_t* out, const DecimalMap* map = nullptr) {
    uint64_t length;
    if (!Varint(&length) || length > Left()) return Bad("nested encoding runs past its parent");
    const size_t begin = pos_, end = end_, child_end = pos_ + length;
    NodeDecoder child(all_);
    Status st = child.Decode(kind, begin, child_end, count, depth + 1, out, map);
    if (!st.ok()) return st;
    pos_ = child_end;
    end_ = end;
    return Status::OK();
  }

  ByteSpan all_;
  size_t pos_ = 0, end_ = 0;
};

// ---- Encoding ----
struct Plan {
  StreamEncoding encoding = StreamEncoding::kPlain;
  int exponent = 0;       // kDecimal
  bool by_count = false;  // kDictionary: entries most frequent first
  std::vector<Plan> children;
};

constexpr size_t kNever = std::numeric_limits<size_t>::max() / 4;
constexpr int kWriterDepth = 3;

size_t Choose(Kind kind, std::span<const uint64_t> v, int depth, Plan* plan, bool codes = false);

struct Runs {
  std::vector<uint64_t> values, lengths;
};
Runs RunsOf(std::span<const uint64_t> v) {
  Runs r;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0 && v[i] == v[i - 1]) {
      ++r.lengths.back();
    } else {
      r.values.push_back(v[i]);
      r.lengths.push_back(1);
    }
  }
  return r;
}

// kSplit's byte planes: as many as the largest value needs, at least one.
size_t SplitPlanes(std::span<const uint64_t> v) {
  uint64_t all = 0;
  for (const uint64_t x : v) all |= x;
  return std::max<size_t>(1, (static_cast<size_t>(BitWidth(all)) + 7) / 8);
}

struct Dict {
  std::vector<uint64_t> entries, codes;
};
// Distinct values, in increasing order or (by_count) most frequent first so
// that frequent values get small codes, and a code per value; false when there
// are more than max_entries. Values are numbered as first seen through an
// open-addressing table, so a column with too many values stops early.
bool DictOf(std::span<const uint64_t> v, size_t max_entries, bool by_count, Dict* d) {
  constexpr uint32_t kEmpty = UINT32_MAX;
  std::vector<uint64_t> values, counts;
  std::vector<uint32_t> seen(v.size());
  int bits = 10;
  std::vector<uint64_t> keys(size_t{1} << bits);
  std::vector<uint32_t> slots(size_t{1} << bits, kEmpty);
  const auto find = [&](uint64_t x) {
    const size_t mask = slots.size() - 1;
    size_t h = static_cast<size_t>((x * 0x9E3779B97F4A7C15ULL) >> (64 - bits));
    while (slots[h] != kEmpty && keys[h] != x) h = (h + 1) & mask;
    return h;
  };
  for (size_t i = 0; i < v.size(); ++i) {
    size_t h = find(v[i]);
    if (slots[h] == kEmpty) {
      if (values.size() == max_entries) return false;
      if ((values.size() + 1) * 2 > slots.size()) {
        ++bits;
        keys.assign(size_t{1} << bits, 0);
        slots.assign(size_t{1} << bits, kEmpty);
        for (uint32_t c = 0; c < values.size(); ++c) {
          const size_t g = find(values[c]);
          keys[g] = values[c];
          slots[g] = c;
        }
        h = find(v[i]);
      }
      keys[h] = v[i];
      slots[h] = static_cast<uint32_t>(values.size());
      values.push_back(v[i]);
      counts.push_back(0);
    }
    ++counts[slots[h]];
    seen[i] = slots[h];
  }
  std::vector<uint32_t> order(values.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return values[a] < values[b]; });
  if (by_count) {
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return counts[a] > counts[b]; });
  }
  std::vector<uint64_t> rank(values.size());
  d->entries.resize(values.size());
  for (size_t i = 0; i < order.size(); ++i) {
    d->entries[i] = values[order[i]];
    rank[order[i]] = i;
  }
  d->codes.resize(v.size());
  for (size_t i = 0; i < v.size(); ++i) d->codes[i] = rank[seen[i]];
  return true;
}

// Decimal digits at exponent e, and the positions that are exceptions.
void DecimalSplit(std::span<const uint64_t> v, int e, int bits, std::vector<uint64_t>* digits,
                  std::vector<uint64_t>* exceptions) {
  digits->resize(v.size());
  exceptions->clear();
  int64_t last = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    int64_t d;
    if (DecimalDigits(v[i], e, bits, &d)) {
      last = d;
    } else {
      exceptions->push_back(i);
    }
    (*digits)[i] = static_cast<uint64_t>(last);
  }
}

// The smallest exponent at which at most 1% of the values are exceptions,
// else the smallest at which every value that has digits at some exponent
// has them; -1 when that leaves more than half the values exceptions.
int BestExponent(std::span<const uint64_t> v, int bits) {
  std::array<size_t, kMaxDecimalExponent + 2> first{};  // values whose smallest exponent is e
  for (const uint64_t x : v) {
    int e = 0;
    int64_t d;
    while (e <= kMaxDecimalExponent && !DecimalDigits(x, e, bits, &d)) ++e;
    ++first[static_cast<size_t>(e)];
  }
  const size_t representable = v.size() - first[kMaxDecimalExponent + 1];
  if (representable * 2 < v.size()) return -1;
  size_t covered = 0;
  for (int e = 0; e <= kMaxDecimalExponent; ++e) {
    covered += first[static_cast<size_t>(e)];
    if ((v.size() - covered) * 100 <= v.size() || covered == representable) return e;
  }
  return -1;
}

// Bytes of a node with this encoding over v (nested encodings chosen),
// kNever where it does not apply; `plan` receives the choice.
size_t Estimate(Kind kind, std::span<const uint64_t> v, int depth, StreamEncoding e, Plan* plan) {
  if (plan->encoding != e) plan->by_count = false;
  plan->encoding = e;
  plan->children.clear();
  const size_t w = static_cast<size_t>(kind.bits / 8), n = v.size();
  // The writer nests at most 3 deep (BtrBlocks' cascade depth), which keeps
  // the search small; readers take up to kMaxEncodingDepth.
  const bool leaf = depth >= kWriterDepth;
  switch (e) {
    case StreamEncoding::kPlain:
      return 1 + n * w;
    case StreamEncoding::kSplit:
      return 2 + n * SplitPlanes(v);
    case StreamEncoding::kConstant:
      return n > 0 && std::all_of(v.begin(), v.end(), [&](uint64_t x) { return x == v[0]; }) ? 1 + w : kNever;
    case StreamEncoding::kBitPack: {
      if (n == 0) return 2 + w;
      const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
      return 2 + w + BitPackedBytes(n, BitWidth((*hi - *lo) & Mask(kind.bits)));
    }
    case StreamEncoding::kDelta: {
      if (leaf || n < 2) return kNever;
      std::vector<uint64_t> d;
      DeltaEncode(v, kind.bits, v[0], &d);
      plan->children.resize(1);
      const size_t c = Choose(kind, d, depth + 1, &plan->children[0]);
      return 1 + w + VarintSize(c) + c;
    }
    case StreamEncoding::kRle: {
      if (leaf) return kNever;
      Runs r = RunsOf(v);
      if (r.values.size() * 2 > n) return kNever;
      plan->children.resize(2);
      const size_t a = Choose(kind, r.values, depth + 1, &plan->children[0]);
      const size_t b = Choose(kCodes, r.lengths, depth + 1, &plan->children[1]);
      return 1 + VarintSize(r.values.size()) + VarintSize(a) + a + VarintSize(b) + b;
    }
    case StreamEncoding::kDictionary: {
      if (leaf) return kNever;
      Dict d;
      if (!DictOf(v, n / 2, plan->by_count, &d)) return kNever;
      plan->children.resize(2);
      const size_t a = Choose(kind, d.entries, depth + 1, &plan->children[0]);
      const size_t b = Choose(kCodes, d.codes, depth + 1, &plan->children[1], true);
      return 1 + VarintSize(d.entries.size()) + VarintSize(a) + a + VarintSize(b) + b;
    }
    case StreamEncoding::kDecimal: {
      if (leaf || n == 0) return kNever;
      const int ex = BestExponent(v, kind.bits);
      if (ex < 0) return kNever;
      plan->exponent = ex;
      std::vector<uint64_t> digits, at;
      DecimalSplit(v, ex, kind.bits, &digits, &at);
      plan->children.resize(2);
      const size_t a = Choose(kCodes, digits, depth + 1, &plan->children[0]);
      const size_t b = Choose(kCodes, at, depth + 1, &plan->children[1]);
      return 2 + VarintSize(a) + a + VarintSize(at.size()) + VarintSize(b) + b + at.size() * w;
    }
    default:
      return kNever;
  }
}

// Encodings tried for a nested node, cheapest to decode first.
constexpr StreamEncoding kIntCandidates[] = {StreamEncoding::kConstant, StreamEncoding::kBitPack,
                                             StreamEncoding::kDictionary, StreamEncoding::kRle,
                                             StreamEncoding::kDelta};
constexpr StreamEncoding kFloatCandidates[] = {StreamEncoding::kConstant, StreamEncoding::kPlain,
                                               StreamEncoding::kDictionary, StreamEncoding::kRle,
                                               StreamEncoding::kDecimal};

// The smallest nested encoding of v; an encoding must be 1/16 smaller than
// the ones before it in the candidate list to be taken. Codes of a
// dictionary are not given a dictionary again.
size_t Choose(Kind kind, std::span<const uint64_t> v, int depth, Plan* plan, bool codes) {
  size_t best = kNever;
  Plan p;
  for (const StreamEncoding e : kind.is_float ? std::span<const StreamEncoding>(kFloatCandidates)
                                              : std::span<const StreamEncoding>(kIntCandidates)) {
    if (codes && e == StreamEncoding::kDictionary) continue;
    const size_t s = Estimate(kind, v, depth, e, &p);
    if (s < best - best / 16) {
      best = s;
      *plan = p;
    }
  }
  return best;
}

void PutValue(Bytes* out, uint64_t v, size_t w) {
  if (w == 4) {
    PutFixed32(out, static_cast<uint32_t>(v));
  } else {
    PutFixed64(out, v);
  }
}

// How bit-packed leaves are written: packed, with bit widths rounded up to
// whole bytes, or (widths over 8) as byte planes (kSplit). The last two
// suit zstd, whose entropy coder works on bytes.
enum class Leaves { kPacked, kAligned, kSplit };

void Write(Kind kind, std::span<const uint64_t> v, const Plan& plan, Leaves leaves, Bytes* out);

void WriteChild(Kind kind, std::span<const uint64_t> v, const Plan& plan, Leaves leaves, Bytes* out) {
  Bytes child;
  Write(kind, v, plan, leaves, &child);
  PutVarint64(out, child.size());
  PutBytes(out, child);
}

// Writes the node; an encoding the values do not allow (a constant that
// varies) becomes the nearest that fits.
void Write(Kind kind, std::span<const uint64_t> v, const Plan& plan, Leaves leaves, Bytes* out) {
  const size_t w = static_cast<size_t>(kind.bits / 8), n = v.size();
  StreamEncoding e = plan.encoding;
  if (e == StreamEncoding::kConstant && (n == 0 || !std::all_of(v.begin(), v.end(), [&](uint64_t x) { return x == v[0]; }))) {
    e = kind.is_float ? StreamEncoding::kPlain : StreamEncoding::kBitPack;
  }
  // Nested encodings: the plan's, or the simplest when the node's encoding changed.
  Plan fallback{.encoding = kind.is_float ? StreamEncoding::kPlain : StreamEncoding::kBitPack};
  const auto nth = [&](size_t i) -> const Plan& {
    return e == plan.encoding && i < plan.children.size() ? plan.children[i] : fallback;
  };
  uint64_t lo = 0, hi = 0;
  if (e == StreamEncoding::kBitPack && n > 0) {
    const auto [a, b] = std::minmax_element(v.begin(), v.end());
    lo = *a;
    hi = *b;
    if (leaves == Leaves::kSplit && BitWidth((hi - lo) & Mask(kind.bits)) > 8) e = StreamEncoding::kSplit;
  }
  PutFixed8(out, static_cast<uint8_t>(e));
  switch (e) {
    case StreamEncoding::kPlain:
      for (const uint64_t x : v) PutValue(out, x, w);
      return;
    case StreamEncoding::kConstant:
      PutValue(out, v[0], w);
      return;
    case StreamEncoding::kBitPack: {
      int b = BitWidth((hi - lo) & Mask(kind.bits));
      if (leaves == Leaves::kAligned) b = std::min(kind.bits, (b + 7) / 8 * 8);
      PutValue(out, lo, w);
      PutFixed8(out, static_cast<uint8_t>(b));
      Pack(v, b, lo, out);
      return;
    }
    case StreamEncoding::kDelta: {
      std::vector<uint64_t> d;
      const uint64_t base = n > 0 ? v[0] : 0;
      DeltaEncode(v, kind.bits, base, &d);
      PutValue(out, base, w);
      WriteChild(kind, d, nth(0), leaves, out);
      return;
    }
    case StreamEncoding::kRle: {
      const Runs r = RunsOf(v);
      PutVarint64(out, r.values.size());
      WriteChild(kind, r.values, nth(0), leaves, out);
      WriteChild(kCodes, r.lengths, nth(1), leaves, out);
      return;
    }
    case StreamEncoding::kDictionary: {
      Dict d;
      DictOf(v, n, plan.by_count, &d);
      PutVarint64(out, d.entries.size());
      WriteChild(kind, d.entries, nth(0), leaves, out);
      WriteChild(kCodes, d.codes, nth(1), leaves, out);
      return;
    }
    case StreamEncoding::kSplit: {
      const size_t planes = SplitPlanes(v);
      PutFixed8(out, static_cast<uint8_t>(planes));
      for (size_t b = 0; b < planes; ++b) {
        for (const uint64_t x : v) out->push_back(static_cast<uint8_t>(x >> (8 * b)));
      }
      return;
    }
    case StreamEncoding::kDecimal: {
      std::vector<uint64_t> digits, at;
      DecimalSplit(v, plan.exponent, kind.bits, &digits, &at);
      PutFixed8(out, static_cast<uint8_t>(plan.exponent));
      WriteChild(kCodes, digits, nth(0), leaves, out);
      PutVarint64(out, at.size());
      WriteChild(kCodes, at, nth(1), leaves, out);
      for (const uint64_t i : at) PutValue(out, v[i], w);
      return;
    }
    default:
      return;
  }
}

std::vector<uint64_t> Widen(ByteSpan raw, size_t w) {
  std::vector<uint64_t> v(raw.size() / w);
  for (size_t i = 0; i < v.size(); ++i) v[i] = w == 4 ? LoadFixed32(raw.data() + 4 * i) : LoadFixed64(raw.data() + 8 * i);
  return v;
}

// Up to 64 runs of 1024 consecutive values, spread evenly over v.
std::vector<uint64_t> Sample(const std::vector<uint64_t>& v) {
  constexpr size_t kRuns = 64, kRun = 1024;
  if (v.size() <= kRuns * kRun) return v;
  std::vector<uint64_t> s;
  s.reserve(kRuns * kRun);
  for (size_t r = 0; r < kRuns; ++r) {
    const size_t start = r * (v.size() - kRun) / (kRuns - 1);
    s.insert(s.end(), v.begin() + static_cast<ptrdiff_t>(start), v.begin() + static_cast<ptrdiff_t>(start + kRun));
  }
  return s;
}

size_t ZstdSize(ByteSpan in, int level) {
  if (level == 0 || in.empty()) return in.size();
  Bytes out(ZSTD_compressBound(in.size()));
  const size_t n = ZSTD_compress(out.data(), out.size(), in.data(), in.size(), level);
  return ZSTD_isError(n) ? in.size() : std::min(n, in.size());
}

// Read cost of an encoding against plain, in 1/16ths: its estimated bytes
// are weighed by it.
size_t ReadWeight(StreamEncoding e) {
  switch (e) {
    case StreamEncoding::kPlain:
    case StreamEncoding::kConstant:
    case StreamEncoding::kBitPack:
      return 16;
    case StreamEncoding::kDecimal:
      return 18;
    default:
      return 17;
  }
}

bool Applies(Kind kind, StreamEncoding e, const std::vector<uint64_t>& v) {
  if (!NestedAllowed(kind, e)) return false;
  if (e == StreamEncoding::kConstant) {
    return !v.empty() && std::all_of(v.begin(), v.end(), [&](uint64_t x) { return x == v[0]; });
  }
  return true;
}

}  // namespace

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

bool ParseEncodingChoice(std::string_view name, EncodingChoice* choice) {
  StreamEncoding e;
  if (name == "auto") {
    choice->force.reset();
  } else if (ParseEncodingName(name, &e) && e != StreamEncoding::kDerivedLengths) {
    choice->force = e;
  } else {
    return false;
  }
  return true;
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
      return static_cast<uint8_t>(encoding) <= kMaxStreamEncoding && NestedAllowed(KindOf(kind), encoding);
  }
}

EncodedStream EncodeStream(ElementKind kind, ByteSpan raw, const EncodingChoice& choice) {
  EncodedStream plain{StreamEncoding::kPlain, Bytes(raw.begin(), raw.end())};
  if (kind == ElementKind::kBytes || kind == ElementKind::kStrings || raw.empty()) return plain;
  const Kind k = KindOf(kind);
  const size_t w = ElementWidth(kind);
  const std::vector<uint64_t> v = Widen(raw, w);
  Plan plan;
  Leaves plan_leaves = Leaves::kPacked;
  if (choice.force && *choice.force != StreamEncoding::kPlain && Applies(k, *choice.force, v)) {
    const std::vector<uint64_t> sample = Sample(v);
    if (Estimate(k, sample, 1, *choice.force, &plan) == kNever) plan = Plan{.encoding = *choice.force};
  } else if (choice.force) {
    return plain;
  } else if (v.size() > 1 && Applies(k, StreamEncoding::kConstant, v)) {
    plan.encoding = StreamEncoding::kConstant;
  } else {
    // Every allowed encoding is written for the sample, with its nested
    // encodings chosen by size; each is weighed by its bytes after zstd
    // (where zstd makes them smaller) times its read weight.
    const std::vector<uint64_t> sample = Sample(v);
    Bytes sample_raw;
    for (const uint64_t x : sample) PutValue(&sample_raw, x, w);
    size_t best = ZstdSize(sample_raw, choice.zstd_level) * ReadWeight(StreamEncoding::kPlain);
    for (uint8_t e = 1; e <= static_cast<uint8_t>(StreamEncoding::kDecimal); ++e) {
      const auto enc = static_cast<StreamEncoding>(e);
      if (!NestedAllowed(k, enc) || enc == StreamEncoding::kConstant) continue;
      for (const bool by_count : {false, true}) {
      if (by_count && enc != StreamEncoding::kDictionary) continue;
      Plan p{.encoding = enc, .by_count = by_count};
      if (Estimate(k, sample, 1, enc, &p) == kNever) continue;
      Bytes previous;
      for (const Leaves leaves : {Leaves::kPacked, Leaves::kAligned, Leaves::kSplit}) {
        if (leaves != Leaves::kPacked && choice.zstd_level == 0) continue;
        Bytes bytes;
        Write(k, sample, p, leaves, &bytes);
        if (bytes == previous) continue;  // no leaf that this style changes
        const size_t score = ZstdSize(bytes, choice.zstd_level) * ReadWeight(enc);
        previous = std::move(bytes);
        if (score < best) {
          best = score;
          plan = p;
          plan_leaves = leaves;
        }
      }
      }
    }
    if (plan.encoding == StreamEncoding::kPlain) return plain;
  }
  EncodedStream out;
  Write(k, v, plan, plan_leaves, &out.bytes);
  out.encoding = static_cast<StreamEncoding>(out.bytes[0]);
  // Never more than kMaxEncodingExpansion: such a stream is stored plainly.
  if (raw.size() / kMaxEncodingExpansion >= out.bytes.size()) return plain;
  return out;
}

EncodedStream EncodeStrings(ByteSpan lengths, ByteSpan values, const EncodingChoice& choice) {
  EncodedStream plain{StreamEncoding::kPlain, Bytes(values.begin(), values.end())};
  const size_t strings = lengths.size() / 4;
  const bool forced = choice.force == StreamEncoding::kStringDictionary;
  if (strings == 0 || (choice.force && !forced)) return plain;
  std::unordered_map<std::string_view, uint64_t> code;
  std::vector<uint64_t> codes(strings), sizes;
  Bytes blob;
  const char* p = reinterpret_cast<const char*>(values.data());
  for (size_t i = 0; i < strings; ++i) {
    const uint32_t n = LoadFixed32(lengths.data() + 4 * i);
    const auto [it, added] = code.emplace(std::string_view(p, n), code.size());
    if (added) {
      if (!forced && code.size() * 2 > strings) return plain;
      sizes.push_back(n);
      blob.insert(blob.end(), p, p + n);
    }
    codes[i] = it->second;
    p += n;
  }
  // Codes bit-packed, or in whole bytes when zstd then makes them smaller.
  EncodedStream out{StreamEncoding::kStringDictionary, {}};
  Plan size_plan, code_plan;
  Choose({32, false}, Sample(sizes), 2, &size_plan);
  Choose(kCodes, Sample(codes), 2, &code_plan, true);
  size_t best = kNever;
  for (const Leaves leaves : {Leaves::kPacked, Leaves::kAligned, Leaves::kSplit}) {
    Bytes b;
    PutFixed8(&b, static_cast<uint8_t>(StreamEncoding::kStringDictionary));
    PutVarint64(&b, sizes.size());
    WriteChild({32, false}, sizes, size_plan, leaves, &b);
    PutVarint64(&b, blob.size());
    PutBytes(&b, blob);
    WriteChild(kCodes, codes, code_plan, leaves, &b);
    const size_t z = ZstdSize(b, choice.zstd_level);
    if (z < best) {
      best = z;
      out.bytes = std::move(b);
    }
  }
  if (lengths.size() / kMaxEncodingExpansion >= out.bytes.size() ||
      values.size() / kMaxEncodingExpansion >= out.bytes.size()) {
    return plain;
  }
  if (forced) return out;
  // Against plain values and their lengths stream, each as the writer stores them.
  const EncodedStream lengths_alone = EncodeStream(ElementKind::kU32, lengths, choice);
  const size_t plain_bytes = ZstdSize(values, choice.zstd_level) + ZstdSize(lengths_alone.bytes, choice.zstd_level);
  return best * ReadWeight(StreamEncoding::kDictionary) <
                 plain_bytes * ReadWeight(StreamEncoding::kPlain)
             ? out
             : plain;
}

Status DecodeStream(ElementKind kind, StreamEncoding top, ByteSpan encoded, uint64_t raw_length, Bytes* out,
                    uint64_t string_count, Bytes* lengths) {
  const auto bad = [](const std::string& what) { return Status::Corruption("encoding at byte 0: " + what); };
  if (!TopEncodingAllowed(kind, top) || top == StreamEncoding::kPlain || top == StreamEncoding::kDerivedLengths) {
    return bad(std::string(EncodingName(top)) + " is not a stream encoding here");
  }
  if (encoded.empty() || encoded[0] != static_cast<uint8_t>(top)) {
    return bad("stream starts with encoding " + (encoded.empty() ? std::string("(none)") : std::to_string(encoded[0])) +
               ", its entry says " + std::to_string(static_cast<int>(top)));
  }
  if (raw_length / kMaxEncodingExpansion >= encoded.size()) {
    return bad("raw length " + std::to_string(raw_length) + " over " + std::to_string(kMaxEncodingExpansion) +
               " times the " + std::to_string(encoded.size()) + " encoded bytes");
  }
  NodeDecoder decoder(encoded);
  if (kind == ElementKind::kStrings) {
    if (lengths == nullptr) return bad("string dictionary without its lengths stream");
    return decoder.DecodeStrings(string_count, raw_length, out, lengths);
  }
  const size_t w = ElementWidth(kind);
  if (raw_length % w != 0) return bad("raw length " + std::to_string(raw_length) + " is not a multiple of " + std::to_string(w));
  const uint64_t count = raw_length / w;
  if (w == 8) {
    // Little-endian 64-bit values are the raw bytes: decoded in place.
    out->resize(raw_length);
    return decoder.Decode(KindOf(kind), 0, encoded.size(), count, 1, reinterpret_cast<uint64_t*>(out->data()));
  }
  std::vector<uint64_t> v(count);
  Status st = decoder.Decode(KindOf(kind), 0, encoded.size(), count, 1, v.data());
  if (!st.ok()) return st;
  out->resize(raw_length);
  for (size_t i = 0; i < v.size(); ++i) StoreFixed32(out->data() + 4 * i, static_cast<uint32_t>(v[i]));
  return Status::OK();
}

namespace {

// Describes the node at [pos, end), advancing pos; "?" where it does not parse.
std::string DescribeNode(ByteSpan all, size_t* pos, size_t end, Kind kind, int depth) {
  if (*pos >= end || depth > kMaxEncodingDepth) return "?";
  const uint8_t tag = all[*pos];
  if (tag > kMaxStreamEncoding) return "?";
  const auto e = static_cast<StreamEncoding>(tag);
  std::string name = EncodingName(e);
  size_t at = *pos + 1;
  const size_t w = static_cast<size_t>(kind.bits / 8);
  const auto varint = [&](uint64_t* v) {
    Decoder d(all.subspan(at, end - at));
    if (!d.GetVarint64(v)) return false;
    at += d.position();
    return true;
  };
  const auto child = [&](const char* label, Kind k) {
    uint64_t n;
    if (!varint(&n) || n > end - at) return std::string(label) + ": ?";
    size_t p = at;
    std::string s = std::string(label) + ": " + DescribeNode(all, &p, at + n, k, depth + 1);
    at += n;
    return s;
  };
  *pos = end;
  switch (e) {
    case StreamEncoding::kBitPack:
      return at + w < end ? name + " " + std::to_string(all[at + w]) : "?";
    case StreamEncoding::kSplit:
      return at < end ? name + " " + std::to_string(all[at]) : "?";
    case StreamEncoding::kDelta:
      at += w;
      return at < end ? name + "(" + child("deltas", kind) + ")" : "?";
    case StreamEncoding::kRle: {
      uint64_t runs;
      if (!varint(&runs)) return "?";
      std::string a = child("values", kind);
      return name + "(" + a + ", " + child("lengths", kCodes) + ")";
    }
    case StreamEncoding::kDictionary: {
      uint64_t entries;
      if (!varint(&entries)) return "?";
      std::string a = child(("entries " + std::to_string(entries)).c_str(), kind);
      return name + "(" + a + ", " + child("codes", kCodes) + ")";
    }
    case StreamEncoding::kDecimal: {
      if (at >= end) return "?";
      const int ex = all[at++];
      std::string a = child("digits", kCodes);
      uint64_t exceptions;
      if (!varint(&exceptions)) return "?";
      return name + " 10^-" + std::to_string(ex) + "(" + a + ", exceptions " + std::to_string(exceptions) + ")";
    }
    case StreamEncoding::kStringDictionary: {
      uint64_t entries, blob;
      if (!varint(&entries)) return "?";
      std::string a = child(("entries " + std::to_string(entries)).c_str(), {32, false});
      if (!varint(&blob) || blob > end - at) return "?";
      at += blob;
      return name + "(" + a + ", codes: " + child("codes", kCodes).substr(7) + ")";
    }
    default:
      return name;
  }
}

}  // namespace

std::string DescribeEncoding(ElementKind kind, StreamEncoding top, ByteSpan encoded) {
  if (top == StreamEncoding::kPlain || top == StreamEncoding::kDerivedLengths) return EncodingName(top);
  size_t pos = 0;
  return DescribeNode(encoded, &pos, encoded.size(), KindOf(kind), 1);
}

}  // namespace pcr
