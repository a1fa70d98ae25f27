#include "pcr/convert.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <span>
#include <sstream>
#include <thread>
#include <unordered_set>

#include "format/checksum.h"
#include "format/journal.h"
#include "format/permutation.h"
#include "format/scan_script.h"
#include "io/remote_path.h"
#include "writer/convert_input.h"
#include "writer/file_writer.h"
#include "writer/remote_input.h"
#include "writer/remote_output.h"
#include "writer/resume.h"
#include "writer/sources.h"
#include "writer/transcode_pool.h"

namespace pcr {

namespace fs = std::filesystem;

namespace {

// Builds the record files of a conversion from its sources in order: source
// i goes to record i / images_per_record and file i / images_per_file. Each
// file is committed, then journaled, before the next one starts. A part's
// first and last files are pieces when its run of records starts or ends
// inside a file.
class FileAssembler {
 public:
  // `finished` are the files kept from an earlier run, numbered from `first_file`.
  FileAssembler(fs::path out_dir, const ScanScript& script, const TableSchema& fields,
                const FieldWriterOptions& field_options, uint64_t images_per_record, uint64_t images_per_file,
                JournalWriter* journal, uint64_t first_file, std::vector<FinishedFile> finished,
                const std::function<void(const std::string&)>& file_done)
      : out_dir_(std::move(out_dir)),
        script_(script),
        fields_(fields),
        field_options_(field_options),
        images_per_record_(images_per_record),
        images_per_file_(images_per_file),
        journal_(journal),
        finished_(std::move(finished)),
        file_done_(file_done) {
    current_.file = first_file + finished_.size();
  }

  // The number of the file being built: every earlier one is finished.
  uint64_t next_file() const { return current_.file; }

  // Commits the files before source i's and ends the record before i's.
  Status AdvanceTo(uint64_t i) {
    while (current_.file < i / images_per_file_) PCR_RETURN_IF_ERROR(FinishFile());
    if (i / images_per_record_ != record_) {
      PCR_RETURN_IF_ERROR(FlushRecord());
      record_ = i / images_per_record_;
    }
    return Status::OK();
  }

  // `row` holds the image's fields, if the conversion has any.
  Status Add(uint64_t i, const SampleMetadata& sample, TranscodedImage image, uint64_t input_bytes, FieldRow row) {
    PCR_RETURN_IF_ERROR(AdvanceTo(i));
    current_.input_bytes += input_bytes;
    samples_.push_back(sample);
    images_.push_back(std::move(image));
    if (!fields_.features.empty()) rows_.push_back(std::move(row));
    return Status::OK();
  }

  Status Skip(uint64_t i, std::string reason) {
    PCR_RETURN_IF_ERROR(AdvanceTo(i));
    current_.skipped.emplace_back(i, std::move(reason));
    return Status::OK();
  }

  // Commits every file before `end_file`.
  Status FinishUpTo(uint64_t end_file) {
    while (current_.file < end_file) PCR_RETURN_IF_ERROR(FinishFile());
    return Status::OK();
  }

  // Drops the file being built, if any; returns every finished file.
  const std::vector<FinishedFile>& Close() {
    writer_.reset();
    return finished_;
  }

 private:
  Status FlushRecord() {
    if (images_.empty()) return Status::OK();
    if (!writer_) {
      PCR_ASSIGN_OR_RETURN(writer_, ImageFileWriter::Create((out_dir_ / RecordFileName(current_.file)).string(),
                                                            script_, fields_.features, field_options_));
    }
    PCR_RETURN_IF_ERROR(writer_->AddRecord(samples_, images_, rows_));
    samples_.clear();
    images_.clear();
    rows_.clear();
    return Status::OK();
  }

  Status FinishFile() {
    PCR_RETURN_IF_ERROR(FlushRecord());
    if (writer_) {
      PCR_ASSIGN_OR_RETURN(current_.entry, writer_->Finish());
      writer_.reset();
    }
    Status journaled = journal_->Add(current_);
    if (!journaled.ok()) {
      std::error_code ec;
      if (current_.entry.size > 0) fs::remove(out_dir_ / current_.entry.name, ec);  // unlisted: never kept
      return journaled;
    }
    if (file_done_ && current_.entry.size > 0) file_done_((out_dir_ / current_.entry.name).string());
    finished_.push_back(std::move(current_));
    current_ = {.file = finished_.back().file + 1};
    return Status::OK();
  }

  const fs::path out_dir_;
  const ScanScript& script_;
  const TableSchema& fields_;
  const FieldWriterOptions& field_options_;
  const uint64_t images_per_record_;
  const uint64_t images_per_file_;
  JournalWriter* journal_;
  std::vector<FinishedFile> finished_;
  const std::function<void(const std::string&)>& file_done_;
  FinishedFile current_;
  std::unique_ptr<ImageFileWriter> writer_;
  uint64_t record_ = 0;
  std::vector<SampleMetadata> samples_;
  std::vector<TranscodedImage> images_;
  std::vector<FieldRow> rows_;
};

}  // namespace

Result<ScanScript> LoadScanScript(const std::string& name_or_file, const OptionNames& names) {
  const auto builtin = BuiltinScanScriptNames();
  if (std::find(builtin.begin(), builtin.end(), name_or_file) != builtin.end()) {
    return BuiltinScanScript(name_or_file);
  }
  std::ifstream in(name_or_file);
  if (!in) {
    return Status::InvalidArgument(names(Option::kScanScript) + " " + name_or_file +
                                   ": neither a built-in name (spectral5, spectral, libjpeg) nor a readable file");
  }
  std::stringstream text;
  text << in.rdbuf();
  return ParseScanScript(text.str(), fs::path(name_or_file).filename().string());
}

Status CheckConvertImagesOptions(const ConvertImagesOptions& options) {
  const OptionNames& names = *options.option_names;
  if (options.images_per_record == 0) {
    return Status::InvalidArgument(names(Option::kImagesPerRecord) + " must be positive, not 0");
  }
  if (options.records_per_file == 0) {
    return Status::InvalidArgument(names(Option::kRecordsPerFile) + " must be positive, not 0");
  }
  if (options.num_shards == 0 || options.shard_index >= options.num_shards) {
    return Status::InvalidArgument(names(Option::kShard) + " must be below " + names(Option::kNumShards));
  }
  if (options.num_shards > (uint64_t{1} << 32)) {
    return Status::InvalidArgument(names(Option::kNumShards) + " must be at most 2^32");
  }
  if (options.images_per_record > kMaxStripeRows) {
    return Status::InvalidArgument(names(Option::kImagesPerRecord) + " must be below 2^32");
  }
  for (const auto& [name, type] : options.field_types) {
    if (type == FeatureType::kScoredIdList32 || type == FeatureType::kScoredIdList64 || type >= FeatureType::kBool) {
      return Status::InvalidArgument(names(Option::kFieldType) + " " + name + ": a field is int64, float64, float32, "
                                     "string, bytes, id_list, float32_list or float64_list, not " +
                                     FeatureTypeName(type));
    }
  }
  if (options.exif_orientation && options.strip_metadata) {
    return Status::InvalidArgument(names(Option::kExifOrientation) + " needs the metadata " +
                                   names(Option::kStripMetadata) + " drops");
  }
  if (!options.shards.empty() && (!options.list_file.empty() || !options.fields_file.empty() || options.by_content)) {
    return Status::InvalidArgument("WebDataset shards hold their own samples and fields: no " + names(Option::kList) +
                                   ", " + names(Option::kFields) + " or " + names(Option::kByContent));
  }
  return LoadScanScript(options.scan_script, names).status();
}

std::vector<SampleMetadata> Permuted(std::vector<SampleMetadata> sources, uint64_t seed) {
  std::vector<SampleMetadata> out;
  for (uint64_t i : SeededPermutation(sources.size(), seed)) out.push_back(std::move(sources[i]));
  return out;
}

// The options that decide a conversion's output, as pcr-convert spells
// them, for the journal; `images`: the sources' count.
JournalOptions JournalOptionsOf(const ConvertImagesOptions& o, uint64_t images) {
  std::string shards;
  for (const std::string& s : o.shards) shards += (shards.empty() ? "" : ",") + s;
  std::string field_order;
  for (const std::string& f : o.field_order) field_order += (field_order.empty() ? "" : ",") + f;
  auto flag = [](bool b) { return std::string(b ? "yes" : "no"); };
  return {{"images-per-record", std::to_string(o.images_per_record)},
          {"records-per-file", std::to_string(o.records_per_file)},
          {"scan-script", o.scan_script},
          {"strip-metadata", flag(o.strip_metadata)},
          {"shuffle", o.shuffle_seed ? std::to_string(*o.shuffle_seed) : std::string(kUnshuffled)},
          {"list", o.list_file},
          {"by-content", flag(o.by_content)},
          {"fields", o.fields_file},
          {"fields-key", o.fields_key},
          {"field-order", field_order},
          {"exif-orientation", flag(o.exif_orientation)},
          {"shard", std::to_string(o.shard_index)},
          {"num-shards", std::to_string(o.num_shards)},
          {"shards", shards},
          {"images", std::to_string(images)}};
}

namespace {

// What a conversion decides before its first image: the scan script, the
// sources and files of its shard, the jobs and their memory, and the plan's
// checksum.
struct ConversionSetup {
  ScanScript script;
  uint32_t orientation_field = UINT32_MAX;  // the EXIF orientation's field, if asked for
  uint64_t per_file = 0;                    // images per file
  uint64_t begin = 0, end = 0;              // the shard's sources: a run of whole records
  uint64_t first_file = 0, end_file = 0;    // the files (or pieces) they go to
  bool part = false;                        // one shard of several
  int jobs = 1;
  TranscodeOptions transcode;
  uint64_t checksum = 0;
};

// Checks the fields against the options (adding the EXIF orientation field
// to input.fields when asked for) and lays out the conversion.
Result<ConversionSetup> SetUpConversion(const ConvertImagesOptions& options, ConversionInput& input) {
  ConversionSetup plan;
  PCR_ASSIGN_OR_RETURN(plan.script, LoadScanScript(options.scan_script, *options.option_names));
  if (options.exif_orientation) {
    for (const FeatureInfo& f : input.fields.features) {
      if (f.name == kExifOrientationField) {
        return Status::InvalidArgument("a field is named " + std::string(kExifOrientationField) +
                                       ", the name " + (*options.option_names)(Option::kExifOrientation) + " gives");
      }
    }
    plan.orientation_field = static_cast<uint32_t>(input.fields.features.size());
    input.fields.features.push_back({.name = kExifOrientationField, .type = FeatureType::kInt64});
    Bytes fields;
    PutFixed64(&fields, input.fields_checksum);
    PutLengthPrefixed(&fields, kExifOrientationField);
    input.fields_checksum = Checksum64(fields);
  }
  for (const std::string& name : options.field_order) {
    const auto& f = input.fields.features;
    if (std::none_of(f.begin(), f.end(), [&](const FeatureInfo& i) { return i.name == name; })) {
      return Status::InvalidArgument((*options.option_names)(Option::kFieldOrder) + " names '" + name +
                                     "', which is not a field");
    }
  }

  // Source i goes to record i / images_per_record, file i / per_file; shard
  // I of N takes records [R * I / N, R * (I + 1) / N).
  const uint64_t count = input.list.sources.size();
  if (__builtin_mul_overflow(options.images_per_record, options.records_per_file, &plan.per_file)) plan.per_file = count;
  plan.per_file = std::min(plan.per_file, count);
  const uint64_t records = count / options.images_per_record + (count % options.images_per_record != 0);
  auto first_source = [&](uint64_t shard) {
    const uint64_t n = options.num_shards;  // at most 2^32, so no product overflows
    return std::min(count, (records / n * shard + records % n * shard / n) * options.images_per_record);
  };
  plan.begin = first_source(options.shard_index);
  plan.end = first_source(options.shard_index + 1);
  plan.first_file = plan.begin / plan.per_file;
  plan.end_file = plan.begin == plan.end ? plan.first_file : (plan.end - 1) / plan.per_file + 1;
  plan.part = options.num_shards > 1;

  plan.jobs = options.jobs > 0 ? options.jobs : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  uint64_t memory = options.memory_bytes;
  if (memory == 0) {
    const uint64_t ram = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    memory = std::min<uint64_t>(static_cast<uint64_t>(plan.jobs) << 30, std::max<uint64_t>(ram / 2, uint64_t{1} << 30));
  }
  plan.transcode = {.keep_metadata = !options.strip_metadata,
                    .max_memory_bytes = static_cast<size_t>(memory / static_cast<uint64_t>(plan.jobs)),
                    .max_pixels = options.max_pixels};
  plan.checksum = PlanChecksum({.images_per_record = options.images_per_record,
                                .records_per_file = options.records_per_file,
                                .strip_metadata = options.strip_metadata,
                                .script = plan.script,
                                .class_names = input.list.class_names,
                                .fields_checksum = input.fields_checksum},
                               input.list.sources);
  return plan;
}

// Transcodes the shard's sources from the first one not yet in a finished
// file, in batches on plan.jobs threads, into `files`.
Status TranscodeShard(const ConvertImagesOptions& options, const ConversionInput& input, const ConversionSetup& plan,
                      FileAssembler& files) {
  const std::vector<SampleMetadata>& sources = input.list.sources;
  const uint64_t count = sources.size();
  const uint64_t shard_begin = plan.begin, shard_end = plan.end;
  ConvertProgress progress{.images_total = shard_end - shard_begin};
  const uint64_t begin = std::clamp(files.next_file() * plan.per_file, shard_begin, shard_end);
  progress.images_done = progress.images_resumed = begin - shard_begin;
  // Batches are independent of the files, so small records still keep every job busy.
  const size_t batch = std::max<size_t>(options.images_per_record, 4 * static_cast<size_t>(plan.jobs));
  TranscodePool pool(std::max(1, std::min<int>(plan.jobs, static_cast<int>(std::min<uint64_t>(batch, count)))),
                     input.reader, plan.script, plan.transcode, options.cancel);
  Status failed;
  for (uint64_t b = begin; b < shard_end && failed.ok(); b += batch) {
    const uint64_t e = std::min<uint64_t>(shard_end, b + batch);
    std::vector<TranscodePool::Item> done = pool.Run(std::span(sources).subspan(b, e - b), b);
    for (uint64_t i = b; i < e && failed.ok(); ++i) {
      TranscodePool::Item& item = done[i - b];
      const bool cancelled = !item.image.ok() && item.image.status().code() == StatusCode::kCancelled;
      // Bytes the store or the network damaged are no bad image: never skipped.
      const bool damaged = !item.image.ok() && item.image.status().code() == StatusCode::kDataLoss;
      if (item.image.ok()) {
        progress.bytes_read += item.input_bytes;
        if (plan.orientation_field != UINT32_MAX && item.image->orientation) {
          item.fields.push_back({.field = plan.orientation_field, .i = *item.image->orientation});
        }
        failed = files.Add(i, sources[i], std::move(item.image).value(), item.input_bytes, std::move(item.fields));
      } else if (options.skip_bad && !cancelled && !damaged) {
        std::string reason = item.image.status().ToString();
        std::replace(reason.begin(), reason.end(), '\n', ' ');  // one line in the journal and skip list
        failed = files.Skip(i, std::move(reason));
      } else {
        failed = files.AdvanceTo(i);
        if (failed.ok()) {
          const Status& why = item.image.status();
          failed = cancelled || damaged ? why
                                        : why.WithMessage(input.describe(i) + ": " + why.message() + " (" +
                                                          (*options.option_names)(Option::kSkipBad) + " skips it)");
        }
      }
    }
    progress.images_done += e - b;
    if (options.progress && failed.ok()) options.progress(progress);
  }
  return failed;
}

// Sums up the finished files into `summary` and writes the skip list and the
// manifest, the last file, which makes the dataset (or part) whole.
Status FinishConversion(const ConvertImagesOptions& options, ConversionInput& input, const ConversionSetup& plan,
                        const std::vector<FinishedFile>& finished, ConvertImagesSummary* summary) {
  const fs::path out_dir(options.out_dir);
  DatasetManifest manifest;
  manifest.script = plan.script;
  manifest.class_names = std::move(input.list.class_names);
  std::string skip_list;
  for (const FinishedFile& f : finished) {
    summary->input_bytes += f.input_bytes;
    for (const auto& [source, reason] : f.skipped) {
      summary->skipped.emplace_back(input.list.sources[source].key, reason);
      skip_list += input.list.sources[source].key + "\t" + reason + "\n";
    }
    if (f.entry.size == 0) continue;
    summary->files++;
    summary->records += f.entry.stripe_count;
    summary->images += f.entry.image_count;
    summary->output_bytes += f.entry.size;
    manifest.files.push_back(f.entry);
  }
  // What was refused before conversion is listed once, by part 0.
  for (const auto& [key, reason] : options.shard_index == 0 ? input.skipped : decltype(input.skipped){}) {
    summary->skipped.emplace_back(key, reason);
    skip_list += key + "\t" + reason + "\n";
  }
  if (summary->images == 0 && !plan.part) return Status::InvalidArgument("no image could be converted");
  if (!skip_list.empty()) PCR_RETURN_IF_ERROR(WriteTextFile((out_dir / kSkippedListName).string(), skip_list));
  if (plan.part) {
    return WritePartManifest(
        (out_dir / kPartManifestName).string(),
        {.shard_index = options.shard_index, .shard_count = options.num_shards, .plan_checksum = plan.checksum,
         .dataset = std::move(manifest)});
  }
  return WriteDatasetManifest((out_dir / kDatasetManifestName).string(), manifest);
}

}  // namespace

Result<ConvertImagesSummary> ConvertInput(const ConvertImagesOptions& options, ConversionInput& input) {
  PCR_ASSIGN_OR_RETURN(const ConversionSetup plan, SetUpConversion(options, input));
  const uint64_t count = input.list.sources.size();
  const fs::path out_dir(options.out_dir);
  const JournalHeader header{
      .first = JournalFirstLine(plan.checksum, options.shard_index, options.num_shards),
      .limits = JournalLimitsLine(options.skip_bad, options.max_pixels, plan.transcode.max_memory_bytes),
      .options = JournalOptionsOf(options, count)};
  PCR_ASSIGN_OR_RETURN(DirectoryLock lock, DirectoryLock::Take(out_dir.string()));
  PCR_ASSIGN_OR_RETURN(std::vector<FinishedFile> kept,
                       PrepareOutDir(out_dir.string(), header, plan.first_file, count, options.restart,
                                     *options.option_names));
  PCR_ASSIGN_OR_RETURN(auto journal,
                       JournalWriter::Create((out_dir / kConversionMarkerName).string(), header, kept));

  ConvertImagesSummary summary;
  summary.resumed_files = kept.size();
  summary.ignored_files = input.list.ignored.count;
  summary.ignored_examples = input.list.ignored.examples;
  const FieldWriterOptions field_options{.stream_order = options.field_order};
  FileAssembler files(out_dir, plan.script, input.fields, field_options, options.images_per_record, plan.per_file,
                      journal.get(), plan.first_file, std::move(kept), options.file_done);
  Status failed = TranscodeShard(options, input, plan, files);
  if (failed.ok()) failed = files.FinishUpTo(plan.end_file);
  const std::vector<FinishedFile>& finished = files.Close();
  std::error_code ec;
  if (!failed.ok()) {
    journal.reset();
    if (finished.empty()) fs::remove(out_dir / kConversionMarkerName, ec);
    return failed;
  }
  const Status written = FinishConversion(options, input, plan, finished, &summary);
  const bool nothing_converted = summary.images == 0 && !plan.part;
  if (!written.ok() && !nothing_converted) return written;  // the journal stays for a rerun
  journal.reset();
  fs::remove(out_dir / kConversionMarkerName, ec);  // done, or nothing worth resuming
  if (!written.ok()) return written;
  return summary;
}

Result<ConvertImagesSummary> ConvertImages(const ConvertImagesOptions& options) {
  if (IsObjectStoreOutput(options.out_dir)) return ConvertImagesToObjectStore(options, ConvertImages);
  PCR_RETURN_IF_ERROR(CheckConvertImagesOptions(options));
  const OptionNames& names = *options.option_names;
  // An s3:// SRC_DIR: its objects (size and ETag), by key.
  const bool remote = IsRemotePath(options.src_dir);
  std::unordered_map<std::string, S3Uploader::ListedObject> listed;
  std::unique_ptr<HttpClient> client;
  std::unique_ptr<S3Uploader> s3;
  if (remote) {
    if (!options.src_dir.starts_with("s3://")) {
      return Status::InvalidArgument(options.src_dir + ": images are listed from s3:// prefixes; over HTTP(S), "
                                     "convert WebDataset shards (pcr-convert webdataset)");
    }
    PCR_ASSIGN_OR_RETURN(client, HttpClient::Create(options.remote));
    PCR_ASSIGN_OR_RETURN(s3, S3Uploader::Create(options.remote, UploadOptions{}));  // lists the inputs' store
  }
  SourceList list;
  if (options.list_file.empty()) {
    PCR_ASSIGN_OR_RETURN(list, remote ? ListRemoteImageFolder(options.src_dir, options.by_content, *s3, *client, &listed)
                                      : ListImageFolder(options.src_dir, options.by_content));
  } else {
    PCR_ASSIGN_OR_RETURN(list, ReadSourceList(options.list_file, options.remote));
    if (remote) {
      PCR_ASSIGN_OR_RETURN(const auto where, SplitS3Prefix(options.src_dir));
      PCR_ASSIGN_OR_RETURN(const auto objects, s3->List(where.first, where.second));
      for (const auto& o : objects) listed[o.key.substr(where.second.size())] = o;
    }
  }
  std::vector<SampleMetadata>& sources = list.sources;
  const IgnoredFiles& ignored = list.ignored;
  if (sources.empty()) {
    std::string others;
    if (ignored.count > 0) {
      others = "; ignored " + std::to_string(ignored.count) + " other files, e.g. " + ignored.examples[0] +
               (options.by_content ? "" : " (" + names(Option::kByContent) + " takes files by their JPEG signature)");
    }
    return Status::InvalidArgument(
        options.list_file.empty()
            ? options.src_dir + ": no JPEG images in class folders (expected SRC_DIR/<class>/<image>.jpg, or " +
                  names(Option::kList) + ")" + others
            : options.list_file + ": lists no images");
  }
  if (options.shuffle_seed) sources = Permuted(std::move(sources), *options.shuffle_seed);

  FieldsFile fields;
  ConversionInput input;
  if (!options.fields_file.empty()) {
    PCR_ASSIGN_OR_RETURN(fields, ReadFieldsFile(options.fields_file, options.fields_key, options.field_types,
                                                false, options.remote, names));
    std::unordered_set<std::string_view> keys;
    for (const SampleMetadata& s : sources) keys.insert(s.key);
    for (size_t r = 0; r < fields.keys.size(); ++r) {
      if (keys.count(fields.keys[r])) continue;
      const std::string what = options.fields_file + ": line " + std::to_string(fields.lines[r]) + ": image '" +
                               fields.keys[r] + "' is not among the source images";
      if (!options.skip_bad) return Status::InvalidArgument(what + " (" + names(Option::kSkipBad) + " skips it)");
      input.skipped.emplace_back(fields.keys[r], "row of " + options.fields_file + " without an image");
    }
    for (const SampleMetadata& s : sources) {
      if (!options.skip_bad && !fields.rows.count(s.key)) {
        return Status::InvalidArgument((fs::path(options.src_dir) / s.key).string() + ": no row in " +
                                       options.fields_file + " (" + names(Option::kSkipBad) + " skips it)");
      }
    }
  }
  input.list = std::move(list);
  // Remote images are fetched ahead of the conversion, one GET each, and
  // checked against their listed ETags.
  auto object = [&](uint64_t i) {
    const std::string& key = input.list.sources[i].key;
    const auto it = listed.find(key);
    const uint64_t size = it == listed.end() ? 0 : it->second.size;
    const ObjectDigest digest =
        it == listed.end() || !options.remote.etag_is_md5 ? ObjectDigest() : ObjectDigest::FromEtag(it->second.etag);
    return ObjectRange{.path = JoinRemotePath(options.src_dir, key),
                       .offset = 0,
                       .length = size,
                       .object_size = size,
                       .digest = digest};
  };
  std::unique_ptr<RangePrefetcher> prefetcher;
  if (remote) prefetcher = std::make_unique<RangePrefetcher>(*client, object, input.list.sources.size());
  FileSourceReader::Fetch fetch;
  if (remote) {
    fetch = [&](const SampleMetadata& source, uint64_t index) -> Result<Bytes> {
      if (!listed.count(source.key)) return Status::NotFound("no such object");
      return prefetcher->Get(index);
    };
  }
  const FileSourceReader reader(options.src_dir, options.fields_file.empty() ? nullptr : &fields,
                                options.fields_file, fetch);
  input.fields = fields.schema;
  if (!options.fields_file.empty()) input.fields_checksum = FieldsChecksum(fields, options.field_order);
  input.reader = &reader;
  input.describe = [&](uint64_t i) {
    return remote ? JoinRemotePath(options.src_dir, input.list.sources[i].key)
                  : (fs::path(options.src_dir) / input.list.sources[i].key).string();
  };
  return ConvertInput(options, input);
}

}  // namespace pcr
