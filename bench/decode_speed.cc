// decode_speed: values per second that DecodeStream gives back, per
// encoding, on streams of 64 Ki values (in cache: the decoder's own work). Built twice: as decode_speed, and
// as decode_speed_scalar with the encodings compiled without the compiler's
// vectoriser, so the two show what vectorised unpacking and delta decoding
// are worth on this machine.
//
//   decode_speed [--repeat N]     prints one JSON object per case
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "format/stream_decoding.h"
#include "format/stream_encoding.h"
#include "writer/stream_encoder.h"

namespace {

struct Case {
  const char* name;
  pcr::StreamEncoding force;
  std::vector<uint64_t> values;
};

}  // namespace

int main(int argc, char** argv) {
  int repeat = 7;
  if (argc == 3 && std::strcmp(argv[1], "--repeat") == 0) repeat = std::atoi(argv[2]);
  constexpr size_t n = size_t{64} << 10;
  constexpr int kRounds = 100;
  std::mt19937_64 rng(1);
  std::vector<Case> cases;
  for (const int b : {3, 11, 27}) {
    std::vector<uint64_t> v(n);
    for (uint64_t& x : v) x = 5000 + (rng() & ((uint64_t{1} << b) - 1));
    cases.push_back({b == 3 ? "bitpack 3" : b == 11 ? "bitpack 11" : "bitpack 27", pcr::StreamEncoding::kBitPack, v});
  }
  std::vector<uint64_t> sorted(n);
  uint64_t id = uint64_t{1} << 40;
  for (uint64_t& x : sorted) x = id += rng() % 1000;
  cases.push_back({"delta (sorted ids)", pcr::StreamEncoding::kDelta, sorted});
  std::vector<uint64_t> few(n);
  for (uint64_t& x : few) x = (rng() % 300) * 7919;
  cases.push_back({"dictionary (300 values)", pcr::StreamEncoding::kDictionary, few});
  for (const Case& c : cases) {
    pcr::Bytes raw(c.values.size() * 8);
    std::memcpy(raw.data(), c.values.data(), raw.size());
    const pcr::EncodedStream e = pcr::EncodeStream(pcr::ElementKind::kI64, raw, {.force = c.force, .zstd_level = 0});
    if (e.encoding != c.force) return std::fprintf(stderr, "%s: not encoded as asked\n", c.name), 1;
    pcr::Bytes out;
    double best = 1e30;
    for (int r = 0; r < repeat; ++r) {
      const auto start = std::chrono::steady_clock::now();
      bool ok = true;
      for (int k = 0; k < kRounds; ++k) {
        ok = ok && pcr::DecodeStream(pcr::ElementKind::kI64, e.encoding, e.bytes, raw.size(), &out).ok();
      }
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / kRounds;
      if (!ok || out != raw) return std::fprintf(stderr, "%s: decodes wrongly\n", c.name), 1;
      best = std::min(best, s);
    }
    std::printf("{\"case\": \"%s\", \"encoding\": \"%s\", \"values_per_s\": %.0f}\n", c.name,
                pcr::DescribeEncoding(pcr::ElementKind::kI64, e.encoding, e.bytes).c_str(), n / best);
  }
  return 0;
}
