// WebDataset tar shards as conversion input: samples are runs of members
// sharing a key, read in place from the tars.
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <future>
#include <unordered_set>

#include "format/checksum.h"
#include "format/permutation.h"
#include "io/http_client.h"
#include "io/object_digest.h"
#include "io/remote_path.h"
#include "pcr/convert.h"
#include "writer/convert_input.h"
#include "writer/remote_output.h"
#include "writer/tar.h"
#include "writer/text_input.h"

namespace pcr {

namespace {

namespace fs = std::filesystem;

struct Member {
  std::string ext;  // lower case, after the key's first dot
  uint64_t header_offset = 0;
  uint64_t data_offset = 0;
  uint64_t size = 0;
  std::optional<uint64_t> checksum;  // of a remote member's data as the first pass read it (CRC-64/NVME)
};

struct Sample {
  uint32_t shard = 0;
  std::string key;
  std::vector<Member> members;
  size_t jpeg = 0;  // index into members
};

bool IsJpegExtension(const std::string& ext) { return ext == "jpg" || ext == "jpeg"; }

// WebDataset's split of a member name: the key is the name up to the first
// dot of its last path component, the extension the rest.
bool SplitName(const std::string& name, std::string* key, std::string* ext) {
  const size_t slash = name.rfind('/');
  const size_t dot = name.find('.', slash == std::string::npos ? 0 : slash + 1);
  if (dot == std::string::npos || dot + 1 == name.size() || dot == (slash == std::string::npos ? 0 : slash + 1)) {
    return false;
  }
  *key = name.substr(0, dot);
  *ext = name.substr(dot + 1);
  std::transform(ext->begin(), ext->end(), ext->begin(), [](unsigned char c) { return std::tolower(c); });
  return true;
}

class WebDataset : public SourceReader {
 public:
  WebDataset(std::vector<std::string> shards, const ConvertImagesOptions& options, HttpClient* client)
      : shards_(std::move(shards)),
        shard_sizes_(shards_.size()),
        shard_checked_(shards_.size()),
        client_(client),
        skip_bad_(options.skip_bad),
        names_(*options.option_names),
        types_(std::make_unique<FieldInference>(
            options.field_types, false, names_,
            [this](uint64_t line, uint64_t member, const std::string& what) {
              // Values carry their sample's index plus one as their line.
              return Status::InvalidArgument(Describe(samples_[line - 1], member) + ": " + what);
            },
            [this](const ValuePlace& w) { return Describe(samples_[w.line - 1], w.column); })) {}

  // Pass 1: every shard's members grouped into samples, labels from .cls,
  // and the fields' types from every value.
  Status Scan(ConversionInput* input) {
    types_->Declare("txt", FeatureType::kString);
    types_->Declare("cls", FeatureType::kInt64);
    // Remote shards: the next one opened, and its first window read, while
    // this one is scanned.
    using Opened = Result<std::unique_ptr<ByteSource>>;
    auto open = [this](uint32_t s) -> Opened {
      PCR_ASSIGN_OR_RETURN(auto source, OpenByteSource(shards_[s], client_));
      uint8_t first;
      if (source->size() > 0) PCR_RETURN_IF_ERROR(source->ReadAt(0, 1, &first));
      return source;
    };
    std::future<Opened> next;
    if (client_ != nullptr) next = std::async(std::launch::async, open, 0);
    for (uint32_t s = 0; s < shards_.size(); ++s) {
      Opened source = client_ != nullptr ? next.get() : open(s);
      if (client_ != nullptr && s + 1 < shards_.size()) next = std::async(std::launch::async, open, s + 1);
      const bool opened = source.ok();
      Status scanned = opened ? ScanShardChecked(s, std::move(source).value(), input, open) : source.status();
      if (!scanned.ok()) {
        // A remote shard whose GETs keep failing (a missing one is an error,
        // as a missing file is).
        const bool unreadable = IsRemotePath(shards_[s]) && scanned.code() == StatusCode::kIOError;
        if (!skip_bad_ || (scanned.code() != StatusCode::kCorruption && !unreadable)) return scanned;
        input->skipped.emplace_back(shards_[s], OneLine(scanned.ToString()) + (opened ? "; the rest of the shard is skipped"
                                                                                      : "; the shard is skipped"));
      }
    }
    PCR_RETURN_IF_ERROR(types_->Infer());
    input->fields.features = types_->features();
    Bytes plan;
    EncodeTableSchema(input->fields, &plan);
    for (size_t s = 0; s < shards_.size(); ++s) {
      PutLengthPrefixed(&plan, shards_[s]);
      PutVarint64(&plan, shard_sizes_[s]);
    }
    // Every member's place and size: a shard rewritten with other samples
    // is another conversion.
    for (const Sample& sample : samples_) {
      PutLengthPrefixed(&plan, sample.key);
      for (const Member& m : sample.members) {
        PutLengthPrefixed(&plan, m.ext);
        PutVarint64(&plan, m.data_offset);
        PutVarint64(&plan, m.size);
      }
    }
    input->fields_checksum = Checksum64(plan) | 1;
    return Status::OK();
  }

  // Orders the samples as the conversion does and hands them to `input`.
  void Finish(const std::optional<uint64_t>& shuffle_seed, ConversionInput* input) {
    std::vector<SampleMetadata>& sources = input->list.sources;
    if (shuffle_seed) {
      std::vector<Sample> shuffled;
      std::vector<SampleMetadata> order;
      for (const uint64_t i : SeededPermutation(samples_.size(), *shuffle_seed)) {
        shuffled.push_back(std::move(samples_[i]));
        order.push_back(std::move(sources[i]));
      }
      samples_ = std::move(shuffled);
      sources = std::move(order);
    }
    input->reader = this;
    input->describe = [this](uint64_t i) { return Describe(samples_[i], samples_[i].jpeg); };
  }

  // Pass 2: the sample's JPEG, and its fields converted to their types.
  Result<Bytes> Read(const SampleMetadata&, uint64_t index, FieldRow* fields) const override {
    const Sample& sample = samples_[index];
    std::vector<std::pair<std::string, ColumnValue>> values;
    int64_t label;
    const Member& jpeg = sample.members[sample.jpeg];
    MemberReader read_member = [&](const Member& m) { return ReadFileRange(shards_[sample.shard], m.data_offset, m.size); };
    Bytes span;  // a remote sample's members, from the first one's data to the last one's end
    uint64_t span_begin = 0;
    if (prefetcher_ && IsRemotePath(shards_[sample.shard])) {
      PCR_ASSIGN_OR_RETURN(span, prefetcher_->Get(index));
      span_begin = SpanOf(sample).offset;
      PCR_RETURN_IF_ERROR(CheckSpan(sample, span_begin, &span, index));
      read_member = [&](const Member& m) -> Result<Bytes> {
        const auto begin = span.begin() + static_cast<ptrdiff_t>(m.data_offset - span_begin);
        return Bytes(begin, begin + static_cast<ptrdiff_t>(m.size));
      };
    }
    PCR_RETURN_IF_ERROR(ReadFields(index, read_member, &values, &label));
    for (auto& [name, raw] : values) {
      if (raw.kind == ColumnValue::kNull) continue;
      PCR_ASSIGN_OR_RETURN(FieldValue v, types_->Convert(types_->Index(name), std::move(raw)));
      fields->push_back(std::move(v));
    }
    return read_member(jpeg);
  }

  // Pass 2 on remote shards: every sample's members fetched ahead of the
  // conversion, one GET each (none for samples of local shards).
  void StartPrefetching() {
    if (client_ == nullptr) return;
    prefetcher_ = std::make_unique<RangePrefetcher>(
        *client_,
        [this](uint64_t i) {
          ObjectRange r = SpanOf(samples_[i]);
          if (!IsRemotePath(r.path)) r.length = 0;
          return r;
        },
        samples_.size());
  }

 private:
  using MemberReader = std::function<Result<Bytes>(const Member&)>;

  ObjectRange SpanOf(const Sample& sample) const {
    uint64_t begin = UINT64_MAX, end = 0;
    for (const Member& m : sample.members) {
      begin = std::min(begin, m.data_offset);
      end = std::max(end, m.data_offset + m.size);
    }
    return {.path = shards_[sample.shard], .offset = begin, .length = end - begin, .object_size = shard_sizes_[sample.shard]};
  }

  // Whether a remote sample's members read now are the bytes the first
  // pass read (and checked against the store's digest); fetched again on
  // a difference, up to the retries, then DataLoss.
  Status CheckSpan(const Sample& sample, uint64_t span_begin, Bytes* span, uint64_t index) const {
    const unsigned attempts = client_->options().retries + 1;
    std::optional<uint64_t> before;  // the JPEG's checksum as the last attempt read it
    for (unsigned attempt = 1;; ++attempt) {
      const Member* differs = nullptr;
      bool fields_differ = false;
      std::optional<uint64_t> jpeg;
      for (const Member& m : sample.members) {
        if (!m.checksum) continue;
        const auto* data = reinterpret_cast<const char*>(span->data() + (m.data_offset - span_begin));
        const uint64_t now = Crc64Nvme({data, m.size});
        const bool is_jpeg = &m == &sample.members[sample.jpeg];
        if (is_jpeg) jpeg = now;
        if (now != *m.checksum) {
          differs = &m;
          fields_differ |= !is_jpeg;
        }
      }
      if (differs == nullptr) return Status::OK();
      // Of a shard without a digest, the first pass's read may be the damaged
      // one: a JPEG (which that pass did not use) read the same twice since is taken.
      if (!shard_checked_[sample.shard] && !fields_differ && before && before == jpeg) return Status::OK();
      before = jpeg;
      if (attempt >= attempts) {
        return Status::DataLoss(Describe(sample, static_cast<size_t>(differs - sample.members.data())) +
                                ": the bytes read differ from those the first pass read " + Attempts(attempt) +
                                ": the store or the network damages them");
      }
      PCR_ASSIGN_OR_RETURN(*span, prefetcher_->Refetch(index));
    }
  }

  static std::string OneLine(std::string s) {
    std::replace(s.begin(), s.end(), '\n', ' ');
    return s;
  }

  std::string Describe(const Sample& sample, size_t member) const {
    const Member& m = sample.members[member];
    return shards_[sample.shard] + ": member " + sample.key + "." + m.ext + " at offset " +
           std::to_string(m.header_offset);
  }

  // ScanShard, and for an object its bytes checked against the store's
  // digest: a shard read with damage is scanned again from a new stream,
  // what it added taken back first, up to the retries; then DataLoss. An
  // object without a digest that fails to scan is scanned again, and its
  // error stands once two scans read the same bytes.
  template <typename Open>
  Status ScanShardChecked(uint32_t s, std::unique_ptr<ByteSource> source, ConversionInput* input, const Open& open) {
    const bool remote = IsRemotePath(shards_[s]);
    const unsigned attempts = remote ? client_->options().retries + 1 : 1;
    std::pair<uint64_t, uint64_t> previous{UINT64_MAX, 0};  // what the last scan read
    for (unsigned attempt = 1;; ++attempt) {
      const size_t samples = samples_.size(), sources = input->list.sources.size(), skipped = input->skipped.size();
      auto types = std::make_unique<FieldInference>(*types_);
      const std::unordered_set<std::string> exts = exts_;
      TarReader tar(std::move(source));
      const Status scanned = ScanShard(s, tar, input);
      const Status verified = tar.source().Verify();
      shard_checked_[s] = !tar.source().digest().empty();
      const bool doubt = remote && !shard_checked_[s] && !scanned.ok() && tar.source().streamed() != previous &&
                         (scanned.code() == StatusCode::kCorruption || scanned.code() == StatusCode::kInvalidArgument);
      if (verified.ok() && (!doubt || attempt >= attempts)) return scanned;
      previous = tar.source().streamed();
      samples_.resize(samples);
      input->list.sources.resize(sources);
      input->skipped.resize(skipped);
      types_ = std::move(types);
      exts_ = exts;
      if (!verified.ok() && attempt >= attempts) {
        return verified.WithMessage(verified.message() + " (" + Attempts(attempt) + ")");
      }
      PCR_ASSIGN_OR_RETURN(source, open(s));
    }
  }

  Status ScanShard(uint32_t s, TarReader& tar, ConversionInput* input) {
    shard_sizes_[s] = tar.size();
    Sample current{.shard = s};
    TarMember m;
    while (true) {
      Result<bool> next = tar.Next(&m);
      std::string key, ext;
      if (!next.ok()) {
        // A sample is whole once a member of another key starts.
        if (!current.members.empty() && SplitName(tar.cut_member(), &key, &ext) && key != current.key) {
          PCR_RETURN_IF_ERROR(AddSample(std::move(current), tar, input));
        } else if (!current.members.empty()) {
          return next.status().WithMessage(next.status().message() + "; sample " + current.key +
                                           ", perhaps incomplete, is left out");
        }
        return next.status();
      }
      const bool more = *next;
      if (more && !SplitName(m.name, &key, &ext)) {
        const std::string what = shards_[s] + ": member " + m.name + " at offset " + std::to_string(m.header_offset) +
                                 ": no extension after its key";
        if (!skip_bad_) return Status::InvalidArgument(what + " (" + names_(Option::kSkipBad) + " skips it)");
        input->skipped.emplace_back(m.name, what);
        continue;
      }
      if (!current.members.empty() && (!more || key != current.key)) {
        PCR_RETURN_IF_ERROR(AddSample(std::move(current), tar, input));
        current = Sample{.shard = s};
      }
      if (!more) return Status::OK();
      current.key = key;
      PCR_ASSIGN_OR_RETURN(const std::optional<uint64_t> checksum, tar.source().StreamChecksum(m.data_offset, m.size));
      current.members.push_back({ext, m.header_offset, m.data_offset, m.size, checksum});
    }
  }

  Status AddSample(Sample sample, TarReader& tar, ConversionInput* input) {
    std::unordered_set<std::string> exts;
    size_t jpegs = 0;
    std::string refused;
    for (size_t k = 0; k < sample.members.size(); ++k) {
      if (!exts.insert(sample.members[k].ext).second) {
        refused = Describe(sample, k) + ": a second ." + sample.members[k].ext + " member of the sample";
      }
      if (IsJpegExtension(sample.members[k].ext) && jpegs++ == 0) sample.jpeg = k;
    }
    if (jpegs == 0) refused = Describe(sample, 0) + ": sample " + sample.key + " has no .jpg or .jpeg member";
    if (jpegs > 1) refused = Describe(sample, 0) + ": sample " + sample.key + " has more than one JPEG member";
    const uint64_t index = samples_.size();
    samples_.push_back(std::move(sample));
    std::vector<std::pair<std::string, ColumnValue>> values;
    int64_t label = -1;
    if (refused.empty()) {
      const Status read = ReadFields(
          index, [&tar](const Member& m) { return tar.ReadRange(m.data_offset, m.size); }, &values, &label);
      if (!read.ok()) refused = read.message();
    }
    if (!refused.empty()) {
      const std::string key = samples_.back().key;
      samples_.pop_back();
      if (!skip_bad_) return Status::InvalidArgument(refused + " (" + names_(Option::kSkipBad) + " skips it)");
      input->skipped.emplace_back(key, refused);
      return Status::OK();
    }
    // Only samples taken whole add fields and decide their types.
    for (const auto& [name, v] : values) {
      if (v.column != samples_[index].jpeg && IsMemberField(samples_[index].members[v.column].ext, name)) {
        if (name != "txt" && name != "cls") types_->Declare(name, FeatureType::kBytes);
        exts_.insert(name);
      }
      PCR_ASSIGN_OR_RETURN(const uint32_t f, types_->Field(name, v.line, v.column));
      types_->Note(f, v);
    }
    input->list.sources.push_back({label, samples_[index].key});
    return Status::OK();
  }

  // Whether member extension `ext` is itself the field `name` (not a .json).
  static bool IsMemberField(const std::string& ext, const std::string& name) { return ext == name && ext != "json"; }

  // The raw field values of sample `index`, by field name, and its label
  // (.cls, else -1). Each value's line is index + 1, its column the member.
  Status ReadFields(uint64_t index, const MemberReader& read_member,
                    std::vector<std::pair<std::string, ColumnValue>>* values, int64_t* label) const {
    const Sample& sample = samples_[index];
    *label = -1;
    for (size_t k = 0; k < sample.members.size(); ++k) {
      if (k == sample.jpeg) continue;
      const Member& m = sample.members[k];
      auto where = [&](const std::string& what) { return Status::InvalidArgument(Describe(sample, k) + ": " + what); };
      PCR_ASSIGN_OR_RETURN(Bytes data, read_member(m));
      const std::string text(data.begin(), data.end());
      auto add = [&](const std::string& name, ColumnValue v) {
        v.line = index + 1;
        v.column = k;
        values->emplace_back(name, std::move(v));
      };
      if (m.ext == "cls") {
        std::string_view t(text);
        while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.remove_suffix(1);
        ColumnValue v{.kind = ColumnValue::kInt};
        if (!ParseInt(t, &v.i)) return where("a .cls member holds one integer");
        *label = v.i;
        add("cls", std::move(v));
      } else if (m.ext == "json") {
        JsonCursor json(text);
        bool done;
        std::string name;
        if (json.Peek() != JsonCursor::Kind::kObject || !json.BeginObject()) {
          return where("a .json member holds one JSON object");
        }
        while (json.NextMember(&name, &done) && !done) {
          ColumnValue v;
          std::string what;
          if (!ParseJsonValue(json, true, &v, &what)) {
            return where("at byte " + std::to_string(json.position()) + ": " + (what.empty() ? json.error() : what));
          }
          for (const Member& other : sample.members) {
            if (other.ext == name) return where("JSON member '" + name + "' has the name of a member extension");
          }
          for (const auto& [seen, value] : *values) {
            if (seen == name && value.column == k) return where("JSON member '" + name + "' appears twice");
          }
          if (exts_.count(name)) return where("JSON member '" + name + "' has the name of a member extension");
          add(name, std::move(v));
        }
        if (!json.error().empty() || !json.End()) {
          return where("at byte " + std::to_string(json.position()) + ": " + json.error());
        }
      } else {
        if (!exts_.count(m.ext) && types_->Has(m.ext)) {
          return where("member extension ." + m.ext + " has the name of a JSON member");
        }
        add(m.ext, ColumnValue{.kind = ColumnValue::kString, .s = text});
      }
    }
    return Status::OK();
  }

  const std::vector<std::string> shards_;
  std::vector<uint64_t> shard_sizes_;
  std::vector<bool> shard_checked_;  // its bytes were checked against the store's digest
  HttpClient* const client_;  // for remote shards; else nullptr
  std::unique_ptr<RangePrefetcher> prefetcher_;
  const bool skip_bad_;
  const OptionNames& names_;
  std::unique_ptr<FieldInference> types_;
  std::vector<Sample> samples_;
  std::unordered_set<std::string> exts_;  // member extensions that are fields
};

}  // namespace

Result<ConvertImagesSummary> ConvertWebDataset(const ConvertImagesOptions& options) {
  if (IsObjectStoreOutput(options.out_dir)) return ConvertImagesToObjectStore(options, ConvertWebDataset);
  PCR_RETURN_IF_ERROR(CheckConvertImagesOptions(options));
  std::vector<std::string> shards;
  for (const std::string& pattern : options.shards) {
    PCR_ASSIGN_OR_RETURN(std::vector<std::string> expanded, ExpandBraces(pattern));
    for (std::string& s : expanded) shards.push_back(std::move(s));
  }
  if (shards.empty()) return Status::InvalidArgument("no WebDataset shards given");
  std::unique_ptr<HttpClient> client;
  if (std::any_of(shards.begin(), shards.end(), [](const std::string& s) { return IsRemotePath(s); })) {
    PCR_ASSIGN_OR_RETURN(client, HttpClient::Create(options.remote));
  }
  WebDataset wds(std::move(shards), options, client.get());
  ConversionInput input;
  PCR_RETURN_IF_ERROR(wds.Scan(&input));
  if (input.list.sources.empty()) {
    return Status::InvalidArgument("the shards hold no sample with a JPEG" +
                                   (input.skipped.empty() ? std::string() : " (" + input.skipped[0].second + ")"));
  }
  wds.Finish(options.shuffle_seed, &input);
  wds.StartPrefetching();
  return ConvertInput(options, input);
}

}  // namespace pcr
