#include "reader/image_dataset_rep.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <unordered_map>

#include "format/checksum.h"
#include "format/segments.h"
#include "format/table_format.h"
#include "format/table_stripe.h"
#include "io/location.h"
#include "io/remote_path.h"

namespace pcr {

namespace fs = std::filesystem;

namespace {

// Cache keys: file f's index, record r's sample metadata.
uint64_t FileKey(size_t file) { return uint64_t{file} << 1; }
uint64_t SamplesKey(uint64_t record) { return record << 1 | 1; }

uint64_t SamplesBytes(const std::vector<SampleMetadata>& samples) {
  uint64_t n = sizeof(samples) + samples.size() * sizeof(SampleMetadata);
  for (const SampleMetadata& s : samples) n += s.key.capacity();
  return n;
}

// The manifest at `path` read whole (remotely one GET), then checked. Remote bytes
// that fail the checks are read again the usual way, which tells damage on
// the way from damage stored.
Result<std::unique_ptr<PcrFile>> OpenManifest(const std::string& path, IoEngine* engine) {
  PCR_ASSIGN_OR_RETURN(Bytes bytes, engine->ReadWhole(path));
  auto file = PcrFile::Open(IoEngine::OpenMemory(path, std::move(bytes)), engine);
  if (file.ok() || !IsRemotePath(path) || file.status().code() != StatusCode::kCorruption) return file;
  return PcrFile::Open(path, engine);
}

}  // namespace

ImageDataset::ImageDataset(std::shared_ptr<const Rep> rep) : rep_(std::move(rep)) {}
ImageDataset::~ImageDataset() = default;

Result<std::unique_ptr<ImageDataset>> ImageDataset::Open(const std::string& path,
                                                         const ImageReaderOptions& options) {
  return Rep::Open(path, options, nullptr);
}

Result<DatasetCounts> ImageDataset::Count(const std::string& path, const ImageReaderOptions& options) {
  PCR_ASSIGN_OR_RETURN(auto ds, Rep::Open(path, options, nullptr));
  return ds->counts();
}

Result<DatasetCounts> ImageDataset::counts() const { return rep_->counts(); }
uint64_t ImageDataset::num_images() const { return rep_->num_images; }
uint64_t ImageDataset::num_records() const { return rep_->records.size(); }
int ImageDataset::num_scan_groups() const { return rep_->script.group_count(); }
const ScanScript& ImageDataset::scan_script() const { return rep_->script; }
const std::vector<std::string>& ImageDataset::class_names() const { return rep_->class_names; }
std::string ImageDataset::content_id() const {
  Bytes encoded;
  for (const Rep::FileSlot& file : rep_->files) {
    PutVarint64(&encoded, file.entry.size);
    PutFixed64(&encoded, file.entry.index_checksum);
  }
  for (const std::string& name : rep_->class_names) PutLengthPrefixed(&encoded, name);
  return ContentId(encoded);
}
Result<SampleMetadata> ImageDataset::sample(uint64_t image) const {
  PCR_RETURN_IF_ERROR(rep_->CheckImage(image));
  const auto [record, row] = rep_->Locate(image);
  std::vector<std::shared_ptr<const std::vector<SampleMetadata>>> samples;
  PCR_RETURN_IF_ERROR(rep_->Samples({&record, 1}, &samples));
  return (*samples[0])[row];
}
const TableSchema& ImageDataset::field_schema() const { return rep_->fields; }
Result<std::pair<uint64_t, uint64_t>> ImageDataset::LocateImage(uint64_t image) const {
  PCR_RETURN_IF_ERROR(rep_->CheckImage(image));
  return rep_->Locate(image);
}
Status ImageDataset::CheckSelection(const RecordSelection& selection) const { return rep_->CheckSelection(selection); }
Result<uint64_t> ImageDataset::SelectedBytes(uint64_t record, const RecordSelection& selection) const {
  PCR_RETURN_IF_ERROR(rep_->CheckRecord(record));
  PCR_RETURN_IF_ERROR(rep_->CheckSelection(selection));
  RecordSelection resolved = selection;
  resolved.fidelity = ScanGroups(selection.fidelity);
  return rep_->SelectedBytes(record, resolved);
}

Result<std::vector<uint32_t>> ImageDataset::ResolveFields(const std::vector<std::string>& names) const {
  std::vector<uint32_t> out;
  for (const std::string& name : names) {
    const auto& features = rep_->fields.features;
    const auto it = std::find_if(features.begin(), features.end(), [&](const FeatureInfo& f) { return f.name == name; });
    if (it == features.end()) {
      std::string known;
      for (const FeatureInfo& f : features) known += (known.empty() ? "" : ", ") + f.name;
      return Status::InvalidArgument(rep_->path + ": no field '" + name + "' (fields: " +
                                     (known.empty() ? "none" : known) + ")");
    }
    out.push_back(static_cast<uint32_t>(it - features.begin()));
  }
  return out;
}
Result<std::vector<uint64_t>> ImageDataset::StreamBytes() const { return rep_->StreamBytes(); }
Result<uint64_t> ImageDataset::RecordBytes(uint64_t record, int fidelity) const {
  PCR_RETURN_IF_ERROR(rep_->CheckRecord(record));
  PCR_RETURN_IF_ERROR(rep_->CheckSelection({.fidelity = fidelity}));
  return rep_->RecordBytes(record, ScanGroups(fidelity));
}
int ImageDataset::ScanGroups(int fidelity) const { return rep_->ScanGroups(fidelity); }
Status ImageDataset::CheckFidelity(int fidelity) const { return rep_->CheckFidelity(fidelity); }
uint64_t ImageDataset::bytes_requested() const { return rep_->bytes_requested.load(); }
IoCounters ImageDataset::io_counters() const { return rep_->engine->counters(); }

Result<DatasetCounts> ImageDataset::Rep::counts() const {
  DatasetCounts c{
      .records = records.size(), .files = files.size(), .script = script, .class_names = class_names, .fields = fields};
  c.images = num_images;
  c.stream_bytes.resize(script.group_count() + 1);
  c.field_bytes.resize(fields.features.size());
  PCR_RETURN_IF_ERROR(ForEachFile([&](size_t, const PcrFile& file) {
    for (const StripeInfo& stripe : file.index().stripes) {
      c.stream_bytes[0] += stripe.streams[0].length;
      for (int g = 1; g <= script.group_count(); ++g) {
        c.stream_bytes[g] += stripe.streams[stripe.group_stream(g)].length;
      }
      if (stripe.has_segments) c.segment_bytes += stripe.streams[stripe.group_stream(script.group_count() + 1)].length;
      for (size_t k = 0; k < stripe.table_streams.size(); ++k) {
        c.field_bytes[stripe.table_streams[k].feature] += stripe.streams[stripe.first_table_stream + k].length;
      }
    }
    return Status::OK();
  }));
  for (const FileSlot& f : files) c.file_bytes += f.entry.size;
  return c;
}

Result<std::vector<uint64_t>> ImageDataset::Rep::StreamBytes() const {
  PCR_ASSIGN_OR_RETURN(DatasetCounts c, counts());
  return std::move(c.stream_bytes);
}

std::unique_ptr<ImageDataset> ImageDataset::Rep::Start(const std::string& path, const ImageReaderOptions& options,
                                                       IoEngine* engine, std::unique_ptr<IoEngine> owned, Rep** rep) {
  auto inside = std::make_unique<Rep>();
  *rep = inside.get();
  std::unique_ptr<ImageDataset> dataset(new ImageDataset(std::move(inside)));
  (*rep)->path = path;
  (*rep)->engine = engine;
  (*rep)->owned_engine = std::move(owned);
  (*rep)->cache = std::make_unique<LoadCache>(options.index_cache_bytes);
  return dataset;
}

Result<std::unique_ptr<ImageDataset>> ImageDataset::Rep::FromFile(std::unique_ptr<PcrFile> file,
                                                                  const ImageReaderOptions& options, IoEngine* engine,
                                                                  std::unique_ptr<IoEngine> owned) {
  const std::string& path = file->path();
  if (file->header().kind == FileKind::kTable) {
    return Status::InvalidArgument(path + ": a table, not an image dataset: open it as a table (pcr::Table, "
                                   "pcr.Table in Python)");
  }
  if (file->header().kind == FileKind::kDataset || file->header().kind == FileKind::kDatasetPart) {
    return Status::InvalidArgument(path + ": a dataset's manifest: open the directory that holds it");
  }
  if (file->header().kind != FileKind::kImages) {
    return Status::InvalidArgument(path + ": not an image file (kind " +
                                   std::to_string(static_cast<int>(file->header().kind)) + ")");
  }
  Rep* ds = nullptr;
  std::unique_ptr<ImageDataset> dataset = Start(path, options, engine, std::move(owned), &ds);
  const FileIndex& index = file->index();
  ds->script = index.script;
  ds->fields = index.schema;
  ds->fields.row_count = 0;
  FileSlot slot{
      .path = path,
      .entry = {
          .size = file->size(), .stripe_count = index.stripes.size(), .index_checksum = file->footer().index_checksum}};
  for (size_t s = 0; s < index.stripes.size(); ++s) {
    ds->records.push_back({0, s, ds->num_images, index.stripes[s].image_count});
    ds->num_images += index.stripes[s].image_count;
  }
  slot.entry.image_count = ds->num_images;
  ds->fields.row_count = ds->num_images;
  ds->files.push_back(std::move(slot));
  ds->numbered = true;
  ds->files_loaded.fetch_add(1);
  ds->single = std::move(file);
  return dataset;
}

Result<std::unique_ptr<ImageDataset>> ImageDataset::Rep::Open(const std::string& path,
                                                              const ImageReaderOptions& options, IoEngine* engine) {
  std::unique_ptr<IoEngine> owned;
  if (engine == nullptr) {
    PCR_ASSIGN_OR_RETURN(owned, MakeIoEngine(options.io));
    engine = owned.get();
  }
  PCR_ASSIGN_OR_RETURN(const Location where, pcr::Locate(path));
  if (!where.directory) {
    PCR_ASSIGN_OR_RETURN(auto file, PcrFile::Open(path, engine));
    return FromFile(std::move(file), options, engine, std::move(owned));
  }
  Rep* ds = nullptr;
  std::unique_ptr<ImageDataset> dataset = Start(path, options, engine, std::move(owned), &ds);
  const bool remote = where.remote;
  const std::string manifest_path = where.Join(kDatasetManifestName);
  if (!where.dataset_manifest && !remote) {
    if (where.part_manifest) {
      return Status::InvalidArgument(path + ": one part of a sharded conversion (" + kPartManifestName +
                                     "); join the parts with pcr-convert merge");
    }
    if (const Result<std::string> table = where.TableFile(); table.ok()) {
      const auto file = PcrFile::Open(*table, ds->engine);
      if (file.ok() && (*file)->header().kind == FileKind::kTable) {
        return Status::InvalidArgument(path + ": holds the table " + fs::path(*table).filename().string() +
                                       ", not an image dataset: open it as a table (pcr::Table, pcr.Table in "
                                       "Python)");
      }
    }
    return Status::NotFound(path + ": not a pcr dataset: no " + std::string(kDatasetManifestName) +
                            " (or its conversion did not finish)");
  }
  auto opened = OpenManifest(manifest_path, ds->engine);
  if (!opened.ok() && remote && opened.status().code() == StatusCode::kNotFound) {
    return Status::NotFound(path + ": not a pcr dataset: no " + std::string(kDatasetManifestName) + " (" +
                            opened.status().message() + ")");
  }
  PCR_RETURN_IF_ERROR(opened.status());
  const std::unique_ptr<PcrFile> mfile = std::move(opened).value();
  if (mfile->header().kind != FileKind::kDataset) {
    return Status::Corruption(manifest_path + ": not a dataset manifest");
  }
  const DatasetManifest& m = mfile->manifest();
  ds->script = m.script;
  ds->class_names = m.class_names;
  ds->manifest_path = manifest_path;
  ds->remote = remote;
  for (const DatasetFileEntry& entry : m.files) {
    ds->files.push_back({.path = where.Join(entry.name), .entry = entry, .first_record = ds->records.size()});
    for (uint64_t s = 0; s < entry.stripe_count && m.records; ++s) {
      const uint64_t n = m.record_sizes[ds->records.size()];
      ds->records.push_back({ds->files.size() - 1, s, ds->num_images, n});
      ds->num_images += n;
    }
    if (!m.records) ds->num_images += entry.image_count;
  }
  if (m.records) {
    ds->fields = m.fields;
    ds->numbered = true;
    return dataset;
  }
  // Before 0.9 the manifest numbers no record and has no fields: every
  // file's index gives them, so every file is opened now.
  ds->num_images = 0;
  PCR_RETURN_IF_ERROR(ds->ForEachFile([&](size_t f, const PcrFile& file) {
    const FileIndex& index = file.index();
    ds->files[f].first_record = ds->records.size();
    for (size_t s = 0; s < index.stripes.size(); ++s) {
      ds->records.push_back({f, s, ds->num_images, index.stripes[s].image_count});
      ds->num_images += index.stripes[s].image_count;
    }
    const TableSchema& s = index.schema;
    if (f == 0) {
      ds->fields = s;
      ds->fields.row_count = ds->files[0].entry.image_count;
      return Status::OK();
    }
    if (!SameFeatures(s, ds->fields)) {
      return Status::Corruption(file.path() + ": its fields differ from those of " + ds->files[0].path);
    }
    ds->fields.row_count += ds->files[f].entry.image_count;
    AddFeatureCounts(s, &ds->fields);
    return Status::OK();
  }));
  ds->numbered = true;
  return dataset;
}

Status ImageDataset::Rep::CheckFile(size_t f, const PcrFile& file) const {
  const DatasetFileEntry& entry = files[f].entry;
  auto mismatch = [&](const std::string& what) {
    return Status::Corruption((manifest_path.empty() ? path : manifest_path) + ": " + entry.name + ": " + what +
                              " differs from the manifest");
  };
  if (file.header().kind != FileKind::kImages) return mismatch("file kind");
  if (file.size() != entry.size) return mismatch("size " + std::to_string(file.size()));
  if (file.footer().index_checksum != entry.index_checksum) return mismatch("index checksum");
  const FileIndex& index = file.index();
  if (index.stripes.size() != entry.stripe_count) return mismatch("record count");
  if (!(index.script == script)) return mismatch("scan script");
  uint64_t images = 0;
  for (const StripeInfo& stripe : index.stripes) images += stripe.image_count;
  if (images != entry.image_count) return mismatch("image count");
  if (!numbered) return Status::OK();
  for (size_t s = 0; s < index.stripes.size(); ++s) {
    if (records[files[f].first_record + s].image_count != index.stripes[s].image_count) {
      return mismatch("image count of record " + std::to_string(s));
    }
  }
  if (!SameFeatures(index.schema, fields)) return mismatch("field schema (names, types or order)");
  return Status::OK();
}

Status ImageDataset::Rep::Files(std::span<const size_t> wanted,
                                std::vector<std::shared_ptr<const PcrFile>>* out) const {
  if (single != nullptr) {
    out->assign(wanted.size(), single);
    return Status::OK();
  }
  std::vector<uint64_t> keys;
  for (const size_t f : wanted) keys.push_back(FileKey(f));
  out->clear();
  const std::vector<uint64_t> missing = cache->FindAll(keys, out);
  if (missing.empty()) return Status::OK();
  const auto locks = cache->LockLoads(missing);
  // What another thread did not load while this one waited.
  std::vector<size_t> load;
  for (const uint64_t key : cache->FindAll(keys, out)) load.push_back(key >> 1);
  for (size_t first = 0; first < load.size(); first += PcrFile::kOpenBatch) {
    const size_t end = std::min(load.size(), first + PcrFile::kOpenBatch);
    std::vector<std::unique_ptr<RandomAccessFile>> rafs;
    for (size_t j = first; j < end; ++j) {
      const FileSlot& slot = files[load[j]];
      // Remote files at the manifest's sizes: no request of their own to open them.
      PCR_ASSIGN_OR_RETURN(auto raf,
                           remote ? engine->OpenKnownSize(slot.path, slot.entry.size) : engine->Open(slot.path));
      rafs.push_back(std::move(raf));
    }
    PCR_ASSIGN_OR_RETURN(auto opened, PcrFile::OpenAll(std::move(rafs), engine));
    for (size_t j = first; j < end; ++j) {
      std::shared_ptr<const PcrFile> file = std::move(opened[j - first]);
      PCR_RETURN_IF_ERROR(CheckFile(load[j], *file));
      files_loaded.fetch_add(1, std::memory_order_relaxed);
      cache->Insert(FileKey(load[j]), file, file->MemoryBytes());
      for (size_t i = 0; i < wanted.size(); ++i) {
        if (wanted[i] == load[j]) (*out)[i] = file;
      }
    }
  }
  return Status::OK();
}

Result<std::shared_ptr<const PcrFile>> ImageDataset::Rep::File(size_t file) const {
  std::vector<std::shared_ptr<const PcrFile>> out;
  PCR_RETURN_IF_ERROR(Files({&file, 1}, &out));
  return std::move(out[0]);
}

Status ImageDataset::Rep::ForEachFile(const std::function<Status(size_t, const PcrFile&)>& visit) const {
  constexpr size_t kBatch = PcrFile::kOpenBatch;  // two round trips each
  std::vector<size_t> batch;
  std::vector<std::shared_ptr<const PcrFile>> opened;
  for (size_t first = 0; first < files.size(); first += kBatch) {
    batch.clear();
    for (size_t f = first; f < std::min(files.size(), first + kBatch); ++f) batch.push_back(f);
    PCR_RETURN_IF_ERROR(Files(batch, &opened));
    for (size_t i = 0; i < batch.size(); ++i) PCR_RETURN_IF_ERROR(visit(batch[i], *opened[i]));
  }
  return Status::OK();
}

Result<std::vector<SampleMetadata>> ImageDataset::Rep::DecodeSamples(uint64_t record, const PcrFile& file,
                                                                     ByteSpan stream) const {
  const RecordLocation& loc = records[record];
  auto where = [&] {
    return file.path() + ": stripe " + std::to_string(loc.stripe) + " at offset " +
           std::to_string(file.index().stripes[loc.stripe].offset);
  };
  auto decoded = DecodeSampleMetadata(stream, loc.image_count);
  if (!decoded.ok()) return decoded.status().WithPrefix(where());
  for (uint64_t i = 0; i < decoded->size(); ++i) {
    const int64_t label = (*decoded)[i].label;
    // A dataset's labels name its classes; a single file has no class list.
    if (!class_names.empty() && (label < -1 || label >= static_cast<int64_t>(class_names.size()))) {
      return Status::Corruption(where() + " image " + std::to_string(i) + ": label " + std::to_string(label) +
                                " names no class (the manifest lists " + std::to_string(class_names.size()) + ")");
    }
  }
  return decoded;
}

Status ImageDataset::Rep::Samples(std::span<const uint64_t> wanted,
                                  std::vector<std::shared_ptr<const std::vector<SampleMetadata>>>* out) const {
  using Samples = std::vector<SampleMetadata>;
  std::vector<uint64_t> keys;
  for (const uint64_t r : wanted) keys.push_back(SamplesKey(r));
  out->clear();
  const std::vector<uint64_t> missing = cache->FindAll(keys, out);
  if (missing.empty()) return Status::OK();
  // The files first: their loads take locks of their own.
  std::vector<size_t> file_of;
  for (const uint64_t key : missing) file_of.push_back(records[key >> 1].file);
  std::vector<std::shared_ptr<const PcrFile>> pinned;
  PCR_RETURN_IF_ERROR(Files(file_of, &pinned));
  const auto locks = cache->LockLoads(missing);
  std::vector<uint64_t> load;  // what another thread did not load while this one waited
  for (const uint64_t key : cache->FindAll(keys, out)) load.push_back(key >> 1);
  if (load.empty()) return Status::OK();
  std::unordered_map<uint64_t, const PcrFile*> file_of_key;
  for (size_t m = 0; m < missing.size(); ++m) file_of_key.emplace(missing[m], pinned[m].get());
  std::vector<ReadRange> ranges;
  for (size_t j = 0; j < load.size(); ++j) {
    ranges.push_back(StreamRange(*file_of_key.at(SamplesKey(load[j])), records[load[j]].stripe, 0, j));
  }
  ReadBatch streams;
  PCR_RETURN_IF_ERROR(ExecuteReads(*engine, ranges, {}, &streams));
  std::unordered_map<uint64_t, std::shared_ptr<const Samples>> loaded;
  for (size_t j = 0; j < load.size(); ++j) {
    PCR_ASSIGN_OR_RETURN(Samples decoded, DecodeSamples(load[j], *file_of_key.at(SamplesKey(load[j])), streams[j]));
    const uint64_t bytes = SamplesBytes(decoded);
    auto samples = std::make_shared<const Samples>(std::move(decoded));
    cache->Insert(SamplesKey(load[j]), samples, bytes);
    loaded.emplace(load[j], std::move(samples));
  }
  for (size_t i = 0; i < wanted.size(); ++i) {
    if ((*out)[i] == nullptr) (*out)[i] = loaded.at(wanted[i]);
  }
  return Status::OK();
}

Result<uint64_t> ImageDataset::Rep::RecordBytes(uint64_t record, int fidelity) const {
  return SelectedBytes(record, {.fidelity = fidelity});
}

Status ImageDataset::Rep::CheckRecord(uint64_t record) const {
  if (record >= records.size()) {
    return Status::InvalidArgument(path + ": record " + std::to_string(record) + " out of range (" +
                                   std::to_string(records.size()) + " records)");
  }
  return Status::OK();
}

Status ImageDataset::Rep::CheckImage(uint64_t image) const {
  if (image >= num_images) {
    return Status::InvalidArgument(path + ": image " + std::to_string(image) + " out of range (" +
                                   std::to_string(num_images) + " images)");
  }
  return Status::OK();
}

Status ImageDataset::Rep::CheckSelection(const RecordSelection& selection) const {
  if (selection.fidelity != kFullFidelity && (selection.fidelity < 0 || selection.fidelity > script.group_count())) {
    return Status::InvalidArgument("fidelity must be 1.." + std::to_string(script.group_count()) +
                                   ", full (kFullFidelity) or 0 (kFieldsOnly), not " +
                                   std::to_string(selection.fidelity));
  }
  if (selection.segments && selection.fidelity == kFieldsOnly) {
    return Status::InvalidArgument("segments go with scan group 1: kFieldsOnly has none");
  }
  for (const uint32_t f : selection.fields) {
    if (f >= fields.features.size()) {
      return Status::InvalidArgument("field " + std::to_string(f) + " out of range (" +
                                     std::to_string(fields.features.size()) + " fields)");
    }
  }
  return Status::OK();
}

size_t ImageDataset::Rep::StreamsPerRecord(const RecordSelection& selection) const {
  size_t n = 1 + static_cast<size_t>(selection.fidelity) + (selection.segments ? 1 : 0);
  for (const uint32_t f : selection.fields) n += RolesOf(fields.features[f].type).size();
  return n;
}

namespace {

// The streams of `selection` in one stripe, in the order StreamsPerRecord
// counts them. A stripe without a segments stream has SIZE_MAX in its place.
std::vector<size_t> SelectedStreams(const StripeInfo& stripe, const TableSchema& fields,
                                    const RecordSelection& selection, int group_count) {
  std::vector<size_t> out{0};
  if (!selection.fields.empty()) {
    const std::vector<size_t> where = stripe.TableStreamIndex(fields.features.size());
    for (const uint32_t f : selection.fields) {
      for (const StreamRole role : RolesOf(fields.features[f].type)) {
        out.push_back(stripe.first_table_stream + where[f * kRoleCount + static_cast<size_t>(role)]);
      }
    }
  }
  for (int g = 1; g <= selection.fidelity; ++g) out.push_back(stripe.group_stream(g));
  if (selection.segments) out.push_back(stripe.has_segments ? stripe.group_stream(group_count + 1) : SIZE_MAX);
  return out;
}

}  // namespace

Result<uint64_t> ImageDataset::Rep::SelectedBytes(uint64_t record, const RecordSelection& selection) const {
  const RecordLocation& loc = records[record];
  PCR_ASSIGN_OR_RETURN(const auto file, File(loc.file));
  const StripeInfo& stripe = file->index().stripes[loc.stripe];
  uint64_t n = 0;
  for (const size_t s : SelectedStreams(stripe, fields, selection, script.group_count())) {
    if (s != SIZE_MAX) n += stripe.streams[s].length;
  }
  return n;
}

Result<std::vector<Image>> ImageDataset::ReadRecord(uint64_t record, int fidelity) const {
  PCR_ASSIGN_OR_RETURN(auto records, ReadRecords({&record, 1}, fidelity));
  return std::move(records[0]);
}

Result<std::vector<std::vector<Image>>> ImageDataset::ReadRecords(std::span<const uint64_t> records,
                                                                  int fidelity) const {
  PCR_RETURN_IF_ERROR(rep_->CheckFidelity(fidelity));
  PCR_ASSIGN_OR_RETURN(std::vector<RecordBatch> batches,
                       ReadRecordBatches(records, {.fidelity = ScanGroups(fidelity)}));
  std::vector<std::vector<Image>> out(records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    for (const ImageView& v : batches[i].images) {
      out[i].push_back({v.label, std::string(v.key), Bytes(v.jpeg.begin(), v.jpeg.end())});
    }
  }
  return out;
}

Result<std::vector<RecordBatch>> ImageDataset::ReadRecordBatches(std::span<const uint64_t> records,
                                                                 const RecordSelection& asked) const {
  RecordSelection selection = asked;
  selection.fidelity = ScanGroups(asked.fidelity);
  ReadBatch streams;
  PCR_RETURN_IF_ERROR(rep_->ReadRecordStreams(records, selection, &streams));
  std::vector<RecordBatch> out(records.size());
  const size_t per_record = rep_->StreamsPerRecord(selection);
  for (size_t i = 0; i < records.size(); ++i) {
    PCR_RETURN_IF_ERROR(rep_->ParseRecord(records[i], selection, streams.spans(i * per_record, per_record), &out[i]));
  }
  return out;
}

Status ImageDataset::Rep::ReadRecordStreams(std::span<const uint64_t> wanted, const RecordSelection& selection,
                                            ReadBatch* out) const {
  PCR_RETURN_IF_ERROR(CheckSelection(selection));
  std::vector<size_t> file_of(wanted.size());
  for (size_t i = 0; i < wanted.size(); ++i) {
    PCR_RETURN_IF_ERROR(CheckRecord(wanted[i]));
    file_of[i] = records[wanted[i]].file;
  }
  std::vector<std::shared_ptr<const PcrFile>> opened;
  PCR_RETURN_IF_ERROR(Files(file_of, &opened));
  std::vector<ReadRange> ranges;
  for (size_t i = 0; i < wanted.size(); ++i) {
    const RecordLocation& loc = records[wanted[i]];
    const PcrFile& file = *opened[i];
    const StripeInfo& stripe = file.index().stripes[loc.stripe];
    for (const size_t s : SelectedStreams(stripe, fields, selection, script.group_count())) {
      // No segments stream: nothing to read in its place.
      ranges.push_back(s != SIZE_MAX ? StreamRange(file, loc.stripe, s, i) : ReadRange{&file, stripe.offset, 0, {}, i});
    }
  }
  // Adjacent streams of a record are one read however long. The streams of
  // fields not asked for are small next to the scan groups: a read runs
  // through a gap of them up to kRecordHoleLimit rather than split in two.
  PCR_RETURN_IF_ERROR(ExecuteReads(
      *engine, ranges, {.hole_limit = kRecordHoleLimit, .max_read = std::numeric_limits<uint64_t>::max()}, out));
  bytes_requested.fetch_add(out->bytes_requested(), std::memory_order_relaxed);
  return Status::OK();
}

Status ImageDataset::Rep::ParseRecord(uint64_t record, const RecordSelection& selection,
                                      std::span<const ByteSpan> streams, RecordBatch* batch) const {
  PCR_RETURN_IF_ERROR(CheckSelection(selection));
  if (record >= records.size() || streams.size() != StreamsPerRecord(selection)) {
    return Status::InvalidArgument("record " + std::to_string(record) + ": not the streams of its selection");
  }
  const RecordLocation& loc = records[record];
  PCR_ASSIGN_OR_RETURN(const auto opened, File(loc.file));
  const PcrFile& file = *opened;
  const StripeInfo& stripe = file.index().stripes[loc.stripe];
  PCR_ASSIGN_OR_RETURN(auto decoded, DecodeSamples(record, file, streams[0]));
  const auto samples = std::make_shared<const std::vector<SampleMetadata>>(std::move(decoded));
  batch->metadata = samples;
  batch->record = record;
  batch->fields.clear();
  size_t next = 1;
  if (!selection.fields.empty()) {
    const std::vector<size_t> stream_of = stripe.TableStreamIndex(fields.features.size());
    Bytes scratch[kRoleCount + 1];
    for (const uint32_t f : selection.fields) {
      ByteSpan stored[kRoleCount];
      for (const StreamRole role : RolesOf(fields.features[f].type)) stored[static_cast<size_t>(role)] = streams[next++];
      batch->fields.emplace_back(fields.features[f].type);
      PCR_RETURN_IF_ERROR(DecodeStoredFeature(file.path(), file.index().schema, stripe, loc.stripe, stream_of, f,
                                              stored, scratch, &batch->fields.back()));
    }
  }
  const int fidelity = selection.fidelity;
  const std::span<const ByteSpan> groups = streams.subspan(next, static_cast<size_t>(fidelity));
  const bool segments = selection.segments && stripe.has_segments;
  const int segments_group = script.group_count() + 1;
  std::vector<size_t> cursor(fidelity + 1, 0);
  size_t group_bytes = segments ? streams.back().size() : 0;
  for (const ByteSpan& g : groups) group_bytes += g.size();
  // Scan group bytes (and segments) plus one EOI per image.
  const size_t eoi = fidelity > 0 ? kJpegEndOfImage.size() : 0;
  batch->data.Resize(group_bytes + loc.image_count * eoi);
  batch->images.resize(loc.image_count);
  uint8_t* out = batch->data.data();
  Bytes merged;
  for (uint64_t i = 0; i < loc.image_count; ++i) {
    uint8_t* const start = out;
    for (int g = 1; g <= fidelity; ++g) {
      const uint64_t len = stripe.chunk(g, i).length;
      ByteSpan chunk = groups[g - 1].subspan(cursor[g - 1], len);
      PCR_RETURN_IF_ERROR(file.CheckChunk(loc.stripe, g, i, chunk));
      cursor[g - 1] += len;
      if (g == 1 && segments) {
        // Checked whatever its length (spec 6.2); an empty one puts nothing back.
        const uint64_t slen = stripe.chunk(segments_group, i).length;
        const ByteSpan kept = streams.back().subspan(cursor[fidelity], slen);
        PCR_RETURN_IF_ERROR(file.CheckChunk(loc.stripe, segments_group, i, kept));
        cursor[fidelity] += slen;
        if (slen > 0) {
          merged.clear();
          const Status put = InsertSegments(chunk, kept, &merged);
          if (!put.ok())
            return put.WithPrefix(file.path() + ": stripe " + std::to_string(loc.stripe) + " image " +
                                  std::to_string(i) + " (key " + (*samples)[i].key + ")");
          chunk = merged;
        }
      }
      std::memcpy(out, chunk.data(), chunk.size());
      out += chunk.size();
    }
    if (fidelity > 0) out = std::copy(kJpegEndOfImage.begin(), kJpegEndOfImage.end(), out);
    const SampleMetadata& sample = (*samples)[i];
    batch->images[i] = {sample.label, sample.key, ByteSpan(start, static_cast<size_t>(out - start)), i};
  }
  return Status::OK();
}

std::pair<uint64_t, uint64_t> ImageDataset::Rep::Locate(uint64_t image) const {
  auto it = std::upper_bound(records.begin(), records.end(), image,
                             [](uint64_t v, const RecordLocation& r) { return v < r.first_image; });
  const uint64_t r = static_cast<uint64_t>(it - records.begin()) - 1;
  return {r, image - records[r].first_image};
}

std::string ImageDataset::Rep::DescribeImage(uint64_t image) const {
  const auto [record, row] = Locate(image);
  std::vector<std::shared_ptr<const std::vector<SampleMetadata>>> samples;
  const bool keyed = Samples({&record, 1}, &samples).ok();
  return DescribeImage(image, keyed ? &(*samples[0])[row] : nullptr);
}

std::string ImageDataset::Rep::DescribeImage(uint64_t image, const SampleMetadata* sample) const {
  const uint64_t record = Locate(image).first;
  return files[records[record].file].path + ": image " + std::to_string(image) + " (record " + std::to_string(record) +
         (sample != nullptr ? ", key " + sample->key : "") + ")";
}

Result<Image> ImageDataset::ReadImage(uint64_t image, int fidelity) const {
  const ImageRequest request{image, fidelity};
  PCR_ASSIGN_OR_RETURN(std::vector<Image> images, ReadImages({&request, 1}));
  return std::move(images[0]);
}

Result<std::vector<Image>> ImageDataset::ReadImages(std::span<const ImageRequest> requests,
                                                    const CoalesceOptions& coalesce) const {
  return rep_->ReadImages(requests, coalesce);
}

Result<std::vector<Image>> ImageDataset::Rep::ReadImages(std::span<const ImageRequest> requests,
                                                         const CoalesceOptions& coalesce,
                                                         std::vector<Status>* failed) const {
  // One range per (request, group); ranges[first_range[i] + g - 1] is group g of request i.
  std::vector<uint64_t> record_of(requests.size()), row_of(requests.size());
  std::vector<size_t> file_of(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    PCR_RETURN_IF_ERROR(CheckFidelity(requests[i].fidelity));
    PCR_RETURN_IF_ERROR(CheckImage(requests[i].image));
    std::tie(record_of[i], row_of[i]) = Locate(requests[i].image);
    file_of[i] = records[record_of[i]].file;
  }
  std::vector<std::shared_ptr<const PcrFile>> opened;
  PCR_RETURN_IF_ERROR(Files(file_of, &opened));
  // Labels and keys of records not in memory come in the same call as the
  // chunks: metadata_of[j] is request `unkeyed[j]`'s record, read as range
  // first_metadata + j.
  using Samples = std::vector<SampleMetadata>;
  std::unordered_map<uint64_t, std::shared_ptr<const Samples>> samples;  // by record
  std::vector<size_t> unkeyed;
  std::vector<uint64_t> metadata_of;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (samples.contains(record_of[i])) continue;
    auto found = std::static_pointer_cast<const Samples>(cache->Find(SamplesKey(record_of[i])));
    if (found == nullptr) {
      unkeyed.push_back(i);
      metadata_of.push_back(record_of[i]);
    }
    samples.emplace(record_of[i], std::move(found));
  }
  std::vector<ReadRange> ranges;
  std::vector<size_t> first_range(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const ImageRequest& r = requests[i];
    const RecordLocation& loc = records[record_of[i]];
    const PcrFile& file = *opened[i];
    first_range[i] = ranges.size();
    const int groups = ScanGroups(r.fidelity);
    for (int g = 1; g <= groups; ++g) ranges.push_back(ChunkRange(file, loc.stripe, g, row_of[i]));
    if (r.segments && file.index().stripes[loc.stripe].has_segments) {
      ranges.push_back(ChunkRange(file, loc.stripe, script.group_count() + 1, row_of[i]));
    }
  }
  const size_t first_metadata = ranges.size();
  for (const size_t i : unkeyed) ranges.push_back(StreamRange(*opened[i], records[record_of[i]].stripe, 0));
  ReadBatch chunks;
  PCR_RETURN_IF_ERROR(ExecuteReads(*engine, ranges, coalesce, &chunks, true));
  bytes_requested.fetch_add(chunks.bytes_requested(), std::memory_order_relaxed);
  std::unordered_map<uint64_t, Status> unreadable;  // records whose metadata failed, by record
  for (size_t j = 0; j < metadata_of.size(); ++j) {
    Status check = chunks.check(first_metadata + j);
    Result<Samples> decoded = check.ok()
                                  ? DecodeSamples(metadata_of[j], *opened[unkeyed[j]], chunks[first_metadata + j])
                                  : Result<Samples>(check);
    if (!decoded.ok()) {
      if (failed == nullptr) return decoded.status();
      unreadable.emplace(metadata_of[j], decoded.status());
      continue;
    }
    const uint64_t bytes = SamplesBytes(*decoded);
    auto shared = std::make_shared<const Samples>(std::move(decoded).value());
    cache->Insert(SamplesKey(metadata_of[j]), shared, bytes);
    samples[metadata_of[j]] = std::move(shared);
  }
  std::vector<Image> images(requests.size());
  if (failed != nullptr) failed->assign(requests.size(), Status::OK());
  for (size_t i = 0; i < requests.size(); ++i) {
    Image& img = images[i];
    const std::shared_ptr<const Samples>& record_samples = samples[record_of[i]];
    if (record_samples == nullptr) {
      (*failed)[i] = unreadable.at(record_of[i]);
      continue;
    }
    const SampleMetadata& sample = (*record_samples)[row_of[i]];
    img.label = sample.label;
    img.key = sample.key;
    const size_t end = i + 1 < requests.size() ? first_range[i + 1] : first_metadata;
    Status check;
    for (size_t r = first_range[i]; r < end && check.ok(); ++r) check = chunks.check(r);
    if (!check.ok()) {
      check = check.WithPrefix(DescribeImage(requests[i].image, &sample));
      if (failed == nullptr) return check;
      (*failed)[i] = std::move(check);
      continue;
    }
    const int fidelity = ScanGroups(requests[i].fidelity);
    const size_t segments = first_range[i] + static_cast<size_t>(fidelity);
    // An empty segments chunk (checked above) puts nothing back (spec 6.2).
    const bool merge = requests[i].segments && segments < end && !chunks[segments].empty();
    for (int g = 1; g <= fidelity; ++g) {
      if (g == 1 && merge) {
        const Status put = InsertSegments(chunks[first_range[i]], chunks[segments], &img.jpeg);
        if (put.ok()) continue;
        if (failed == nullptr) return put.WithPrefix(DescribeImage(requests[i].image, &sample));
        (*failed)[i] = put.WithPrefix(DescribeImage(requests[i].image, &sample));
        img.jpeg.clear();
        break;
      }
      PutBytes(&img.jpeg, chunks[first_range[i] + g - 1]);
    }
    if (failed == nullptr || (*failed)[i].ok()) PutBytes(&img.jpeg, kJpegEndOfImage);
  }
  return images;
}

}  // namespace pcr
