// pcr-bench: benchmarks that print one JSON object. Over 700 lines: one
// function per benchmark and one per argument parser.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "jpeg/coefficients.h"
#include "pcr/decode.h"
#include "pcr/decode_iterator.h"
#include "pcr/record_iterator.h"
#include "pcr/version.h"
#include "reader/inspect.h"
#include "tools/cli.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using pcr::cli::Json;

double Ratio(uint64_t a, uint64_t b) { return b == 0 ? 0.0 : static_cast<double>(a) / b; }

constexpr char kUsage[] =
    "usage: pcr-bench decode PATH [--fidelity K|full|all] [--src SRC_DIR] [--scale 1/N]\n"
    "                 [--decoder auto|pcr|libjpeg] [--threads N] [--min-seconds S] [--rounds R]\n"
    "         Decodes every image of PATH at fidelity K (default: each in turn) on N\n"
    "         threads with the decoder asked for (default auto), and with --src the\n"
    "         original JPEGs (SRC_DIR/<key>) with libjpeg-turbo in the same run on as\n"
    "         many threads; R rounds (default 3) each decode every set in turn and the\n"
    "         best round counts. Prints images/s, the ratio to the originals and, per\n"
    "         fidelity, how many images pcr's decoder handed to libjpeg-turbo and how\n"
    "         many decode differently with the other decoder (pcr's or libjpeg-turbo);\n"
    "         exits 1 if any do.\n"
    "       pcr-bench coefficients PATH --src SRC_DIR [--threads N] [--rounds R] [--min-seconds S]\n"
    "         Decodes the coefficients of every image of PATH at full fidelity with\n"
    "         pcr's entropy decoder and with libjpeg-turbo's jpeg_read_coefficients,\n"
    "         compares them block by block, and times both and jpeg_read_coefficients\n"
    "         on the original JPEGs (SRC_DIR/<key>) over the images pcr's decoder\n"
    "         handles; the best of R rounds counts. Exits 1 if any image mismatches.\n"
    "       pcr-bench read PATH --fidelity K|full [--engine uring|pread] [--direct]\n"
    "                 [--queue-depth N] [--mode records|random] [--count N] [--seed S]\n"
    "                 [--records-in-flight N] [--max-mbps N] [--threads N] [--fields A,B,...]\n"
    "         Reads the dataset (records: every record through the read-ahead iterator,\n"
    "         with --fields also those fields' streams, and --fidelity 0 the fields alone;\n"
    "         random: --count single images in batches of --queue-depth, on N threads\n"
    "         sharing the dataset) without decoding.\n"
    "       pcr-bench read-files PATH... [--direct] [--max-mbps N]\n"
    "         Reads every file under PATH whole with sequential read() calls, as a\n"
    "         TFRecord reader does.\n"
    "       pcr-bench table PATH (--features A,B,...|--features-file FILE) [--hole-limit BYTES]\n"
    "                 [--engine uring|pread] [--direct] [--stripes-per-read N]\n"
    "         Opens a table and reads the projection from every stripe on one thread,\n"
    "         decoding it into columns. FILE holds one feature name per line.\n"
    "       pcr-bench loop PATH [--fidelity K|full] [--threads N] [--records-ahead R]\n"
    "                 [--step-ms MS] [--records N]\n"
    "         A training loop over the decode iterator (RGB, N decoding threads): each\n"
    "         record is followed by a step of MS milliseconds asleep, as on an\n"
    "         accelerator. Prints the time the loop waited inside Next(): for the\n"
    "         first record, and as a share of the time after it.\n"
    "  Each prints one JSON object.\n";

// The usage, or with `why`, why and where the usage is.
int Usage(const std::string& why) {
  if (why.empty()) {
    std::fputs(kUsage, stderr);
  } else {
    std::fprintf(stderr, "pcr-bench: %s\n(pcr-bench --help gives the usage)\n", why.c_str());
  }
  return pcr::cli::kExitUsage;
}

// Runs decode(image, thread) over all `images` repeatedly for at least
// min_seconds on `threads` threads; images per second, or the first failure.
template <typename Decode>
pcr::Result<double> Rate(const std::vector<pcr::Bytes>& images, double min_seconds, int threads, Decode decode) {
  std::atomic<uint64_t> done{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  pcr::Status error;
  const auto start = Clock::now();
  auto work = [&](int t) {
    do {
      for (size_t i = static_cast<size_t>(t); i < images.size() && !failed; i += static_cast<size_t>(threads)) {
        pcr::Status s = decode(images[i], t, i);
        if (!s.ok()) {
          std::lock_guard lock(mu);
          error = std::move(s);
          failed = true;
          return;
        }
        done++;
      }
    } while (!failed && std::chrono::duration<double>(Clock::now() - start).count() < min_seconds);
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(work, t);
  for (std::thread& th : pool) th.join();
  if (failed) return error;
  return done / std::chrono::duration<double>(Clock::now() - start).count();
}

// Decodes all `images` repeatedly for at least min_seconds on `threads`
// threads, each with its own reused decoder and buffer; images per second.
// A decode error is prefixed with names[i], what image i is.
pcr::Result<double> DecodeRate(const std::vector<pcr::Bytes>& images, const std::vector<std::string>& names,
                               int scale, pcr::DecoderChoice decoder, double min_seconds, int threads) {
  std::vector<std::unique_ptr<pcr::JpegDecoder>> decoders;
  for (int t = 0; t < threads; ++t) decoders.push_back(std::make_unique<pcr::JpegDecoder>());
  std::vector<std::vector<uint8_t>> buffers(static_cast<size_t>(threads));
  const pcr::DecodeOptions options{.scale_denom = scale, .warnings_are_errors = false, .decoder = decoder};
  return Rate(images, min_seconds, threads, [&](const pcr::Bytes& jpeg, int t, size_t i) {
    pcr::JpegDecoder& decoder = *decoders[static_cast<size_t>(t)];
    std::vector<uint8_t>& buffer = buffers[static_cast<size_t>(t)];
    auto shape = decoder.Shape(jpeg, options);
    if (shape.ok()) {
      if (buffer.size() < shape->bytes()) buffer.resize(shape->bytes());
      shape = decoder.Decode(jpeg, options, buffer);
    }
    return shape.ok() ? pcr::Status::OK() : shape.status().WithPrefix(names[i]);
  });
}

struct DecodeArgs {
  std::string path;
  std::string src;
  std::string fidelity = "all";
  double min_seconds = 1.0;
  int scale = 1;
  std::string decoder = "auto";
  pcr::DecoderChoice decoder_choice = pcr::DecoderChoice::kAuto;
  int threads = 1;
  int rounds = 3;
  pcr::IoEngineOptions io;
};

int Decode(const DecodeArgs& a) {
  auto opened = pcr::ImageDataset::Open(a.path, {.io = a.io});
  if (!opened.ok()) return pcr::cli::ReportError("pcr-bench", opened.status());
  const pcr::ImageDataset& ds = **opened;
  int first = 1, last = ds.num_scan_groups();
  if (a.fidelity != "all") {
    int fidelity = 0;
    if (!pcr::ParseFidelity(a.fidelity, last, false, &fidelity)) {
      return Usage("--fidelity must be 1.." + std::to_string(last) + ", full or all");
    }
    first = last = ds.ScanGroups(fidelity);
  }
  Json j;
  j.BeginObject().Key("bench").String("decode").Key("images").Uint(ds.num_images());
  j.Key("scan_script").String(ds.scan_script().name).Key("scale_denom").Uint(a.scale);
  j.Key("decoder").String(a.decoder).Key("threads").Uint(a.threads).Key("rounds").Uint(a.rounds);

  // sets[0]: the originals (empty without --src); sets[i]: fidelity first + i - 1.
  // names[i][j]: what image j of set i is, for error messages.
  std::vector<std::vector<pcr::Bytes>> sets(1);
  std::vector<std::vector<std::string>> names(1);
  std::vector<uint64_t> bytes(1, 0);
  if (!a.src.empty()) {
    for (uint64_t i = 0; i < ds.num_images(); ++i) {
      const auto sample = ds.sample(i);
      if (!sample.ok()) return pcr::cli::ReportError("pcr-bench", sample.status());
      const std::string path = (fs::path(a.src) / sample->key).string();
      auto original = pcr::ReadRegularFile(path);
      if (!original.ok()) return pcr::cli::ReportError("pcr-bench", original.status());
      bytes[0] += original->size();
      sets[0].push_back(std::move(original).value());
      names[0].push_back(path);
    }
  }
  for (int k = first; k <= last; ++k) {
    sets.emplace_back();
    names.emplace_back();
    bytes.push_back(0);
    for (uint64_t r = 0; r < ds.num_records(); ++r) {
      auto images = ds.ReadRecord(r, k);
      if (!images.ok()) return pcr::cli::ReportError("pcr-bench", images.status());
      for (pcr::Image& img : *images) {
        bytes.back() += img.jpeg.size();
        names.back().push_back(pcr::DescribeImage(ds, sets.back().size()) + " at fidelity " + std::to_string(k));
        sets.back().push_back(std::move(img.jpeg));
      }
    }
  }
  // Every round decodes each set once in turn, so slow drifts of the machine
  // hit the originals and every fidelity alike; the best round counts.
  std::vector<double> best(sets.size(), 0), seconds(sets.size(), 0);
  for (int round = 0; round < a.rounds; ++round) {
    for (size_t i = sets[0].empty() ? 1 : 0; i < sets.size(); ++i) {
      const auto start = Clock::now();
      auto rate = DecodeRate(sets[i], names[i], a.scale, i == 0 ? pcr::DecoderChoice::kLibjpeg : a.decoder_choice,
                             a.min_seconds / a.rounds, a.threads);
      if (!rate.ok()) return pcr::cli::ReportError("pcr-bench", rate.status());
      seconds[i] += std::chrono::duration<double>(Clock::now() - start).count();
      best[i] = std::max(best[i], *rate);
    }
  }
  if (!sets[0].empty()) j.Key("baseline_bytes").Uint(bytes[0]).Key("baseline_images_per_s").Double(best[0]);
  j.Key("groups").BeginArray();
  uint64_t total_mismatches = 0;
  for (size_t i = 1; i < sets.size(); ++i) {
    // One pass of the set: the images pcr's decoder hands to libjpeg-turbo,
    // and those whose outcome or pixels differ from the other decoder's.
    pcr::JpegDecoder counter, other;
    std::vector<uint8_t> buffer, check;
    const pcr::DecodeOptions options{.scale_denom = a.scale, .warnings_are_errors = false, .decoder = a.decoder_choice};
    pcr::DecodeOptions other_options = options;
    other_options.decoder =
        a.decoder_choice == pcr::DecoderChoice::kLibjpeg ? pcr::DecoderChoice::kPcr : pcr::DecoderChoice::kLibjpeg;
    uint64_t mismatches = 0;
    for (size_t n = 0; n < sets[i].size(); ++n) {
      const pcr::Bytes& jpeg = sets[i][n];
      auto shape = counter.Shape(jpeg, options);
      if (!shape.ok()) continue;
      buffer.assign(shape->bytes(), 0);
      check.assign(shape->bytes(), 1);
      const auto got = counter.Decode(jpeg, options, buffer);
      const auto want = other.Decode(jpeg, other_options, check);
      if (got.ok() != want.ok() || (got.ok() && buffer != check)) {
        if (mismatches++ == 0) {
          std::fprintf(stderr, "pcr-bench: %s: pcr's decoder and libjpeg-turbo disagree (%s / %s)\n",
                       names[i][n].c_str(), got.status().ToString().c_str(), want.status().ToString().c_str());
        }
      }
    }
    total_mismatches += mismatches;
    const uint64_t fallbacks = a.decoder_choice == pcr::DecoderChoice::kLibjpeg ? 0 : counter.counts().libjpeg;
    j.BeginObject()
        .Key("fidelity")
        .Uint(first + static_cast<int>(i) - 1)
        .Key("bytes")
        .Uint(bytes[i])
        .Key("seconds")
        .Double(seconds[i])
        .Key("images_per_s")
        .Double(best[i])
        .Key("fallbacks")
        .Uint(fallbacks)
        .Key("mismatches")
        .Uint(mismatches);
    if (best[0] > 0) j.Key("vs_baseline").Double(best[i] / best[0]);
    j.EndObject();
  }
  j.EndArray().EndObject();
  std::printf("%s\n", j.str().c_str());
  return total_mismatches > 0 ? pcr::cli::kExitBadInput : pcr::cli::kExitOk;
}

int Coefficients(const DecodeArgs& a) {
  auto opened = pcr::ImageDataset::Open(a.path, {.io = a.io});
  if (!opened.ok()) return pcr::cli::ReportError("pcr-bench", opened.status());
  const pcr::ImageDataset& ds = **opened;
  const int full = ds.num_scan_groups();
  // Full-fidelity images and their originals, and which pcr's decoder handles.
  std::vector<pcr::Bytes> images, originals;
  std::vector<std::string> names, paths;
  uint64_t total = 0, mismatches = 0, not_handled = 0, refused = 0;
  std::string first_mismatch, first_not_handled;
  pcr::ProgressiveCoefficientDecoder pcr_decoder;
  pcr::LibjpegCoefficientReader libjpeg;
  for (uint64_t r = 0; r < ds.num_records(); ++r) {
    auto record = ds.ReadRecord(r, full);
    if (!record.ok()) return pcr::cli::ReportError("pcr-bench", record.status());
    for (pcr::Image& img : *record) {
      const std::string name = pcr::DescribeImage(ds, total++);
      const pcr::CoefficientComparison c = pcr::CompareCoefficientDecoders(img.jpeg, pcr_decoder, libjpeg);
      if (!c.mismatch.empty()) {
        if (mismatches++ == 0) first_mismatch = name + ": " + c.mismatch;
        continue;
      }
      if (c.pcr.kind == pcr::CoefficientOutcome::kNotHandled) {
        if (not_handled++ == 0) first_not_handled = name + ": " + c.pcr.message;
        continue;
      }
      if (!c.pcr.ok()) {
        ++refused;  // corrupt, and refused alike by both
        continue;
      }
      const std::string path = (fs::path(a.src) / img.key).string();
      auto original = pcr::ReadRegularFile(path);
      if (!original.ok()) return pcr::cli::ReportError("pcr-bench", original.status());
      originals.push_back(std::move(original).value());
      images.push_back(std::move(img.jpeg));
      names.push_back(name);
      paths.push_back(path);
    }
  }
  const int threads = a.threads;
  std::vector<std::unique_ptr<pcr::ProgressiveCoefficientDecoder>> decoders;
  std::vector<std::unique_ptr<pcr::LibjpegCoefficientReader>> readers;
  for (int t = 0; t < threads; ++t) {
    decoders.push_back(std::make_unique<pcr::ProgressiveCoefficientDecoder>());
    readers.push_back(std::make_unique<pcr::LibjpegCoefficientReader>());
  }
  auto with_pcr = [&](const pcr::Bytes& jpeg, int t, size_t i) {
    pcr::ProgressiveCoefficientDecoder& d = *decoders[static_cast<size_t>(t)];
    pcr::CoefficientOutcome o = d.Open(jpeg);
    if (o.ok()) o = d.Decode([](int, int, const int16_t*) {});  // each block row delivered, as a consumer sees it
    return o.ok() ? pcr::Status::OK() : pcr::Status::Corruption(names[i] + ": " + o.message);
  };
  auto with_libjpeg = [&](const std::vector<std::string>& what) {
    return [&readers, names = &what](const pcr::Bytes& jpeg, int t, size_t i) {
      const pcr::CoefficientOutcome o = readers[static_cast<size_t>(t)]->Read(jpeg, false, nullptr);
      return o.ok() ? pcr::Status::OK() : pcr::Status::Corruption((*names)[i] + ": " + o.message);
    };
  };
  // Each round times every set once in turn; the best round counts.
  double best[3] = {0, 0, 0};
  const std::vector<pcr::Bytes>* sets[3] = {&images, &images, &originals};
  for (int round = 0; round < a.rounds && !images.empty(); ++round) {
    for (int i = 0; i < 3; ++i) {
      const double seconds = a.min_seconds / a.rounds;
      auto rate = i == 0   ? Rate(*sets[i], seconds, threads, with_pcr)
                  : i == 1 ? Rate(*sets[i], seconds, threads, with_libjpeg(names))
                           : Rate(*sets[i], seconds, threads, with_libjpeg(paths));
      if (!rate.ok()) return pcr::cli::ReportError("pcr-bench", rate.status());
      best[i] = std::max(best[i], *rate);
    }
  }
  uint64_t pcr_bytes = 0, original_bytes = 0;
  for (const pcr::Bytes& b : images) pcr_bytes += b.size();
  for (const pcr::Bytes& b : originals) original_bytes += b.size();
  Json j;
  j.BeginObject().Key("bench").String("coefficients").Key("images").Uint(total);
  j.Key("scan_script").String(ds.scan_script().name).Key("threads").Uint(threads).Key("rounds").Uint(a.rounds);
  j.Key("mismatches").Uint(mismatches).Key("not_handled").Uint(not_handled).Key("refused").Uint(refused);
  if (!first_mismatch.empty()) j.Key("first_mismatch").String(first_mismatch);
  if (!first_not_handled.empty()) j.Key("first_not_handled").String(first_not_handled);
  j.Key("timed_images").Uint(images.size()).Key("pcr_bytes").Uint(pcr_bytes).Key("original_bytes").Uint(original_bytes);
  j.Key("pcr_images_per_s").Double(best[0]).Key("libjpeg_images_per_s").Double(best[1]);
  j.Key("originals_images_per_s").Double(best[2]);
  if (best[1] > 0) j.Key("pcr_vs_libjpeg").Double(best[0] / best[1]);
  if (best[2] > 0) j.Key("pcr_vs_originals").Double(best[0] / best[2]);
  j.EndObject();
  std::printf("%s\n", j.str().c_str());
  if (mismatches > 0) {
    std::fprintf(stderr, "pcr-bench: %llu of %llu images decode to other coefficients than libjpeg-turbo's; "
                 "the first: %s\n", static_cast<unsigned long long>(mismatches),
                 static_cast<unsigned long long>(total), first_mismatch.c_str());
    return pcr::cli::kExitBadInput;
  }
  return pcr::cli::kExitOk;
}

struct ReadArgs {
  std::string path;
  std::string fidelity = "full";
  pcr::IoEngineOptions io;
  std::string mode = "records";
  uint64_t count = 1000;
  uint64_t seed = 1;
  uint64_t records_in_flight = 16;
  uint64_t threads = 1;
  std::vector<std::string> fields;
};

int Read(const ReadArgs& a) {
  auto engine = pcr::MakeIoEngine(a.io);
  if (!engine.ok()) return pcr::cli::ReportError("pcr-bench", engine.status());
  auto opened = pcr::OpenImageDataset(a.path, {}, engine->get());
  if (!opened.ok()) return pcr::cli::ReportError("pcr-bench", opened.status());
  const pcr::ImageDataset& ds = **opened;
  const bool fields_only = !a.fields.empty() && a.mode == "records";  // 0: fields alone
  int fidelity = 0;
  if (!pcr::ParseFidelity(a.fidelity, ds.num_scan_groups(), fields_only, &fidelity)) {
    return Usage("--fidelity must be " + std::string(fields_only ? "0" : "1") + ".." +
                 std::to_string(ds.num_scan_groups()) + " or full");
  }
  const uint64_t k = static_cast<uint64_t>(ds.ScanGroups(fidelity));
  const pcr::IoCounters open_counters = (*engine)->counters();
  const uint64_t open_http = (*engine)->remote_requests();
  const uint64_t open_requested = ds.bytes_requested();
  uint64_t images = 0, records = 0;
  const auto start = Clock::now();
  if (a.mode == "records") {
    auto it = pcr::RecordIterator::Create(ds, {.fidelity = k == 0 ? pcr::kFieldsOnly : static_cast<int>(k),
                                               .fields = a.fields,
                                               .records_in_flight = a.records_in_flight});
    if (!it.ok()) return pcr::cli::ReportError("pcr-bench", it.status());
    pcr::RecordBatch batch;
    while (true) {
      auto more = (*it)->Next(&batch);
      if (!more.ok()) return pcr::cli::ReportError("pcr-bench", more.status());
      if (!*more) break;
      images += batch.images.size();
      ++records;
    }
  } else {
    // Thread t issues requests t, t + threads, ... of the seeded sequence,
    // in batches of queue_depth, all threads sharing the dataset's engine.
    std::atomic<uint64_t> done{0};
    std::mutex mu;
    pcr::Status failed;
    auto work = [&](uint64_t t) {
      const uint64_t depth = a.io.queue_depth;
      uint64_t state = a.seed;
      std::vector<pcr::ImageRequest> batch;
      for (uint64_t n = 0; n < a.count; ++n) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        if (n % a.threads != t) continue;
        batch.push_back({(state >> 11) % ds.num_images(), static_cast<int>(k)});
        if (batch.size() == depth || n + a.threads >= a.count) {
          auto got = ds.ReadImages(batch, {.hole_limit = 0});
          if (!got.ok()) {
            std::lock_guard lock(mu);
            failed = got.status();
            return;
          }
          done += got->size();
          batch.clear();
        }
      }
    };
    std::vector<std::thread> threads;
    for (uint64_t t = 1; t < a.threads; ++t) threads.emplace_back(work, t);
    work(0);
    for (std::thread& t : threads) t.join();
    if (!failed.ok()) return pcr::cli::ReportError("pcr-bench", failed);
    images = done;
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const pcr::IoCounters c = (*engine)->counters();
  const uint64_t reads = c.reads - open_counters.reads;
  const uint64_t bytes_read = c.bytes_read - open_counters.bytes_read;
  const uint64_t requested = ds.bytes_requested() - open_requested;
  Json j;
  j.BeginObject()
      .Key("bench").String("read")
      .Key("mode").String(a.mode)
      .Key("engine").String(std::string((*engine)->name()))
      .Key("direct").Uint(a.io.direct ? 1 : 0)
      .Key("queue_depth").Uint(a.io.queue_depth)
      .Key("threads").Uint(a.threads)
      .Key("max_mbps").Double(a.io.max_mbps)
      .Key("fidelity").Uint(k)
      .Key("fields").Uint(a.fields.size())
      .Key("scan_groups").Uint(ds.num_scan_groups())
      .Key("images").Uint(images)
      .Key("records").Uint(records)
      .Key("bytes_requested").Uint(requested)
      .Key("bytes_read").Uint(bytes_read)
      .Key("reads").Uint(reads)
      .Key("read_amplification").Double(Ratio(bytes_read, requested))
      .Key(a.mode == "records" ? "reads_per_record" : "reads_per_image")
      .Double(Ratio(reads, a.mode == "records" ? records : images))
      .Key("open_http_requests").Uint(open_http)
      .Key("http_requests").Uint((*engine)->remote_requests() - open_http)
      .Key("seconds").Double(seconds)
      .Key("images_per_s").Double(images / seconds)
      .Key("mb_per_s").Double(bytes_read / seconds / 1e6)
      .Key("note").String((*engine)->note())
      .EndObject();
  std::printf("%s\n", j.str().c_str());
  return pcr::cli::kExitOk;
}

int ReadFiles(const std::vector<std::string>& paths, bool direct, double max_mbps) {
  std::vector<fs::path> files;
  for (const std::string& p : paths) {
    if (fs::is_directory(p)) {
      for (const auto& e : fs::recursive_directory_iterator(p)) {
        if (e.is_regular_file()) files.push_back(e.path());
      }
    } else {
      files.emplace_back(p);
    }
  }
  std::sort(files.begin(), files.end());
  constexpr size_t kBuffer = 1 << 20;
  std::unique_ptr<uint8_t, decltype(&std::free)> buf(
      static_cast<uint8_t*>(std::aligned_alloc(pcr::kDirectAlignment, kBuffer)), &std::free);
  pcr::BandwidthCap cap(max_mbps);
  uint64_t bytes = 0, calls = 0;
  const auto start = Clock::now();
  for (const fs::path& f : files) {
    pcr::Result<int> opened = pcr::OpenRegularFile(f.string(), direct ? O_DIRECT : 0);
    if (!opened.ok() && opened.status().code() == pcr::StatusCode::kNotSupported) {
      opened = pcr::OpenRegularFile(f.string());
    }
    if (!opened.ok()) return pcr::cli::ReportError("pcr-bench", opened.status());
    const int fd = *opened;
    while (true) {
      const ssize_t n = read(fd, buf.get(), kBuffer);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const int e = errno;
        close(fd);
        return pcr::cli::ReportError("pcr-bench",
                                     pcr::Status::IOError(f.string() + ": cannot read: " + std::strerror(e)));
      }
      ++calls;
      if (n == 0) break;
      cap.Acquire(static_cast<uint64_t>(n));
      bytes += static_cast<uint64_t>(n);
    }
    close(fd);
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  Json j;
  j.BeginObject()
      .Key("bench").String("read-files")
      .Key("direct").Uint(direct ? 1 : 0)
      .Key("max_mbps").Double(max_mbps)
      .Key("files").Uint(files.size())
      .Key("bytes_read").Uint(bytes)
      .Key("reads").Uint(calls)
      .Key("seconds").Double(seconds)
      .Key("files_per_s").Double(files.size() / seconds)
      .Key("mb_per_s").Double(bytes / seconds / 1e6)
      .EndObject();
  std::printf("%s\n", j.str().c_str());
  return pcr::cli::kExitOk;
}

int ParseDecode(pcr::cli::Args& args, bool coefficients) {
  DecodeArgs d;
  {
    auto io = pcr::cli::IoOptionsFromEnvironment();
    if (!io.ok()) return pcr::cli::ReportError("pcr-bench", io.status());
    d.io = *io;
  }
  while (!args.empty()) {
    const std::string a = args.next();
    uint64_t n = 0;
    if (a == "--src" && !args.empty()) {
      d.src = args.next();
    } else if (a == "--fidelity" && !args.empty() && !coefficients) {
      d.fidelity = args.next();
    } else if (a == "--min-seconds" && !args.empty()) {
      d.min_seconds = std::atof(args.next().c_str());
    } else if (a == "--scale" && !args.empty() && !coefficients) {
      std::string v = args.next();
      if (v.starts_with("1/")) v = v.substr(2);
      if (!pcr::cli::ParseUint(v, &n) || (n != 1 && n != 2 && n != 4 && n != 8)) {
        return Usage("--scale must be 1, 1/2, 1/4 or 1/8");
      }
      d.scale = static_cast<int>(n);
    } else if (a == "--decoder" && !args.empty() && !coefficients) {
      d.decoder = args.next();
      if (d.decoder == "pcr") {
        d.decoder_choice = pcr::DecoderChoice::kPcr;
      } else if (d.decoder == "libjpeg") {
        d.decoder_choice = pcr::DecoderChoice::kLibjpeg;
      } else if (d.decoder != "auto") {
        return Usage("--decoder must be auto, pcr or libjpeg");
      }
    } else if (a == "--threads" && !args.empty()) {
      if (!pcr::cli::ParseUint(args.next(), &n) || n == 0 || n > 256) return Usage("--threads needs 1..256");
      d.threads = static_cast<int>(n);
    } else if (a == "--rounds" && !args.empty()) {
      if (!pcr::cli::ParseUint(args.next(), &n) || n == 0 || n > 100) return Usage("--rounds needs 1..100");
      d.rounds = static_cast<int>(n);
    } else if (a.starts_with("--") || !d.path.empty()) {
      return Usage("unexpected argument " + a);
    } else {
      d.path = a;
    }
  }
  if (!coefficients) {
    if (d.path.empty()) return Usage("decode needs PATH");
    return Decode(d);
  }
  if (d.path.empty() || d.src.empty()) return Usage("coefficients needs PATH and --src SRC_DIR");
  return Coefficients(d);
}

int ParseRead(pcr::cli::Args& args) {
  ReadArgs r;
  {
    auto io = pcr::cli::IoOptionsFromEnvironment();
    if (!io.ok()) return pcr::cli::ReportError("pcr-bench", io.status());
    r.io = *io;
  }
  while (!args.empty()) {
    const std::string a = args.next();
    uint64_t n = 0;
    auto number = [&] { return !args.empty() && pcr::cli::ParseUint(args.next(), &n); };
    if (a == "--fidelity" && !args.empty()) {
      r.fidelity = args.next();
    } else if (a == "--engine" && !args.empty()) {
      const std::string e = args.next();
      if (e != "uring" && e != "pread") return Usage("--engine must be uring or pread");
      r.io.kind = e == "uring" ? pcr::IoEngineKind::kUring : pcr::IoEngineKind::kPread;
    } else if (a == "--direct") {
      r.io.direct = true;
    } else if (a == "--queue-depth") {
      if (!number() || n == 0 || n > 4096) return Usage("--queue-depth must be 1..4096");
      r.io.queue_depth = static_cast<unsigned>(n);
    } else if (a == "--mode" && !args.empty()) {
      r.mode = args.next();
      if (r.mode != "records" && r.mode != "random") return Usage("--mode must be records or random");
    } else if (a == "--count") {
      if (!number() || n == 0) return Usage("--count must be positive");
      r.count = n;
    } else if (a == "--seed") {
      if (!number()) return Usage("--seed needs an integer");
      r.seed = n;
    } else if (a == "--records-in-flight") {
      if (!number() || n == 0) return Usage("--records-in-flight must be positive");
      r.records_in_flight = n;
    } else if (a == "--threads") {
      if (!number() || n == 0 || n > 256) return Usage("--threads must be 1..256");
      r.threads = n;
    } else if (a == "--max-mbps") {
      if (!number()) return Usage("--max-mbps needs an integer");
      r.io.max_mbps = static_cast<double>(n);
    } else if (a == "--fields" && !args.empty()) {
      r.fields = pcr::cli::SplitCommas(args.next());
    } else if (a.starts_with("--") || !r.path.empty()) {
      return Usage("unexpected argument " + a);
    } else {
      r.path = a;
    }
  }
  if (r.path.empty()) return Usage("read needs PATH");
  if (r.threads > 1 && r.mode != "random") return Usage("--threads applies to --mode random");
  if (!r.fields.empty() && r.mode != "records") return Usage("--fields applies to --mode records");
  return Read(r);
}

int ParseReadFiles(pcr::cli::Args& args) {
  std::vector<std::string> paths;
  bool direct = false;
  uint64_t mbps = 0;
  while (!args.empty()) {
    const std::string a = args.next();
    if (a == "--direct") {
      direct = true;
    } else if (a == "--max-mbps") {
      if (args.empty() || !pcr::cli::ParseUint(args.next(), &mbps)) return Usage("--max-mbps needs an integer");
    } else if (a.starts_with("--")) {
      return Usage("unexpected argument " + a);
    } else {
      paths.push_back(a);
    }
  }
  if (paths.empty()) return Usage("read-files needs PATH");
  return ReadFiles(paths, direct, static_cast<double>(mbps));
}

struct TableArgs {
  std::string path;
  std::vector<std::string> features;
  pcr::IoEngineOptions io;
  pcr::CoalesceOptions coalesce = pcr::TableReaderOptions().coalesce;
  uint64_t stripes_per_read = 1;
};

int TableBench(const TableArgs& a) {
  auto engine = pcr::MakeIoEngine(a.io);
  if (!engine.ok()) return pcr::cli::ReportError("pcr-bench", engine.status());
  const auto start = Clock::now();
  auto opened = pcr::OpenTable(a.path, {.coalesce = a.coalesce}, engine->get());
  if (!opened.ok()) return pcr::cli::ReportError("pcr-bench", opened.status());
  pcr::Table& t = **opened;
  auto features = t.Resolve(a.features);
  if (!features.ok()) return pcr::cli::ReportError("pcr-bench", features.status());
  const pcr::IoCounters open_counters = (*engine)->counters();
  const uint64_t open_http = (*engine)->remote_requests();
  uint64_t rows = 0, selected = 0, values = 0;
  for (size_t s = 0; s < t.stripe_count(); s += a.stripes_per_read) {
    const size_t n = std::min<size_t>(a.stripes_per_read, t.stripe_count() - s);
    auto batch = t.Read(*features, s, n);
    if (!batch.ok()) return pcr::cli::ReportError("pcr-bench", batch.status());
    rows += batch->rows;
    selected += batch->bytes_selected;
    for (const pcr::Column& c : batch->columns) values += c.ints.size() + c.doubles.size() + c.floats.size();
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const pcr::IoCounters c = (*engine)->counters();
  const uint64_t data_reads = c.reads - open_counters.reads;
  Json j;
  j.BeginObject()
      .Key("bench").String("table")
      .Key("engine").String(std::string((*engine)->name()))
      .Key("direct").Uint(a.io.direct ? 1 : 0)
      .Key("hole_limit").Uint(a.coalesce.hole_limit)
      .Key("features").Uint(features->size())
      .Key("table_features").Uint(t.schema().features.size())
      .Key("stripes").Uint(t.stripe_count())
      .Key("rows").Uint(rows)
      .Key("values").Uint(values)
      .Key("bytes_selected").Uint(selected)
      .Key("bytes_read").Uint(c.bytes_read)
      .Key("reads").Uint(c.reads)
      .Key("open_reads").Uint(open_counters.reads)
      .Key("open_bytes_read").Uint(open_counters.bytes_read)
      .Key("over_read").Double(Ratio(c.bytes_read, selected))
      .Key("data_over_read").Double(Ratio(c.bytes_read - open_counters.bytes_read, selected))
      .Key("reads_per_stripe").Double(Ratio(data_reads, t.stripe_count()))
      .Key("open_http_requests").Uint(open_http)
      .Key("http_requests").Uint((*engine)->remote_requests() - open_http)
      .Key("seconds").Double(seconds)
      .Key("rows_per_s").Double(rows / seconds)
      .Key("note").String((*engine)->note())
      .EndObject();
  std::printf("%s\n", j.str().c_str());
  return pcr::cli::kExitOk;
}

struct LoopArgs {
  std::string path;
  int fidelity = pcr::kFullFidelity;
  int threads = 1;
  uint64_t records_ahead = 2;
  double step_ms = 0;  // the training step per record, spent asleep as on an accelerator
  uint64_t records = 0;  // 0: every record
  pcr::IoEngineOptions io;
};

// A training loop over the decode iterator: per record, Next() and then a
// step of step_ms. Reports how long the loop waited inside Next(), the first
// record (the pipeline filling) apart.
int Loop(const LoopArgs& a) {
  auto opened = pcr::ImageDataset::Open(a.path, {.io = a.io});
  if (!opened.ok()) return pcr::cli::ReportError("pcr-bench", opened.status());
  const pcr::ImageDataset& ds = **opened;
  const int k = ds.ScanGroups(a.fidelity);
  auto it = pcr::DecodeIterator::Create(
      ds, {.records = {.fidelity = k}, .decode = {.format = pcr::PixelFormat::kRgb}, .threads = a.threads,
           .records_ahead = a.records_ahead});
  if (!it.ok()) return pcr::cli::ReportError("pcr-bench", it.status());
  pcr::DecodedBatch batch;
  uint64_t images = 0, records = 0;
  double first_wait = 0, waited = 0;  // the first Next() waits for the pipeline to fill
  const auto step = std::chrono::duration<double, std::milli>(a.step_ms);
  const auto start = Clock::now();
  auto steady = start;
  while (a.records == 0 || records < a.records) {
    const auto asked = Clock::now();
    auto more = (*it)->Next(&batch);
    const double wait = std::chrono::duration<double>(Clock::now() - asked).count();
    if (records == 0) {
      first_wait = wait;
      steady = Clock::now();
    } else {
      waited += wait;
    }
    if (!more.ok()) return pcr::cli::ReportError("pcr-bench", more.status());
    if (!*more) break;
    images += batch.images.size();
    ++records;
    std::this_thread::sleep_for(step);
  }
  const auto end = Clock::now();
  const double seconds = std::chrono::duration<double>(end - start).count();
  const double steady_seconds = std::chrono::duration<double>(end - steady).count();
  Json j;
  j.BeginObject()
      .Key("bench").String("loop")
      .Key("fidelity").Uint(static_cast<uint64_t>(k))
      .Key("threads").Uint(static_cast<uint64_t>(a.threads))
      .Key("records_ahead").Uint(a.records_ahead)
      .Key("step_ms").Double(a.step_ms)
      .Key("records").Uint(records)
      .Key("images").Uint(images)
      .Key("seconds").Double(seconds)
      .Key("first_wait_seconds").Double(first_wait)
      .Key("waited_seconds").Double(waited)
      .Key("wait_share").Double(steady_seconds > 0 ? waited / steady_seconds : 0)
      .Key("images_per_s").Double(images / seconds)
      .EndObject();
  std::printf("%s\n", j.str().c_str());
  return pcr::cli::kExitOk;
}

int ParseLoop(pcr::cli::Args& args) {
  LoopArgs l;
  {
    auto io = pcr::cli::IoOptionsFromEnvironment();
    if (!io.ok()) return pcr::cli::ReportError("pcr-bench", io.status());
    l.io = *io;
  }
  while (!args.empty()) {
    const std::string a = args.next();
    uint64_t n = 0;
    auto number = [&] { return !args.empty() && pcr::cli::ParseUint(args.next(), &n); };
    if (a == "--fidelity" && !args.empty() && args.peek() == "full") {
      args.next();
      l.fidelity = pcr::kFullFidelity;
    } else if (a == "--fidelity") {
      if (!number() || n == 0 || n > 64) return Usage("--fidelity must be a scan group count or full");
      l.fidelity = static_cast<int>(n);
    } else if (a == "--threads") {
      if (!number() || n == 0 || n > 256) return Usage("--threads must be 1..256");
      l.threads = static_cast<int>(n);
    } else if (a == "--records-ahead") {
      if (!number() || n == 0) return Usage("--records-ahead must be positive");
      l.records_ahead = n;
    } else if (a == "--records") {
      if (!number() || n == 0) return Usage("--records must be positive");
      l.records = n;
    } else if (a == "--step-ms" && !args.empty()) {
      l.step_ms = std::atof(args.next().c_str());
      if (!(l.step_ms >= 0)) return Usage("--step-ms must be >= 0");
    } else if (a.starts_with("--") || !l.path.empty()) {
      return Usage("unexpected argument " + a);
    } else {
      l.path = a;
    }
  }
  if (l.path.empty()) return Usage("loop needs PATH");
  return Loop(l);
}

int ParseTable(pcr::cli::Args& args) {
  TableArgs t;
  {
    auto io = pcr::cli::IoOptionsFromEnvironment();
    if (!io.ok()) return pcr::cli::ReportError("pcr-bench", io.status());
    t.io = *io;
  }
  while (!args.empty()) {
    const std::string a = args.next();
    uint64_t n = 0;
    auto number = [&]() { return !args.empty() && pcr::cli::ParseUint(args.next(), &n); };
    if (a == "--features") {
      if (args.empty()) return Usage("--features needs a list");
      for (std::string& f : pcr::cli::SplitCommas(args.next())) t.features.push_back(std::move(f));
    } else if (a == "--features-file") {
      if (args.empty()) return Usage("--features-file needs a file");
      const std::string file = args.next();
      std::ifstream in(file);
      if (!in) return Usage(file + ": cannot open the features file: " + std::strerror(errno));
      for (std::string line; std::getline(in, line);) {
        if (!line.empty()) t.features.push_back(line);
      }
    } else if (a == "--hole-limit") {
      if (!number()) return Usage("--hole-limit needs a byte count");
      t.coalesce.hole_limit = n;
    } else if (a == "--engine") {
      if (args.empty()) return Usage("--engine needs uring or pread");
      const std::string e = args.next();
      if (e != "uring" && e != "pread") return Usage("--engine needs uring or pread");
      t.io.kind = e == "uring" ? pcr::IoEngineKind::kUring : pcr::IoEngineKind::kPread;
    } else if (a == "--direct") {
      t.io.direct = true;
    } else if (a == "--stripes-per-read") {
      if (!number() || n == 0) return Usage("--stripes-per-read needs a positive integer");
      t.stripes_per_read = n;
    } else if (a.starts_with("--") || !t.path.empty()) {
      return Usage("unexpected argument " + a);
    } else {
      t.path = a;
    }
  }
  if (t.path.empty() || t.features.empty()) return Usage("table needs PATH and features");
  return TableBench(t);
}

}  // namespace

int main(int argc, char** argv) {
  pcr::cli::Args args(argc, argv);
  if (args.empty()) return Usage("");
  const std::string command = args.next();
  if (command == "--version") {
    std::printf("pcr-bench %s\n", PCR_VERSION_STRING);
    return pcr::cli::kExitOk;
  }
  if (args.WantsHelp()) {
    std::fputs(kUsage, stdout);
    return pcr::cli::kExitOk;
  }
  if (command == "decode") return ParseDecode(args, false);
  if (command == "coefficients") return ParseDecode(args, true);
  if (command == "read") return ParseRead(args);
  if (command == "read-files") return ParseReadFiles(args);
  if (command == "table") return ParseTable(args);
  if (command == "loop") return ParseLoop(args);
  if (command == "--help" || command == "-h") {
    std::fputs(kUsage, stdout);
    return pcr::cli::kExitOk;
  }
  return Usage("unknown command '" + command + "'");
}
