#include "writer/file_writer.h"

#include <filesystem>
#include <utility>

#include "format/checksum.h"
#include "format/popularity.h"
#include "format/table_format.h"
#include "io/pcr_file.h"
#include "io/remote_path.h"

namespace pcr {

Result<std::unique_ptr<ImageFileWriter>> ImageFileWriter::Create(const std::string& path, ScanScript script,
                                                                 std::vector<FeatureInfo> fields,
                                                                 const FieldWriterOptions& options) {
  PCR_ASSIGN_OR_RETURN(auto file, AtomicFile::Create(path));
  auto writer = std::unique_ptr<ImageFileWriter>(
      new ImageFileWriter(std::move(file), std::move(script), std::move(fields), options));
  // Stamped 0.1 here; Finish stamps the files that need 0.4.
  Bytes header;
  FileHeader{.kind = FileKind::kImages}.EncodeTo(&header);
  PCR_RETURN_IF_ERROR(writer->file_->Append(header));
  return writer;
}

ImageFileWriter::ImageFileWriter(std::unique_ptr<AtomicFile> file, ScanScript script,
                                 std::vector<FeatureInfo> fields, const FieldWriterOptions& options)
    : file_(std::move(file)), options_(options) {
  for (FeatureInfo& f : fields) f.present_count = f.value_count = 0;
  index_.script = std::move(script);
  order_ = StreamOrder(fields, options.stream_order);
  streams_.resize(fields.size());
  index_.schema.features = std::move(fields);
}

Status ImageFileWriter::Append(ByteSpan stream, StripeInfo* stripe) {
  stripe->streams.push_back({stream.size(), Checksum64(stream)});
  return file_->Append(stream);
}

Status ImageFileWriter::AddRecord(const std::vector<SampleMetadata>& samples,
                                  const std::vector<TranscodedImage>& images, std::span<const FieldRow> rows) {
  const int groups = index_.script.group_count();
  StripeInfo stripe;
  stripe.offset = file_->size();
  stripe.image_count = images.size();
  stripe.chunks.resize(images.size() * (groups + 1));
  stripe.first_table_stream = 1;
  stripe.has_segments = true;

  Bytes stream;
  EncodeSampleMetadata(samples, &stream);
  PCR_RETURN_IF_ERROR(Append(stream, &stripe));
  if (!index_.schema.features.empty()) {
    stripe.row_count = images.size();
    if (images.size() > kMaxStripeRows) return Status::InvalidArgument("a record of fields holds at most 2^32 - 1 images");
    for (size_t r = 0; r < rows.size(); ++r) {
      const Status added = AppendFieldRow(index_.schema, rows[r], static_cast<uint32_t>(r), &streams_);
      if (!added.ok()) {
        for (FeatureStreams& fs : streams_) fs.Clear();
        return added.WithPrefix(samples[r].key);
      }
    }
    for (const uint32_t f : order_) {
      FeatureInfo& info = index_.schema.features[f];
      info.present_count += streams_[f].rows.size();
      info.value_count += IsListType(info.type) || RawValueBytes(info.type) == 1
                              ? streams_[f].values.size() / RawValueBytes(info.type)
                              : streams_[f].rows.size();
      const std::vector<StoredStream> stored =
          StoreFeatureStreams(info.type, streams_[f], images.size(), options_.encoding);
      for (size_t r = 0; r < stored.size(); ++r) {
        stripe.table_streams.push_back({f, RolesOf(info.type)[r], stored[r].codec, stored[r].raw_length, stored[r].encoding});
        any_encoded_ |= stored[r].encoding != StreamEncoding::kPlain;
        PCR_RETURN_IF_ERROR(Append(stored[r].bytes(), &stripe));
      }
      streams_[f].Clear();
    }
  }
  index_.schema.row_count += images.size();
  // The scan groups, then the segments kept apart (dropped again by Finish
  // when no image of the file has any).
  for (int g = 1; g <= groups + 1; ++g) {
    stream.clear();
    for (size_t i = 0; i < images.size(); ++i) {
      const Bytes& chunk = g <= groups ? images[i].chunks[g - 1] : images[i].segments;
      any_segments_ |= g > groups && !chunk.empty();
      stripe.chunks[(g - 1) * images.size() + i] = {chunk.size(), Checksum32(chunk)};
      PutBytes(&stream, chunk);
    }
    PCR_RETURN_IF_ERROR(Append(stream, &stripe));
  }
  index_.stripes.push_back(std::move(stripe));
  image_count_ += images.size();
  return Status::OK();
}

Result<DatasetFileEntry> ImageFileWriter::Finish() {
  const uint8_t version = ImageFileVersion(index_.schema, any_segments_, any_encoded_);
  if (version < kFieldsVersionMinor) {
    // Every segments stream is empty: the file has the 0.1 layout.
    for (StripeInfo& stripe : index_.stripes) {
      stripe.streams.pop_back();
      stripe.chunks.resize(stripe.chunks.size() - stripe.image_count);
      stripe.has_segments = false;
    }
  } else {
    Bytes header;
    FileHeader{.kind = FileKind::kImages, .version_minor = version}.EncodeTo(&header);
    PCR_RETURN_IF_ERROR(file_->WriteAt(0, header));
  }
  Bytes index;
  index_.EncodeTo(FileKind::kImages, version, &index);
  const Bytes tail = EncodeIndexAndFooter(index, file_->size());
  PCR_RETURN_IF_ERROR(file_->Append(tail));
  DatasetFileEntry entry{
      .name = std::filesystem::path(file_->path()).filename().string(),
      .size = file_->size(),
      .image_count = image_count_,
      .stripe_count = index_.stripes.size(),
      .index_checksum = Checksum64(index),
  };
  PCR_RETURN_IF_ERROR(file_->Commit());
  return entry;
}

namespace {

// Writes a file of kind `header.kind` without stripes whose index is `index`.
Status WriteIndexOnlyFile(const std::string& path, const FileHeader& header, ByteSpan index) {
  PCR_ASSIGN_OR_RETURN(auto file, AtomicFile::Create(path));
  Bytes bytes;
  header.EncodeTo(&bytes);
  const Bytes tail = EncodeIndexAndFooter(index, bytes.size());
  PutBytes(&bytes, tail);
  PCR_RETURN_IF_ERROR(file->Append(bytes));
  return file->Commit();
}

}  // namespace

namespace {

// Fills the 0.9 part of `manifest` from its files in `dir`, else in
// `files_dir`; leaves it out when a file is in neither.
Status NumberRecords(const std::filesystem::path& dir, const std::string& files_dir, IoEngine* given,
                     DatasetManifest* manifest) {
  std::vector<std::string> paths;
  std::error_code ec;
  for (const DatasetFileEntry& entry : manifest->files) {
    if (std::filesystem::exists(dir / entry.name, ec)) {
      paths.push_back((dir / entry.name).string());
    } else if (!files_dir.empty()) {
      paths.push_back(JoinRemotePath(files_dir, entry.name));
    } else {
      manifest->records = false;
      return Status::OK();
    }
  }
  std::unique_ptr<IoEngine> owned;
  if (given == nullptr) {
    PCR_ASSIGN_OR_RETURN(owned, MakeIoEngine({.kind = IoEngineKind::kPread}));
  }
  IoEngine* const engine = given != nullptr ? given : owned.get();
  manifest->records = true;
  manifest->record_sizes.clear();
  manifest->fields = {};
  for (size_t first = 0; first < manifest->files.size(); first += PcrFile::kOpenBatch) {
    const size_t end = std::min(manifest->files.size(), first + PcrFile::kOpenBatch);
    std::vector<std::unique_ptr<RandomAccessFile>> rafs;
    for (size_t f = first; f < end; ++f) {
      // A local file's size is its own, checked below; an object's the entry's.
      PCR_ASSIGN_OR_RETURN(auto raf, IsRemotePath(paths[f]) ? engine->OpenKnownSize(paths[f], manifest->files[f].size)
                                                            : engine->Open(paths[f]));
      rafs.push_back(std::move(raf));
    }
    PCR_ASSIGN_OR_RETURN(auto files, PcrFile::OpenAll(std::move(rafs), engine));
    for (size_t f = first; f < end; ++f) {
      const PcrFile& file = *files[f - first];
      const DatasetFileEntry& entry = manifest->files[f];
      uint64_t images = 0;
      for (const StripeInfo& stripe : file.index().stripes) images += stripe.image_count;
      if (file.header().kind != FileKind::kImages || file.size() != entry.size ||
          file.footer().index_checksum != entry.index_checksum || file.index().stripes.size() != entry.stripe_count ||
          images != entry.image_count || !(file.index().script == manifest->script)) {
        return Status::IOError(file.path() +
                               ": changed while its dataset was written: it differs from its manifest entry");
      }
      for (const StripeInfo& stripe : file.index().stripes) manifest->record_sizes.push_back(stripe.image_count);
      const TableSchema& s = file.index().schema;
      TableSchema& joined = manifest->fields;
      if (f == 0) {
        joined.features = s.features;
      } else if (!SameFeatures(s, joined)) {
        return Status::Corruption(file.path() + ": its fields differ from those of the dataset's first file");
      } else {
        AddFeatureCounts(s, &joined);
      }
      joined.row_count += entry.image_count;
    }
  }
  return Status::OK();
}

}  // namespace

Status WriteDatasetManifest(const std::string& path, const DatasetManifest& given, const std::string& files_dir,
                            IoEngine* engine) {
  DatasetManifest manifest = given;
  PCR_RETURN_IF_ERROR(NumberRecords(std::filesystem::path(path).parent_path(), files_dir, engine, &manifest));
  Bytes index;
  manifest.EncodeTo(&index);
  const uint8_t stamp = manifest.records ? kRecordsVersionMinor : 1;
  return WriteIndexOnlyFile(path, {.kind = FileKind::kDataset, .version_minor = stamp}, index);
}

Status WritePartManifest(const std::string& path, const PartManifest& part) {
  Bytes index;
  part.EncodeTo(&index);
  return WriteIndexOnlyFile(path, {.kind = FileKind::kDatasetPart, .version_minor = kPiecesVersionMinor}, index);
}

}  // namespace pcr
