// pcr-convert: datasets in.
#include <cstdio>
#include <string>

#include "tools/cli.h"
#include "writer/image_converter.h"

namespace {

constexpr char kUsage[] =
    "usage: pcr-convert images SRC_DIR OUT_DIR [--list FILE] [--images-per-record N]\n"
    "                          [--records-per-file N] [--jobs N] [--scan-script NAME|FILE]\n"
    "                          [--strip-metadata] [--skip-bad] [--shuffle SEED]\n"
    "\n"
    "  SRC_DIR/<class>/<image>.jpg; label = index of <class> in sorted order.\n"
    "  --list FILE          CSV lines \"path,label\", paths relative to SRC_DIR\n"
    "  --images-per-record  images per record (default 1024)\n"
    "  --records-per-file   records per .pcr file (default 1)\n"
    "  --jobs N             transcoding threads (default: all cores)\n"
    "  --scan-script        spectral (default), libjpeg, or a script file\n"
    "  --strip-metadata     drop APPn/COM segments (EXIF, ICC profiles)\n"
    "  --skip-bad           skip files that cannot be converted; list them in OUT_DIR/skipped.tsv\n"
    "  --shuffle SEED       write images in a shuffled order\n";

int Usage(const std::string& why) {
  if (!why.empty()) std::fprintf(stderr, "pcr-convert: %s\n", why.c_str());
  std::fputs(kUsage, stderr);
  return pcr::cli::kExitUsage;
}

int ConvertImagesCommand(pcr::cli::Args& args) {
  pcr::ConvertImagesOptions o;
  std::vector<std::string> positional;
  while (!args.empty()) {
    const std::string a = args.next();
    auto value = [&](std::string* out) {
      if (args.empty()) return false;
      *out = args.next();
      return true;
    };
    auto number = [&](uint64_t* out) {
      std::string v;
      return value(&v) && pcr::cli::ParseUint(v, out);
    };
    uint64_t n = 0;
    if (a == "--list") {
      if (!value(&o.list_file)) return Usage("--list needs a file");
    } else if (a == "--images-per-record") {
      if (!number(&o.images_per_record) || o.images_per_record == 0) {
        return Usage("--images-per-record needs a positive integer");
      }
    } else if (a == "--records-per-file") {
      if (!number(&o.records_per_file) || o.records_per_file == 0) {
        return Usage("--records-per-file needs a positive integer");
      }
    } else if (a == "--jobs") {
      if (!number(&n) || n == 0 || n > 1024) return Usage("--jobs needs an integer in 1..1024");
      o.jobs = static_cast<int>(n);
    } else if (a == "--scan-script") {
      if (!value(&o.scan_script)) return Usage("--scan-script needs a name or file");
    } else if (a == "--strip-metadata") {
      o.strip_metadata = true;
    } else if (a == "--skip-bad") {
      o.skip_bad = true;
    } else if (a == "--shuffle") {
      if (!number(&n)) return Usage("--shuffle needs an integer seed");
      o.shuffle_seed = n;
    } else if (a.starts_with("--")) {
      return Usage("unknown option " + a);
    } else {
      positional.push_back(a);
    }
  }
  if (positional.size() != 2) return Usage("images needs SRC_DIR and OUT_DIR");
  o.src_dir = positional[0];
  o.out_dir = positional[1];
  pcr::cli::Progress progress;
  o.progress = [&](uint64_t done, uint64_t total) {
    progress.Update("converted " + std::to_string(done) + "/" + std::to_string(total) + " images");
  };
  auto result = pcr::ConvertImages(o);
  progress.Finish();
  if (!result.ok()) return pcr::cli::ReportError("pcr-convert", result.status());
  const auto& s = *result;
  std::printf("%llu images in %llu records (%llu files), %llu bytes from %llu input bytes (%.3f)\n",
              static_cast<unsigned long long>(s.images), static_cast<unsigned long long>(s.records),
              static_cast<unsigned long long>(s.files), static_cast<unsigned long long>(s.output_bytes),
              static_cast<unsigned long long>(s.input_bytes),
              s.input_bytes ? static_cast<double>(s.output_bytes) / s.input_bytes : 0.0);
  if (!s.skipped.empty()) {
    std::fprintf(stderr, "pcr-convert: skipped %zu files, listed in %s/%s\n", s.skipped.size(),
                 o.out_dir.c_str(), pcr::kSkippedListName);
  }
  return pcr::cli::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  pcr::cli::Args args(argc, argv);
  if (args.empty()) return Usage("");
  const std::string command = args.next();
  if (command == "images") return ConvertImagesCommand(args);
  if (command == "--help" || command == "-h") {
    std::fputs(kUsage, stdout);
    return pcr::cli::kExitOk;
  }
  return Usage("unknown command '" + command + "'");
}
