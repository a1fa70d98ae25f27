// DecodeIterator against the loop a user would write by hand, in the same
// run: RecordIterator + one JpegDecoder decoding each image into one reused
// buffer. One decoding thread each, full fidelity, RGB; rounds interleave
// the two and each round repeats its pass until min_seconds have gone.
// Prints one JSON line per dataset: images/s of each and their ratio
// (medians over the rounds). Both must see the same pixels: the loop sums
// them and the sums must agree.
// usage: decode_iterator_bench DATASET... [--rounds N] [--min-seconds S]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "pcr/pcr.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Pass {
  uint64_t images = 0;
  uint64_t sum = 0;  // of every pixel byte, to check both see the same
};

pcr::Result<Pass> HandLoop(const pcr::ImageDataset& ds, std::vector<uint8_t>* buffer) {
  PCR_ASSIGN_OR_RETURN(auto records, pcr::RecordIterator::Create(ds));
  pcr::JpegDecoder decoder;
  pcr::RecordBatch batch;
  Pass p;
  const pcr::DecodeOptions rgb{.format = pcr::PixelFormat::kRgb};
  while (true) {
    PCR_ASSIGN_OR_RETURN(const bool more, records->Next(&batch));
    if (!more) return p;
    for (const pcr::ImageView& img : batch.images) {
      PCR_ASSIGN_OR_RETURN(const pcr::ImageShape shape, decoder.Shape(img.jpeg, rgb));
      if (buffer->size() < shape.bytes()) buffer->resize(shape.bytes());
      PCR_RETURN_IF_ERROR(decoder.Decode(img.jpeg, rgb, *buffer).status());
      p.sum += (*buffer)[0] + (*buffer)[shape.bytes() - 1];
      ++p.images;
    }
  }
}

pcr::Result<Pass> Iterator(const pcr::ImageDataset& ds) {
  PCR_ASSIGN_OR_RETURN(auto it, pcr::DecodeIterator::Create(
                                    ds, {.decode = {.format = pcr::PixelFormat::kRgb}, .threads = 1}));
  pcr::DecodedBatch batch;
  Pass p;
  while (true) {
    PCR_ASSIGN_OR_RETURN(const bool more, it->Next(&batch));
    if (!more) return p;
    for (const pcr::DecodedView& img : batch.images) {
      p.sum += img.pixels.front() + img.pixels.back();
      ++p.images;
    }
  }
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> paths;
  int rounds = 5;
  double min_seconds = 2;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--rounds" && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--min-seconds" && i + 1 < argc) {
      min_seconds = std::atof(argv[++i]);
    } else {
      paths.push_back(a);
    }
  }
  if (paths.empty()) {
    std::fprintf(stderr, "usage: decode_iterator_bench DATASET... [--rounds N] [--min-seconds S]\n");
    return 2;
  }
  for (const std::string& path : paths) {
    auto ds = pcr::ImageDataset::Open(path);
    if (!ds.ok()) {
      std::fprintf(stderr, "%s\n", ds.status().ToString().c_str());
      return 1;
    }
    std::vector<uint8_t> buffer;
    std::vector<double> hand, iter;
    uint64_t hand_sum = 0, iter_sum = 0;
    for (int r = 0; r < rounds; ++r) {
      for (int which = 0; which < 2; ++which) {
        const auto start = Clock::now();
        uint64_t images = 0;
        double seconds = 0;
        do {
          auto pass = which == 0 ? HandLoop(**ds, &buffer) : Iterator(**ds);
          if (!pass.ok()) {
            std::fprintf(stderr, "%s\n", pass.status().ToString().c_str());
            return 1;
          }
          images += pass->images;
          (which == 0 ? hand_sum : iter_sum) = pass->sum;
          seconds = std::chrono::duration<double>(Clock::now() - start).count();
        } while (seconds < min_seconds);
        (which == 0 ? hand : iter).push_back(static_cast<double>(images) / seconds);
      }
    }
    if (hand_sum != iter_sum) {
      std::fprintf(stderr, "%s: the two loops saw different pixels\n", path.c_str());
      return 1;
    }
    const double h = Median(hand), d = Median(iter);
    std::printf("{\"dataset\": \"%s\", \"images\": %llu, \"records\": %llu, \"hand_loop_images_per_s\": %.0f, "
                "\"decode_iterator_images_per_s\": %.0f, \"ratio\": %.3f}\n",
                path.c_str(), static_cast<unsigned long long>((*ds)->num_images()),
                static_cast<unsigned long long>((*ds)->num_records()), h, d, d / h);
  }
  return 0;
}
