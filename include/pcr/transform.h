// Training and evaluation image transforms done during decoding, with
// torchvision's geometry and PIL's bilinear filter: the crop is chosen from
// the JPEG header before any pixel is decoded, so cropped decoding skips
// what the crop drops (and, with fast_scale, DCT scaling what the resize
// would); the rest is resized to the output size.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>

#include "pcr/bytes.h"
#include "pcr/decode.h"
#include "pcr/export.h"
#include "pcr/status.h"

namespace pcr {

// A rectangle of the source image, in its pixels.
struct Region {
  int x = 0;
  int y = 0;
  int width = 0;
  int height = 0;

  bool operator==(const Region&) const = default;
};

// torchvision's RandomResizedCrop: a region of scale (fraction of the area)
// and aspect ratio (width / height) drawn uniformly (the ratio on a log
// scale), ten tries, then the central crop of the nearest allowed ratio.
struct RandomResizedCropOptions {
  double scale_min = 0.08;
  double scale_max = 1.0;
  double ratio_min = 3.0 / 4.0;
  double ratio_max = 4.0 / 3.0;
};

// The region torchvision's RandomResizedCrop.get_params draws for a width x
// height image after torch.manual_seed(seed): the same Mersenne Twister
// (seeded with the seed's low 32 bits) and the same arithmetic. One
// difference: torch takes the float exp of the drawn log-ratio with SLEEF on
// CPUs with AVX2, pcr with the C library, and a last-bit difference there
// moves a side by one pixel (doc/python.md measures how rarely).
// InvalidArgument unless width and height are 1..65535 and the options are
// as BatchDecoder::Create requires.
PCR_EXPORT Result<Region> RandomResizedCropRegion(int width, int height, const RandomResizedCropOptions& options,
                                                  uint64_t seed);

// torchvision's Resize(resize) then CenterCrop(crop) of a width x height
// image: the shorter side is resized to `resize` and the longer to
// int(resize * longer / shorter), and `crop` is the window of that resized
// image CenterCrop keeps (offsets rounded half to even, as Python's round).
struct CenterCropGeometry {
  int resized_width = 0;
  int resized_height = 0;
  Region crop;

  bool operator==(const CenterCropGeometry&) const = default;
};

// InvalidArgument unless width, height and resize are 1..65535 and
// 1 <= crop <= resize.
PCR_EXPORT Result<CenterCropGeometry> CenterCropOf(int width, int height, int resize, int crop);

// Resizes `src` (src_height rows of src_width * channels bytes) to `dst`
// (dst_height rows of dst_width * channels bytes) with a triangle filter
// widened by the scale factor when shrinking: PIL's BILINEAR, with its
// fixed-point weights and rounding, so the bytes equal PIL's (for 4 channels,
// PIL's CMYK or RGBX; PIL premultiplies RGBA). InvalidArgument unless every
// size is 1..65535, channels 1..4, and each buffer holds exactly its image.
PCR_EXPORT Status ResizeBilinear(std::span<const uint8_t> src, int src_width, int src_height, int channels,
                                 std::span<uint8_t> dst, int dst_width, int dst_height);

struct BatchTransformOptions {
  int size = 224;  // output images are size x size, RGB
  enum class Crop { kRandomResized, kCenter } crop = Crop::kRandomResized;
  RandomResizedCropOptions random_resized;  // for kRandomResized
  int resize = 256;                         // kCenter: Resize(resize) then CenterCrop(size)
  bool random_flip = true;                  // mirror each image with probability 1/2 (kRandomResized only)
  // Decode at a DCT scale (1/2, 1/4, 1/8) where the crop keeps at least
  // `size` pixels each way, then resize: faster, but not torchvision's
  // pixels (doc/python.md measures the difference). Off: every image is
  // torchvision's on PIL's decode, byte for byte.
  bool fast_scale = false;
  bool channels_last = false;               // N x H x W x 3 rather than N x 3 x H x W
  // Each value v stays a uint8, or becomes (v / 255 - mean[c]) / stddev[c]
  // computed in float32 as torchvision's ToTensor then Normalize(mean,
  // stddev) compute it, stored as float32 or rounded to nearest even
  // float16 (as torch's .half()).
  enum class Dtype { kUInt8, kFloat32, kFloat16 } dtype = Dtype::kUInt8;
  std::array<float, 3> mean = {0, 0, 0};    // kFloat32 and kFloat16 only
  std::array<float, 3> stddev = {1, 1, 1};  // kFloat32 and kFloat16 only; none 0
  int threads = 0;                          // decoding threads; 0: one per core
  DecoderChoice decoder = DecoderChoice::kAuto;  // see DecodeOptions
};

// Decodes batches of JPEGs into one buffer of N images, each cropped,
// resized, flipped and converted as `options` say. Image i's random choices are those
// torchvision's RandomResizedCrop then RandomHorizontalFlip draw after
// torch.manual_seed(ImageSeed(seed, i)), so a batch is the same for any
// number of threads. Thread safety: Decode may be called from one thread at
// a time; it runs the decoding on the decoder's own threads.
class PCR_EXPORT BatchDecoder {
 public:
  static Result<std::unique_ptr<BatchDecoder>> Create(const BatchTransformOptions& options);
  ~BatchDecoder();
  BatchDecoder(const BatchDecoder&) = delete;
  BatchDecoder& operator=(const BatchDecoder&) = delete;

  // The torch seed of image i of a batch decoded with `seed`.
  static uint64_t ImageSeed(uint64_t seed, size_t i);

  // Bytes of one output image: 3 * size * size values of the dtype.
  size_t image_bytes() const;
  // Fills out[i * image_bytes() ...] with image i. A decode error names the
  // image's index in the batch, also set in *failed when given.
  // InvalidArgument unless out.size() == jpegs.size() * image_bytes().
  Status Decode(std::span<const ByteSpan> jpegs, uint64_t seed, std::span<uint8_t> out, size_t* failed = nullptr);

 private:
  struct Rep;
  explicit BatchDecoder(std::unique_ptr<Rep> rep);
  std::unique_ptr<Rep> rep_;
};

}  // namespace pcr
