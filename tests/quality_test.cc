// SSIM, MS-SSIM and PSNR against closed forms, a direct per-window
// computation and ssim.js; the fidelity report against scores of images
// transcoded and decoded here from the original files.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <sstream>

#include "reader/inspect.h"
#include "tools/quality.h"
#include "test_util.h"
#include "pcr/convert.h"
#include "writer/transcode.h"

namespace pcr {
namespace {

struct Gray {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> px;

  Plane plane() const { return {px.data(), width, height, width, 1}; }
};

Gray ReadPgm(const std::string& path) {
  const Bytes bytes = test::ReadFile(path);
  std::istringstream header(std::string(bytes.begin(), bytes.begin() + std::min<size_t>(bytes.size(), 32)));
  std::string magic;
  int maxval = 0;
  Gray g;
  header >> magic >> g.width >> g.height >> maxval;
  REQUIRE(magic == "P5");
  REQUIRE(maxval == 255);
  const size_t start = static_cast<size_t>(header.tellg()) + 1;
  REQUIRE(bytes.size() == start + static_cast<size_t>(g.width) * g.height);
  g.px.assign(bytes.begin() + static_cast<ptrdiff_t>(start), bytes.end());
  return g;
}

Gray Constant(int width, int height, uint8_t value) {
  return {width, height, std::vector<uint8_t>(static_cast<size_t>(width) * height, value)};
}

Gray Noise(int width, int height, uint64_t seed) {
  Gray g = Constant(width, height, 0);
  for (uint8_t& p : g.px) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    p = static_cast<uint8_t>(seed >> 56);
  }
  return g;
}

// The test's own SSIM: every 11x11 window summed with the 2-D Gaussian,
// written from the paper's definitions; returns {mean SSIM, mean c*s}.
struct Means {
  double ssim, cs;
};
using Image2D = std::vector<std::vector<double>>;

Image2D ToImage(const Gray& g) {
  Image2D im(g.height, std::vector<double>(g.width));
  for (int y = 0; y < g.height; ++y) {
    for (int x = 0; x < g.width; ++x) im[y][x] = g.px[static_cast<size_t>(y) * g.width + x];
  }
  return im;
}

Means DirectSsim(const Image2D& a, const Image2D& b) {
  double w[11][11], total = 0;
  for (int i = 0; i < 11; ++i) {
    for (int j = 0; j < 11; ++j) total += w[i][j] = std::exp(-((i - 5) * (i - 5) + (j - 5) * (j - 5)) / 4.5);
  }
  const double c1 = 2.55 * 2.55, c2 = 7.65 * 7.65;
  const size_t h = a.size(), wd = a[0].size();
  double sum_ssim = 0, sum_cs = 0;
  for (size_t y = 0; y + 11 <= h; ++y) {
    for (size_t x = 0; x + 11 <= wd; ++x) {
      double ma = 0, mb = 0;
      for (int i = 0; i < 11; ++i) {
        for (int j = 0; j < 11; ++j) {
          ma += w[i][j] / total * a[y + i][x + j];
          mb += w[i][j] / total * b[y + i][x + j];
        }
      }
      double va = 0, vb = 0, cov = 0;
      for (int i = 0; i < 11; ++i) {
        for (int j = 0; j < 11; ++j) {
          const double da = a[y + i][x + j] - ma, db = b[y + i][x + j] - mb;
          va += w[i][j] / total * da * da;
          vb += w[i][j] / total * db * db;
          cov += w[i][j] / total * da * db;
        }
      }
      const double cs = (2 * cov + c2) / (va + vb + c2);
      sum_cs += cs;
      sum_ssim += (2 * ma * mb + c1) / (ma * ma + mb * mb + c1) * cs;
    }
  }
  const double n = static_cast<double>((h - 10) * (wd - 10));
  return {sum_ssim / n, sum_cs / n};
}

// MATLAB's imfilter(im, ones(2)/4, 'symmetric', 'same') then im(1:2:end, 1:2:end).
Image2D DirectHalve(const Image2D& im) {
  const size_t h = im.size(), w = im[0].size();
  auto at = [&](size_t y, size_t x) { return im[y < h ? y : 2 * h - 1 - y][x < w ? x : 2 * w - 1 - x]; };
  Image2D out;
  for (size_t y = 0; y < h; y += 2) {
    out.emplace_back();
    for (size_t x = 0; x < w; x += 2) {
      out.back().push_back((at(y, x) + at(y, x + 1) + at(y + 1, x) + at(y + 1, x + 1)) / 4);
    }
  }
  return out;
}

double DirectMsSsim(Image2D a, Image2D b) {
  const double weights[5] = {0.0448, 0.2856, 0.3001, 0.2363, 0.1333};
  double product = 1;
  for (int s = 0; s < 5; ++s) {
    const Means m = DirectSsim(a, b);
    product *= std::pow(std::max(s < 4 ? m.cs : m.ssim, 0.0), weights[s]);
    a = DirectHalve(a);
    b = DirectHalve(b);
  }
  return product;
}

TEST_CASE("identical planes score 1 and the PSNR cap") {
  const Gray g = ReadPgm(test::DataDir() + "/quality/bigcone-10.pgm");
  CHECK(Ssim(g.plane(), g.plane()).value() == Approx(1.0).margin(1e-12));
  CHECK(MsSsim(g.plane(), g.plane()) == std::nullopt);  // 96 rows: the 5th scale is under 11
  const Gray big = Noise(200, 170, 7);
  CHECK(MsSsim(big.plane(), big.plane()).value() == Approx(1.0).margin(1e-12));
  CHECK(Psnr(g.plane(), g.plane()) == kPsnrIdentical);
}

TEST_CASE("constant planes match the closed form") {
  const Gray a = Constant(200, 180, 100), b = Constant(200, 180, 120);
  const double c1 = 2.55 * 2.55;
  const double luminance = (2.0 * 100 * 120 + c1) / (100.0 * 100 + 120.0 * 120 + c1);
  CHECK(Ssim(a.plane(), b.plane()).value() == Approx(luminance).epsilon(1e-12));
  // Contrast and structure are 1 at every scale: MS-SSIM is l^0.1333.
  CHECK(MsSsim(a.plane(), b.plane()).value() == Approx(std::pow(luminance, 0.1333)).epsilon(1e-12));
  CHECK(Psnr(a.plane(), b.plane()) == Approx(10 * std::log10(255.0 * 255.0 / 400)).epsilon(1e-12));
}

TEST_CASE("SSIM and MS-SSIM equal a direct per-window computation") {
  const Gray full = ReadPgm(test::DataDir() + "/quality/ring-10.pgm");
  const Gray low = ReadPgm(test::DataDir() + "/quality/ring-2.pgm");
  CHECK(Ssim(full.plane(), low.plane()).value() ==
        Approx(DirectSsim(ToImage(full), ToImage(low)).ssim).epsilon(1e-10));
  // Odd sides take the repeated-edge path of every halving.
  const Gray a = Noise(173, 165, 1);
  Gray b = a;
  for (size_t i = 0; i < b.px.size(); i += 3) b.px[i] = static_cast<uint8_t>(b.px[i] / 2 + 40);
  CHECK(Ssim(a.plane(), b.plane()).value() == Approx(DirectSsim(ToImage(a), ToImage(b)).ssim).epsilon(1e-10));
  CHECK(MsSsim(a.plane(), b.plane()).value() == Approx(DirectMsSsim(ToImage(a), ToImage(b))).epsilon(1e-10));
  // A negative contrast-structure term counts as 0.
  const Gray c = Noise(173, 165, 2);
  CHECK(MsSsim(a.plane(), c.plane()).value() == Approx(DirectMsSsim(ToImage(a), ToImage(c))).margin(1e-12));
}

TEST_CASE("SSIM equals ssim.js on real images at several fidelities") {
  std::ifstream in(test::DataDir() + "/quality/reference.txt");
  std::string line;
  int pairs = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string test_pgm, reference_pgm;
    double expected = 0;
    fields >> test_pgm >> reference_pgm >> expected;
    INFO(line);
    const Gray t = ReadPgm(test::DataDir() + "/quality/" + test_pgm);
    const Gray r = ReadPgm(test::DataDir() + "/quality/" + reference_pgm);
    CHECK(Ssim(r.plane(), t.plane()).value() == Approx(expected).margin(1e-9));
    ++pairs;
  }
  CHECK(pairs == 4);
}

TEST_CASE("planes that differ in size or are too small get no SSIM") {
  const Gray small = Noise(10, 50, 3), wide = Noise(400, 160, 4), square = Noise(161, 161, 5);
  CHECK(Ssim(small.plane(), small.plane()) == std::nullopt);
  CHECK(Ssim(wide.plane(), square.plane()) == std::nullopt);
  CHECK(Ssim(wide.plane(), wide.plane()).has_value());
  CHECK(MsSsim(wide.plane(), wide.plane()) == std::nullopt);
  CHECK(MsSsim(square.plane(), square.plane()).has_value());
}

TEST_CASE("the fidelity report equals scores of images decoded from the originals") {
  test::TempDir tmp;
  const std::string src = test::DataDir() + "/sample";
  REQUIRE(ConvertImages({.src_dir = src, .out_dir = tmp / "ds", .images_per_record = 5, .scan_script = "libjpeg"}).ok());
  auto ds = ImageDataset::Open(tmp / "ds", {.io = test::Io()});
  REQUIRE(ds.ok());
  const uint64_t n = (*ds)->num_images();
  const int groups = (*ds)->num_scan_groups();
  auto report = MeasureFidelityQuality(**ds, 1000);
  REQUIRE(report.ok());
  CHECK(report->images == n);
  CHECK(report->sampled == n);
  REQUIRE(report->groups.size() == static_cast<size_t>(groups));

  const ScanScript script = BuiltinScanScript("libjpeg").value();
  std::vector<double> bytes(groups), ssim_sum(groups), psnr_sum(groups);
  uint64_t compared = 0;
  int direct_checks = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const Bytes original = test::ReadFile(src + "/" + (*ds)->sample(i)->key);
    auto t = TranscodeToScanGroups(original, script);
    REQUIRE(t.ok());
    auto full = DecodeJpeg(original, {.warnings_are_errors = false});  // extraneous-data.jpg warns
    REQUIRE(full.ok());
    bool has_ssim = false;
    for (int k = 1; k <= groups; ++k) {
      bytes[k - 1] += static_cast<double>(t->AtFidelity(k).size() - 2);  // without EOI
      auto at_k = DecodeJpeg(t->AtFidelity(k));
      REQUIRE(at_k.ok());
      auto s = CompareImages(*full, *at_k);
      REQUIRE(s.ok());
      if (full->components == 1 && s->ssim) {  // grayscale: also the direct computation
        const Gray a{full->width, full->height, full->pixels}, b{at_k->width, at_k->height, at_k->pixels};
        CHECK(*s->ssim == Approx(DirectSsim(ToImage(a), ToImage(b)).ssim).epsilon(1e-10));
        ++direct_checks;
      }
      has_ssim = s->ssim.has_value();
      ssim_sum[k - 1] += s->ssim.value_or(0);
      psnr_sum[k - 1] += s->psnr;
    }
    compared += has_ssim;
  }
  CHECK(direct_checks >= groups);  // at least one grayscale image at every fidelity
  REQUIRE(compared > 0);
  CHECK(compared < n);  // the 1x1 sample image has no SSIM
  for (int k = 1; k <= groups; ++k) {
    const FidelityQuality& g = report->groups[k - 1];
    INFO("fidelity " << k);
    CHECK(g.fidelity == k);
    CHECK(g.mean_bytes == Approx(bytes[k - 1] / n));
    CHECK(g.fraction == Approx(bytes[k - 1] / bytes[groups - 1]));
    CHECK(g.speedup == Approx(bytes[groups - 1] / bytes[k - 1]));
    CHECK(g.compared == compared);
    CHECK(g.ssim_mean == Approx(ssim_sum[k - 1] / compared).epsilon(1e-12));
    CHECK(g.psnr_mean == Approx(psnr_sum[k - 1] / n).epsilon(1e-12));
    CHECK(g.ssim_p5 <= g.ssim_mean);
    CHECK(g.psnr_p5 <= g.psnr_mean);
  }
  CHECK(report->groups[0].ssim_mean < 0.95);
  CHECK(report->groups.back().ssim_mean == 1.0);
  CHECK(report->groups.back().psnr_mean == kPsnrIdentical);
}

}  // namespace
}  // namespace pcr
