#include "writer/table_writer.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "format/checksum.h"
#include "format/popularity.h"

namespace pcr {

Result<std::unique_ptr<TableFileWriter>> TableFileWriter::Create(const std::string& path,
                                                                 std::vector<FeatureInfo> features,
                                                                 const TableWriterOptions& options) {
  EncodingChoice choice{.zstd_level = options.zstd_level};
  if (!ParseEncodingChoice(options.stream_encoding, &choice)) {
    return Status::InvalidArgument("unknown stream encoding '" + options.stream_encoding + "'");
  }
  PCR_ASSIGN_OR_RETURN(auto file, AtomicFile::Create(path));
  uint8_t version = kTableVersionMinor;
  for (const FeatureInfo& f : features) version = std::max(version, FeatureTypeVersion(f.type));
  if (choice.force != StreamEncoding::kPlain) version = std::max(version, kEncodingsVersionMinor);
  Bytes header;
  FileHeader{.kind = FileKind::kTable, .version_minor = version}.EncodeTo(&header);
  PCR_RETURN_IF_ERROR(file->Append(header));
  return std::unique_ptr<TableFileWriter>(
      new TableFileWriter(std::move(file), std::move(features), options, choice, version));
}

TableFileWriter::TableFileWriter(std::unique_ptr<AtomicFile> file, std::vector<FeatureInfo> features,
                                 const TableWriterOptions& options, const EncodingChoice& choice,
                                 uint8_t version_minor)
    : file_(std::move(file)), options_(options), choice_(choice), version_minor_(version_minor) {
  for (FeatureInfo& f : features) f.present_count = f.value_count = 0;
  order_ = StreamOrder(features, options.stream_order);
  streams_.resize(features.size());
  index_.schema.features = std::move(features);
}

void TableFileWriter::AddInt64(size_t feature, int64_t v) {
  Counted(feature, 1);
  stripe_bytes_ += 4 + streams_[feature].AddInt64(stripe_rows_, v);
}

void TableFileWriter::AddBool(size_t feature, bool v) {
  Counted(feature, 1);
  stripe_bytes_ += 4 + streams_[feature].AddBool(stripe_rows_, v);
}

void TableFileWriter::AddFloat(size_t feature, double v) {
  Counted(feature, 1);
  stripe_bytes_ += 4 + streams_[feature].AddFloat(index_.schema.features[feature].type, stripe_rows_, v);
}

void TableFileWriter::AddString(size_t feature, std::string_view s) {
  Counted(feature, s.size());
  stripe_bytes_ += 4 + streams_[feature].AddString(stripe_rows_, s);
}

void TableFileWriter::AddIdList(size_t feature, std::span<const int64_t> ids,
                                std::span<const double> scores) {
  Counted(feature, ids.size());
  stripe_bytes_ += 4 + streams_[feature].AddIdList(index_.schema.features[feature].type, stripe_rows_, ids, scores);
}

void TableFileWriter::AddFloatList(size_t feature, std::span<const double> values) {
  Counted(feature, values.size());
  stripe_bytes_ += 4 + streams_[feature].AddFloatList(index_.schema.features[feature].type, stripe_rows_, values);
}

void TableFileWriter::Counted(size_t feature, uint64_t values) {
  index_.schema.features[feature].present_count++;
  index_.schema.features[feature].value_count += values;
}

Status TableFileWriter::EndRow() {
  ++stripe_rows_;
  ++index_.schema.row_count;
  if (stripe_rows_ == kMaxStripeRows || stripe_bytes_ >= options_.stripe_bytes ||
      (options_.rows_per_stripe != 0 && stripe_rows_ >= options_.rows_per_stripe)) {
    return WriteStripe();
  }
  return Status::OK();
}

Status TableFileWriter::AppendStream(const StoredStream& s, uint32_t feature, StreamRole role,
                                     uint64_t checksum, StripeInfo* stripe) {
  stripe->streams.push_back({s.bytes().size(), checksum});
  stripe->table_streams.push_back({feature, role, s.codec, s.raw_length, s.encoding});
  return file_->Append(s.bytes());
}

Status TableFileWriter::WriteStripe() {
  if (stripe_rows_ == 0) return Status::OK();
  StripeInfo stripe{.offset = file_->size(), .row_count = stripe_rows_};
  for (const uint32_t f : order_) {
    const FeatureType type = index_.schema.features[f].type;
    const std::vector<StoredStream> stored = StoreFeatureStreams(type, streams_[f], stripe_rows_, choice_);
    for (size_t r = 0; r < stored.size(); ++r) {
      PCR_RETURN_IF_ERROR(AppendStream(stored[r], f, RolesOf(type)[r], Checksum64(stored[r].bytes()), &stripe));
    }
    streams_[f].Clear();
  }
  index_.stripes.push_back(std::move(stripe));
  stripe_rows_ = 0;
  stripe_bytes_ = 0;
  return Status::OK();
}

Status TableFileWriter::AddStoredStripe(const StripeInfo& in, std::vector<Bytes> streams) {
  const std::vector<size_t> where = in.TableStreamIndex(index_.schema.features.size());
  StripeInfo stripe{.offset = file_->size(), .row_count = in.row_count};
  for (const uint32_t f : order_) {
    for (const StreamRole role : RolesOf(index_.schema.features[f].type)) {
      const size_t k = where[f * kRoleCount + static_cast<size_t>(role)];
      if (k == SIZE_MAX) {
        return Status::InvalidArgument("stripe lacks the " + std::string(StreamRoleName(role)) +
                                       " stream of feature '" + index_.schema.features[f].name + "'");
      }
      const TableStream& t = in.table_streams[k];
      if (t.encoding != StreamEncoding::kPlain && version_minor_ < kEncodingsVersionMinor) {
        return Status::InvalidArgument("stripe holds encoded streams, the file is stamped 0." +
                                       std::to_string(version_minor_));
      }
      const StoredStream s{t.codec, t.raw_length, t.encoding, std::move(streams[k])};
      PCR_RETURN_IF_ERROR(AppendStream(s, f, role, in.streams[k].checksum, &stripe));
    }
  }
  index_.stripes.push_back(std::move(stripe));
  index_.schema.row_count += in.row_count;
  return Status::OK();
}

void TableFileWriter::SetFeatureCounts(const std::vector<FeatureInfo>& features) {
  for (size_t f = 0; f < features.size() && f < index_.schema.features.size(); ++f) {
    index_.schema.features[f].present_count = features[f].present_count;
    index_.schema.features[f].value_count = features[f].value_count;
  }
}

Result<TableSchema> TableFileWriter::Finish() {
  PCR_RETURN_IF_ERROR(WriteStripe());
  Bytes index;
  index_.EncodeTo(FileKind::kTable, version_minor_, &index);
  PCR_RETURN_IF_ERROR(file_->Append(EncodeIndexAndFooter(index, file_->size())));
  PCR_RETURN_IF_ERROR(file_->Commit());
  return index_.schema;
}

}  // namespace pcr
