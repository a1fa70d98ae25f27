// Helpers shared by the image suites.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "format/checksum.h"
#include "pcr/convert.h"
#include "pcr/decode.h"
#include "tests/test_util.h"

namespace pcr::test {

inline std::vector<std::filesystem::path> SampleFiles() {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(DataDir() + "/sample")) {
    if (e.is_regular_file()) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The APPn and COM segments before the first SOS, in order: marker and payload.
inline std::vector<std::pair<int, Bytes>> MetadataSegments(ByteSpan jpeg) {
  std::vector<std::pair<int, Bytes>> out;
  size_t pos = 2;
  while (pos + 4 <= jpeg.size() && jpeg[pos] == 0xff) {
    const int marker = jpeg[pos + 1];
    if (marker == 0xda) break;
    const size_t length = static_cast<size_t>(jpeg[pos + 2]) << 8 | jpeg[pos + 3];
    if (length < 2 || pos + 2 + length > jpeg.size()) break;
    if ((marker >= 0xe0 && marker <= 0xef) || marker == 0xfe) {
      out.emplace_back(marker, Bytes(jpeg.begin() + pos + 4, jpeg.begin() + pos + 2 + length));
    }
    pos += 2 + length;
  }
  return out;
}

// The original is decoded as libjpeg-turbo's djpeg would, warnings allowed;
// the converted file must decode without any warning.
inline void RequireSamePixels(ByteSpan original, ByteSpan converted) {
  auto a = DecodeJpeg(original, {.warnings_are_errors = false});
  auto b = DecodeJpeg(converted);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->width == b->width);
  CHECK(a->height == b->height);
  CHECK(a->components == b->components);
  CHECK(a->pixels == b->pixels);
}

// Hash of every file under a directory, to prove it was not modified.
inline std::map<std::string, uint64_t> TreeHashes(const std::filesystem::path& root) {
  std::map<std::string, uint64_t> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
    if (e.is_regular_file()) out[e.path().string()] = Checksum64(ReadFile(e.path()));
  }
  return out;
}

// In source order, so that image i is SampleFiles()[i].
inline ConvertImagesOptions SampleOptions(const std::string& out, int jobs) {
  return {.src_dir = DataDir() + "/sample", .out_dir = out, .images_per_record = 5, .jobs = jobs,
          .shuffle_seed = std::nullopt};
}

}  // namespace pcr::test
