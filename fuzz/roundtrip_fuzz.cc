// What only a writer-side target can check, on small random datasets drawn
// from the input bytes: writes are deterministic (a table written twice, an
// image dataset with 1 and 2 jobs and in 2 to 4 merged parts, byte for byte)
// and what is read back is what was written (table values bit for bit,
// images pixel for pixel at full fidelity). Reading damaged or arbitrary
// files is pcr_file_fuzz's. Any difference aborts.
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <jpeglib.h>

#include "fuzz/work_dir.h"
#include "pcr/image_dataset.h"
#include "pcr/decode.h"
#include "pcr/table.h"
#include "pcr/convert.h"
#include "writer/table_writer.h"

namespace {

namespace fs = std::filesystem;

using pcr::fuzz::WorkDir;

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "roundtrip_fuzz: %s\n", what);
    std::abort();
  }
}

// The input as a stream of numbers; zeros once it runs out.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t u8() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint32_t below(uint32_t n) { return (u8() | uint32_t{u8()} << 8) % n; }
  int64_t i64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = v << 8 | u8();
    return static_cast<int64_t>(v);
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

pcr::Bytes ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return pcr::Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// One column of random cells, built as Table::Read returns it (zeros in the
// value vectors of missing scalar rows). Any float bit pattern is drawn for
// float64: NaNs, infinities and -0.0 round trip bit for bit (spec 13.1).
pcr::Column RandomColumn(Input& in, pcr::FeatureType type, uint64_t rows) {
  using T = pcr::FeatureType;
  pcr::Column c(type);
  c.rows = rows;
  for (uint64_t r = 0; r < rows; ++r) {
    const bool present = in.below(4) != 0;
    c.present.push_back(present);
    if (type == T::kFloat64) {
      c.doubles.push_back(present ? std::bit_cast<double>(in.i64()) : 0.0);
    } else if (type == T::kFloat32) {
      c.floats.push_back(present ? static_cast<float>(in.below(1 << 16)) / 7 : 0.0f);
    } else if (pcr::IsScalarType(type)) {
      c.ints.push_back(!present ? 0 : type == T::kBool ? in.below(2) : in.i64());
    } else if (type == T::kString) {
      for (uint32_t n = present ? in.below(12) : 0; n > 0; --n) c.bytes.push_back(static_cast<char>(in.u8()));
      c.offsets.push_back(c.bytes.size());
    } else {
      for (uint32_t n = present ? in.below(6) : 0; n > 0; --n) {
        c.ints.push_back(in.i64() >> in.below(64));
        if (type == T::kScoredIdList64) c.doubles.push_back(std::bit_cast<double>(in.i64()));
        if (type == T::kScoredIdList32) c.floats.push_back(static_cast<float>(in.below(1000)) / 3);
      }
      c.offsets.push_back(c.ints.size());
    }
  }
  return c;
}

void WriteTable(const fs::path& path, const std::vector<pcr::FeatureInfo>& features,
                const std::vector<pcr::Column>& columns, const pcr::TableWriterOptions& options) {
  using T = pcr::FeatureType;
  auto w = pcr::TableFileWriter::Create(path.string(), features, options);
  Check(w.ok(), "table writer create");
  const uint64_t rows = columns.empty() ? 0 : columns[0].rows;
  for (uint64_t r = 0; r < rows; ++r) {
    for (size_t f = 0; f < columns.size(); ++f) {
      const pcr::Column& c = columns[f];
      if (!c.present[r]) continue;
      if (c.type == T::kFloat64) {
        (*w)->AddFloat(f, c.doubles[r]);
      } else if (c.type == T::kFloat32) {
        (*w)->AddFloat(f, c.floats[r]);
      } else if (c.type == T::kBool) {
        (*w)->AddBool(f, c.ints[r] != 0);
      } else if (pcr::IsScalarType(c.type)) {
        (*w)->AddInt64(f, c.ints[r]);
      } else if (c.type == T::kString) {
        (*w)->AddString(f, c.string(r));
      } else {
        const size_t begin = c.offsets[r], n = c.offsets[r + 1] - begin;
        std::vector<double> scores;
        if (!c.doubles.empty()) scores.assign(c.doubles.begin() + begin, c.doubles.begin() + begin + n);
        if (!c.floats.empty()) scores.assign(c.floats.begin() + begin, c.floats.begin() + begin + n);
        (*w)->AddIdList(f, std::span(c.ints).subspan(begin, n), scores);
      }
    }
    Check((*w)->EndRow().ok(), "table EndRow");
  }
  Check((*w)->Finish().ok(), "table Finish");
}

template <typename V>
bool SameBytes(const V& a, const V& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(a[0])) == 0);
}

void TableRoundTrip(Input& in) {
  // The schema comes first in the input, so seeds can choose it.
  std::vector<pcr::FeatureInfo> features(1 + in.below(6));
  for (size_t f = 0; f < features.size(); ++f) {
    features[f].name = "f" + std::to_string(f);
    // Types 1..7, 11..16 and 17: those a table writer takes one value of at a time.
    const uint32_t t = in.below(14);
    features[f].type = static_cast<pcr::FeatureType>(t < 7 ? 1 + t : t < 13 ? 4 + t : 17);
  }
  const uint64_t rows = in.below(40);
  std::vector<pcr::Column> columns;
  for (const auto& f : features) columns.push_back(RandomColumn(in, f.type, rows));
  const pcr::TableWriterOptions options{.rows_per_stripe = 1 + in.below(8), .zstd_level = 1};
  const fs::path a = WorkDir() / "a.pcr", b = WorkDir() / "b.pcr";
  fs::remove(a);
  fs::remove(b);
  WriteTable(a, features, columns, options);
  WriteTable(b, features, columns, options);
  Check(ReadAll(a) == ReadAll(b), "two writes of one table differ");

  auto table = pcr::Table::Open(a.string());
  Check(table.ok(), "table does not open");
  Check((*table)->schema().row_count == rows, "table row count");
  std::vector<uint32_t> all(features.size());
  for (size_t f = 0; f < all.size(); ++f) all[f] = static_cast<uint32_t>(f);
  auto batch = (*table)->Read(all, 0, (*table)->stripe_count());
  Check(batch.ok(), "table does not read");
  for (size_t f = 0; f < features.size(); ++f) {
    const pcr::Column& got = batch->columns[f];
    const pcr::Column& want = columns[f];
    Check(got.type == want.type && got.rows == want.rows && got.present == want.present, "presence differs");
    Check(got.ints == want.ints && got.offsets == want.offsets && got.bytes == want.bytes, "value differs");
    Check(SameBytes(got.doubles, want.doubles) && SameBytes(got.floats, want.floats), "float differs");
  }
}

pcr::Bytes EncodeJpeg(Input& in) {
  jpeg_compress_struct c{};
  jpeg_error_mgr err{};
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &out, &size);
  c.image_width = 1 + in.below(40);
  c.image_height = 1 + in.below(40);
  const bool gray = in.below(3) == 0;
  c.input_components = gray ? 1 : 3;
  c.in_color_space = gray ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 5 + static_cast<int>(in.below(96)), TRUE);
  if (!gray) {
    c.comp_info[0].h_samp_factor = 1 + static_cast<int>(in.below(2));
    c.comp_info[0].v_samp_factor = 1 + static_cast<int>(in.below(2));
  }
  if (in.below(2)) jpeg_simple_progression(&c);
  c.optimize_coding = in.below(2);
  c.restart_in_rows = static_cast<int>(in.below(3));
  jpeg_start_compress(&c, TRUE);
  std::vector<uint8_t> row(c.image_width * static_cast<size_t>(c.input_components));
  uint32_t state = in.u8();
  while (c.next_scanline < c.image_height) {
    for (uint8_t& p : row) p = static_cast<uint8_t>((state = state * 1103515245 + 12345) >> 24);
    JSAMPROW r = row.data();
    jpeg_write_scanlines(&c, &r, 1);
  }
  jpeg_finish_compress(&c);
  pcr::Bytes bytes(out, out + size);
  jpeg_destroy_compress(&c);
  std::free(out);
  return bytes;
}

void ImageRoundTrip(Input& in) {
  const fs::path src = WorkDir() / "src";
  fs::remove_all(src);
  fs::create_directories(src / "a");
  fs::create_directories(src / "b");
  const uint32_t count = 1 + in.below(4);
  for (uint32_t i = 0; i < count; ++i) {
    const pcr::Bytes jpeg = EncodeJpeg(in);
    std::ofstream((src / (i % 2 ? "a" : "b") / ("img" + std::to_string(i) + ".jpg")), std::ios::binary)
        .write(reinterpret_cast<const char*>(jpeg.data()), static_cast<std::streamsize>(jpeg.size()));
  }
  const uint64_t per_record = 1 + in.below(3);
  const std::string script = in.below(2) ? "spectral5" : "libjpeg";
  std::vector<fs::path> outs;
  for (int jobs : {1, 2}) {
    outs.push_back(WorkDir() / ("out" + std::to_string(jobs)));
    fs::remove_all(outs.back());
    auto done = pcr::ConvertImages({.src_dir = src.string(), .out_dir = outs.back().string(),
                                    .images_per_record = per_record, .jobs = jobs, .scan_script = script});
    Check(done.ok(), "converting JPEGs that libjpeg wrote failed");
  }
  // The same conversion in parts, merged.
  const uint64_t shards = 2 + in.below(3);
  std::vector<std::string> parts;
  for (uint64_t i = 0; i < shards; ++i) {
    parts.push_back((WorkDir() / ("part" + std::to_string(i))).string());
    fs::remove_all(parts.back());
    auto done = pcr::ConvertImages({.src_dir = src.string(), .out_dir = parts.back(), .images_per_record = per_record,
                                    .jobs = 1, .scan_script = script, .shard_index = i, .num_shards = shards});
    Check(done.ok(), "converting a part failed");
  }
  outs.push_back(WorkDir() / "merged");
  fs::remove_all(outs.back());
  Check(pcr::MergeParts(outs.back().string(), parts).ok(), "merging the parts failed");
  for (const fs::path& other : {outs[1], outs[2]}) {
    size_t files = 0;
    for (const auto& e : fs::directory_iterator(other)) {
      Check(ReadAll(e.path()) == ReadAll(outs[0] / e.path().filename()), "two conversions differ");
      ++files;
    }
    Check(files == static_cast<size_t>(std::distance(fs::directory_iterator(outs[0]), fs::directory_iterator())),
          "two conversions hold different files");
  }
  // Reading at every fidelity is pcr_file_fuzz's; here the pixels must be the original's.
  auto ds = pcr::ImageDataset::Open(outs[0].string());
  Check(ds.ok(), "dataset does not open");
  Check((*ds)->num_images() == count, "image count");
  for (uint64_t i = 0; i < count; ++i) {
    auto original = pcr::DecodeJpeg(ReadAll(src / (*ds)->sample(i)->key));
    auto img = (*ds)->ReadImage(i, (*ds)->num_scan_groups());
    Check(original.ok() && img.ok(), "image does not read");
    auto decoded = pcr::DecodeJpeg(img->jpeg);
    Check(decoded.ok() && decoded->pixels == original->pixels, "full fidelity differs from the original");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  TableRoundTrip(in);
  ImageRoundTrip(in);
  return 0;
}
