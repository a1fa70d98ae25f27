// pcr-dump: inspect, verify and extract pcr files and datasets.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "reader/image_dataset.h"
#include "reader/verify.h"
#include "tools/cli.h"

namespace {

namespace fs = std::filesystem;
using pcr::cli::Json;

constexpr char kUsage[] =
    "usage: pcr-dump PATH [--json]                      summary of a file or dataset directory\n"
    "       pcr-dump verify PATH                        check every checksum\n"
    "       pcr-dump extract PATH OUT_DIR --fidelity K  write every image as OUT_DIR/<key>\n"
    "                                                   at scan group K (1..L or full)\n";

int Usage(const std::string& why) {
  if (!why.empty()) std::fprintf(stderr, "pcr-dump: %s\n", why.c_str());
  std::fputs(kUsage, stderr);
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
      std::printf("  @%-10llu   stream %zu  %-9s %10llu bytes  xxh3 %016llx\n",
                  static_cast<unsigned long long>(stripe.stream_offset(k)), k,
                  k == 0 ? "metadata" : ("group " + std::to_string(k)).c_str(),
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

int Summary(const std::string& path, bool json) {
  auto opened = pcr::ImageDataset::Open(path);
  if (!opened.ok()) return Fail(opened.status());
  const pcr::ImageDataset& ds = **opened;
  const std::vector<uint64_t> bytes = ds.StreamBytes();
  uint64_t total = 0;
  for (uint64_t b : bytes) total += b;
  uint64_t file_bytes = 0;
  for (const auto& f : ds.files()) file_bytes += f->size();
  const uint64_t n = ds.num_images();

  if (json) {
    Json j;
    j.BeginObject()
        .Key("path").String(path)
        .Key("images").Uint(n)
        .Key("records").Uint(ds.num_records())
        .Key("files").Uint(ds.files().size())
        .Key("scan_groups").Uint(ds.num_scan_groups())
        .Key("scan_script").String(ds.scan_script().name)
        .Key("classes").Uint(ds.class_names().size())
        .Key("metadata_bytes").Uint(bytes[0])
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
          .Key("cumulative_fraction").Double(Ratio(cumulative, total))
          .EndObject();
    }
    j.EndArray().EndObject();
    std::printf("%s\n", j.str().c_str());
    return pcr::cli::kExitOk;
  }
  std::printf("%s\n", path.c_str());
  std::printf("  images       %llu\n", static_cast<unsigned long long>(n));
  std::printf("  records      %llu in %zu files, %llu bytes\n",
              static_cast<unsigned long long>(ds.num_records()), ds.files().size(),
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
  if (ds.files().size() == 1) {
    PrintStructure(*ds.files()[0]);
  } else {
    std::printf("\n  %-24s %12s %8s %8s\n", "file", "bytes", "images", "records");
    for (const auto& f : ds.files()) {
      uint64_t images = 0;
      for (const auto& s : f->index().stripes) images += s.image_count;
      std::printf("  %-24s %12llu %8llu %8zu\n", fs::path(f->path()).filename().c_str(),
                  static_cast<unsigned long long>(f->size()), static_cast<unsigned long long>(images),
                  f->index().stripes.size());
    }
  }
  return pcr::cli::kExitOk;
}

int Verify(const std::string& path) {
  const pcr::VerifyReport r = pcr::VerifyPath(path);
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

int Extract(const std::string& path, const std::string& out_dir, const std::string& fidelity_arg) {
  auto opened = pcr::ImageDataset::Open(path);
  if (!opened.ok()) return Fail(opened.status());
  const pcr::ImageDataset& ds = **opened;
  uint64_t k = 0;
  if (fidelity_arg == "full") {
    k = static_cast<uint64_t>(ds.num_scan_groups());
  } else if (!pcr::cli::ParseUint(fidelity_arg, &k) || k < 1 ||
             k > static_cast<uint64_t>(ds.num_scan_groups())) {
    return Usage("--fidelity must be 1.." + std::to_string(ds.num_scan_groups()) + " or full");
  }
  pcr::cli::Progress progress;
  uint64_t written = 0;
  for (uint64_t r = 0; r < ds.num_records(); ++r) {
    auto images = ds.ReadRecord(r, static_cast<int>(k));
    if (!images.ok()) return Fail(images.status());
    for (const pcr::Image& img : *images) {
      if (!SafeKey(img.key)) {
        return Fail(pcr::Status::Corruption(path + ": image key '" + img.key +
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

}  // namespace

int main(int argc, char** argv) {
  pcr::cli::Args args(argc, argv);
  if (args.empty()) return Usage("");
  std::string first = args.next();
  if (first == "--help" || first == "-h") {
    std::fputs(kUsage, stdout);
    return pcr::cli::kExitOk;
  }
  if (first == "verify") {
    if (args.empty()) return Usage("verify needs PATH");
    const std::string path = args.next();
    if (!args.empty()) return Usage("unexpected argument " + args.peek());
    return Verify(path);
  }
  if (first == "extract") {
    std::vector<std::string> positional;
    std::string fidelity;
    while (!args.empty()) {
      const std::string a = args.next();
      if (a == "--fidelity") {
        if (args.empty()) return Usage("--fidelity needs a value");
        fidelity = args.next();
      } else if (a.starts_with("--")) {
        return Usage("unknown option " + a);
      } else {
        positional.push_back(a);
      }
    }
    if (positional.size() != 2 || fidelity.empty()) {
      return Usage("extract needs PATH OUT_DIR --fidelity K");
    }
    return Extract(positional[0], positional[1], fidelity);
  }
  bool json = false;
  while (!args.empty()) {
    const std::string a = args.next();
    if (a == "--json") {
      json = true;
    } else {
      return Usage("unexpected argument " + a);
    }
  }
  return Summary(first, json);
}
