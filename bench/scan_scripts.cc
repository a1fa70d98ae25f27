// Compares scan scripts on sets of real photos: for each image and script,
// the transcoded size per scan group and the full-fidelity decode time
// against the original file's decode time (both RGB, best of --repeat runs,
// interleaved so machine noise hits both alike). Prints, per set and over all
// sets, the medians over images that the default script must meet.
//
// usage: scan_scripts DIR... --script NAME|FILE... [--max-images N] [--repeat R]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "pcr/decode.h"
#include "pcr/convert.h"
#include "writer/transcode.h"

namespace fs = std::filesystem;

namespace {

struct ImageResult {
  std::vector<double> group_fraction;  // cumulative size of groups 1..k over the full size
  double size_ratio = 0;               // full size over the original file's size
  double decode_ratio = 0;             // original decode time over full-fidelity decode time
};

struct SetResult {
  std::string name;
  uint64_t original_bytes = 0;
  std::vector<uint64_t> full_bytes;                // per script
  std::vector<std::vector<ImageResult>> images;  // [script][image]
};

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::vector<fs::path> ListJpegs(const std::string& dir, size_t max_images) {
  std::vector<fs::path> all;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    std::string ext = e.path().extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), ::tolower);
    if (e.is_regular_file() && (ext == ".jpg" || ext == ".jpeg")) all.push_back(e.path());
  }
  std::sort(all.begin(), all.end());
  if (max_images == 0 || all.size() <= max_images) return all;
  std::vector<fs::path> picked;  // evenly spaced, so every class folder is sampled
  for (size_t i = 0; i < max_images; ++i) picked.push_back(all[i * all.size() / max_images]);
  return picked;
}

// One RGB decode's time in seconds (the header read excluded), or a negative
// value on error.
double DecodeSeconds(pcr::JpegDecoder& decoder, pcr::ByteSpan jpeg, std::vector<uint8_t>& buffer) {
  const pcr::DecodeOptions options{.format = pcr::PixelFormat::kRgb, .warnings_are_errors = false};
  auto shape = decoder.Shape(jpeg, options);
  if (!shape.ok()) return -1;
  if (buffer.size() < shape->bytes()) buffer.resize(shape->bytes());
  const auto start = std::chrono::steady_clock::now();
  if (!decoder.Decode(jpeg, options, buffer).ok()) return -1;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

pcr::Bytes ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return pcr::Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

SetResult MeasureSet(const std::string& dir, const std::vector<pcr::ScanScript>& scripts, size_t max_images,
                     int repeat) {
  SetResult set;
  set.name = fs::path(dir).filename().string();
  if (set.name.empty()) set.name = fs::path(dir).parent_path().filename().string();
  set.full_bytes.assign(scripts.size(), 0);
  set.images.resize(scripts.size());
  pcr::JpegDecoder decoder;
  std::vector<uint8_t> buffer;
  for (const fs::path& path : ListJpegs(dir, max_images)) {
    const pcr::Bytes original = ReadFile(path);
    if (original.empty() || DecodeSeconds(decoder, original, buffer) < 0 || decoder.Shape(original)->components != 3) {
      continue;  // the comparison is over colour photos libjpeg-turbo decodes
    }
    std::vector<pcr::Bytes> full(scripts.size());
    std::vector<ImageResult> results(scripts.size());
    bool ok = true;
    for (size_t s = 0; s < scripts.size(); ++s) {
      auto t = pcr::TranscodeToScanGroups(original, scripts[s]);
      if (!t.ok()) {
        ok = false;
        break;
      }
      full[s] = t->AtFidelity(static_cast<int>(t->chunks.size()));
      uint64_t cumulative = 0;
      for (const pcr::Bytes& chunk : t->chunks) {
        cumulative += chunk.size();
        results[s].group_fraction.push_back(static_cast<double>(cumulative));
      }
      for (double& f : results[s].group_fraction) f /= static_cast<double>(full[s].size());
      results[s].size_ratio = static_cast<double>(full[s].size()) / static_cast<double>(original.size());
    }
    if (!ok) continue;
    std::vector<double> best_original(scripts.size(), 1e30), best_full(scripts.size(), 1e30);
    for (int r = 0; r < repeat; ++r) {
      for (size_t s = 0; s < scripts.size(); ++s) {
        best_original[s] = std::min(best_original[s], DecodeSeconds(decoder, original, buffer));
        best_full[s] = std::min(best_full[s], DecodeSeconds(decoder, full[s], buffer));
      }
    }
    set.original_bytes += original.size();
    for (size_t s = 0; s < scripts.size(); ++s) {
      results[s].decode_ratio = best_original[s] / best_full[s];
      set.full_bytes[s] += full[s].size();
      set.images[s].push_back(std::move(results[s]));
    }
  }
  return set;
}

void Print(const SetResult& set, const std::vector<pcr::ScanScript>& scripts) {
  const size_t n = set.images.empty() ? 0 : set.images[0].size();
  std::printf("\n%s: %zu images, %.1f kB per image\n\n", set.name.c_str(), n,
              n ? static_cast<double>(set.original_bytes) / n / 1000 : 0.0);
  std::printf("| script | groups | group 1 / full | full / original | dataset / originals | full decode vs original | targets | cumulative size of groups 1..L |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  for (size_t s = 0; s < scripts.size(); ++s) {
    std::vector<double> g1, size, decode;
    for (const ImageResult& r : set.images[s]) {
      g1.push_back(r.group_fraction.front());
      size.push_back(r.size_ratio);
      decode.push_back(r.decode_ratio);
    }
    const double dataset = set.original_bytes ? static_cast<double>(set.full_bytes[s]) / set.original_bytes : 0;
    const bool meets = scripts[s].group_count() >= 5 && Median(g1) <= 0.15 && Median(size) <= 1.0 &&
                       dataset <= 1.0 && Median(decode) >= 0.7;
    std::string ladder;
    for (int k = 0; k < scripts[s].group_count(); ++k) {
      std::vector<double> fk;
      for (const ImageResult& r : set.images[s]) fk.push_back(r.group_fraction[k]);
      char cell[16];
      std::snprintf(cell, sizeof(cell), "%s%.2f", k ? " " : "", Median(fk));
      ladder += cell;
    }
    std::printf("| %s | %d | %.3f | %.3f | %.3f | %.3f | %s | %s |\n", scripts[s].name.c_str(),
                scripts[s].group_count(), Median(g1), Median(size), dataset, Median(decode),
                meets ? "met" : "missed", ladder.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> dirs, script_names;
  size_t max_images = 0;
  int repeat = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--script" && i + 1 < argc) script_names.push_back(argv[++i]);
    else if (a == "--max-images" && i + 1 < argc) max_images = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--repeat" && i + 1 < argc) repeat = std::max(1, std::atoi(argv[++i]));
    else dirs.push_back(a);
  }
  if (dirs.empty() || script_names.empty()) {
    std::fprintf(stderr, "usage: scan_scripts DIR... --script NAME|FILE... [--max-images N] [--repeat R]\n");
    return 2;
  }
  std::vector<pcr::ScanScript> scripts;
  for (const std::string& name : script_names) {
    auto script = pcr::LoadScanScript(name);
    if (!script.ok()) {
      std::fprintf(stderr, "scan_scripts: %s\n", script.status().ToString().c_str());
      return 1;
    }
    scripts.push_back(*std::move(script));
  }
  SetResult all{.name = "all sets"};
  all.full_bytes.assign(scripts.size(), 0);
  all.images.resize(scripts.size());
  for (const std::string& dir : dirs) {
    SetResult set = MeasureSet(dir, scripts, max_images, repeat);
    Print(set, scripts);
    all.original_bytes += set.original_bytes;
    for (size_t s = 0; s < scripts.size(); ++s) {
      all.full_bytes[s] += set.full_bytes[s];
      for (ImageResult& r : set.images[s]) all.images[s].push_back(std::move(r));
    }
  }
  if (dirs.size() > 1) Print(all, scripts);
  return 0;
}
