// Image quality against a reference, and the fidelity report of a dataset:
// what each scan group costs in bytes and loses in quality.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "pcr/decode.h"
#include "pcr/image_dataset.h"
#include "pcr/status.h"

namespace pcr {

// One channel of an 8-bit image: sample (x, y) is
// data[y * row_stride + x * pixel_stride].
struct Plane {
  const uint8_t* data = nullptr;
  int width = 0;
  int height = 0;
  ptrdiff_t row_stride = 0;
  int pixel_stride = 1;
};

// Side of the SSIM window; SSIM needs planes at least this wide and high.
inline constexpr int kSsimWindow = 11;
// PSNR reported for identical planes (and the cap for nearly identical ones).
inline constexpr double kPsnrIdentical = 100.0;

// Mean SSIM (Wang, Bovik, Sheikh and Simoncelli 2004) over every 11x11
// window inside the planes: Gaussian weights with sigma 1.5, K1 = 0.01,
// K2 = 0.03, L = 255, no downsampling (MATLAB ssim_index, 'valid').
// nullopt when the planes differ in size or are smaller than the window.
std::optional<double> Ssim(const Plane& reference, const Plane& test);

// MS-SSIM (Wang, Simoncelli and Bovik 2003): 5 scales weighted 0.0448,
// 0.2856, 0.3001, 0.2363, 0.1333, each scale the 2x2 mean of the one before
// (odd sides repeat their last sample), SSIM windows as above; a negative
// mean contrast-structure term counts as 0. nullopt when the planes differ in
// size or the 5th scale is smaller than the window (a side under 161).
std::optional<double> MsSsim(const Plane& reference, const Plane& test);

// 10 log10(255^2 / MSE) over every sample, at most kPsnrIdentical.
// REQUIRES: planes of equal size.
double Psnr(const Plane& reference, const Plane& test);

struct QualityScores {
  std::optional<double> ssim;     // mean over channels
  std::optional<double> ms_ssim;  // mean over channels
  double psnr = 0;                // over all samples of all channels
};

// Scores `test` against `reference`. InvalidArgument when their shapes differ.
Result<QualityScores> CompareImages(const DecodedImage& reference, const DecodedImage& test);

struct FidelityQuality {
  int fidelity = 0;
  double mean_bytes = 0;  // per image at this fidelity (scan groups 1..k), whole dataset
  double fraction = 0;    // mean_bytes over the full-fidelity mean_bytes
  double speedup = 0;     // predicted I/O speedup: full-fidelity mean_bytes over mean_bytes
  uint64_t compared = 0;  // sampled images with an SSIM (both sides at least 11)
  double ssim_mean = 0, ssim_p5 = 0;
  std::optional<double> ms_ssim_mean;  // over the sampled images with an MS-SSIM
  double psnr_mean = 0, psnr_p5 = 0;
};

struct QualityReport {
  uint64_t images = 0;   // in the dataset
  uint64_t sampled = 0;  // decoded at every fidelity
  std::vector<FidelityQuality> groups;  // groups[k - 1]: fidelity k
};

// Reads `sample` images spread evenly over the dataset at every fidelity,
// decodes each (native colour space, libjpeg-turbo defaults) and scores
// fidelity k against full fidelity. p5 is the 5th percentile (nearest rank).
// Byte figures come from the index and cover every image.
Result<QualityReport> MeasureFidelityQuality(const ImageDataset& dataset, uint64_t sample);

}  // namespace pcr
