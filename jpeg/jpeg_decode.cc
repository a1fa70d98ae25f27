#include "pcr/decode.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "format/coding.h"
#include "jpeg/error_manager.h"
#include "jpeg/jpeg_limits.h"
#include "jpeg/pixel_decoder.h"

// pcr's decoder reproduces libjpeg-turbo 2.1's choices: block smoothing
// from the first 10 coefficients, the rounding of h1v2 upsampling.
#if !defined(LIBJPEG_TURBO_VERSION_NUMBER) || LIBJPEG_TURBO_VERSION_NUMBER < 2001000
#error "pcr needs libjpeg-turbo 2.1 or later"
#endif

namespace pcr {

namespace {

bool ValidScale(int d) { return d == 1 || d == 2 || d == 4 || d == 8; }

}  // namespace

struct JpegDecoder::State {
  jpeg_decompress_struct cinfo{};
  JpegErrorManager err{};
  std::vector<uint8_t> row;  // one cropped scanline at libjpeg's block-aligned width
  std::string invalid;       // why the request does not fit the image
  std::string too_big;       // why the frame is over the pixel limit
  PixelDecoder pcr;
  DecoderCounts counts;

  // Every C++ object here outlives the longjmp target or is POD. Returns
  // false on a libjpeg error (err.message) or an unfit request (invalid);
  // `out` is null for a header-only call.
  bool Run(ByteSpan jpeg, const DecodeOptions& o, uint8_t* out, size_t out_size, ImageShape* shape);
  // pcr's decoder over `jpeg`: true with *result set when it decoded the
  // image or found it corrupt or unfit; false when libjpeg-turbo should
  // decode it.
  bool DecodeWithPcr(ByteSpan jpeg, const DecodeOptions& o, std::span<uint8_t> out, Result<ImageShape>* result);
};

bool JpegDecoder::State::Run(ByteSpan jpeg, const DecodeOptions& o, uint8_t* out, size_t out_size,
                             ImageShape* shape) {
  State* s = this;
  RenewDecompressor(&s->cinfo, &s->err);
  s->cinfo.mem->max_memory_to_use = 1L << 30;
  jpeg_decompress_struct& cinfo = s->cinfo;
  s->err.warnings = o.warnings_are_errors ? JpegWarnings::kAllAreErrors : JpegWarnings::kIgnore;
  s->err.Reset();
  s->invalid.clear();
  s->too_big.clear();
  if (setjmp(s->err.jump)) {
    jpeg_abort_decompress(&cinfo);
    return false;
  }
  jpeg_mem_src(&cinfo, jpeg.data(), jpeg.size());
  jpeg_read_header(&cinfo, TRUE);
  if (static_cast<uint64_t>(cinfo.image_width) * cinfo.image_height > o.max_pixels) {
    s->too_big = PixelLimitMessage(cinfo.image_width, cinfo.image_height, o.max_pixels);
    jpeg_abort_decompress(&cinfo);
    return false;
  }
  // libjpeg decodes CMYK and YCCK only to CMYK; RGB and gray come from
  // converting that here.
  const bool cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
  const bool from_cmyk = cmyk && o.format != PixelFormat::kNative;
  if (!cmyk && o.format == PixelFormat::kRgb) {
    cinfo.out_color_space = JCS_RGB;
  } else if (!cmyk && o.format == PixelFormat::kGray) {
    cinfo.out_color_space = JCS_GRAYSCALE;
  }
  cinfo.scale_num = 1;
  cinfo.scale_denom = static_cast<unsigned>(o.scale_denom);
  jpeg_calc_output_dimensions(&cinfo);
  const int width = static_cast<int>(cinfo.output_width);
  const int height = static_cast<int>(cinfo.output_height);
  const Crop& c = o.crop;
  const bool crop = c.width > 0;
  if (crop && (c.x > width - c.width || c.y > height - c.height)) s->invalid = CropOutsideMessage(c, width, height);
  const int components = from_cmyk ? (o.format == PixelFormat::kRgb ? 3 : 1) : cinfo.out_color_components;
  *shape = {crop ? c.width : width, crop ? c.height : height, components};
  if (!s->invalid.empty() || out == nullptr || out_size < shape->bytes()) {
    if (s->invalid.empty() && out != nullptr) {
      s->invalid = BufferTooSmallMessage(out_size, shape->bytes());
    }
    jpeg_abort_decompress(&cinfo);
    return s->invalid.empty();
  }
  jpeg_start_decompress(&cinfo);
  const size_t comps = static_cast<size_t>(shape->components);
  const size_t stride = static_cast<size_t>(shape->width) * comps;
  const bool inverted = cinfo.saw_Adobe_marker;  // Adobe applications store CMYK inverted
  // Writes `n` pixels of a decoded row to `dst` in the output format.
  auto emit = [&](const uint8_t* src, uint8_t* dst, size_t n) {
    if (!from_cmyk) {
      std::memcpy(dst, src, n * comps);
      return;
    }
    ConvertCmyk(src, inverted, o.format == PixelFormat::kGray, dst, n);
  };
  const size_t decoded = static_cast<size_t>(cinfo.output_components);
  if (!crop) {
    if (s->row.size() < cinfo.output_width * decoded) s->row.resize(cinfo.output_width * decoded);
    while (cinfo.output_scanline < cinfo.output_height) {
      uint8_t* dst = out + stride * cinfo.output_scanline;
      JSAMPROW row = from_cmyk ? s->row.data() : dst;
      jpeg_read_scanlines(&cinfo, &row, 1);
      if (from_cmyk) emit(row, dst, cinfo.output_width);
    }
    jpeg_finish_decompress(&cinfo);
    return true;
  }
  // libjpeg-turbo upsamples chroma at a cropped region's edges as at the
  // image's edges, and smooths blocks there with the region's first column
  // of DC values standing in for those left of it; so the region asked for
  // extends one iMCU and two blocks of chroma (at most 64 pixels) left and
  // right of the crop, where the image allows.
  constexpr int kMargin = 64;
  const int left = std::max(0, c.x - kMargin);
  JDIMENSION x = static_cast<JDIMENSION>(left);
  JDIMENSION w = static_cast<JDIMENSION>(std::min(width, c.x + c.width + kMargin) - left);
  // With 4x horizontal chroma subsampling (4:1:1, 4:1:0) cropped rows can
  // still differ, so those decode whole rows.
  if (cinfo.max_h_samp_factor > 2) {
    x = 0;
    w = cinfo.output_width;
  }
  if (w < cinfo.output_width) jpeg_crop_scanline(&cinfo, &x, &w);
  // Likewise above the crop: rows are skipped up to one iMCU before it.
  const int top = std::max(0, c.y - kMargin);
  if (top > 0) jpeg_skip_scanlines(&cinfo, static_cast<JDIMENSION>(top));
  const size_t shift = (static_cast<size_t>(c.x) - x) * decoded;
  if (s->row.size() < w * decoded) s->row.resize(w * decoded);
  for (int r = top; r < c.y + c.height; ++r) {
    JSAMPROW row = s->row.data();
    jpeg_read_scanlines(&cinfo, &row, 1);
    if (r >= c.y) emit(s->row.data() + shift, out + stride * (r - c.y), static_cast<size_t>(c.width));
  }
  jpeg_abort_decompress(&cinfo);
  return true;
}

JpegDecoder::JpegDecoder() : state_(std::make_unique<State>()) {
  state_->err.Install(reinterpret_cast<j_common_ptr>(&state_->cinfo));
  jpeg_create_decompress(&state_->cinfo);
}

JpegDecoder::~JpegDecoder() { jpeg_destroy_decompress(&state_->cinfo); }

Result<ImageShape> JpegDecoder::Shape(ByteSpan jpeg, const DecodeOptions& options) {
  return Decode(jpeg, options, {});
}

Status JpegDecoder::CheckOptions(const DecodeOptions& options) {
  if (static_cast<unsigned>(options.format) > static_cast<unsigned>(PixelFormat::kGray)) {
    return Status::InvalidArgument("format must be PixelFormat::kNative, kRgb or kGray, not " +
                                   std::to_string(static_cast<int>(options.format)));
  }
  if (static_cast<unsigned>(options.decoder) > static_cast<unsigned>(DecoderChoice::kLibjpeg)) {
    return Status::InvalidArgument("decoder must be DecoderChoice::kAuto, kPcr or kLibjpeg, not " +
                                   std::to_string(static_cast<int>(options.decoder)));
  }
  if (!ValidScale(options.scale_denom)) {
    return Status::InvalidArgument("scale_denom must be 1, 2, 4 or 8, not " + std::to_string(options.scale_denom));
  }
  const Crop& c = options.crop;
  if (c.width < 0 || c.height < 0 || (c.width == 0) != (c.height == 0) || c.x < 0 || c.y < 0) {
    return Status::InvalidArgument("crop " + std::to_string(c.width) + "x" + std::to_string(c.height) + "+" +
                                   std::to_string(c.x) + "+" + std::to_string(c.y) +
                                   ": width and height must both be positive, or both 0 for no crop, and x and y "
                                   "at least 0");
  }
  return Status::OK();
}

bool JpegDecoder::State::DecodeWithPcr(ByteSpan jpeg, const DecodeOptions& o, std::span<uint8_t> out,
                                       Result<ImageShape>* result) {
  State* s = this;
  if (!s->pcr.Open(jpeg, o).ok()) return false;
  const CoefficientFrame& f = s->pcr.frame();
  if (uint64_t(f.width) * uint64_t(f.height) > o.max_pixels) {
    *result = Status::NotSupported(PixelLimitMessage(uint64_t(f.width), uint64_t(f.height), o.max_pixels));
    return true;
  }
  const ImageShape whole = s->pcr.scaled();
  const Crop& c = o.crop;
  if (c.width > 0 && (c.x > whole.width - c.width || c.y > whole.height - c.height)) {
    *result = Status::InvalidArgument(CropOutsideMessage(c, whole.width, whole.height));
    return true;
  }
  const ImageShape shape = c.width > 0 ? ImageShape{c.width, c.height, whole.components} : whole;
  if (out.size() < shape.bytes()) {
    *result = Status::InvalidArgument(BufferTooSmallMessage(out.size(), shape.bytes()));
    return true;
  }
  const CoefficientOutcome outcome = s->pcr.Decode(out.data());
  if (outcome.kind == CoefficientOutcome::kNotHandled ||
      (outcome.kind == CoefficientOutcome::kWarning && !o.warnings_are_errors)) {
    return false;
  }
  if (outcome.ok()) {
    *result = shape;
  } else {
    *result = Status::Corruption("JPEG decode: " + outcome.message);
  }
  return true;
}

DecoderCounts JpegDecoder::counts() const { return state_->counts; }

Result<ImageShape> JpegDecoder::Decode(ByteSpan jpeg, const DecodeOptions& options, std::span<uint8_t> out) {
  PCR_RETURN_IF_ERROR(CheckOptions(options));
  // pcr's decoder is the faster one at every scale (bench/README.md, "Decoding to pixels").
  const bool automatic = options.decoder == DecoderChoice::kAuto;
  if (!out.empty() && (options.decoder == DecoderChoice::kPcr || automatic)) {
    Result<ImageShape> result = ImageShape{};
    if (state_->DecodeWithPcr(jpeg, options, out, &result)) {
      ++state_->counts.pcr;
      return result;
    }
    if (!automatic) ++state_->counts.fallbacks;
  }
  if (!out.empty()) ++state_->counts.libjpeg;
  ImageShape shape;
  if (!state_->Run(jpeg, options, out.data(), out.size(), &shape)) {
    if (!state_->too_big.empty()) return Status::NotSupported(state_->too_big);
    if (!state_->invalid.empty()) return Status::InvalidArgument(state_->invalid);
    return Status::Corruption("JPEG decode: " + state_->err.message);
  }
  return shape;
}

Result<DecodedImage> DecodeJpeg(ByteSpan jpeg, const DecodeOptions& options) {
  JpegDecoder decoder;
  PCR_ASSIGN_OR_RETURN(const ImageShape shape, decoder.Shape(jpeg, options));
  DecodedImage out{shape.width, shape.height, shape.components, std::vector<uint8_t>(shape.bytes())};
  PCR_RETURN_IF_ERROR(decoder.Decode(jpeg, options, out.pixels).status());
  return out;
}

}  // namespace pcr
