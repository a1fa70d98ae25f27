#include "format/stream_decoding.h"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <vector>

#include "format/bitpack.h"

namespace pcr {

namespace {

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
  Status Decode(ValueKind kind, size_t begin, size_t end, uint64_t count, int depth, uint64_t* out,
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
        UnpackBits(all_.data() + pos_, count, b, base, out);
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
        if (map != nullptr) {
          for (uint64_t& v : dict) v = (*map)(v);
          map = nullptr;
        }
        // One pass: codes out of range read the last entry and are refused after.
        uint64_t worst = 0;
        const uint64_t last = entries - 1;
        for (uint64_t i = 0; i < count; ++i) {
          const uint64_t code = out[i];
          worst = std::max(worst, code);
          out[i] = dict[std::min(code, last)];
        }
        if (count > 0 && worst >= entries) {
          return Bad("dictionary code " + std::to_string(worst) + " out of range of " + std::to_string(entries) +
                     " entries");
        }
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
    ByteCursor d(all_.subspan(pos_, end_ - pos_));
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
  Status Child(ValueKind kind, uint64_t count, int depth, uint64_t* out, const DecimalMap* map = nullptr) {
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

}  // namespace

namespace {

Status CheckTop(ElementKind kind, StreamEncoding top, ByteSpan encoded, uint64_t raw_length) {
  const auto bad = [](const std::string& what) { return Status::Corruption("encoding at byte 0: " + what); };
  if (!TopEncodingAllowed(kind, top) || top == StreamEncoding::kPlain || top == StreamEncoding::kDerivedLengths) {
    return bad(std::string(EncodingName(top)) + " is not a stream encoding here");
  }
  if (encoded.empty() || encoded[0] != static_cast<uint8_t>(top)) {
    return bad("stream starts with encoding " + (encoded.empty() ? std::string("(none)") : std::to_string(encoded[0])) +
               ", its entry says " + std::to_string(static_cast<int>(top)));
  }
  if (raw_length / kMaxEncodedExpansion >= encoded.size()) {
    return bad("raw length " + std::to_string(raw_length) + " over " + std::to_string(kMaxEncodedExpansion) +
               " times the " + std::to_string(encoded.size()) + " encoded bytes");
  }
  return Status::OK();
}

}  // namespace

Status DecodeStreamInto(ElementKind kind, StreamEncoding top, ByteSpan encoded, uint64_t raw_length, uint8_t* out) {
  PCR_RETURN_IF_ERROR(CheckTop(kind, top, encoded, raw_length));
  if (ElementWidth(kind) != 8 || raw_length % 8 != 0) {
    return Status::Corruption("encoding at byte 0: raw length " + std::to_string(raw_length) +
                              " is not a multiple of 8");
  }
  // Little-endian 64-bit values are the raw bytes: decoded in place.
  NodeDecoder decoder(encoded);
  return decoder.Decode(ValueKindOf(kind), 0, encoded.size(), raw_length / 8, 1, reinterpret_cast<uint64_t*>(out));
}

Status DecodeStream(ElementKind kind, StreamEncoding top, ByteSpan encoded, uint64_t raw_length, Bytes* out,
                    uint64_t string_count, Bytes* lengths) {
  const auto bad = [](const std::string& what) { return Status::Corruption("encoding at byte 0: " + what); };
  PCR_RETURN_IF_ERROR(CheckTop(kind, top, encoded, raw_length));
  NodeDecoder decoder(encoded);
  if (kind == ElementKind::kStrings) {
    if (lengths == nullptr) return bad("string dictionary without its lengths stream");
    return decoder.DecodeStrings(string_count, raw_length, out, lengths);
  }
  const size_t w = ElementWidth(kind);
  if (raw_length % w != 0) return bad("raw length " + std::to_string(raw_length) + " is not a multiple of " + std::to_string(w));
  const uint64_t count = raw_length / w;
  if (w == 8) {
    out->resize(raw_length);
    return DecodeStreamInto(kind, top, encoded, raw_length, out->data());
  }
  std::vector<uint64_t> v(count);
  Status st = decoder.Decode(ValueKindOf(kind), 0, encoded.size(), count, 1, v.data());
  if (!st.ok()) return st;
  out->resize(raw_length);
  for (size_t i = 0; i < v.size(); ++i) StoreFixed32(out->data() + 4 * i, static_cast<uint32_t>(v[i]));
  return Status::OK();
}

namespace {

// Describes the node at [pos, end), advancing pos; "?" where it does not parse.
std::string DescribeNode(ByteSpan all, size_t* pos, size_t end, ValueKind kind, int depth) {
  if (*pos >= end || depth > kMaxEncodingDepth) return "?";
  const uint8_t tag = all[*pos];
  if (tag > kMaxStreamEncoding) return "?";
  const auto e = static_cast<StreamEncoding>(tag);
  std::string name = EncodingName(e);
  size_t at = *pos + 1;
  const size_t w = static_cast<size_t>(kind.bits / 8);
  const auto varint = [&](uint64_t* v) {
    ByteCursor d(all.subspan(at, end - at));
    if (!d.GetVarint64(v)) return false;
    at += d.position();
    return true;
  };
  const auto child = [&](const char* label, ValueKind k) {
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
  return DescribeNode(encoded, &pos, encoded.size(), ValueKindOf(kind), 1);
}

}  // namespace pcr
