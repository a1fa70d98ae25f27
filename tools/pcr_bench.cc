// pcr-bench: benchmarks that print one JSON object.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "reader/image_dataset.h"
#include "reader/jpeg_decode.h"
#include "tools/cli.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr char kUsage[] =
    "usage: pcr-bench decode PATH [--src SRC_DIR] [--min-seconds S] [--scale 1|2|4|8]\n"
    "  Decodes every image of PATH at each fidelity on one core, and with --src the\n"
    "  original JPEGs (SRC_DIR/<key>) in the same run; prints images/s and ratios.\n";

int Usage(const std::string& why) {
  if (!why.empty()) std::fprintf(stderr, "pcr-bench: %s\n", why.c_str());
  std::fputs(kUsage, stderr);
  return pcr::cli::kExitUsage;
}

// Decodes all `images` repeatedly for at least min_seconds; images per second.
pcr::Result<double> DecodeRate(const std::vector<pcr::Bytes>& images, int scale, double min_seconds) {
  uint64_t decoded = 0;
  const auto start = Clock::now();
  double elapsed = 0;
  do {
    for (const pcr::Bytes& jpeg : images) {
      auto img = pcr::DecodeJpeg(jpeg, {.scale_denom = scale, .warnings_are_errors = false});
      if (!img.ok()) return img.status();
      ++decoded;
    }
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  } while (elapsed < min_seconds);
  return decoded / elapsed;
}

int Decode(const std::string& path, const std::string& src, double min_seconds, int scale) {
  auto opened = pcr::ImageDataset::Open(path);
  if (!opened.ok()) return pcr::cli::ReportError("pcr-bench", opened.status());
  const pcr::ImageDataset& ds = **opened;
  pcr::cli::Json j;
  j.BeginObject().Key("bench").String("decode").Key("images").Uint(ds.num_images());
  j.Key("scan_script").String(ds.scan_script().name).Key("scale_denom").Uint(scale);

  double baseline = 0;
  if (!src.empty()) {
    std::vector<pcr::Bytes> originals;
    uint64_t bytes = 0;
    for (uint64_t i = 0; i < ds.num_images(); ++i) {
      const fs::path p = fs::path(src) / ds.sample(i).key;
      std::ifstream in(p, std::ios::binary);
      if (!in) return pcr::cli::ReportError("pcr-bench", pcr::Status::IOError(p.string() + ": cannot open"));
      originals.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      bytes += originals.back().size();
    }
    auto rate = DecodeRate(originals, scale, min_seconds);
    if (!rate.ok()) return pcr::cli::ReportError("pcr-bench", rate.status());
    baseline = *rate;
    j.Key("baseline").BeginObject().Key("bytes").Uint(bytes).Key("images_per_s").Double(baseline).EndObject();
  }
  j.Key("fidelity").BeginArray();
  for (int k = 1; k <= ds.num_scan_groups(); ++k) {
    std::vector<pcr::Bytes> jpegs;
    uint64_t bytes = 0;
    for (uint64_t r = 0; r < ds.num_records(); ++r) {
      auto images = ds.ReadRecord(r, k);
      if (!images.ok()) return pcr::cli::ReportError("pcr-bench", images.status());
      for (pcr::Image& img : *images) {
        bytes += img.jpeg.size();
        jpegs.push_back(std::move(img.jpeg));
      }
    }
    auto rate = DecodeRate(jpegs, scale, min_seconds);
    if (!rate.ok()) return pcr::cli::ReportError("pcr-bench", rate.status());
    j.BeginObject().Key("k").Uint(k).Key("bytes").Uint(bytes).Key("images_per_s").Double(*rate);
    if (baseline > 0) j.Key("vs_baseline").Double(*rate / baseline);
    j.EndObject();
  }
  j.EndArray().EndObject();
  std::printf("%s\n", j.str().c_str());
  return pcr::cli::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  pcr::cli::Args args(argc, argv);
  if (args.empty()) return Usage("");
  const std::string command = args.next();
  if (command != "decode") return Usage("unknown command '" + command + "'");
  std::string path, src;
  double min_seconds = 1.0;
  uint64_t scale = 1;
  while (!args.empty()) {
    const std::string a = args.next();
    if (a == "--src" && !args.empty()) {
      src = args.next();
    } else if (a == "--min-seconds" && !args.empty()) {
      min_seconds = std::atof(args.next().c_str());
    } else if (a == "--scale" && !args.empty()) {
      if (!pcr::cli::ParseUint(args.next(), &scale) || (scale != 1 && scale != 2 && scale != 4 && scale != 8)) {
        return Usage("--scale must be 1, 2, 4 or 8");
      }
    } else if (a.starts_with("--") || !path.empty()) {
      return Usage("unexpected argument " + a);
    } else {
      path = a;
    }
  }
  if (path.empty()) return Usage("decode needs PATH");
  return Decode(path, src, min_seconds, static_cast<int>(scale));
}
