#include "format/file_format.h"

#include <algorithm>
#include <limits>
#include <unordered_set>

#include "format/checksum.h"

namespace pcr {

namespace {

Status CorruptAt(uint64_t offset, const std::string& what) {
  return Status::Corruption("at offset " + std::to_string(offset) + ": " + what);
}

uint8_t RoleMask(FeatureType type) {
  uint8_t mask = 0;
  for (const StreamRole r : RolesOf(type)) mask |= static_cast<uint8_t>(1u << static_cast<uint8_t>(r));
  return mask;
}

bool ValidFileName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find('/') == std::string::npos && name.find('\0') == std::string::npos;
}

// The table part of a stripe's index entry; stripe->streams is already decoded.
// The schema's present_count and value_count against the raw lengths of the
// stripes' lengths and values streams (spec 13.1).
Status CheckSchemaCounts(const TableSchema& schema, const std::vector<StripeInfo>& stripes) {
  std::vector<uint64_t> lengths_bytes(schema.features.size()), values_bytes(schema.features.size());
  for (const StripeInfo& stripe : stripes) {
    for (const TableStream& t : stripe.table_streams) {
      uint64_t* sum = t.role == StreamRole::kLengths  ? &lengths_bytes[t.feature]
                      : t.role == StreamRole::kValues ? &values_bytes[t.feature]
                                                      : nullptr;
      if (sum != nullptr && __builtin_add_overflow(*sum, t.raw_length, sum)) *sum = UINT64_MAX;
    }
  }
  for (size_t f = 0; f < schema.features.size(); ++f) {
    const FeatureInfo& fi = schema.features[f];
    const bool scalar = RolesOf(fi.type).size() == 2;
    const uint64_t width = RawValueBytes(fi.type);
    const uint64_t row_bytes = scalar ? values_bytes[f] : lengths_bytes[f];
    const uint64_t per_row = scalar ? width : 4;
    uint64_t want = 0;
    if (__builtin_mul_overflow(fi.present_count, per_row, &want) || want != row_bytes) {
      return Status::Corruption("feature '" + fi.name + "': present_count " + std::to_string(fi.present_count) +
                                ", but its streams hold " + std::to_string(row_bytes / per_row) + " rows");
    }
    const uint64_t values = scalar ? fi.present_count : values_bytes[f] / width;
    if (fi.value_count != values || (!scalar && values_bytes[f] % width != 0)) {
      return Status::Corruption("feature '" + fi.name + "': value_count " + std::to_string(fi.value_count) +
                                ", but its streams hold " + std::to_string(values));
    }
  }
  return Status::OK();
}

// The TableStreams describing streams [first_table_stream, first_table_stream
// + n) of `stripe`, whose row_count is set.
Status DecodeTableStreams(ByteCursor* d, const TableSchema& schema, size_t n, bool encodings, StripeInfo* stripe) {
  // Every stream needs at least four index bytes here (five with encodings).
  if (n > d->remaining() / (encodings ? 5 : 4)) return Status::Corruption("truncated stream descriptions");
  stripe->table_streams.resize(n);
  std::vector<uint8_t> roles_seen(schema.features.size(), 0);
  for (size_t s = 0; s < n; ++s) {
    TableStream& t = stripe->table_streams[s];
    uint64_t feature;
    uint8_t role, codec, encoding = 0;
    if (!d->GetVarintAtMost(schema.features.size(), &feature) || !d->GetFixed8(&role) ||
        !d->GetFixed8(&codec) || !d->GetVarint64(&t.raw_length) || (encodings && !d->GetFixed8(&encoding))) {
      return Status::Corruption("truncated description of stream " + std::to_string(s));
    }
    const std::string which = "stream " + std::to_string(s);
    if (feature == schema.features.size()) return Status::Corruption(which + ": no such feature");
    if (role >= kRoleCount) return Status::Corruption(which + ": unknown role " + std::to_string(role));
    if (codec > static_cast<uint8_t>(StreamCodec::kZstd)) {
      return Status::Corruption(which + ": unknown codec " + std::to_string(codec));
    }
    t.feature = static_cast<uint32_t>(feature);
    t.role = static_cast<StreamRole>(role);
    t.codec = static_cast<StreamCodec>(codec);
    const auto roles = RolesOf(schema.features[feature].type);
    if (std::find(roles.begin(), roles.end(), t.role) == roles.end()) {
      return Status::Corruption(which + ": a " + FeatureTypeName(schema.features[feature].type) +
                                " feature has no " + StreamRoleName(t.role) + " stream");
    }
    if (roles_seen[feature] & (1u << role)) {
      return Status::Corruption(which + ": second " + StreamRoleName(t.role) + " stream of feature '" +
                                schema.features[feature].name + "'");
    }
    roles_seen[feature] |= static_cast<uint8_t>(1u << role);
    if (encoding > kMaxStreamEncoding) {
      return Status::Corruption(which + ": unknown encoding " + std::to_string(encoding));
    }
    t.encoding = static_cast<StreamEncoding>(encoding);
    const FeatureType type = schema.features[feature].type;
    if (!TopEncodingAllowed(ElementKindOf(type, t.role), t.encoding) ||
        (t.encoding == StreamEncoding::kDerivedLengths && (type != FeatureType::kString && type != FeatureType::kBytes))) {
      return Status::Corruption(which + ": encoding " + EncodingName(t.encoding) + " for the " +
                                StreamRoleName(t.role) + " stream of a " + FeatureTypeName(type) + " feature");
    }
    const uint64_t length = stripe->streams[stripe->first_table_stream + s].length;
    if (t.encoding == StreamEncoding::kDerivedLengths) {
      if (length != 0 || t.codec != StreamCodec::kNone) {
        return Status::Corruption(which + ": derived lengths stored in " + std::to_string(length) + " bytes");
      }
    } else if (t.encoding != StreamEncoding::kPlain ? length == 0
               : t.codec == StreamCodec::kNone    ? t.raw_length != length
                                                  : length == 0 || t.raw_length == 0) {
      return Status::Corruption(which + ": raw length " + std::to_string(t.raw_length) +
                                " does not fit stored length " + std::to_string(length));
    }
    if (t.encoding != StreamEncoding::kPlain && t.encoding != StreamEncoding::kDerivedLengths &&
        t.raw_length / kMaxStoredExpansion >= length) {
      return Status::Corruption(which + ": raw length " + std::to_string(t.raw_length) + " over 2^24 times its " +
                                std::to_string(length) + " stored bytes");
    }
    // Raw streams are whole elements; row streams hold at most a value per row.
    const uint64_t width = ElementWidth(ElementKindOf(type, t.role));
    const bool per_row = t.role == StreamRole::kLengths || (t.role == StreamRole::kValues && RolesOf(type).size() == 2);
    if (t.raw_length % width != 0 || (per_row && t.raw_length / width > stripe->row_count)) {
      return Status::Corruption(which + ": raw length " + std::to_string(t.raw_length) + " is not whole " +
                                std::to_string(width) + "-byte values, one at most per row of " +
                                std::to_string(stripe->row_count));
    }
    if (t.role == StreamRole::kPresence && t.raw_length != 0 &&
        t.raw_length != (stripe->row_count + 7) / 8) {
      return Status::Corruption(which + ": presence bitmap of " + std::to_string(t.raw_length) +
                                " bytes for " + std::to_string(stripe->row_count) + " rows");
    }
  }
  for (size_t f = 0; f < schema.features.size(); ++f) {
    if (roles_seen[f] != RoleMask(schema.features[f].type)) {
      return Status::Corruption("feature '" + schema.features[f].name + "' lacks streams");
    }
  }
  // A string dictionary and derived lengths come together, and the lengths
  // stay within kMaxStoredExpansion of the dictionary's stored bytes.
  if (encodings) {
    const std::vector<size_t> where = stripe->TableStreamIndex(schema.features.size());
    for (const TableStream& t : stripe->table_streams) {
      if (t.encoding != StreamEncoding::kStringDictionary) continue;
      const size_t v = where[t.feature * kRoleCount + static_cast<size_t>(StreamRole::kValues)];
      const TableStream& lengths = stripe->table_streams[where[t.feature * kRoleCount + static_cast<size_t>(StreamRole::kLengths)]];
      if (lengths.encoding != StreamEncoding::kDerivedLengths ||
          lengths.raw_length / kMaxStoredExpansion >= stripe->streams[stripe->first_table_stream + v].length) {
        return Status::Corruption("feature '" + schema.features[t.feature].name +
                                  "': a string dictionary without derived lengths, or lengths it cannot hold");
      }
    }
    for (const TableStream& t : stripe->table_streams) {
      const size_t v = where[t.feature * kRoleCount + static_cast<size_t>(StreamRole::kValues)];
      if (t.encoding == StreamEncoding::kDerivedLengths &&
          stripe->table_streams[v].encoding != StreamEncoding::kStringDictionary) {
        return Status::Corruption("feature '" + schema.features[t.feature].name +
                                  "': derived lengths without a string dictionary");
      }
    }
  }
  return Status::OK();
}

}  // namespace

void FileHeader::EncodeTo(Bytes* out) const {
  const size_t start = out->size();
  out->insert(out->end(), kFileMagic.begin(), kFileMagic.end());
  PutFixed8(out, version_major);
  PutFixed8(out, version_minor);
  PutFixed8(out, static_cast<uint8_t>(kind));
  PutFixed8(out, 0);
  PutFixed32(out, Checksum32(ByteSpan(out->data() + start, 12)));
}

Result<FileHeader> FileHeader::DecodeFrom(ByteSpan in) {
  if (in.size() < kFileHeaderSize) {
    return CorruptAt(0, "file is " + std::to_string(in.size()) + " bytes, shorter than a header");
  }
  if (!std::equal(kFileMagic.begin(), kFileMagic.end(), in.begin())) {
    return CorruptAt(0, "not a pcr file (bad magic)");
  }
  const uint32_t stored = LoadFixed32(in.data() + 12);
  const uint32_t computed = Checksum32(in.first(12));
  if (stored != computed) {
    return CorruptAt(0, "header checksum mismatch (stored " + std::to_string(stored) +
                            ", computed " + std::to_string(computed) + ")");
  }
  FileHeader h;
  h.version_major = in[8];
  h.version_minor = in[9];
  if (h.version_major != kVersionMajor || h.version_minor > kVersionMinor) {
    return Status::NotSupported("file version " + std::to_string(h.version_major) + "." +
                                std::to_string(h.version_minor) + " is newer than this reader (" +
                                std::to_string(kVersionMajor) + "." +
                                std::to_string(kVersionMinor) + ")");
  }
  const uint8_t kind = in[10];
  if (kind < 1 || kind > 4) return CorruptAt(10, "unknown file kind " + std::to_string(kind));
  h.kind = static_cast<FileKind>(kind);
  if (h.kind == FileKind::kTable && h.version_minor < kTableVersionMinor) {
    return CorruptAt(9, "table file stamped version 0." + std::to_string(h.version_minor) +
                            ", before table files existed (0.2)");
  }
  if (h.kind == FileKind::kDatasetPart && h.version_minor < kPartVersionMinor) {
    return CorruptAt(9, "part manifest stamped version 0." + std::to_string(h.version_minor) +
                            ", before part manifests existed (0.3)");
  }
  if (in[11] != 0) return CorruptAt(11, "reserved header byte is not zero");
  return h;
}

void Footer::EncodeTo(Bytes* out) const {
  const size_t start = out->size();
  PutFixed64(out, index_offset);
  PutFixed64(out, index_length);
  PutFixed64(out, index_checksum);
  PutFixed32(out, Checksum32(ByteSpan(out->data() + start, 24)));
  PutFixed32(out, kFooterMagic);
}

Result<Footer> Footer::DecodeFrom(ByteSpan in, uint64_t file_size) {
  const uint64_t at = file_size - kFooterSize;
  if (in.size() != kFooterSize || file_size < kMinFileSize) {
    return CorruptAt(0, "file is " + std::to_string(file_size) + " bytes, too short for a pcr file");
  }
  if (LoadFixed32(in.data() + 28) != kFooterMagic) {
    return CorruptAt(at + 28, "bad footer magic (truncated or not a pcr file)");
  }
  const uint32_t stored = LoadFixed32(in.data() + 24);
  const uint32_t computed = Checksum32(in.first(24));
  if (stored != computed) {
    return CorruptAt(at, "footer checksum mismatch (stored " + std::to_string(stored) +
                             ", computed " + std::to_string(computed) + ")");
  }
  Footer f;
  f.index_offset = LoadFixed64(in.data());
  f.index_length = LoadFixed64(in.data() + 8);
  f.index_checksum = LoadFixed64(in.data() + 16);
  if (f.index_offset < kFileHeaderSize || f.index_offset > at || f.index_length != at - f.index_offset) {
    return CorruptAt(at, "index range [" + std::to_string(f.index_offset) + ", +" +
                             std::to_string(f.index_length) + ") does not end at the footer");
  }
  return f;
}

uint64_t StripeInfo::length() const {
  uint64_t n = 0;
  for (const StreamInfo& s : streams) n += s.length;
  return n;
}

std::vector<size_t> StripeInfo::TableStreamIndex(size_t feature_count) const {
  std::vector<size_t> where(feature_count * kRoleCount, SIZE_MAX);
  for (size_t k = 0; k < table_streams.size(); ++k) {
    where[table_streams[k].feature * kRoleCount + static_cast<size_t>(table_streams[k].role)] = k;
  }
  return where;
}

uint64_t StripeInfo::stream_offset(size_t s) const {
  uint64_t off = offset;
  for (size_t i = 0; i < s; ++i) off += streams[i].length;
  return off;
}

namespace {

std::string ChunkGroupName(uint64_t g, uint64_t group_count) {
  return g > group_count ? std::string("the segments stream") : "group " + std::to_string(g);
}

void EncodeTableStreams(const StripeInfo& stripe, bool encodings, Bytes* out) {
  for (const TableStream& t : stripe.table_streams) {
    PutVarint64(out, t.feature);
    PutFixed8(out, static_cast<uint8_t>(t.role));
    PutFixed8(out, static_cast<uint8_t>(t.codec));
    PutVarint64(out, t.raw_length);
    if (encodings) PutFixed8(out, static_cast<uint8_t>(t.encoding));
  }
}

}  // namespace

uint8_t ImageFileVersion(const TableSchema& fields, bool segments, bool encodings) {
  if (encodings) return kEncodingsVersionMinor;
  return fields.features.empty() && !segments ? 1 : kFieldsVersionMinor;
}

void FileIndex::EncodeTo(FileKind kind, uint8_t version_minor, Bytes* out) const {
  const bool fields = kind == FileKind::kImages && version_minor >= kFieldsVersionMinor;
  const bool encodings = version_minor >= kEncodingsVersionMinor;
  if (kind == FileKind::kImages) EncodeScanScript(script, out);
  if (kind == FileKind::kTable || fields) EncodeTableSchema(schema, out);
  PutVarint64(out, stripes.size());
  for (const StripeInfo& stripe : stripes) {
    PutVarint64(out, stripe.offset);
    PutVarint64(out, stripe.streams.size());
    for (const StreamInfo& s : stripe.streams) {
      PutVarint64(out, s.length);
      PutFixed64(out, s.checksum);
    }
    if (kind == FileKind::kTable) {
      PutVarint64(out, stripe.row_count);
      EncodeTableStreams(stripe, encodings, out);
      continue;
    }
    PutVarint64(out, stripe.image_count);
    for (const ChunkInfo& c : stripe.chunks) {
      PutVarint64(out, c.length);
      PutFixed32(out, c.checksum);
    }
    if (fields) EncodeTableStreams(stripe, encodings, out);
  }
}

Result<FileIndex> FileIndex::DecodeFrom(ByteSpan in, FileKind kind, uint8_t version_minor, uint64_t index_offset) {
  ByteCursor d(in);
  FileIndex index;
  auto corrupt = [&](const std::string& what) {
    return CorruptAt(index_offset + d.position(), "file index: " + what);
  };
  if (kind == FileKind::kImages) {
    if (!DecodeScanScript(&d, &index.script)) return corrupt("truncated scan script");
    Status valid = ValidateScanScript(index.script);
    if (!valid.ok()) return corrupt(valid.message());
  }
  const bool fields = kind == FileKind::kImages && version_minor >= kFieldsVersionMinor;
  const bool encodings = version_minor >= kEncodingsVersionMinor;
  const uint8_t max_type = MaxFeatureType(version_minor);
  if (kind == FileKind::kTable || fields) {
    std::string error;
    if (!DecodeTableSchema(&d, max_type, kind == FileKind::kTable, &index.schema, &error)) {
      return corrupt((fields ? "field schema: " : "") + error);
    }
  }
  uint64_t table_rows = 0;
  uint64_t stripe_count;
  // Every stripe takes at least two index bytes.
  if (!d.GetVarintAtMost(d.remaining() / 2, &stripe_count)) return corrupt("bad stripe count");
  index.stripes.resize(stripe_count);
  uint64_t expected_offset = kFileHeaderSize;
  const uint64_t group_count = static_cast<uint64_t>(index.script.group_count());
  for (uint64_t i = 0; i < stripe_count; ++i) {
    StripeInfo& stripe = index.stripes[i];
    uint64_t stream_count;
    if (!d.GetVarint64(&stripe.offset) || !d.GetVarintAtMost(d.remaining() / 9, &stream_count)) {
      return corrupt("truncated stripe " + std::to_string(i));
    }
    if (stripe.offset != expected_offset) {
      return corrupt("stripe " + std::to_string(i) + " starts at " + std::to_string(stripe.offset) +
                     ", expected " + std::to_string(expected_offset));
    }
    stripe.streams.resize(stream_count);
    for (StreamInfo& s : stripe.streams) {
      if (!d.GetVarint64(&s.length) || !d.GetFixed64(&s.checksum)) {
        return corrupt("truncated stream list of stripe " + std::to_string(i));
      }
      if (s.length > index_offset - expected_offset) {
        return corrupt("stream of stripe " + std::to_string(i) + " runs past the index");
      }
      expected_offset += s.length;
    }
    if (kind == FileKind::kTable) {
      Status s = d.GetVarintAtMost(kMaxStripeRows, &stripe.row_count)
                     ? DecodeTableStreams(&d, index.schema, stream_count, encodings, &stripe)
                     : Status::Corruption("bad row count");
      if (!s.ok()) return corrupt("stripe " + std::to_string(i) + ": " + s.message());
      table_rows += stripe.row_count;
      continue;
    }
    if (kind != FileKind::kImages) continue;
    // From 0.4: the sample metadata, the field streams, the scan groups and
    // the segments stream.
    const uint64_t fixed = group_count + (fields ? 2 : 1);
    if (fields ? stream_count < fixed : stream_count != fixed) {
      return corrupt("image stripe " + std::to_string(i) + " has " + std::to_string(stream_count) +
                     " streams, the scan script needs " + (fields ? "at least " : "") + std::to_string(fixed));
    }
    stripe.first_table_stream = 1;
    stripe.has_segments = fields;
    stripe.table_streams.resize(stream_count - fixed);
    const uint64_t chunk_groups = group_count + (fields ? 1 : 0);
    // Every chunk takes at least five index bytes.
    if (!d.GetVarintAtMost(d.remaining() / (5 * chunk_groups), &stripe.image_count)) {
      return corrupt("bad image count in stripe " + std::to_string(i));
    }
    stripe.chunks.resize(stripe.image_count * chunk_groups);
    for (uint64_t g = 1; g <= chunk_groups; ++g) {
      uint64_t sum = 0;
      for (uint64_t img = 0; img < stripe.image_count; ++img) {
        ChunkInfo& c = stripe.chunks[(g - 1) * stripe.image_count + img];
        if (!d.GetVarint64(&c.length) || !d.GetFixed32(&c.checksum)) {
          return corrupt("truncated chunk list of stripe " + std::to_string(i));
        }
        if (c.length > stripe.streams[stripe.group_stream(static_cast<int>(g))].length - sum) {
          return corrupt("chunks of " + ChunkGroupName(g, group_count) + " in stripe " + std::to_string(i) +
                         " overrun the stream");
        }
        sum += c.length;
      }
      if (sum != stripe.streams[stripe.group_stream(static_cast<int>(g))].length) {
        return corrupt("chunks of " + ChunkGroupName(g, group_count) + " in stripe " + std::to_string(i) +
                       " do not fill the stream");
      }
    }
    if (fields) {
      if (stripe.image_count > kMaxStripeRows) {
        return corrupt("image stripe " + std::to_string(i) + " holds more than 2^32 - 1 images");
      }
      stripe.row_count = stripe.image_count;
      Status s = DecodeTableStreams(&d, index.schema, stripe.table_streams.size(), encodings, &stripe);
      if (!s.ok()) return corrupt("stripe " + std::to_string(i) + " field streams: " + s.message());
      table_rows += stripe.row_count;
    }
  }
  if (expected_offset != index_offset) {
    return corrupt("stripes end at " + std::to_string(expected_offset) + ", index starts at " +
                   std::to_string(index_offset));
  }
  if ((kind == FileKind::kTable || fields) && table_rows != index.schema.row_count) {
    return corrupt("stripes hold " + std::to_string(table_rows) + " rows, the schema " +
                   std::to_string(index.schema.row_count));
  }
  if (kind == FileKind::kTable || fields) {
    Status counts = CheckSchemaCounts(index.schema, index.stripes);
    if (!counts.ok()) return corrupt(counts.message());
  }
  if (!d.done()) return corrupt(std::to_string(d.remaining()) + " trailing bytes");
  return index;
}

void EncodeSampleMetadata(const std::vector<SampleMetadata>& samples, Bytes* out) {
  for (const SampleMetadata& s : samples) {
    PutVarsint64(out, s.label);
    PutLengthPrefixed(out, s.key);
  }
}

Result<std::vector<SampleMetadata>> DecodeSampleMetadata(ByteSpan in, uint64_t count) {
  ByteCursor d(in);
  if (count > in.size() / 2) return Status::Corruption("sample metadata: image count exceeds stream");
  std::vector<SampleMetadata> samples(count);
  for (uint64_t i = 0; i < count; ++i) {
    if (!d.GetVarsint64(&samples[i].label) || !d.GetLengthPrefixed(kMaxKeyLength, &samples[i].key)) {
      return Status::Corruption("sample metadata: entry " + std::to_string(i) +
                                " truncated at stream offset " + std::to_string(d.position()));
    }
  }
  if (!d.done()) return Status::Corruption("sample metadata: trailing bytes");
  return samples;
}

void DatasetManifest::EncodeTo(Bytes* out) const {
  EncodeScanScript(script, out);
  PutVarint64(out, class_names.size());
  for (const std::string& c : class_names) PutLengthPrefixed(out, c);
  PutVarint64(out, files.size());
  for (const DatasetFileEntry& f : files) {
    PutLengthPrefixed(out, f.name);
    PutVarint64(out, f.size);
    PutVarint64(out, f.image_count);
    PutVarint64(out, f.stripe_count);
    PutFixed64(out, f.index_checksum);
  }
  if (!records) return;
  EncodeTableSchema(fields, out);
  for (const uint64_t n : record_sizes) PutVarint64(out, n);
}

Result<DatasetManifest> DatasetManifest::DecodeFrom(ByteSpan in, bool records) {
  ByteCursor d(in);
  DatasetManifest m;
  auto corrupt = [&](const std::string& what) {
    return Status::Corruption("dataset manifest at index offset " + std::to_string(d.position()) +
                              ": " + what);
  };
  if (!DecodeScanScript(&d, &m.script)) return corrupt("truncated scan script");
  Status valid = ValidateScanScript(m.script);
  if (!valid.ok()) return corrupt(valid.message());
  uint64_t n;
  if (!d.GetVarintAtMost(d.remaining(), &n)) return corrupt("bad class count");
  m.class_names.resize(n);
  for (std::string& c : m.class_names) {
    if (!d.GetLengthPrefixed(kMaxKeyLength, &c)) return corrupt("truncated class name");
  }
  if (!d.GetVarintAtMost(d.remaining() / 12, &n)) return corrupt("bad file count");
  m.files.resize(n);
  std::unordered_set<std::string> names;
  for (DatasetFileEntry& f : m.files) {
    if (!d.GetLengthPrefixed(kMaxFileNameLength, &f.name) || !d.GetVarint64(&f.size) ||
        !d.GetVarint64(&f.image_count) || !d.GetVarint64(&f.stripe_count) ||
        !d.GetFixed64(&f.index_checksum)) {
      return corrupt("truncated file entry");
    }
    if (!ValidFileName(f.name)) return corrupt("invalid file name '" + f.name + "'");
    if (!names.insert(f.name).second) return corrupt("file '" + f.name + "' is listed twice");
  }
  if (records) {
    m.records = true;
    std::string error;
    if (!DecodeTableSchema(&d, kMaxFeatureType05, false, &m.fields, &error)) return corrupt("field schema: " + error);
    uint64_t images = 0;
    for (const DatasetFileEntry& f : m.files) {
      if (f.image_count > std::numeric_limits<uint64_t>::max() - images) return corrupt("image count overflows");
      images += f.image_count;
      // Every record size takes at least one byte.
      if (f.stripe_count > d.remaining()) return corrupt("file '" + f.name + "': truncated record sizes");
      uint64_t sum = 0;
      for (uint64_t s = 0; s < f.stripe_count; ++s) {
        uint64_t n;
        if (!d.GetVarintAtMost(f.image_count - sum, &n)) {
          return corrupt("file '" + f.name + "': record " + std::to_string(s) +
                         "'s size is cut short or over its "
                         "entry's image count");
        }
        sum += n;
        m.record_sizes.push_back(n);
      }
      if (sum != f.image_count) {
        return corrupt("file '" + f.name + "': its records hold " + std::to_string(sum) + " images, its entry " +
                       std::to_string(f.image_count));
      }
    }
    if (m.fields.row_count != images) {
      return corrupt("the field schema counts " + std::to_string(m.fields.row_count) + " rows for " +
                     std::to_string(images) + " images");
    }
  }
  if (!d.done()) return corrupt("trailing bytes");
  return m;
}

void PartManifest::EncodeTo(Bytes* out) const {
  PutVarint64(out, shard_index);
  PutVarint64(out, shard_count);
  PutFixed64(out, plan_checksum);
  dataset.EncodeTo(out);
}

Result<PartManifest> PartManifest::DecodeFrom(ByteSpan in) {
  ByteCursor d(in);
  PartManifest p;
  if (!d.GetVarint64(&p.shard_index) || !d.GetVarint64(&p.shard_count) || !d.GetFixed64(&p.plan_checksum)) {
    return Status::Corruption("part manifest at index offset " + std::to_string(d.position()) +
                              ": truncated shard fields");
  }
  if (p.shard_count < 2 || p.shard_index >= p.shard_count) {
    return Status::Corruption("part manifest at index offset 0: shard " + std::to_string(p.shard_index) +
                              " of " + std::to_string(p.shard_count) + " is not a part");
  }
  const size_t start = d.position();
  auto m = DatasetManifest::DecodeFrom(in.subspan(start), false);
  if (!m.ok()) return m.status().WithPrefix("part manifest after " + std::to_string(start) + " shard bytes");
  p.dataset = std::move(m).value();
  return p;
}

Bytes EncodeIndexAndFooter(ByteSpan index, uint64_t index_offset) {
  Bytes out(index.begin(), index.end());
  Footer footer{index_offset, index.size(), Checksum64(index)};
  footer.EncodeTo(&out);
  return out;
}

void RefixIndexChecksum(Bytes* file) {
  if (file->size() < kMinFileSize) return;
  const size_t footer = file->size() - kFooterSize;
  const uint64_t index_offset = LoadFixed64(file->data() + footer);
  const uint64_t index_length = LoadFixed64(file->data() + footer + 8);
  if (index_offset > footer || index_length > footer - index_offset) return;
  StoreFixed64(file->data() + footer + 16, Checksum64(ByteSpan(*file).subspan(index_offset, index_length)));
  StoreFixed32(file->data() + footer + 24, Checksum32(ByteSpan(*file).subspan(footer, 24)));
}

Bytes RewriteIndex(ByteSpan file, const std::function<void(FileIndex*)>& edit) {
  Bytes out(file.begin(), file.end());
  if (file.size() < kMinFileSize) return out;
  auto header = FileHeader::DecodeFrom(file.first(kFileHeaderSize));
  auto footer = Footer::DecodeFrom(file.last(kFooterSize), file.size());
  if (!header.ok() || !footer.ok()) return out;
  auto index = FileIndex::DecodeFrom(file.subspan(footer->index_offset, footer->index_length), header->kind,
                                     header->version_minor, footer->index_offset);
  if (!index.ok()) return out;
  edit(&*index);
  Bytes index_bytes;
  index->EncodeTo(header->kind, header->version_minor, &index_bytes);
  out.resize(footer->index_offset);
  const Bytes tail = EncodeIndexAndFooter(index_bytes, footer->index_offset);
  out.insert(out.end(), tail.begin(), tail.end());
  return out;
}

Bytes RefixChecksums(ByteSpan in) {
  Bytes file(in.begin(), in.end());
  if (file.size() < kMinFileSize) return file;
  StoreFixed32(file.data() + 12, Checksum32(ByteSpan(file).first(12)));
  RefixIndexChecksum(&file);
  return RewriteIndex(file, [&](FileIndex* index) {
    for (StripeInfo& stripe : index->stripes) {
      for (size_t s = 0; s < stripe.streams.size(); ++s) {
        const ByteSpan stream = ByteSpan(file).subspan(stripe.stream_offset(s), stripe.streams[s].length);
        stripe.streams[s].checksum = Checksum64(stream);
        if (stripe.chunks.empty() || s < stripe.group_stream(1)) continue;
        const size_t group = s - stripe.group_stream(1);
        uint64_t at = 0;
        for (uint64_t i = 0; i < stripe.image_count; ++i) {
          ChunkInfo& chunk = stripe.chunks[group * stripe.image_count + i];
          chunk.checksum = Checksum32(stream.subspan(at, chunk.length));
          at += chunk.length;
        }
      }
    }
  });
}

}  // namespace pcr
