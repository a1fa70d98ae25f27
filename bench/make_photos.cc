// Makes an ImageFolder benchmark dataset of real photos: random crops of the
// JPEGs under SRC_DIR, re-encoded as baseline JPEG.
//
// usage: make_photos SRC_DIR OUT_DIR --count N [--width 500] [--height 375]
//                    [--quality 92] [--classes 10] [--seed 1]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <jpeglib.h>

#include "pcr/decode.h"

namespace fs = std::filesystem;

namespace {

struct Options {
  std::string src, out;
  uint64_t count = 0;
  int width = 500, height = 375, quality = 92, classes = 10;
  uint64_t seed = 1;
};

pcr::Bytes Encode(const uint8_t* pixels, int stride, int width, int height, int quality) {
  jpeg_compress_struct c{};
  jpeg_error_mgr err{};
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &out, &size);
  c.image_width = static_cast<JDIMENSION>(width);
  c.image_height = static_cast<JDIMENSION>(height);
  c.input_components = 3;
  c.in_color_space = JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, quality, TRUE);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(pixels + static_cast<size_t>(c.next_scanline) * stride);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  pcr::Bytes bytes(out, out + size);
  jpeg_destroy_compress(&c);
  std::free(out);
  return bytes;
}

int Run(const Options& o) {
  std::vector<fs::path> sources;
  for (const auto& e : fs::recursive_directory_iterator(o.src)) {
    const std::string ext = e.path().extension().string();
    if (e.is_regular_file() && (ext == ".jpg" || ext == ".jpeg" || ext == ".JPG")) sources.push_back(e.path());
  }
  std::sort(sources.begin(), sources.end());
  if (sources.empty()) {
    std::fprintf(stderr, "make_photos: no JPEG under %s\n", o.src.c_str());
    return 1;
  }
  uint64_t state = o.seed, made = 0, bytes = 0;
  auto next = [&state] { return (state = state * 6364136223846793005ULL + 1442695040888963407ULL) >> 11; };
  const uint64_t per_source = (o.count + sources.size() - 1) / sources.size();
  for (size_t s = 0; s < sources.size() && made < o.count; ++s) {
    std::ifstream in(sources[s], std::ios::binary);
    pcr::Bytes data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // Half resolution where that leaves room for a crop: detail like a camera photo.
    pcr::Result<pcr::DecodedImage> img = pcr::Status::OK();
    for (int scale : {2, 1}) {
      img = pcr::DecodeJpeg(data, {.scale_denom = scale, .warnings_are_errors = false});
      if (img.ok() && img->components == 3 && img->width >= o.width && img->height >= o.height) break;
    }
    if (!img.ok() || img->components != 3 || img->width < o.width || img->height < o.height) continue;
    const int stride = img->width * 3;
    for (uint64_t i = 0; i < per_source && made < o.count; ++i, ++made) {
      const int x = static_cast<int>(next() % (img->width - o.width + 1));
      const int y = static_cast<int>(next() % (img->height - o.height + 1));
      const pcr::Bytes jpeg = Encode(img->pixels.data() + static_cast<size_t>(y) * stride + x * 3, stride,
                                     o.width, o.height, o.quality);
      char name[64];
      std::snprintf(name, sizeof(name), "class%02d/img%07llu.jpg", static_cast<int>(made % o.classes),
                    static_cast<unsigned long long>(made));
      const fs::path path = fs::path(o.out) / name;
      fs::create_directories(path.parent_path());
      std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(jpeg.data()),
                                                  static_cast<std::streamsize>(jpeg.size()));
      bytes += jpeg.size();
    }
  }
  std::printf("%llu images, %llu bytes in %s\n", static_cast<unsigned long long>(made),
              static_cast<unsigned long long>(bytes), o.out.c_str());
  return made == o.count ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::vector<std::string> pos;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto val = [&] { return i + 1 < argc ? std::strtoull(argv[++i], nullptr, 10) : 0ull; };
    if (a == "--count") o.count = val();
    else if (a == "--width") o.width = static_cast<int>(val());
    else if (a == "--height") o.height = static_cast<int>(val());
    else if (a == "--quality") o.quality = static_cast<int>(val());
    else if (a == "--classes") o.classes = static_cast<int>(val());
    else if (a == "--seed") o.seed = val();
    else pos.push_back(a);
  }
  if (pos.size() != 2 || o.count == 0 || o.width <= 0 || o.height <= 0 || o.classes <= 0) {
    std::fprintf(stderr, "usage: make_photos SRC_DIR OUT_DIR --count N [--width W] [--height H] "
                         "[--quality Q] [--classes C] [--seed S]\n");
    return 2;
  }
  o.src = pos[0];
  o.out = pos[1];
  return Run(o);
}
