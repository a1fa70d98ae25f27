#include "writer/stream_encoder.h"

#include <zstd.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <span>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "format/bitpack.h"

namespace pcr {

size_t CompressZstd(ByteSpan in, int level, std::unique_ptr<uint8_t[]>* out) {
  const size_t bound = ZSTD_compressBound(in.size());
  *out = std::make_unique_for_overwrite<uint8_t[]>(bound);
  return ZSTD_compress(out->get(), bound, in.data(), in.size(), level);
}

namespace {

size_t VarintSize(uint64_t v) { return v < 128 ? 1 : 1 + VarintSize(v >> 7); }

struct Plan {
  StreamEncoding encoding = StreamEncoding::kPlain;
  int exponent = 0;       // kDecimal
  bool by_count = false;  // kDictionary: entries most frequent first
  std::vector<Plan> children;
};

constexpr size_t kNever = std::numeric_limits<size_t>::max() / 4;
constexpr int kWriterDepth = 3;

size_t Choose(ValueKind kind, std::span<const uint64_t> v, int depth, Plan* plan, bool codes = false);

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
size_t Estimate(ValueKind kind, std::span<const uint64_t> v, int depth, StreamEncoding e, Plan* plan) {
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
size_t Choose(ValueKind kind, std::span<const uint64_t> v, int depth, Plan* plan, bool codes) {
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

void Write(ValueKind kind, std::span<const uint64_t> v, const Plan& plan, Leaves leaves, Bytes* out);

void WriteChild(ValueKind kind, std::span<const uint64_t> v, const Plan& plan, Leaves leaves, Bytes* out) {
  Bytes child;
  Write(kind, v, plan, leaves, &child);
  PutVarint64(out, child.size());
  PutBytes(out, child);
}

// Writes the node; an encoding the values do not allow (a constant that
// varies) becomes the nearest that fits.
void Write(ValueKind kind, std::span<const uint64_t> v, const Plan& plan, Leaves leaves, Bytes* out) {
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
      PackBits(v, b, lo, out);
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
  std::unique_ptr<uint8_t[]> out;
  const size_t n = CompressZstd(in, level, &out);
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

bool Applies(ValueKind kind, StreamEncoding e, const std::vector<uint64_t>& v) {
  if (!NestedAllowed(kind, e)) return false;
  if (e == StreamEncoding::kConstant) {
    return !v.empty() && std::all_of(v.begin(), v.end(), [&](uint64_t x) { return x == v[0]; });
  }
  return true;
}

}  // namespace

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

EncodedStream EncodeStream(ElementKind kind, ByteSpan raw, const EncodingChoice& choice) {
  const EncodedStream plain;
  if (kind == ElementKind::kBytes || kind == ElementKind::kStrings || raw.empty()) return plain;
  const ValueKind k = ValueKindOf(kind);
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
  // Never more than kMaxEncodedExpansion: such a stream is stored plainly.
  if (raw.size() / kMaxEncodedExpansion >= out.bytes.size()) return plain;
  return out;
}

EncodedStream EncodeStrings(ByteSpan lengths, ByteSpan values, const EncodingChoice& choice) {
  const EncodedStream plain;
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
  if (lengths.size() / kMaxEncodedExpansion >= out.bytes.size() ||
      values.size() / kMaxEncodedExpansion >= out.bytes.size()) {
    return plain;
  }
  if (forced) return out;
  // Against plain values and their lengths stream, each as the writer stores them.
  const EncodedStream lengths_alone = EncodeStream(ElementKind::kU32, lengths, choice);
  const ByteSpan lengths_stored = lengths_alone.encoding == StreamEncoding::kPlain ? lengths : lengths_alone.bytes;
  const size_t plain_bytes = ZstdSize(values, choice.zstd_level) + ZstdSize(lengths_stored, choice.zstd_level);
  if (best * ReadWeight(StreamEncoding::kDictionary) < plain_bytes * ReadWeight(StreamEncoding::kPlain)) return out;
  return plain;
}

}  // namespace pcr
