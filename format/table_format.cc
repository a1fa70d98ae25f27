#include "format/table_format.h"

#include "format/stream_decoding.h"

#include <zstd.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <memory>
#include <new>
#include <unordered_set>

static_assert(std::endian::native == std::endian::little, "stream values are little-endian");

namespace pcr {

namespace {

constexpr StreamRole kScalarRoles[] = {StreamRole::kPresence, StreamRole::kValues};
constexpr StreamRole kListRoles[] = {StreamRole::kPresence, StreamRole::kLengths, StreamRole::kValues};
constexpr StreamRole kScoredRoles[] = {StreamRole::kPresence, StreamRole::kLengths, StreamRole::kValues,
                                       StreamRole::kScores};

// Bytes per value of a fixed-width values stream; 0 for strings.
size_t ValueWidth(FeatureType type) {
  switch (type) {
    case FeatureType::kFloat32:
    case FeatureType::kFloat32List:
      return 4;
    case FeatureType::kString:
    case FeatureType::kBytes:
      return 0;
    case FeatureType::kBool:
      return 1;
    default:
      return 8;
  }
}

template <typename T>
void AppendValues(ByteSpan in, Buffer<T>* out) {
  const size_t old = out->size();
  out->resize(old + in.size() / sizeof(T));
  if (!in.empty()) std::memcpy(out->data() + old, in.data(), in.size());
}

// Spreads n present values of `in` over the rows of `present`, zero elsewhere.
template <typename T>
void ScatterValues(ByteSpan in, const uint8_t* present, uint64_t rows, Buffer<T>* out) {
  const size_t old = out->size();
  out->resize(old + rows);
  T* dst = out->data() + old;
  if (in.size() == rows * sizeof(T)) {  // every row present
    if (rows > 0) std::memcpy(dst, in.data(), in.size());
    return;
  }
  const uint8_t* src = in.data();
  for (uint64_t r = 0; r < rows; ++r) {
    if (present[r]) {
      std::memcpy(&dst[r], src, sizeof(T));
      src += sizeof(T);
    } else {
      dst[r] = T{};
    }
  }
}

Status Bad(StreamRole role, const std::string& what) {
  return Status::Corruption(std::string(StreamRoleName(role)) + " stream: " + what);
}

}  // namespace

const char* FeatureTypeName(FeatureType type) {
  switch (type) {
    case FeatureType::kInt64:
      return "int64";
    case FeatureType::kFloat64:
      return "float64";
    case FeatureType::kFloat32:
      return "float32";
    case FeatureType::kString:
      return "string";
    case FeatureType::kIdList:
      return "id_list";
    case FeatureType::kScoredIdList64:
      return "scored_id_list64";
    case FeatureType::kScoredIdList32:
      return "scored_id_list32";
    case FeatureType::kBytes:
      return "bytes";
    case FeatureType::kFloat32List:
      return "float32_list";
    case FeatureType::kFloat64List:
      return "float64_list";
    case FeatureType::kBool:
      return "bool";
    case FeatureType::kUInt64:
      return "uint64";
    case FeatureType::kTimestampS:
      return "timestamp_s";
    case FeatureType::kTimestampMs:
      return "timestamp_ms";
    case FeatureType::kTimestampUs:
      return "timestamp_us";
    case FeatureType::kTimestampNs:
      return "timestamp_ns";
    case FeatureType::kUInt64IdList:
      return "uint64_id_list";
  }
  return "unknown";
}

bool ParseFeatureTypeName(std::string_view name, FeatureType* type) {
  for (uint8_t t = 1; t <= kMaxFeatureType; ++t) {
    if (name == FeatureTypeName(static_cast<FeatureType>(t))) {
      *type = static_cast<FeatureType>(t);
      return true;
    }
  }
  return false;
}

const char* StreamRoleName(StreamRole role) {
  switch (role) {
    case StreamRole::kPresence:
      return "presence";
    case StreamRole::kLengths:
      return "lengths";
    case StreamRole::kValues:
      return "values";
    case StreamRole::kScores:
      return "scores";
  }
  return "unknown";
}

bool IsListType(FeatureType type) {
  return type == FeatureType::kIdList || type == FeatureType::kScoredIdList64 ||
         type == FeatureType::kScoredIdList32 || type == FeatureType::kFloat32List ||
         type == FeatureType::kFloat64List || type == FeatureType::kUInt64IdList;
}

uint8_t FeatureTypeVersion(FeatureType type) {
  const auto t = static_cast<uint8_t>(type);
  return t > kMaxFeatureType06   ? kUInt64IdsVersionMinor
         : t > kMaxFeatureType05 ? kTypesVersionMinor
         : t > kMaxFeatureType03 ? 4
                                 : 2;
}

uint8_t MaxFeatureType(uint8_t version_minor) {
  return version_minor >= kUInt64IdsVersionMinor ? kMaxFeatureType
         : version_minor >= kTypesVersionMinor   ? kMaxFeatureType06
         : version_minor >= 4                    ? kMaxFeatureType05
                                                 : kMaxFeatureType03;
}

size_t RawValueBytes(FeatureType type) {
  const size_t width = ValueWidth(type);
  return width == 0 ? 1 : width;
}

bool IsStringType(FeatureType type) { return type == FeatureType::kString || type == FeatureType::kBytes; }

size_t ScoreWidth(FeatureType type) {
  return type == FeatureType::kScoredIdList32 ? 4 : type == FeatureType::kScoredIdList64 ? 8 : 0;
}

std::span<const StreamRole> RolesOf(FeatureType type) {
  if (ScoreWidth(type) != 0) return kScoredRoles;
  if (IsListType(type) || IsStringType(type)) return kListRoles;
  return kScalarRoles;
}

bool SameFeatures(const TableSchema& a, const TableSchema& b) {
  return std::equal(a.features.begin(), a.features.end(), b.features.begin(), b.features.end(),
                    [](const FeatureInfo& x, const FeatureInfo& y) { return x.name == y.name && x.type == y.type; });
}

void AddFeatureCounts(const TableSchema& from, TableSchema* into) {
  for (size_t k = 0; k < from.features.size(); ++k) {
    into->features[k].present_count += from.features[k].present_count;
    into->features[k].value_count += from.features[k].value_count;
  }
}

void EncodeTableSchema(const TableSchema& schema, Bytes* out) {
  PutVarint64(out, schema.row_count);
  PutVarint64(out, schema.features.size());
  for (const FeatureInfo& f : schema.features) {
    PutLengthPrefixed(out, f.name);
    PutFixed8(out, static_cast<uint8_t>(f.type));
    PutFixed8(out, f.has_id ? 1 : 0);
    if (f.has_id) PutVarsint64(out, f.id);
    PutVarint64(out, f.present_count);
    PutVarint64(out, f.value_count);
  }
}

bool DecodeTableSchema(ByteCursor* d, uint8_t max_type, bool allow_map, TableSchema* schema, std::string* error) {
  uint64_t n;
  if (!d->GetVarint64(&schema->row_count) || !d->GetVarintAtMost(d->remaining() / 5, &n)) {
    *error = "truncated table schema";
    return false;
  }
  schema->features.resize(n);
  std::unordered_set<std::string> names;
  for (uint64_t i = 0; i < n; ++i) {
    FeatureInfo& f = schema->features[i];
    uint8_t type, flags;
    if (!d->GetLengthPrefixed(d->remaining(), &f.name) || !d->GetFixed8(&type) || !d->GetFixed8(&flags) ||
        (flags == 1 && !d->GetVarsint64(&f.id)) || !d->GetVarint64(&f.present_count) ||
        !d->GetVarint64(&f.value_count)) {
      *error = "truncated feature " + std::to_string(i);
      return false;
    }
    if (type < 1 || type > max_type) {
      *error = "feature " + std::to_string(i) + " has unknown type " + std::to_string(type);
      return false;
    }
    if (flags > (allow_map ? 1 : 0)) {
      *error = "feature " + std::to_string(i) + " has unknown flags " + std::to_string(flags);
      return false;
    }
    f.type = static_cast<FeatureType>(type);
    f.has_id = flags == 1;
    if (f.has_id && f.name != std::to_string(f.id)) {
      *error = "map feature '" + f.name + "' is not named by its id " + std::to_string(f.id) + " in decimal";
      return false;
    }
    if (f.present_count > schema->row_count) {
      *error = "feature '" + f.name + "' is present in more rows than the table has";
      return false;
    }
    if (!names.insert(f.name).second) {
      *error = "duplicate feature name '" + f.name + "'";
      return false;
    }
  }
  return true;
}

ElementKind ElementKindOf(FeatureType type, StreamRole role) {
  switch (role) {
    case StreamRole::kPresence:
      return ElementKind::kBytes;
    case StreamRole::kLengths:
      return ElementKind::kU32;
    case StreamRole::kScores:
      return type == FeatureType::kScoredIdList32 ? ElementKind::kF32 : ElementKind::kF64;
    case StreamRole::kValues:
      break;
  }
  switch (type) {
    case FeatureType::kFloat64:
    case FeatureType::kFloat64List:
      return ElementKind::kF64;
    case FeatureType::kFloat32:
    case FeatureType::kFloat32List:
      return ElementKind::kF32;
    case FeatureType::kString:
    case FeatureType::kBytes:
      return ElementKind::kStrings;
    case FeatureType::kBool:
      return ElementKind::kBytes;
    default:
      return ElementKind::kI64;
  }
}

namespace {

// The encoded bytes of a stored stream that is not plain: decompressed into
// `scratch` when zstd.
Result<ByteSpan> EncodedBytes(ByteSpan stored, const TableStream& t, Bytes* scratch) {
  if (t.codec != StreamCodec::kZstd) return stored;
  const unsigned long long content = ZSTD_getFrameContentSize(stored.data(), stored.size());
  if (content == ZSTD_CONTENTSIZE_ERROR || content == ZSTD_CONTENTSIZE_UNKNOWN) {
    return Status::Corruption("zstd frame content size " +
                              std::string(content == ZSTD_CONTENTSIZE_ERROR ? "unreadable" : "missing"));
  }
  PCR_RETURN_IF_ERROR(DecompressStream(stored, t.codec, content, scratch));
  return ByteSpan(*scratch);
}

}  // namespace

Status UnpackStream(ByteSpan stored, const TableStream& t, FeatureType type, Bytes* out, Bytes* scratch,
                    uint64_t string_count, Bytes* lengths) {
  if (t.encoding == StreamEncoding::kPlain) return DecompressStream(stored, t.codec, t.raw_length, out);
  PCR_ASSIGN_OR_RETURN(const ByteSpan encoded, EncodedBytes(stored, t, scratch));
  try {
    return DecodeStream(ElementKindOf(type, t.role), t.encoding, encoded, t.raw_length, out, string_count, lengths);
  } catch (const std::bad_alloc&) {
    return Status::NotSupported("a stream of " + std::to_string(t.raw_length) + " raw bytes does not fit in memory");
  }
}

Status CheckRawLength(uint64_t stored, const TableStream& t) {
  // zstd makes at most 128 KiB of a 4-byte block; an encoding at most
  // kMaxEncodedExpansion bytes of each encoded byte.
  uint64_t most = t.codec == StreamCodec::kZstd ? stored * 32768 : stored;
  if (t.encoding != StreamEncoding::kPlain) most = most > (UINT64_MAX >> 24) ? UINT64_MAX : most << 24;
  if (t.raw_length <= most) return Status::OK();
  return Status::Corruption("raw length " + std::to_string(t.raw_length) + " exceeds what " + std::to_string(stored) +
                            " stored bytes can hold");
}

Status UnpackStreamInto(ByteSpan stored, const TableStream& t, FeatureType type, uint8_t* out, Bytes* scratch) {
  if (t.encoding == StreamEncoding::kPlain) return DecompressStreamInto(stored, t.codec, t.raw_length, out);
  PCR_ASSIGN_OR_RETURN(const ByteSpan encoded, EncodedBytes(stored, t, scratch));
  return DecodeStreamInto(ElementKindOf(type, t.role), t.encoding, encoded, t.raw_length, out);
}

Status DecompressStream(ByteSpan stored, StreamCodec codec, uint64_t raw_length, Bytes* out) {
  if (codec == StreamCodec::kNone) {
    if (stored.size() != raw_length) return Status::Corruption("stored stream length differs from raw length");
    out->assign(stored.begin(), stored.end());
    return Status::OK();
  }
  out->resize(raw_length);
  return DecompressStreamInto(stored, codec, raw_length, out->data());
}

Status DecompressStreamInto(ByteSpan stored, StreamCodec codec, uint64_t raw_length, uint8_t* out) {
  if (codec == StreamCodec::kNone) {
    if (stored.size() != raw_length) return Status::Corruption("stored stream length differs from raw length");
    if (raw_length > 0) std::memcpy(out, stored.data(), raw_length);
    return Status::OK();
  }
  if (codec != StreamCodec::kZstd) return Status::Corruption("unknown codec " + std::to_string(int(codec)));
  const unsigned long long content = ZSTD_getFrameContentSize(stored.data(), stored.size());
  // A zstd block of at least 4 bytes decodes to at most 128 KiB.
  if (raw_length / 32768 > stored.size()) {
    return Status::Corruption("raw length " + std::to_string(raw_length) + " exceeds what " +
                              std::to_string(stored.size()) + " zstd bytes can hold");
  }
  if (content != raw_length) {
    return Status::Corruption("zstd frame content size " +
                              (content == ZSTD_CONTENTSIZE_ERROR     ? std::string("unreadable")
                               : content == ZSTD_CONTENTSIZE_UNKNOWN ? std::string("missing")
                                                                     : std::to_string(content)) +
                              " differs from raw length " + std::to_string(raw_length));
  }
  const size_t frame = ZSTD_findFrameCompressedSize(stored.data(), stored.size());
  if (!ZSTD_isError(frame) && frame != stored.size()) {
    return Status::Corruption(std::to_string(stored.size() - frame) + " bytes after the zstd frame");
  }
  // One context per thread: ZSTD_decompress would make one per stream.
  thread_local std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> dctx(nullptr, ZSTD_freeDCtx);
  if (dctx == nullptr) dctx.reset(ZSTD_createDCtx());
  if (dctx == nullptr) return Status::NotSupported("zstd could not allocate a decompression context");
  const size_t n = ZSTD_decompressDCtx(dctx.get(), out, raw_length, stored.data(), stored.size());
  if (ZSTD_isError(n)) return Status::Corruption(std::string("zstd: ") + ZSTD_getErrorName(n));
  if (n != raw_length) {
    return Status::Corruption("zstd frame decoded to " + std::to_string(n) + " bytes, expected " +
                              std::to_string(raw_length));
  }
  return Status::OK();
}

void AppendRows(const Column& from, uint64_t first, uint64_t count, Column* to) {
  const uint64_t end = first + count;
  to->rows += count;
  to->present.insert(to->present.end(), from.present.begin() + first, from.present.begin() + end);
  const bool per_row = from.offsets.empty();
  if (per_row) {
    // Scalars: one value per row in the vector the type uses.
    if (!from.ints.empty()) to->ints.insert(to->ints.end(), from.ints.begin() + first, from.ints.begin() + end);
    if (!from.doubles.empty()) {
      to->doubles.insert(to->doubles.end(), from.doubles.begin() + first, from.doubles.begin() + end);
    }
    if (!from.floats.empty()) {
      to->floats.insert(to->floats.end(), from.floats.begin() + first, from.floats.begin() + end);
    }
    return;
  }
  const uint64_t lo = from.offsets[first], hi = from.offsets[end];
  const uint64_t base = to->offsets.back();
  for (uint64_t r = first + 1; r <= end; ++r) to->offsets.push_back(base + from.offsets[r] - lo);
  if (!from.bytes.empty()) to->bytes.append(from.bytes, lo, hi - lo);
  // List elements (ids, scores, floats) live in whichever vectors the type uses.
  if (!from.ints.empty()) to->ints.insert(to->ints.end(), from.ints.begin() + lo, from.ints.begin() + hi);
  if (!from.doubles.empty()) to->doubles.insert(to->doubles.end(), from.doubles.begin() + lo, from.doubles.begin() + hi);
  if (!from.floats.empty()) to->floats.insert(to->floats.end(), from.floats.begin() + lo, from.floats.begin() + hi);
}

namespace {

// The end of the run of rows from `begin` that are consecutive rows of one column.
size_t RunEnd(std::span<const RowRef> rows, size_t begin) {
  size_t end = begin + 1;
  while (end < rows.size() && rows[end].column == rows[begin].column &&
         rows[end].row == rows[begin].row + (end - begin)) {
    ++end;
  }
  return end;
}

// Each row's value from the per-row vector `values`, a run at a time.
template <typename T>
void GatherScalars(std::span<const RowRef> rows, Buffer<T> Column::*values, Buffer<T>* out) {
  out->resize(rows.size());
  for (size_t i = 0, end; i < rows.size(); i = end) {
    end = RunEnd(rows, i);
    std::memcpy(out->data() + i, (rows[i].column->*values).data() + rows[i].row, (end - i) * sizeof(T));
  }
}

// Each row's elements [offsets[r], offsets[r + 1]) of `pick`'s vector, a run
// at a time, to `out`, which `to_offsets` already sizes.
template <typename T>
void GatherElements(std::span<const RowRef> rows, const T& (*pick)(const Column&), const std::vector<uint64_t>& to_offsets,
                    T* out) {
  out->resize(to_offsets.back());
  for (size_t i = 0, end; i < rows.size(); i = end) {
    end = RunEnd(rows, i);
    const Column& c = *rows[i].column;
    const uint64_t lo = c.offsets[rows[i].row], n = c.offsets[rows[end - 1].row + 1] - lo;
    if (n > 0) std::memcpy(out->data() + to_offsets[i], pick(c).data() + lo, n * sizeof((*out)[0]));
  }
}

}  // namespace

void GatherRows(std::span<const RowRef> rows, Column* to) {
  const FeatureType t = to->type;
  to->rows = rows.size();
  to->present.resize(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) to->present[i] = rows[i].column->present[rows[i].row];
  if (IsScalarType(t)) {
    if (t == FeatureType::kFloat64) {
      GatherScalars(rows, &Column::doubles, &to->doubles);
    } else if (t == FeatureType::kFloat32) {
      GatherScalars(rows, &Column::floats, &to->floats);
    } else {
      GatherScalars(rows, &Column::ints, &to->ints);
    }
    return;
  }
  to->offsets.resize(rows.size() + 1);
  to->offsets[0] = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const Column& c = *rows[i].column;
    to->offsets[i + 1] = to->offsets[i] + c.offsets[rows[i].row + 1] - c.offsets[rows[i].row];
  }
  if (IsStringType(t)) {
    GatherElements<std::string>(rows, [](const Column& c) -> const std::string& { return c.bytes; }, to->offsets,
                                &to->bytes);
    return;
  }
  if (t == FeatureType::kIdList || t == FeatureType::kUInt64IdList || t == FeatureType::kScoredIdList64 ||
      t == FeatureType::kScoredIdList32) {
    GatherElements<Buffer<int64_t>>(rows, [](const Column& c) -> const Buffer<int64_t>& { return c.ints; },
                                    to->offsets, &to->ints);
  }
  if (t == FeatureType::kScoredIdList64 || t == FeatureType::kFloat64List) {
    GatherElements<Buffer<double>>(rows, [](const Column& c) -> const Buffer<double>& { return c.doubles; },
                                   to->offsets, &to->doubles);
  }
  if (t == FeatureType::kScoredIdList32 || t == FeatureType::kFloat32List) {
    GatherElements<Buffer<float>>(rows, [](const Column& c) -> const Buffer<float>& { return c.floats; },
                                  to->offsets, &to->floats);
  }
}

namespace {

// The rows a presence stream holds (row_count when it is empty), checked.
Result<uint64_t> PresentRows(uint64_t row_count, ByteSpan presence) {
  if (presence.empty()) return row_count;
  if (presence.size() != (row_count + 7) / 8) {
    return Bad(StreamRole::kPresence, std::to_string(presence.size()) + " bytes for " +
                                          std::to_string(row_count) + " rows");
  }
  if (row_count % 8 != 0 && (presence.back() >> (row_count % 8)) != 0) {
    return Bad(StreamRole::kPresence, "bits set past the last row");
  }
  uint64_t present_rows = 0;
  for (const uint8_t b : presence) present_rows += std::popcount(b);
  return present_rows;
}

Status ScalarValuesSize(uint64_t bytes, uint64_t present_rows, size_t width) {
  if (bytes == present_rows * width) return Status::OK();
  return Bad(StreamRole::kValues, std::to_string(bytes) + " bytes for " + std::to_string(present_rows) +
                                      " present rows of " + std::to_string(width) + " bytes");
}

// Appends the rows' presence to `column`; returns where they start.
const uint8_t* AppendPresence(uint64_t row_count, ByteSpan presence, Column* column) {
  const size_t first_row = column->present.size();
  if (presence.empty()) {
    column->present.resize(first_row + row_count, 1);
  } else {
    column->present.resize(first_row + row_count);
    uint8_t* p = column->present.data() + first_row;
    for (uint64_t r = 0; r < row_count; ++r) p[r] = (presence[r / 8] >> (r % 8)) & 1;
  }
  column->rows += row_count;
  return column->present.data() + first_row;
}

// Spreads the n present values at the front of dst[0, rows) over the rows
// of `present`, zero elsewhere, from the back so that none is overwritten
// before it is moved.
template <typename T>
void ExpandInPlace(const uint8_t* present, uint64_t rows, uint64_t n, T* dst) {
  if (n == rows) return;
  for (uint64_t r = rows; r-- > 0;) dst[r] = present[r] ? dst[--n] : T{};
}

}  // namespace

bool IsWideScalar(FeatureType type) {
  return IsScalarType(type) && type != FeatureType::kBool && type != FeatureType::kFloat32;
}

Status DecodeWideScalar(FeatureType type, uint64_t row_count, ByteSpan presence, uint64_t values_length,
                        const std::function<Status(uint8_t*)>& unpack, Column* column) {
  PCR_ASSIGN_OR_RETURN(const uint64_t present_rows, PresentRows(row_count, presence));
  PCR_RETURN_IF_ERROR(ScalarValuesSize(values_length, present_rows, 8));
  if (row_count > (presence.size() + values_length) * 8) {
    return Status::Corruption(std::to_string(row_count) + " rows, more than the streams can hold");
  }
  const uint8_t* present = AppendPresence(row_count, presence, column);
  auto fill = [&](auto* values) -> Status {
    const size_t old = values->size();
    try {
      values->resize(old + row_count);
    } catch (const std::bad_alloc&) {
      return Status::NotSupported(std::to_string(row_count) + " rows of 8 bytes do not fit in memory");
    }
    auto* dst = values->data() + old;
    PCR_RETURN_IF_ERROR(unpack(reinterpret_cast<uint8_t*>(dst)));
    ExpandInPlace(present, row_count, present_rows, dst);
    return Status::OK();
  };
  return type == FeatureType::kFloat64 ? fill(&column->doubles) : fill(&column->ints);
}

Status DecodeFeatureStreams(FeatureType type, uint64_t row_count, ByteSpan presence, ByteSpan lengths,
                            ByteSpan values, ByteSpan scores, Column* column) {
  // Presence: empty means every row holds the feature. Sizes are checked
  // against the streams before anything proportional to row_count is allocated.
  PCR_ASSIGN_OR_RETURN(const uint64_t present_rows, PresentRows(row_count, presence));
  const size_t width = ValueWidth(type);
  const bool scalar = !IsListType(type) && !IsStringType(type);
  if (scalar) PCR_RETURN_IF_ERROR(ScalarValuesSize(values.size(), present_rows, width));
  if (!scalar && lengths.size() != present_rows * 4) {
    return Bad(StreamRole::kLengths, std::to_string(lengths.size()) + " bytes for " +
                                         std::to_string(present_rows) + " present rows");
  }
  if (row_count > (presence.size() + values.size() + lengths.size()) * 8) {
    return Status::Corruption(std::to_string(row_count) + " rows, more than the streams can hold");
  }
  const uint8_t* present = AppendPresence(row_count, presence, column);

  if (scalar) {
    if (!lengths.empty() || !scores.empty()) return Status::Corruption("scalar feature with list streams");
    switch (type) {
      case FeatureType::kFloat64:
        ScatterValues(values, present, row_count, &column->doubles);
        break;
      case FeatureType::kFloat32:
        ScatterValues(values, present, row_count, &column->floats);
        break;
      case FeatureType::kBool: {
        const auto bad = std::find_if(values.begin(), values.end(), [](uint8_t b) { return b > 1; });
        if (bad != values.end()) {
          return Bad(StreamRole::kValues, "bool value " + std::to_string(*bad) + " at byte " +
                                              std::to_string(bad - values.begin()) + " (0 or 1 expected)");
        }
        const size_t old = column->ints.size();
        column->ints.resize(old + row_count);
        const uint8_t* src = values.data();
        for (uint64_t r = 0; r < row_count; ++r) column->ints[old + r] = present[r] ? *src++ : 0;
        break;
      }
      default:  // int64, uint64 and timestamps: 8 bytes each
        ScatterValues(values, present, row_count, &column->ints);
        break;
    }
    return Status::OK();
  }

  const size_t first_offset = column->offsets.size();
  column->offsets.resize(first_offset + row_count);
  uint64_t* offsets = column->offsets.data() + first_offset;
  uint64_t total = column->offsets[first_offset - 1];
  const uint64_t base = total;
  const uint8_t* len = lengths.data();
  for (uint64_t r = 0; r < row_count; ++r) {
    if (present[r]) {
      total += LoadFixed32(len);
      len += 4;
    }
    offsets[r] = total;
  }
  const uint64_t elements = total - base;
  if (IsStringType(type)) {
    if (!scores.empty()) return Status::Corruption("string feature with a scores stream");
    if (values.size() != elements) {
      return Bad(StreamRole::kValues, std::to_string(values.size()) + " bytes, lengths sum to " +
                                          std::to_string(elements));
    }
    column->bytes.append(reinterpret_cast<const char*>(values.data()), values.size());
    return Status::OK();
  }
  if (values.size() / width != elements || values.size() % width != 0) {
    return Bad(StreamRole::kValues, std::to_string(values.size()) + " bytes for " +
                                        std::to_string(elements) + " list elements");
  }
  if (type == FeatureType::kFloat32List || type == FeatureType::kFloat64List) {
    if (!scores.empty()) return Status::Corruption("float list feature with a scores stream");
    if (type == FeatureType::kFloat32List) {
      AppendValues(values, &column->floats);
    } else {
      AppendValues(values, &column->doubles);
    }
    return Status::OK();
  }
  const size_t sw = ScoreWidth(type);
  if (scores.size() != elements * sw) {
    return Bad(StreamRole::kScores, std::to_string(scores.size()) + " bytes for " +
                                        std::to_string(elements) + " ids");
  }
  AppendValues(values, &column->ints);
  if (type == FeatureType::kScoredIdList64) AppendValues(scores, &column->doubles);
  if (type == FeatureType::kScoredIdList32) AppendValues(scores, &column->floats);
  return Status::OK();
}

}  // namespace pcr
