// pcr-dump: inspect, verify and extract pcr files and datasets. Over 700
// lines: one function per subcommand and its argument parsing.
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include <charconv>
#include <map>
#include <optional>

#include "format/json.h"
#include "format/popularity.h"
#include "pcr/convert.h"
#include "format/stream_decoding.h"
#include "reader/inspect.h"
#include "tools/quality.h"
#include "io/read_executor.h"
#include "pcr/verify.h"
#include "pcr/version.h"
#include "tools/cli.h"
#include "tools/option_spelling.h"

namespace {

namespace fs = std::filesystem;
using pcr::cli::Json;

constexpr char kUsage[] =
    "usage: pcr-dump PATH [--json]                      summary of a file or dataset directory\n"
    "       pcr-dump PATH --quality [--sample N] [--json]\n"
    "                                                   and per scan group: bytes, predicted I/O\n"
    "                                                   speedup, SSIM, MS-SSIM and PSNR against\n"
    "                                                   full fidelity over N images (default 100)\n"
    "       pcr-dump verify PATH                        check every checksum\n"
    "       pcr-dump schema PATH                        a table's types as a --schema file of\n"
    "                                                   pcr-convert table\n"
    "       pcr-dump streams PATH                       every stream of a table: its encoding\n"
    "                                                   (nested ones too) and its bytes raw,\n"
    "                                                   encoded and stored\n"
    "       pcr-dump extract PATH OUT_DIR --fidelity K [--metadata | --no-metadata]\n"
    "                                                   write every image as OUT_DIR/<key> at scan\n"
    "                                                   group K (1..L or full); at full fidelity\n"
    "                                                   the originals, with the segments kept\n"
    "                                                   apart (EXIF, XMP, ...) put back unless\n"
    "                                                   --no-metadata; --metadata puts them back\n"
    "                                                   below full fidelity too\n"
    "       pcr-dump cat PATH [--features A,B,...] [--format csv|jsonl] [--access-log LOG]\n"
    "                                                   a table's features (default all), or an\n"
    "                                                   image dataset's key, label and fields\n"
    "                                                   (default all) as CSV (missing cells empty,\n"
    "                                                   strings quoted, a blank row NA) or JSON\n"
    "                                                   Lines (missing null, maps as pcr-convert\n"
    "                                                   reads them); floats read back exactly\n"
    "                                                   (1.0, -0.0, nan), times as ISO 8601 UTC,\n"
    "                                                   bytes in hex; a table's projection is\n"
    "                                                   appended to LOG (job: $PCR_JOB_ID)\n"
    "       pcr-dump popularity LOG... [--table PATH]   aggregate table access logs into a\n"
    "                                                   popularity file (stdout): per feature,\n"
    "                                                   the jobs that read it; lines of other\n"
    "                                                   tables than PATH are skipped\n";

// The usage, or with `why`, why and where the usage is.
int Usage(const std::string& why) {
  if (why.empty()) {
    std::fputs(kUsage, stderr);
  } else {
    std::fprintf(stderr, "pcr-dump: %s\n(pcr-dump --help gives the usage)\n", why.c_str());
  }
  return pcr::cli::kExitUsage;
}

int Fail(const pcr::Status& s) { return pcr::cli::ReportError("pcr-dump", s); }

double Ratio(uint64_t a, uint64_t b) { return b == 0 ? 0.0 : static_cast<double>(a) / b; }

void PrintStructure(const pcr::PcrFile& f) {
  const auto& idx = f.index();
  std::printf("\n%s: %llu bytes\n", f.path().c_str(), static_cast<unsigned long long>(f.size()));
  std::printf("  @%-10d header       version %d.%d kind %d\n", 0, f.header().version_major,
              f.header().version_minor, static_cast<int>(f.header().kind));
  for (size_t s = 0; s < idx.stripes.size(); ++s) {
    const auto& stripe = idx.stripes[s];
    std::printf("  @%-10llu stripe %zu    %llu images, %llu bytes\n",
                static_cast<unsigned long long>(stripe.offset), s,
                static_cast<unsigned long long>(stripe.image_count),
                static_cast<unsigned long long>(stripe.length()));
    for (size_t k = 0; k < stripe.streams.size(); ++k) {
      std::string what = "metadata";
      if (stripe.has_segments && k + 1 == stripe.streams.size()) {
        what = "segments";
      } else if (k >= stripe.group_stream(1)) {
        what = "group " + std::to_string(k - stripe.group_stream(1) + 1);
      } else if (k > 0) {
        const pcr::TableStream& t = stripe.table_streams[k - stripe.first_table_stream];
        what = idx.schema.features[t.feature].name + " " + pcr::StreamRoleName(t.role);
      }
      std::printf("  @%-10llu   stream %-3zu %-22s %10llu bytes  xxh3 %016llx\n",
                  static_cast<unsigned long long>(stripe.stream_offset(k)), k, what.c_str(),
                  static_cast<unsigned long long>(stripe.streams[k].length),
                  static_cast<unsigned long long>(stripe.streams[k].checksum));
    }
  }
  std::printf("  @%-10llu index        %llu bytes  xxh3 %016llx\n",
              static_cast<unsigned long long>(f.footer().index_offset),
              static_cast<unsigned long long>(f.footer().index_length),
              static_cast<unsigned long long>(f.footer().index_checksum));
  std::printf("  @%-10llu footer       %zu bytes\n",
              static_cast<unsigned long long>(f.size() - pcr::kFooterSize), pcr::kFooterSize);
}

int TableSummary(const std::string& path, const pcr::IoEngineOptions& io, bool json) {
  auto opened = pcr::Table::Open(path, {.io = io});
  if (!opened.ok()) return Fail(opened.status());
  const pcr::Table& t = **opened;
  const pcr::TableSchema& schema = t.schema();
  const auto& stripes = pcr::TableFile(t).index().stripes;
  std::vector<uint64_t> bytes(schema.features.size()), raw(schema.features.size());
  for (const pcr::StripeInfo& s : stripes) {
    for (size_t k = 0; k < s.streams.size(); ++k) {
      bytes[s.table_streams[k].feature] += s.streams[k].length;
      raw[s.table_streams[k].feature] += s.table_streams[k].raw_length;
    }
  }
  auto coverage = [&](const pcr::FeatureInfo& f) { return Ratio(f.present_count, schema.row_count); };
  auto mean_length = [&](const pcr::FeatureInfo& f) { return Ratio(f.value_count, f.present_count); };
  if (json) {
    Json j;
    j.BeginObject()
        .Key("path").String(pcr::TableFile(t).path())
        .Key("rows").Uint(schema.row_count)
        .Key("stripes").Uint(stripes.size())
        .Key("file_bytes").Uint(pcr::TableFile(t).size())
        .Key("features").BeginArray();
    for (size_t f = 0; f < schema.features.size(); ++f) {
      const pcr::FeatureInfo& fi = schema.features[f];
      j.BeginObject().Key("name").String(fi.name).Key("type").String(pcr::FeatureTypeName(fi.type));
      if (fi.has_id) j.Key("id").Int(fi.id);
      j.Key("coverage").Double(coverage(fi))
          .Key("mean_length").Double(mean_length(fi))
          .Key("bytes").Uint(bytes[f])
          .Key("raw_bytes").Uint(raw[f])
          .EndObject();
    }
    j.EndArray().Key("stripe_list").BeginArray();
    for (const pcr::StripeInfo& s : stripes) {
      j.BeginObject().Key("offset").Uint(s.offset).Key("rows").Uint(s.row_count).Key("bytes").Uint(s.length());
      j.Key("feature_order").BeginArray();
      for (size_t k = 0; k < s.table_streams.size(); ++k) {
        if (k == 0 || s.table_streams[k].feature != s.table_streams[k - 1].feature) {
          j.String(schema.features[s.table_streams[k].feature].name);
        }
      }
      j.EndArray().EndObject();
    }
    j.EndArray().EndObject();
    std::printf("%s\n", j.str().c_str());
    return pcr::cli::kExitOk;
  }
  std::printf("%s\n", pcr::TableFile(t).path().c_str());
  std::printf("  rows      %llu in %zu stripes, %llu bytes\n", static_cast<unsigned long long>(schema.row_count),
              stripes.size(), static_cast<unsigned long long>(pcr::TableFile(t).size()));
  std::printf("  features  %zu\n\n", schema.features.size());
  std::printf("  %-24s %-16s %9s %11s %12s %12s\n", "feature", "type", "coverage", "mean_length", "bytes",
              "raw_bytes");
  for (size_t f = 0; f < schema.features.size(); ++f) {
    const pcr::FeatureInfo& fi = schema.features[f];
    std::printf("  %-24s %-16s %9.4f %11.3f %12llu %12llu\n", fi.name.c_str(), pcr::FeatureTypeName(fi.type),
                coverage(fi), mean_length(fi), static_cast<unsigned long long>(bytes[f]),
                static_cast<unsigned long long>(raw[f]));
  }
  std::printf("\n  stream order (offset, feature: stored bytes per stream)\n");
  for (size_t i = 0; i < stripes.size(); ++i) {
    const pcr::StripeInfo& s = stripes[i];
    std::printf("  @%-12llu stripe %zu, %llu rows, %llu bytes\n", static_cast<unsigned long long>(s.offset), i,
                static_cast<unsigned long long>(s.row_count), static_cast<unsigned long long>(s.length()));
    for (size_t k = 0; k < s.table_streams.size(); ++k) {
      const pcr::TableStream& ts = s.table_streams[k];
      if (k > 0 && ts.feature == s.table_streams[k - 1].feature) continue;
      std::printf("  @%-12llu   %-24s", static_cast<unsigned long long>(s.stream_offset(k)),
                  schema.features[ts.feature].name.c_str());
      for (size_t m = k; m < s.table_streams.size() && s.table_streams[m].feature == ts.feature; ++m) {
        std::printf(" %s %llu", pcr::StreamRoleName(s.table_streams[m].role),
                    static_cast<unsigned long long>(s.streams[m].length));
      }
      std::printf("\n");
    }
  }
  return pcr::cli::kExitOk;
}

// Every stream of a table, stripe by stripe: its encoding tree and its bytes
// raw, encoded (before zstd) and stored.
// A table's types as a schema file for pcr-convert table --schema: one JSON
// object of feature names (map features by id) to type names.
int TableSchemaFile(const std::string& path, const pcr::IoEngineOptions& io) {
  auto opened = pcr::Table::Open(path, {.io = io});
  if (!opened.ok()) return Fail(opened.status());
  std::string out = "{";
  for (const pcr::FeatureInfo& f : (*opened)->schema().features) {
    if (out.size() > 1) out += ", ";
    pcr::AppendJsonString(f.name, &out);
    out += ": ";
    pcr::AppendJsonString(pcr::FeatureTypeName(f.type), &out);
  }
  out += "}\n";
  std::fputs(out.c_str(), stdout);
  return std::fflush(stdout) == 0 ? pcr::cli::kExitOk : Fail(pcr::Status::IOError("cannot write stdout"));
}

int TableStreams(const std::string& path, const pcr::IoEngineOptions& io) {
  auto opened = pcr::Table::Open(path, {.io = io});
  if (!opened.ok()) return Fail(opened.status());
  const pcr::PcrFile& file = pcr::TableFile(**opened);
  const pcr::TableSchema& schema = file.index().schema;
  std::printf("%s: version %d.%d\n", file.path().c_str(), file.header().version_major, file.header().version_minor);
  std::printf("  %-24s %-9s %12s %12s %12s  %s\n", "feature", "stream", "raw", "encoded", "stored", "encoding");
  pcr::ReadBatch batch;
  pcr::Bytes encoded;
  for (size_t s = 0; s < file.index().stripes.size(); ++s) {
    const pcr::StripeInfo& stripe = file.index().stripes[s];
    std::printf("  stripe %zu, %llu rows\n", s, static_cast<unsigned long long>(stripe.row_count));
    std::vector<pcr::ReadRange> ranges;
    for (size_t k = 0; k < stripe.streams.size(); ++k) ranges.push_back(pcr::StreamRange(file, s, k));
    pcr::Status st = pcr::ExecuteReads(pcr::TableEngine(**opened), ranges, {}, &batch);
    if (!st.ok()) return Fail(st.WithPrefix(path));
    for (size_t k = 0; k < stripe.table_streams.size(); ++k) {
      const pcr::TableStream& t = stripe.table_streams[k];
      const pcr::ByteSpan stored = batch[k];
      pcr::ByteSpan enc = stored;
      if (t.codec == pcr::StreamCodec::kZstd && t.encoding != pcr::StreamEncoding::kPlain) {
        const unsigned long long n = ZSTD_getFrameContentSize(stored.data(), stored.size());
        st = n > stored.size() * 32768ull ? pcr::Status::Corruption("zstd frame content size")
                                           : pcr::DecompressStream(stored, t.codec, n, &encoded);
        if (!st.ok()) return Fail(st.WithPrefix(path + ": stripe " + std::to_string(s) + " stream " + std::to_string(k)));
        enc = encoded;
      }
      const pcr::FeatureType type = schema.features[t.feature].type;
      std::string what = pcr::DescribeEncoding(pcr::ElementKindOf(type, t.role), t.encoding, enc);
      if (t.codec == pcr::StreamCodec::kZstd) what += " + zstd";
      const uint64_t encoded_bytes = t.encoding == pcr::StreamEncoding::kPlain ? t.raw_length : enc.size();
      std::printf("  %-24s %-9s %12llu %12llu %12llu  %s\n", schema.features[t.feature].name.c_str(),
                  pcr::StreamRoleName(t.role), static_cast<unsigned long long>(t.raw_length),
                  static_cast<unsigned long long>(encoded_bytes), static_cast<unsigned long long>(stored.size()),
                  what.c_str());
    }
  }
  return pcr::cli::kExitOk;
}

void PrintQuality(const pcr::QualityReport& q) {
  std::printf("\n  fidelity report: %llu of %llu images decoded at every group, scored against full fidelity\n",
              static_cast<unsigned long long>(q.sampled), static_cast<unsigned long long>(q.images));
  std::printf("  %-6s %12s %9s %8s %9s %9s %9s %10s %10s\n", "group", "bytes/image", "fraction", "speedup",
              "SSIM", "SSIM p5", "MS-SSIM", "PSNR dB", "PSNR p5");
  for (const pcr::FidelityQuality& g : q.groups) {
    char ms[16] = "-";
    if (g.ms_ssim_mean) std::snprintf(ms, sizeof(ms), "%.4f", *g.ms_ssim_mean);
    std::printf("  %-6d %12.1f %9.4f %8.2f %9.4f %9.4f %9s %10.2f %10.2f\n", g.fidelity, g.mean_bytes, g.fraction,
                g.speedup, g.ssim_mean, g.ssim_p5, ms, g.psnr_mean, g.psnr_p5);
  }
}

int Summary(const std::string& path, const pcr::IoEngineOptions& io, bool json,
            std::optional<uint64_t> quality_sample) {
  const pcr::Result<bool> table = pcr::IsTablePath(path, io);
  if (!table.ok()) return Fail(table.status());
  if (*table) {
    if (quality_sample) return Usage("--quality needs an image dataset, not a table");
    return TableSummary(path, io, json);
  }
  auto opened = pcr::ImageDataset::Open(path, {.io = io});
  if (!opened.ok()) return Fail(opened.status());
  const pcr::ImageDataset& ds = **opened;
  std::optional<pcr::QualityReport> quality;
  if (quality_sample) {
    auto q = pcr::MeasureFidelityQuality(ds, *quality_sample);
    if (!q.ok()) return Fail(q.status().WithPrefix(path));
    quality = *std::move(q);
  }
  auto counted = ds.counts();
  if (!counted.ok()) return Fail(counted.status());
  const pcr::DatasetCounts& counts = *counted;
  const std::vector<uint64_t>& bytes = counts.stream_bytes;
  uint64_t total = 0;
  for (uint64_t b : bytes) total += b;
  const uint64_t file_bytes = counts.file_bytes;
  const uint64_t n = ds.num_images();

  if (json) {
    Json j;
    j.BeginObject()
        .Key("path").String(path)
        .Key("images").Uint(n)
        .Key("records").Uint(ds.num_records())
        .Key("files").Uint(counts.files)
        .Key("scan_groups").Uint(ds.num_scan_groups())
        .Key("scan_script").String(ds.scan_script().name)
        .Key("classes").Uint(ds.class_names().size())
        .Key("metadata_bytes").Uint(bytes[0])
        .Key("segment_bytes").Uint(counts.segment_bytes)
        .Key("file_bytes").Uint(file_bytes)
        .Key("groups").BeginArray();
    uint64_t cumulative = bytes[0];
    for (int g = 1; g <= ds.num_scan_groups(); ++g) {
      cumulative += bytes[g];
      j.BeginObject()
          .Key("group").Uint(g)
          .Key("bytes").Uint(bytes[g])
          .Key("mean_bytes_per_image").Double(Ratio(bytes[g], n))
          .Key("cumulative_bytes").Uint(cumulative)
          .Key("cumulative_fraction").Double(Ratio(cumulative, total));
      if (quality) {
        const pcr::FidelityQuality& q = quality->groups[g - 1];
        j.Key("mean_image_bytes").Double(q.mean_bytes)
            .Key("image_fraction").Double(q.fraction)
            .Key("speedup").Double(q.speedup)
            .Key("ssim_mean").Double(q.ssim_mean)
            .Key("ssim_p5").Double(q.ssim_p5);
        if (q.ms_ssim_mean) j.Key("ms_ssim_mean").Double(*q.ms_ssim_mean);
        j.Key("psnr_mean").Double(q.psnr_mean).Key("psnr_p5").Double(q.psnr_p5);
      }
      j.EndObject();
    }
    j.EndArray().Key("fields").BeginArray();
    for (size_t f = 0; f < counts.fields.features.size(); ++f) {
      const pcr::FeatureInfo& fi = counts.fields.features[f];
      j.BeginObject()
          .Key("name").String(fi.name)
          .Key("type").String(pcr::FeatureTypeName(fi.type))
          .Key("present_count").Uint(fi.present_count)
          .Key("value_count").Uint(fi.value_count)
          .Key("bytes").Uint(counts.field_bytes[f])
          .EndObject();
    }
    j.EndArray();
    if (quality) j.Key("quality_sample").Uint(quality->sampled);
    j.EndObject();
    std::printf("%s\n", j.str().c_str());
    return pcr::cli::kExitOk;
  }
  std::printf("%s\n", path.c_str());
  std::printf("  images       %llu\n", static_cast<unsigned long long>(n));
  std::printf("  records      %llu in %zu files, %llu bytes\n",
              static_cast<unsigned long long>(ds.num_records()), static_cast<size_t>(counts.files),
              static_cast<unsigned long long>(file_bytes));
  std::printf("  classes      %zu\n", ds.class_names().size());
  std::printf("  scan groups  %d (script %s)\n\n", ds.num_scan_groups(), ds.scan_script().name.c_str());
  std::printf("  %-9s %14s %14s %16s %10s\n", "group", "bytes", "bytes/image", "cumulative", "fraction");
  uint64_t cumulative = bytes[0];
  std::printf("  %-9s %14llu %14.1f %16llu %10.4f\n", "metadata", static_cast<unsigned long long>(bytes[0]),
              Ratio(bytes[0], n), static_cast<unsigned long long>(cumulative), Ratio(cumulative, total));
  for (int g = 1; g <= ds.num_scan_groups(); ++g) {
    cumulative += bytes[g];
    std::printf("  %-9d %14llu %14.1f %16llu %10.4f\n", g, static_cast<unsigned long long>(bytes[g]),
                Ratio(bytes[g], n), static_cast<unsigned long long>(cumulative), Ratio(cumulative, total));
  }
  if (counts.segment_bytes > 0) {
    std::printf("  %-9s %14llu %14.1f   (APPn and COM segments kept apart: EXIF, XMP, comments)\n", "segments",
                static_cast<unsigned long long>(counts.segment_bytes), Ratio(counts.segment_bytes, n));
  }
  if (!counts.fields.features.empty()) {
    std::printf("\n  %-24s %-14s %9s %11s %14s %14s\n", "field", "type", "coverage", "mean_length", "bytes",
                "bytes/image");
    for (size_t f = 0; f < counts.fields.features.size(); ++f) {
      const pcr::FeatureInfo& fi = counts.fields.features[f];
      std::printf("  %-24s %-14s %9.4f %11.3f %14llu %14.1f\n", fi.name.c_str(), pcr::FeatureTypeName(fi.type),
                  Ratio(fi.present_count, n), Ratio(fi.value_count, fi.present_count),
                  static_cast<unsigned long long>(counts.field_bytes[f]), Ratio(counts.field_bytes[f], n));
    }
  }
  if (quality) PrintQuality(*quality);
  if (counts.files == 1) {
    auto file = pcr::DatasetFile(ds, 0);
    if (!file.ok()) return Fail(file.status());
    PrintStructure(**file);
  } else {
    std::printf("\n  %-24s %12s %8s %8s\n", "file", "bytes", "images", "records");
    for (size_t i = 0; i < counts.files; ++i) {
      auto opened = pcr::DatasetFile(ds, i);
      if (!opened.ok()) return Fail(opened.status());
      const auto& f = *opened;
      uint64_t images = 0;
      for (const auto& s : f->index().stripes) images += s.image_count;
      std::printf("  %-24s %12llu %8llu %8zu\n", fs::path(f->path()).filename().c_str(),
                  static_cast<unsigned long long>(f->size()), static_cast<unsigned long long>(images),
                  f->index().stripes.size());
    }
  }
  return pcr::cli::kExitOk;
}

int Verify(const std::string& path, const pcr::IoEngineOptions& io) {
  const pcr::VerifyReport r = pcr::VerifyPath(path, io);
  for (const std::string& e : r.errors) std::fprintf(stderr, "pcr-dump: %s\n", e.c_str());
  if (!r.errors.empty()) {
    std::printf("%s: FAILED, %zu errors\n", path.c_str(), r.errors.size());
    return pcr::cli::kExitBadInput;
  }
  std::printf("%s: OK, %llu files, %llu records, %llu streams, %llu chunks, %llu bytes checked\n",
              path.c_str(), static_cast<unsigned long long>(r.files),
              static_cast<unsigned long long>(r.stripes), static_cast<unsigned long long>(r.streams),
              static_cast<unsigned long long>(r.chunks), static_cast<unsigned long long>(r.bytes));
  return pcr::cli::kExitOk;
}

// A key is written below OUT_DIR only if it is a plain relative path.
bool SafeKey(const std::string& key) {
  const fs::path p(key);
  if (key.empty() || p.is_absolute()) return false;
  for (const auto& part : p) {
    if (part == ".." || part == ".") return false;
  }
  return true;
}

// `metadata` unset: the segments kept apart are put back at full fidelity
// (the original files), not below it.
int Extract(const std::string& path, const pcr::IoEngineOptions& io, const std::string& out_dir,
            const std::string& fidelity_arg, std::optional<bool> metadata_arg) {
  auto opened = pcr::ImageDataset::Open(path, {.io = io});
  if (!opened.ok()) return Fail(opened.status());
  const pcr::ImageDataset& ds = **opened;
  int fidelity = 0;
  if (!pcr::ParseFidelity(fidelity_arg, ds.num_scan_groups(), false, &fidelity)) {
    return Usage("--fidelity must be 1.." + std::to_string(ds.num_scan_groups()) + " or full");
  }
  const uint64_t k = static_cast<uint64_t>(ds.ScanGroups(fidelity));
  const bool metadata = metadata_arg.value_or(k == static_cast<uint64_t>(ds.num_scan_groups()));
  pcr::cli::Progress progress;
  uint64_t written = 0;
  for (uint64_t r = 0; r < ds.num_records(); ++r) {
    auto batches = ds.ReadRecordBatches({&r, 1}, {.fidelity = static_cast<int>(k), .segments = metadata});
    if (!batches.ok()) return Fail(batches.status());
    for (const pcr::ImageView& img : (*batches)[0].images) {
      if (!SafeKey(std::string(img.key))) {
        return Fail(pcr::Status::Corruption(path + ": image key '" + std::string(img.key) +
                                            "' is not a relative path inside OUT_DIR"));
      }
      const fs::path out = fs::path(out_dir) / img.key;
      std::error_code ec;
      fs::create_directories(out.parent_path(), ec);
      std::ofstream f(out, std::ios::binary | std::ios::trunc);
      f.write(reinterpret_cast<const char*>(img.jpeg.data()), static_cast<std::streamsize>(img.jpeg.size()));
      f.close();
      if (!f) return Fail(pcr::Status::IOError(out.string() + ": cannot write"));
      ++written;
    }
    progress.Update("extracted " + std::to_string(written) + "/" + std::to_string(ds.num_images()));
  }
  progress.Finish();
  std::printf("extracted %llu images at fidelity %llu/%d to %s\n",
              static_cast<unsigned long long>(written), static_cast<unsigned long long>(k),
              ds.num_scan_groups(), out_dir.c_str());
  return pcr::cli::kExitOk;
}

template <typename T>
void AppendNumber(T v, std::string* out) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, r.ptr);
}

// The shortest text that reads back as the same float, with ".0" when it
// would look like an integer: 1.0, -0.0, 2.5e-08, nan, -nan, inf, -inf. In
// JSON, NaN, Infinity and -Infinity, as Python's json module writes them.
template <typename T>
void AppendFloat(T v, bool json, std::string* out) {
  if (json && !std::isfinite(v)) {
    out->append(std::isnan(v) ? "NaN" : v < 0 ? "-Infinity" : "Infinity");
    return;
  }
  const size_t start = out->size();
  AppendNumber(v, out);
  if (out->find_first_not_of("-0123456789", start) == std::string::npos) out->append(".0");
}

// Ticks of a timestamp type as ISO 8601 UTC text, with as many fraction
// digits as the unit has: 2015-01-01T00:00:00.000000 for timestamp_us,
// +10000-01-01T00:00:00 beyond year 9999.
void AppendTimestamp(int64_t ticks, pcr::FeatureType type, std::string* out) {
  const int64_t per_second = pcr::TicksPerSecond(type);
  int64_t seconds = ticks / per_second, fraction = ticks % per_second;
  if (fraction < 0) {
    fraction += per_second;
    --seconds;
  }
  int64_t days = seconds / 86400, rest = seconds % 86400;
  if (rest < 0) {
    rest += 86400;
    --days;
  }
  // The civil date of a day count (proleptic Gregorian).
  const int64_t z = days + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int64_t day = doy - (153 * mp + 2) / 5 + 1;
  const int64_t month = mp < 10 ? mp + 3 : mp - 9;
  const int64_t year = yoe + era * 400 + (month <= 2);
  char buf[64];
  // Years beyond 0000..9999 as ISO 8601 expanded years: a sign, at least 4 digits.
  const bool expanded = year < 0 || year > 9999;
  int n = std::snprintf(buf, sizeof(buf), expanded ? "%+05lld-%02lld-%02lldT%02lld:%02lld:%02lld"
                                                   : "%04lld-%02lld-%02lldT%02lld:%02lld:%02lld",
                        static_cast<long long>(year),
                        static_cast<long long>(month), static_cast<long long>(day),
                        static_cast<long long>(rest / 3600), static_cast<long long>(rest / 60 % 60),
                        static_cast<long long>(rest % 60));
  out->append(buf, static_cast<size_t>(n));
  if (per_second > 1) {
    const int digits = per_second == 1000 ? 3 : per_second == 1000000 ? 6 : 9;
    n = std::snprintf(buf, sizeof(buf), ".%0*lld", digits, static_cast<long long>(fraction));
    out->append(buf, static_cast<size_t>(n));
  }
}

// `s` as a quoted CSV cell, inner quotes doubled.
void AppendQuoted(std::string_view s, std::string* out) {
  out->push_back('"');
  for (const char ch : s) {
    if (ch == '"') out->push_back('"');
    out->push_back(ch);
  }
  out->push_back('"');
}

void AppendHex(std::string_view s, std::string* out) {
  for (const unsigned char ch : s) {
    out->push_back("0123456789abcdef"[ch >> 4]);
    out->push_back("0123456789abcdef"[ch & 15]);
  }
}

// The value of row r (present) as CSV or JSON text. Strings and bytes (in
// hex) are quoted; lists are JSON arrays ([[id, score], ...] for scored
// lists), quoted in CSV.
void AppendValue(const pcr::Column& c, uint64_t r, bool json, std::string* out) {
  switch (c.type) {
    case pcr::FeatureType::kInt64:
      AppendNumber(c.ints[r], out);
      return;
    case pcr::FeatureType::kUInt64:
      AppendNumber(static_cast<uint64_t>(c.ints[r]), out);
      return;
    case pcr::FeatureType::kBool:
      out->append(c.ints[r] ? "true" : "false");
      return;
    case pcr::FeatureType::kTimestampS:
    case pcr::FeatureType::kTimestampMs:
    case pcr::FeatureType::kTimestampUs:
    case pcr::FeatureType::kTimestampNs:
      if (json) out->push_back('"');
      AppendTimestamp(c.ints[r], c.type, out);
      if (json) out->push_back('"');
      return;
    case pcr::FeatureType::kFloat64:
      AppendFloat(c.doubles[r], json, out);
      return;
    case pcr::FeatureType::kFloat32:
      AppendFloat(c.floats[r], json, out);
      return;
    case pcr::FeatureType::kString:
      if (json) {
        pcr::AppendJsonString(c.string(r), out);
      } else {
        AppendQuoted(c.string(r), out);
      }
      return;
    case pcr::FeatureType::kBytes:  // quoted, so that no bytes differ from missing ones
      out->push_back('"');
      AppendHex(c.string(r), out);
      out->push_back('"');
      return;
    default:
      break;
  }
  std::string list = "[";
  for (uint64_t i = c.offsets[r]; i < c.offsets[r + 1]; ++i) {
    if (i > c.offsets[r]) list += ',';
    if (c.type == pcr::FeatureType::kIdList) {
      AppendNumber(c.ints[i], &list);
    } else if (c.type == pcr::FeatureType::kUInt64IdList) {
      AppendNumber(static_cast<uint64_t>(c.ints[i]), &list);
    } else if (c.type == pcr::FeatureType::kFloat32List) {
      AppendFloat(c.floats[i], true, &list);
    } else if (c.type == pcr::FeatureType::kFloat64List) {
      AppendFloat(c.doubles[i], true, &list);
    } else {
      list += '[';
      AppendNumber(c.ints[i], &list);
      list += ',';
      if (c.type == pcr::FeatureType::kScoredIdList64) {
        AppendFloat(c.doubles[i], true, &list);
      } else {
        AppendFloat(c.floats[i], true, &list);
      }
      list += ']';
    }
  }
  list += ']';
  if (json) {
    out->append(list);
  } else {
    AppendQuoted(list, out);
  }
}

// Rows of CSV or JSON Lines on stdout, written in pieces of about 1 MiB.
//
// CSV: a header row of quoted names; a missing cell is empty, an empty
// string "" (strings are always quoted). A row that would be a blank line
// (one column, missing) is NA, which CSV readers also take as missing, as
// pcr-convert does; a blank line they skip.
// JSON Lines: one object per row, a missing column null; map features (named
// by their ids) inside "dense", "sparse" and "scored" objects as
// pcr-convert reads them, missing ones left out.
class RowsOut {
 public:
  RowsOut(bool json, std::vector<std::string> names, std::vector<const pcr::FeatureInfo*> maps)
      : json_(json), names_(std::move(names)), maps_(std::move(maps)) {
    if (json_) return;
    for (size_t j = 0; j < names_.size(); ++j) {
      if (j > 0) out_ += ',';
      AppendQuoted(names_[j], &out_);
    }
    out_ += '\n';
    row_start_ = out_.size();
  }

  // Cell j of the current row, which AppendValue (or the caller) writes
  // into the returned string; missing cells are not begun.
  std::string& Begin(size_t j) {
    Separate(j);
    if (json_) {
      Key(j);
    }
    return out_;
  }
  void Missing(size_t j) {
    if (!json_) {
      Separate(j);
      return;
    }
    if (maps_[j] != nullptr) return;
    Separate(j);
    Key(j);
    out_ += "null";
  }
  void EndRow() {
    if (json_) {
      if (open_map_ != nullptr) out_ += '}';
      out_ += row_start_ == out_.size() ? "{}" : "}";
    } else if (out_.size() == row_start_ && names_.size() == 1) {
      out_ += "NA";
    }
    out_ += '\n';
    open_map_ = nullptr;
    if (out_.size() > (1 << 20)) Flush();
    row_start_ = out_.size();
  }
  int Finish() {
    Flush();
    return std::fflush(stdout) == 0 ? pcr::cli::kExitOk : Fail(pcr::Status::IOError("cannot write stdout"));
  }

  // The JSON object a map feature of this type sits in; null for columns.
  static const char* MapOf(const pcr::FeatureInfo& f) {
    if (!f.has_id) return nullptr;
    if (f.type == pcr::FeatureType::kIdList || f.type == pcr::FeatureType::kUInt64IdList) return "sparse";
    if (f.type == pcr::FeatureType::kScoredIdList32 || f.type == pcr::FeatureType::kScoredIdList64) return "scored";
    return "dense";
  }

 private:
  void Separate(size_t j) {
    if (!json_) {
      if (j > 0) out_ += ',';
      return;
    }
    const char* map = maps_[j] != nullptr ? MapOf(*maps_[j]) : nullptr;
    if (map != open_map_ && open_map_ != nullptr) out_ += '}';
    out_ += out_.size() == row_start_ ? '{' : ',';
    if (map != nullptr && map != open_map_) {
      pcr::AppendJsonString(map, &out_);
      out_ += ":{";
    }
    open_map_ = map;
  }
  void Key(size_t j) {
    pcr::AppendJsonString(names_[j], &out_);
    out_ += ':';
  }
  // Writes the rows ended so far.
  void Flush() {
    std::fwrite(out_.data(), 1, out_.size(), stdout);
    out_.clear();
  }

  bool json_;
  std::vector<std::string> names_;
  std::vector<const pcr::FeatureInfo*> maps_;  // per column: its map feature, or null
  std::string out_;
  size_t row_start_ = 0;
  const char* open_map_ = nullptr;
};

// An image dataset's per-sample fields in sample order: `key`, `label`
// (missing when unlabelled) and the dataset's own fields (default: all).
// Only the streams of the fields named are read.
int CatImages(const std::string& path, const pcr::IoEngineOptions& io, const std::string& features_arg, bool json) {
  auto opened = pcr::ImageDataset::Open(path, {.io = io});
  if (!opened.ok()) return Fail(opened.status());
  const pcr::ImageDataset& ds = **opened;
  std::vector<std::string> names{"key", "label"};
  if (features_arg.empty()) {
    for (const pcr::FeatureInfo& f : ds.field_schema().features) names.push_back(f.name);
  } else {
    names = pcr::cli::SplitCommas(features_arg);
  }
  // column[j]: index into RecordBatch::fields, or -1 for key and -2 for label.
  std::vector<int64_t> column;
  pcr::RecordSelection selection;
  for (const std::string& n : names) {
    if (n == "key" || n == "label") {
      column.push_back(n == "key" ? -1 : -2);
      continue;
    }
    auto f = ds.ResolveFields({n});
    if (!f.ok()) return Fail(f.status().WithPrefix(path));
    column.push_back(static_cast<int64_t>(selection.fields.size()));
    selection.fields.push_back((*f)[0]);
  }
  RowsOut out(json, names, std::vector<const pcr::FeatureInfo*>(names.size()));
  for (uint64_t r = 0; r < ds.num_records(); ++r) {
    auto batches = ds.ReadRecordBatches({&r, 1}, selection);
    if (!batches.ok()) return Fail(batches.status());
    const pcr::RecordBatch& b = (*batches)[0];
    for (const pcr::ImageView& image : b.images) {
      for (size_t j = 0; j < names.size(); ++j) {
        if (column[j] == -1) {
          std::string& cell = out.Begin(j);
          if (json) {
            pcr::AppendJsonString(image.key, &cell);
          } else {
            AppendQuoted(image.key, &cell);
          }
        } else if (column[j] == -2) {
          if (image.label >= 0) {
            out.Begin(j) += std::to_string(image.label);
          } else {
            out.Missing(j);
          }
        } else {
          const pcr::Column& c = b.fields[static_cast<size_t>(column[j])];
          if (c.present[image.row]) {
            AppendValue(c, image.row, json, &out.Begin(j));
          } else {
            out.Missing(j);
          }
        }
      }
      out.EndRow();
    }
  }
  return out.Finish();
}

int Cat(const std::string& path, const pcr::IoEngineOptions& io, const std::string& features_arg, bool json,
        const std::string& access_log) {
  const pcr::Result<bool> table = pcr::IsTablePath(path, io);
  if (!table.ok()) return Fail(table.status());
  if (!*table) {
    if (!access_log.empty()) return Usage("--access-log applies to tables; " + path + " is an image dataset");
    return CatImages(path, io, features_arg, json);
  }
  auto opened = pcr::Table::Open(path, {.io = io, .access_log = access_log.empty() ? nullptr : pcr::FileAccessLog(access_log)});
  if (!opened.ok()) return Fail(opened.status());
  pcr::Table& t = **opened;
  std::vector<uint32_t> features;
  if (features_arg.empty()) {
    for (uint32_t f = 0; f < t.schema().features.size(); ++f) features.push_back(f);
  } else {
    auto resolved = t.Resolve(pcr::cli::SplitCommas(features_arg));
    if (!resolved.ok()) return Fail(resolved.status());
    features = std::move(resolved).value();
  }
  for (size_t j = 0; j < features.size(); ++j) {
    if (std::find(features.begin(), features.begin() + j, features[j]) != features.begin() + j) {
      return Usage("--features names '" + t.schema().features[features[j]].name + "' twice");
    }
  }
  std::vector<std::string> names;
  std::vector<const pcr::FeatureInfo*> maps;
  for (const uint32_t f : features) {
    const pcr::FeatureInfo& info = t.schema().features[f];
    names.push_back(info.name);
    maps.push_back(info.has_id ? &info : nullptr);
  }
  if (json) {
    // Columns first, then each map's features together.
    std::vector<size_t> order(features.size());
    for (size_t j = 0; j < order.size(); ++j) order[j] = j;
    auto rank = [&](size_t j) {
      const char* map = maps[j] != nullptr ? RowsOut::MapOf(*maps[j]) : "";
      return std::string(map);
    };
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return rank(a) < rank(b); });
    std::vector<uint32_t> f2;
    std::vector<std::string> n2;
    std::vector<const pcr::FeatureInfo*> m2;
    for (const size_t j : order) {
      f2.push_back(features[j]);
      n2.push_back(names[j]);
      m2.push_back(maps[j]);
    }
    features = std::move(f2);
    names = std::move(n2);
    maps = std::move(m2);
  }
  RowsOut out(json, names, maps);
  for (size_t s = 0; s < t.stripe_count(); ++s) {
    auto batch = t.Read(features, s, 1);
    if (!batch.ok()) return Fail(batch.status());
    for (uint64_t r = 0; r < batch->rows; ++r) {
      for (size_t j = 0; j < features.size(); ++j) {
        const pcr::Column& c = batch->columns[j];
        if (c.present[r]) {
          AppendValue(c, r, json, &out.Begin(j));
        } else {
          out.Missing(j);
        }
      }
      out.EndRow();
    }
  }
  return out.Finish();
}

// Counts the access logs' lines of one table: `table`'s, or else the one
// table the logs name.
int Popularity(const std::vector<std::string>& logs, const std::string& table, const pcr::IoEngineOptions& io) {
  auto count = pcr::CountAccessLogs(logs, table, io, pcr::cli::kOptionNames);
  if (!count.ok()) return Fail(count.status());
  for (const auto& [other, lines] : count->skipped) {
    std::fprintf(stderr, "pcr-dump: skipped %llu line(s) of another table: %s\n",
                 static_cast<unsigned long long>(lines), other.c_str());
  }
  std::fputs(pcr::FormatPopularityFile(*count).c_str(), stdout);
  return pcr::cli::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  pcr::cli::Args args(argc, argv);
  if (args.empty()) return Usage("");
  const auto io = pcr::cli::IoOptionsFromEnvironment();
  if (!io.ok()) return Fail(io.status());
  std::string first = args.next();
  if (first == "--version") {
    std::printf("pcr-dump %s\n", PCR_VERSION_STRING);
    return pcr::cli::kExitOk;
  }
  if (first == "--help" || first == "-h" || args.WantsHelp()) {
    std::fputs(kUsage, stdout);
    return pcr::cli::kExitOk;
  }
  if (first == "verify") {
    if (args.empty()) return Usage("verify needs PATH");
    const std::string path = args.next();
    if (!args.empty()) return Usage("unexpected argument " + args.peek());
    return Verify(path, *io);
  }
  if (first == "schema") {
    if (args.empty()) return Usage("schema needs PATH");
    const std::string path = args.next();
    if (!args.empty()) return Usage("unexpected argument " + args.peek());
    if (fs::exists(path)) {
      if (const auto table = pcr::IsTablePath(path, *io); table.ok() && !*table) return Usage("schema needs a table");
    }
    return TableSchemaFile(path, *io);
  }
  if (first == "streams") {
    if (args.empty()) return Usage("streams needs PATH");
    const std::string path = args.next();
    if (!args.empty()) return Usage("unexpected argument " + args.peek());
    if (fs::exists(path)) {
      if (const auto table = pcr::IsTablePath(path, *io); table.ok() && !*table) return Usage("streams needs a table");
    }
    return TableStreams(path, *io);
  }
  if (first == "cat") {
    std::string path, features, format = "csv", access_log;
    while (!args.empty()) {
      const std::string a = args.next();
      if (a == "--features" || a == "--format" || a == "--access-log") {
        if (args.empty()) return Usage(a + " needs a value");
        (a == "--features" ? features : a == "--format" ? format : access_log) = args.next();
      } else if (a.starts_with("--") || !path.empty()) {
        return Usage("unexpected argument " + a);
      } else {
        path = a;
      }
    }
    if (path.empty()) return Usage("cat needs PATH");
    if (format != "csv" && format != "jsonl") return Usage("unknown format " + format + " (csv or jsonl)");
    return Cat(path, *io, features, format == "jsonl", access_log);
  }
  if (first == "popularity") {
    std::vector<std::string> logs;
    std::string table;
    while (!args.empty()) {
      const std::string a = args.next();
      if (a == "--table") {
        if (args.empty()) return Usage("--table needs a value");
        table = args.next();
      } else if (a.starts_with("--")) {
        return Usage("unexpected argument " + a);
      } else {
        logs.push_back(a);
      }
    }
    if (logs.empty()) return Usage("popularity needs at least one LOG");
    return Popularity(logs, table, *io);
  }
  if (first == "extract") {
    std::vector<std::string> positional;
    std::string fidelity;
    std::optional<bool> metadata;
    while (!args.empty()) {
      const std::string a = args.next();
      if (a == "--fidelity") {
        if (args.empty()) return Usage("--fidelity needs a value");
        fidelity = args.next();
      } else if (a == "--metadata" || a == "--no-metadata") {
        metadata = a == "--metadata";
      } else if (a.starts_with("--")) {
        return Usage("unknown option " + a);
      } else {
        positional.push_back(a);
      }
    }
    if (positional.size() != 2 || fidelity.empty()) {
      return Usage("extract needs PATH OUT_DIR --fidelity K");
    }
    return Extract(positional[0], *io, positional[1], fidelity, metadata);
  }
  bool json = false, quality = false;
  uint64_t sample = 100;
  while (!args.empty()) {
    const std::string a = args.next();
    if (a == "--json") {
      json = true;
    } else if (a == "--quality") {
      quality = true;
    } else if (a == "--sample") {
      if (args.empty() || !pcr::cli::ParseUint(args.next(), &sample) || sample == 0) {
        return Usage("--sample needs a positive count");
      }
    } else {
      return Usage("unexpected argument " + a);
    }
  }
  return Summary(first, *io, json, quality ? std::optional<uint64_t>(sample) : std::nullopt);
}
