// A program outside pcr that uses only the installed library: it opens the
// dataset DIR, reads every record at fidelity 2, decodes every image, and
// writes each image's fidelity-2 JPEG to OUT/<key>.
#include <pcr/pcr.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: consumer DIR OUT\n");
    return 2;
  }
  auto ds = pcr::ImageDataset::Open(argv[1]);
  if (!ds.ok()) {
    std::fprintf(stderr, "%s\n", ds.status().ToString().c_str());
    return 1;
  }
  const int fidelity = 2;
  if ((*ds)->num_scan_groups() < fidelity) return 1;
  uint64_t images = 0, pixels = 0;
  pcr::JpegDecoder decoder;
  for (uint64_t r = 0; r < (*ds)->num_records(); ++r) {
    auto record = (*ds)->ReadRecord(r, fidelity);
    if (!record.ok()) {
      std::fprintf(stderr, "%s\n", record.status().ToString().c_str());
      return 1;
    }
    for (const pcr::Image& image : *record) {
      auto shape = decoder.Shape(image.jpeg);
      if (!shape.ok()) return 1;
      std::vector<uint8_t> out(shape->bytes());
      if (!decoder.Decode(image.jpeg, {}, out).ok()) return 1;
      pixels += static_cast<uint64_t>(shape->width) * shape->height;
      const std::filesystem::path path = std::filesystem::path(argv[2]) / image.key;
      std::filesystem::create_directories(path.parent_path());
      std::ofstream(path, std::ios::binary)
          .write(reinterpret_cast<const char*>(image.jpeg.data()), static_cast<std::streamsize>(image.jpeg.size()));
      ++images;
    }
  }
  std::printf("%llu images, %llu pixels at fidelity %d\n", static_cast<unsigned long long>(images),
              static_cast<unsigned long long>(pixels), fidelity);
  return images == (*ds)->num_images() ? 0 : 1;
}
