#include "tools/quality.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <thread>

#include "reader/inspect.h"

namespace pcr {
namespace {

constexpr int kScales = 5;
constexpr std::array<double, kScales> kScaleWeights = {0.0448, 0.2856, 0.3001, 0.2363, 0.1333};
constexpr double kC1 = (0.01 * 255) * (0.01 * 255);
constexpr double kC2 = (0.03 * 255) * (0.03 * 255);

struct FloatPlane {
  int width = 0;
  int height = 0;
  std::vector<double> v;  // row-major
};

FloatPlane ToFloat(const Plane& p) {
  FloatPlane f{p.width, p.height, std::vector<double>(static_cast<size_t>(p.width) * p.height)};
  for (int y = 0; y < p.height; ++y) {
    const uint8_t* row = p.data + y * p.row_stride;
    for (int x = 0; x < p.width; ++x) f.v[static_cast<size_t>(y) * p.width + x] = row[x * p.pixel_stride];
  }
  return f;
}

// 2x2 means; an odd side repeats its last sample.
FloatPlane Halve(const FloatPlane& in) {
  FloatPlane out{(in.width + 1) / 2, (in.height + 1) / 2, {}};
  out.v.resize(static_cast<size_t>(out.width) * out.height);
  auto at = [&](int x, int y) {
    return in.v[static_cast<size_t>(std::min(y, in.height - 1)) * in.width + std::min(x, in.width - 1)];
  };
  for (int y = 0; y < out.height; ++y) {
    for (int x = 0; x < out.width; ++x) {
      out.v[static_cast<size_t>(y) * out.width + x] =
          (at(2 * x, 2 * y) + at(2 * x + 1, 2 * y) + at(2 * x, 2 * y + 1) + at(2 * x + 1, 2 * y + 1)) / 4;
    }
  }
  return out;
}

const std::array<double, kSsimWindow>& GaussianWeights() {
  static const std::array<double, kSsimWindow> weights = [] {
    std::array<double, kSsimWindow> w{};
    double sum = 0;
    for (int i = 0; i < kSsimWindow; ++i) {
      const double d = i - kSsimWindow / 2;
      w[i] = std::exp(-d * d / (2 * 1.5 * 1.5));
      sum += w[i];
    }
    for (double& x : w) x /= sum;
    return w;
  }();
  return weights;
}

struct SsimMeans {
  double ssim = 0;  // mean of l * c * s over the windows
  double cs = 0;    // mean of c * s
};

// The separable Gaussian filter over a ring of kSsimWindow rows of
// horizontally filtered x, y, x^2, y^2 and xy.
// REQUIRES: equal sizes, both sides >= kSsimWindow.
SsimMeans SsimStats(const FloatPlane& a, const FloatPlane& b) {
  const auto& g = GaussianWeights();
  const int ow = a.width - kSsimWindow + 1;
  const int oh = a.height - kSsimWindow + 1;
  constexpr int kMoments = 5;
  std::vector<double> ring(static_cast<size_t>(kSsimWindow) * kMoments * ow);
  auto filter_row = [&](int r) {
    double* dst = &ring[static_cast<size_t>(r % kSsimWindow) * kMoments * ow];
    const double* x = &a.v[static_cast<size_t>(r) * a.width];
    const double* y = &b.v[static_cast<size_t>(r) * b.width];
    for (int j = 0; j < ow; ++j) {
      double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
      for (int u = 0; u < kSsimWindow; ++u) {
        const double p = x[j + u], q = y[j + u], w = g[u];
        sx += w * p;
        sy += w * q;
        sxx += w * p * p;
        syy += w * q * q;
        sxy += w * p * q;
      }
      dst[j] = sx;
      dst[ow + j] = sy;
      dst[2 * ow + j] = sxx;
      dst[3 * ow + j] = syy;
      dst[4 * ow + j] = sxy;
    }
  };
  for (int r = 0; r < kSsimWindow - 1; ++r) filter_row(r);
  double sum_ssim = 0, sum_cs = 0;
  for (int i = 0; i < oh; ++i) {
    filter_row(i + kSsimWindow - 1);
    for (int j = 0; j < ow; ++j) {
      double m[kMoments] = {};
      for (int v = 0; v < kSsimWindow; ++v) {
        const double* row = &ring[static_cast<size_t>((i + v) % kSsimWindow) * kMoments * ow];
        for (int q = 0; q < kMoments; ++q) m[q] += g[v] * row[q * ow + j];
      }
      const double mu1 = m[0], mu2 = m[1];
      const double var1 = m[2] - mu1 * mu1, var2 = m[3] - mu2 * mu2, cov = m[4] - mu1 * mu2;
      const double cs = (2 * cov + kC2) / (var1 + var2 + kC2);
      sum_cs += cs;
      sum_ssim += (2 * mu1 * mu2 + kC1) / (mu1 * mu1 + mu2 * mu2 + kC1) * cs;
    }
  }
  const double windows = static_cast<double>(ow) * oh;
  return {sum_ssim / windows, sum_cs / windows};
}

bool SameSize(const Plane& a, const Plane& b) { return a.width == b.width && a.height == b.height; }

bool FitsWindow(int width, int height) { return width >= kSsimWindow && height >= kSsimWindow; }

// The side after `halvings` 2x2 means.
int ScaledSide(int side, int halvings) {
  for (int i = 0; i < halvings; ++i) side = (side + 1) / 2;
  return side;
}

struct ChannelScores {
  std::optional<double> ssim;
  std::optional<double> ms_ssim;
};

// SSIM, and MS-SSIM where the planes are large enough; MS-SSIM's first scale
// is the SSIM pass. REQUIRES: equal sizes.
ChannelScores ScoreChannel(const Plane& reference, const Plane& test) {
  ChannelScores out;
  if (!FitsWindow(reference.width, reference.height)) return out;
  FloatPlane a = ToFloat(reference), b = ToFloat(test);
  const SsimMeans first = SsimStats(a, b);
  out.ssim = first.ssim;
  if (!FitsWindow(ScaledSide(reference.width, kScales - 1), ScaledSide(reference.height, kScales - 1))) return out;
  double product = std::pow(std::max(first.cs, 0.0), kScaleWeights[0]);
  for (int s = 1; s < kScales; ++s) {
    a = Halve(a);
    b = Halve(b);
    const SsimMeans m = SsimStats(a, b);
    product *= std::pow(std::max(s + 1 < kScales ? m.cs : m.ssim, 0.0), kScaleWeights[s]);
  }
  out.ms_ssim = product;
  return out;
}

double Percentile5(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t rank = static_cast<size_t>(std::ceil(0.05 * static_cast<double>(v.size())));
  return v[rank == 0 ? 0 : rank - 1];
}

double Mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

Plane ChannelOf(const DecodedImage& image, int c) {
  return {image.pixels.data() + c, image.width, image.height,
          static_cast<ptrdiff_t>(image.width) * image.components, image.components};
}

double SumSquaredError(const Plane& a, const Plane& b) {
  double sse = 0;
  for (int y = 0; y < a.height; ++y) {
    const uint8_t* r = a.data + y * a.row_stride;
    const uint8_t* t = b.data + y * b.row_stride;
    for (int x = 0; x < a.width; ++x) {
      const double d = static_cast<double>(r[x * a.pixel_stride]) - t[x * b.pixel_stride];
      sse += d * d;
    }
  }
  return sse;
}

double PsnrOf(double sse, double samples) {
  if (sse == 0) return kPsnrIdentical;
  return std::min(kPsnrIdentical, 10 * std::log10(255.0 * 255.0 * samples / sse));
}

}  // namespace

std::optional<double> Ssim(const Plane& reference, const Plane& test) {
  if (!SameSize(reference, test) || !FitsWindow(reference.width, reference.height)) return std::nullopt;
  return SsimStats(ToFloat(reference), ToFloat(test)).ssim;
}

std::optional<double> MsSsim(const Plane& reference, const Plane& test) {
  if (!SameSize(reference, test)) return std::nullopt;
  return ScoreChannel(reference, test).ms_ssim;
}

double Psnr(const Plane& reference, const Plane& test) {
  return PsnrOf(SumSquaredError(reference, test), static_cast<double>(reference.width) * reference.height);
}

Result<QualityScores> CompareImages(const DecodedImage& reference, const DecodedImage& test) {
  if (reference.width != test.width || reference.height != test.height ||
      reference.components != test.components || reference.components <= 0) {
    return Status::InvalidArgument("images of different shapes");
  }
  QualityScores scores;
  double ssim = 0, ms_ssim = 0, sse = 0;
  bool has_ssim = true, has_ms_ssim = true;
  for (int c = 0; c < reference.components; ++c) {
    const Plane r = ChannelOf(reference, c), t = ChannelOf(test, c);
    const ChannelScores channel = ScoreChannel(r, t);
    has_ssim = has_ssim && channel.ssim.has_value();
    has_ms_ssim = has_ms_ssim && channel.ms_ssim.has_value();
    ssim += channel.ssim.value_or(0);
    ms_ssim += channel.ms_ssim.value_or(0);
    sse += SumSquaredError(r, t);
  }
  const double n = reference.components;
  if (has_ssim) scores.ssim = ssim / n;
  if (has_ms_ssim) scores.ms_ssim = ms_ssim / n;
  scores.psnr = PsnrOf(sse, static_cast<double>(reference.width) * reference.height * reference.components);
  return scores;
}

Result<QualityReport> MeasureFidelityQuality(const ImageDataset& dataset, uint64_t sample) {
  QualityReport report;
  report.images = dataset.num_images();
  report.sampled = std::min(sample, report.images);
  const int groups = dataset.num_scan_groups();
  PCR_ASSIGN_OR_RETURN(const std::vector<uint64_t> stream_bytes, dataset.StreamBytes());
  double cumulative = 0;
  for (int k = 1; k <= groups; ++k) {
    cumulative += static_cast<double>(stream_bytes[k]);
    report.groups.push_back({.fidelity = k, .mean_bytes = cumulative / std::max<uint64_t>(report.images, 1)});
  }
  for (FidelityQuality& g : report.groups) {
    g.fraction = g.mean_bytes / report.groups.back().mean_bytes;
    g.speedup = report.groups.back().mean_bytes / g.mean_bytes;
  }
  if (report.sampled == 0) return report;

  // scores[k - 1][i]: sampled image i at fidelity k against full fidelity.
  std::vector<std::vector<QualityScores>> scores(groups, std::vector<QualityScores>(report.sampled));
  constexpr uint64_t kImagesPerRead = 16;
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  for (uint64_t first = 0; first < report.sampled; first += kImagesPerRead) {
    const uint64_t count = std::min(kImagesPerRead, report.sampled - first);
    std::vector<ImageRequest> requests;
    for (uint64_t i = first; i < first + count; ++i) {
      for (int k = 1; k <= groups; ++k) requests.push_back({i * report.images / report.sampled, k});
    }
    PCR_ASSIGN_OR_RETURN(std::vector<Image> images, dataset.ReadImages(requests));
    std::atomic<uint64_t> next{0};
    std::vector<Status> errors(count);
    // Sampled image j of this read at every fidelity, against its full fidelity.
    auto score = [&](uint64_t j) -> Status {
      const Image* chunk = &images[j * groups];
      DecodedImage full;
      for (int k = groups; k >= 1; --k) {
        const std::string where =
            DescribeImage(dataset, requests[j * groups].image) + " at fidelity " + std::to_string(k);
        auto at_k = DecodeJpeg(chunk[k - 1].jpeg);
        if (!at_k.ok()) return at_k.status().WithPrefix(where);
        if (k == groups) full = *at_k;
        auto s = CompareImages(full, *at_k);
        if (!s.ok()) return Status::Corruption(where + ": " + s.status().message());
        scores[k - 1][first + j] = *s;
      }
      return Status::OK();
    };
    auto work = [&] {
      for (uint64_t j; (j = next.fetch_add(1)) < count;) errors[j] = score(j);
    };
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < std::min<uint64_t>(threads, count); ++t) pool.emplace_back(work);
    work();
    for (std::thread& t : pool) t.join();
    for (const Status& e : errors) PCR_RETURN_IF_ERROR(e);
  }

  for (int k = 1; k <= groups; ++k) {
    std::vector<double> ssim, ms_ssim, psnr;
    for (const QualityScores& s : scores[k - 1]) {
      if (s.ssim) ssim.push_back(*s.ssim);
      if (s.ms_ssim) ms_ssim.push_back(*s.ms_ssim);
      psnr.push_back(s.psnr);
    }
    FidelityQuality& g = report.groups[k - 1];
    g.compared = ssim.size();
    if (!ssim.empty()) {
      g.ssim_mean = Mean(ssim);
      g.ssim_p5 = Percentile5(ssim);
    }
    if (!ms_ssim.empty()) g.ms_ssim_mean = Mean(ms_ssim);
    g.psnr_mean = Mean(psnr);
    g.psnr_p5 = Percentile5(psnr);
  }
  return report;
}

}  // namespace pcr
