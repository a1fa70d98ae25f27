// pcr.BatchDecoder and pcr.decode.
#include <map>

#include "common.h"

namespace pcr_python {

std::shared_ptr<BufferPool> SharedBufferPool(size_t bytes) {
  static std::map<size_t, std::weak_ptr<BufferPool>> pools;
  static std::shared_ptr<BufferPool> latest;
  std::shared_ptr<BufferPool> pool = pools[bytes].lock();
  if (!pool) {
    std::erase_if(pools, [](const auto& p) { return p.second.expired(); });
    pool = std::make_shared<BufferPool>();
    pools[bytes] = pool;
  }
  latest = pool;
  return pool;
}

py::array Batch(BufferPool& pool, std::vector<uint8_t>&& data, size_t n, const pcr::BatchTransformOptions& options) {
  using Dtype = pcr::BatchTransformOptions::Dtype;
  const py::ssize_t count = static_cast<py::ssize_t>(n), s = options.size;
  const py::ssize_t bytes = options.dtype == Dtype::kFloat32 ? 4 : options.dtype == Dtype::kFloat16 ? 2 : 1;
  // Wrapped as bytes with the last axis `bytes` times longer, then viewed.
  const std::vector<py::ssize_t> shape = options.channels_last ? std::vector<py::ssize_t>{count, s, s, 3 * bytes}
                                                               : std::vector<py::ssize_t>{count, 3, s, s * bytes};
  py::array images = pool.Wrap(std::move(data), shape);
  if (bytes == 1) return images;
  return images.attr("view")(options.dtype == Dtype::kFloat32 ? "float32" : "float16");
}

pcr::DecoderChoice Decoder(const std::string& name) {
  if (name == "auto") return pcr::DecoderChoice::kAuto;
  if (name == "pcr") return pcr::DecoderChoice::kPcr;
  if (name == "libjpeg") return pcr::DecoderChoice::kLibjpeg;
  throw py::value_error("decoder must be 'auto', 'pcr' or 'libjpeg', not '" + name + "'");
}

pcr::BatchTransformOptions TransformOptions(int size, const std::string& crop, std::pair<double, double> scale,
                                            std::pair<double, double> ratio, int resize, bool flip, bool fast_scale,
                                            bool channels_last, const Normalize& normalize, const std::string& dtype,
                                            int threads, const std::string& decoder) {
  if (crop != "random_resized" && crop != "center") throw py::value_error("crop must be 'random_resized' or 'center'");
  using Dtype = pcr::BatchTransformOptions::Dtype;
  if (dtype != "uint8" && dtype != "float32" && dtype != "float16") {
    throw py::value_error("dtype must be 'uint8', 'float32' or 'float16', not '" + dtype + "'");
  }
  const Dtype type = dtype == "float32" ? Dtype::kFloat32 : dtype == "float16" ? Dtype::kFloat16 : Dtype::kUInt8;
  std::array<float, 3> mean = {0, 0, 0}, stddev = {1, 1, 1};
  if (normalize) {
    if (type == Dtype::kUInt8) throw py::value_error("normalize needs dtype float32 or float16, not uint8");
    for (auto [given, to, name] : {std::tuple{&normalize->first, &mean, "mean"}, {&normalize->second, &stddev, "std"}}) {
      if (given->size() != 1 && given->size() != 3) {
        throw py::value_error(std::string("normalize's ") + name + " must have 1 or 3 values, not " +
                              std::to_string(given->size()));
      }
      for (int c = 0; c < 3; ++c) (*to)[c] = (*given)[given->size() == 1 ? 0 : c];
    }
    for (float v : stddev) {
      if (v == 0) throw py::value_error("normalize's std must not be 0: it divides");
    }
  }
  return {.size = size,
          .crop = crop == "center" ? pcr::BatchTransformOptions::Crop::kCenter
                                   : pcr::BatchTransformOptions::Crop::kRandomResized,
          .random_resized = {scale.first, scale.second, ratio.first, ratio.second},
          .resize = resize,
          .random_flip = flip,
          .fast_scale = fast_scale,
          .channels_last = channels_last,
          .dtype = type,
          .mean = mean,
          .stddev = stddev,
          .threads = threads,
          .decoder = Decoder(decoder)};
}

namespace {

class PyBatchDecoder {
 public:
  PyBatchDecoder(int size, const std::string& crop, std::pair<double, double> scale, std::pair<double, double> ratio,
                 int resize, bool flip, bool fast_scale, bool channels_last, const Normalize& normalize,
                 const std::string& dtype, int threads, const std::string& decoder)
      : options_(TransformOptions(size, crop, scale, ratio, resize, flip, fast_scale, channels_last, normalize, dtype,
                                  threads, decoder)) {
    decoder_ = Take(pcr::BatchDecoder::Create(options_));
  }

  py::array decode(const std::vector<py::bytes>& jpegs, uint64_t seed) {
    std::vector<pcr::ByteSpan> spans;
    for (const py::bytes& b : jpegs) {
      char* data = nullptr;
      py::ssize_t size = 0;
      PyBytes_AsStringAndSize(b.ptr(), &data, &size);
      spans.emplace_back(reinterpret_cast<const uint8_t*>(data), static_cast<size_t>(size));
    }
    std::vector<uint8_t> out = buffers_->Take(jpegs.size() * decoder_->image_bytes());
    // `jpegs` holds the bytes objects, so their buffers stay valid meanwhile.
    Unlocked([&] { return decoder_->Decode(spans, seed, out); });
    return Batch(*buffers_, std::move(out), jpegs.size(), options_);
  }

 private:
  pcr::BatchTransformOptions options_;
  std::unique_ptr<pcr::BatchDecoder> decoder_;
  std::shared_ptr<BufferPool> buffers_ = std::make_shared<BufferPool>();
};

py::array_t<uint8_t> Decode(py::buffer jpeg, int scale, std::optional<std::tuple<int, int, int, int>> crop,
                            const std::string& format, bool strict, const std::string& decoder) {
  pcr::DecodeOptions options{.scale_denom = scale, .warnings_are_errors = strict, .decoder = Decoder(decoder)};
  if (format == "rgb") {
    options.format = pcr::PixelFormat::kRgb;
  } else if (format == "gray") {
    options.format = pcr::PixelFormat::kGray;
  } else if (format == "native") {
    options.format = pcr::PixelFormat::kNative;
  } else {
    throw py::value_error("format must be 'rgb', 'gray' or 'native', not '" + format + "'");
  }
  if (crop) {
    const auto [x, y, w, h] = *crop;
    options.crop = {.x = x, .y = y, .width = w, .height = h};
  }
  const py::buffer_info info = jpeg.request();  // holds the buffer while the GIL is released
  if (info.ndim != 1 || info.itemsize != 1) throw py::value_error("jpeg must be a flat buffer of bytes");
  const pcr::ByteSpan bytes(static_cast<const uint8_t*>(info.ptr), static_cast<size_t>(info.size));
  pcr::DecodedImage image = Unlocked([&] { return pcr::DecodeJpeg(bytes, options); });
  auto* held = new std::vector<uint8_t>(std::move(image.pixels));
  py::capsule owner(held, [](void* p) { delete static_cast<std::vector<uint8_t>*>(p); });
  const py::ssize_t c = image.components;
  return py::array_t<uint8_t>({static_cast<py::ssize_t>(image.height), static_cast<py::ssize_t>(image.width), c},
                              {static_cast<py::ssize_t>(image.width) * c, c, py::ssize_t{1}}, held->data(), owner);
}

}  // namespace

void DefineDecoding(py::module_& m) {
  py::class_<PyBatchDecoder>(m, "BatchDecoder", Doc("BatchDecoder"))
      .def(py::init<int, const std::string&, std::pair<double, double>, std::pair<double, double>, int, bool, bool,
                    bool, const Normalize&, const std::string&, int, const std::string&>(),
           py::kw_only(), py::arg("size") = 224, py::arg("crop") = "random_resized",
           py::arg("scale") = std::pair<double, double>{0.08, 1.0},
           py::arg("ratio") = std::pair<double, double>{3.0 / 4.0, 4.0 / 3.0}, py::arg("resize") = 256,
           py::arg("flip") = true, py::arg("fast_scale") = false, py::arg("channels_last") = false,
           py::arg("normalize") = py::none(), py::arg("dtype") = "uint8", py::arg("threads") = 0,
           py::arg("decoder") = "auto", Doc("BatchDecoder.__init__"))
      .def("decode", &PyBatchDecoder::decode, py::arg("jpegs"), py::arg("seed") = 0, Doc("BatchDecoder.decode"))
      .def_static("image_seed", &pcr::BatchDecoder::ImageSeed, py::arg("seed"), py::arg("i"), Doc("BatchDecoder.image_seed"));
  m.def("decode", &Decode, py::arg("jpeg"), py::arg("scale") = 1, py::arg("crop") = py::none(),
        py::arg("format") = "rgb", py::arg("strict") = true, py::arg("decoder") = "auto", Doc("decode"));
}

}  // namespace pcr_python
