#include "writer/table_writer.h"

#include <cstring>
#include <unordered_map>

#include "format/checksum.h"

namespace pcr {

std::vector<uint32_t> StreamOrder(const std::vector<FeatureInfo>& features,
                                  const std::vector<std::string>& names) {
  std::unordered_map<std::string_view, uint32_t> by_name;
  for (uint32_t f = 0; f < features.size(); ++f) by_name.emplace(features[f].name, f);
  std::vector<uint32_t> order;
  std::vector<bool> placed(features.size(), false);
  for (const std::string& name : names) {
    const auto it = by_name.find(name);
    if (it == by_name.end() || placed[it->second]) continue;
    placed[it->second] = true;
    order.push_back(it->second);
  }
  for (uint32_t f = 0; f < features.size(); ++f) {
    if (!placed[f]) order.push_back(f);
  }
  return order;
}

Result<std::unique_ptr<TableFileWriter>> TableFileWriter::Create(const std::string& path,
                                                                 std::vector<FeatureInfo> features,
                                                                 const TableWriterOptions& options) {
  PCR_ASSIGN_OR_RETURN(auto file, AtomicFile::Create(path));
  Bytes header;
  FileHeader{.kind = FileKind::kTable, .version_minor = kTableVersionMinor}.EncodeTo(&header);
  PCR_RETURN_IF_ERROR(file->Append(header));
  return std::unique_ptr<TableFileWriter>(new TableFileWriter(std::move(file), std::move(features), options));
}

TableFileWriter::TableFileWriter(std::unique_ptr<AtomicFile> file, std::vector<FeatureInfo> features,
                                 const TableWriterOptions& options)
    : file_(std::move(file)), options_(options) {
  for (FeatureInfo& f : features) f.present_count = f.value_count = 0;
  order_ = StreamOrder(features, options.stream_order);
  streams_.resize(features.size());
  index_.schema.features = std::move(features);
}

void TableFileWriter::Present(size_t feature) {
  streams_[feature].rows.push_back(stripe_rows_);
  index_.schema.features[feature].present_count++;
}

void TableFileWriter::AddInt64(size_t feature, int64_t v) {
  Present(feature);
  index_.schema.features[feature].value_count++;
  PutFixed64(&streams_[feature].values, static_cast<uint64_t>(v));
  stripe_bytes_ += 12;
}

void TableFileWriter::AddFloat(size_t feature, double v) {
  Present(feature);
  index_.schema.features[feature].value_count++;
  Bytes& out = streams_[feature].values;
  if (index_.schema.features[feature].type == FeatureType::kFloat32) {
    const float f = static_cast<float>(v);
    out.resize(out.size() + 4);
    std::memcpy(out.data() + out.size() - 4, &f, 4);
    stripe_bytes_ += 8;
  } else {
    out.resize(out.size() + 8);
    std::memcpy(out.data() + out.size() - 8, &v, 8);
    stripe_bytes_ += 12;
  }
}

void TableFileWriter::AddString(size_t feature, std::string_view s) {
  Present(feature);
  index_.schema.features[feature].value_count += s.size();
  FeatureStreams& fs = streams_[feature];
  PutFixed32(&fs.lengths, static_cast<uint32_t>(s.size()));
  fs.values.insert(fs.values.end(), s.begin(), s.end());
  stripe_bytes_ += 8 + s.size();
}

void TableFileWriter::AddIdList(size_t feature, std::span<const int64_t> ids,
                                std::span<const double> scores) {
  Present(feature);
  const FeatureType type = index_.schema.features[feature].type;
  index_.schema.features[feature].value_count += ids.size();
  FeatureStreams& fs = streams_[feature];
  PutFixed32(&fs.lengths, static_cast<uint32_t>(ids.size()));
  const size_t at = fs.values.size();
  fs.values.resize(at + ids.size() * 8);
  if (!ids.empty()) std::memcpy(fs.values.data() + at, ids.data(), ids.size() * 8);
  stripe_bytes_ += 8 + ids.size() * 8;
  if (type == FeatureType::kScoredIdList64) {
    const size_t s = fs.scores.size();
    fs.scores.resize(s + scores.size() * 8);
    if (!scores.empty()) std::memcpy(fs.scores.data() + s, scores.data(), scores.size() * 8);
    stripe_bytes_ += scores.size() * 8;
  } else if (type == FeatureType::kScoredIdList32) {
    for (const double d : scores) {
      const float f = static_cast<float>(d);
      const size_t s = fs.scores.size();
      fs.scores.resize(s + 4);
      std::memcpy(fs.scores.data() + s, &f, 4);
    }
    stripe_bytes_ += scores.size() * 4;
  }
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
  stripe->streams.push_back({s.bytes.size(), checksum});
  stripe->table_streams.push_back({feature, role, s.codec, s.raw_length});
  return file_->Append(s.bytes);
}

Status TableFileWriter::WriteStripe() {
  if (stripe_rows_ == 0) return Status::OK();
  StripeInfo stripe{.offset = file_->size(), .row_count = stripe_rows_};
  for (const uint32_t f : order_) {
    for (const StreamRole role : RolesOf(index_.schema.features[f].type)) {
      const StoredStream s = CompressStream(streams_[f].Raw(role, stripe_rows_), options_.zstd_level);
      PCR_RETURN_IF_ERROR(AppendStream(s, f, role, Checksum64(s.bytes), &stripe));
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
      const StoredStream s{in.table_streams[k].codec, in.table_streams[k].raw_length, std::move(streams[k])};
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
  index_.EncodeTo(FileKind::kTable, &index);
  PCR_RETURN_IF_ERROR(file_->Append(EncodeIndexAndFooter(index, file_->size())));
  PCR_RETURN_IF_ERROR(file_->Commit());
  return index_.schema;
}

}  // namespace pcr
