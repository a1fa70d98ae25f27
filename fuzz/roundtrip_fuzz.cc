// Round trip of small random datasets drawn from the input bytes: a table
// written through TableFileWriter and an image dataset of JPEGs encoded here.
// Each is written twice, and the writes must be byte-identical (the images
// with 1 and 2 jobs, and in 2 to 4 merged parts). Everything is read back
// and must equal what was written: table values exactly, images pixel for
// pixel at full fidelity and decodable at every fidelity. Any difference
// aborts.
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <variant>
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

// One cell: an integer, a float, a string or a list of ids with scores.
struct IdList {
  std::vector<int64_t> ids;
  std::vector<double> scores;
};
using Cell = std::optional<std::variant<int64_t, double, std::string, IdList>>;

bool IsList(pcr::FeatureType t) {
  return t == pcr::FeatureType::kIdList || t == pcr::FeatureType::kScoredIdList64 ||
         t == pcr::FeatureType::kScoredIdList32;
}
bool IsScored(pcr::FeatureType t) {
  return t == pcr::FeatureType::kScoredIdList64 || t == pcr::FeatureType::kScoredIdList32;
}
bool IsFloat32(pcr::FeatureType t) {
  return t == pcr::FeatureType::kFloat32 || t == pcr::FeatureType::kScoredIdList32;
}

// Any bit pattern: NaNs of every sign and payload, infinities and -0.0
// round trip bit for bit (spec 13.1).
double RandomDouble(Input& in) { return std::bit_cast<double>(in.i64()); }

bool SameBits(double a, double b) { return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b); }
bool SameBits(float a, float b) { return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b); }

Cell RandomCell(Input& in, pcr::FeatureType type) {
  if (in.below(4) == 0) return std::nullopt;
  switch (type) {
    case pcr::FeatureType::kBool:
      return static_cast<int64_t>(in.below(2));
    case pcr::FeatureType::kInt64:
    case pcr::FeatureType::kUInt64:
    case pcr::FeatureType::kTimestampS:
    case pcr::FeatureType::kTimestampMs:
    case pcr::FeatureType::kTimestampUs:
    case pcr::FeatureType::kTimestampNs:
      return in.i64();
    case pcr::FeatureType::kFloat64:
      return RandomDouble(in);
    case pcr::FeatureType::kFloat32:
      return static_cast<double>(static_cast<float>(in.below(1 << 16)) / 7);
    case pcr::FeatureType::kString: {
      std::string s(in.below(12), '\0');
      for (char& c : s) c = static_cast<char>(in.u8());
      return s;
    }
    default: {
      IdList l;
      const uint32_t n = in.below(6);
      for (uint32_t i = 0; i < n; ++i) {
        l.ids.push_back(in.i64() >> in.below(64));
        if (IsScored(type)) {
          l.scores.push_back(IsFloat32(type) ? static_cast<double>(static_cast<float>(in.below(1000)) / 3)
                                             : RandomDouble(in));
        }
      }
      return l;
    }
  }
}

void WriteTable(const fs::path& path, const std::vector<pcr::FeatureInfo>& features,
                const std::vector<std::vector<Cell>>& rows, const pcr::TableWriterOptions& options) {
  auto w = pcr::TableFileWriter::Create(path.string(), features, options);
  Check(w.ok(), "table writer create");
  for (const auto& row : rows) {
    for (size_t f = 0; f < features.size(); ++f) {
      if (!row[f]) continue;
      if (auto* i = std::get_if<int64_t>(&*row[f])) {
        if (features[f].type == pcr::FeatureType::kBool) {
          (*w)->AddBool(f, *i != 0);
        } else {
          (*w)->AddInt64(f, *i);
        }
      }
      if (auto* d = std::get_if<double>(&*row[f])) (*w)->AddFloat(f, *d);
      if (auto* s = std::get_if<std::string>(&*row[f])) (*w)->AddString(f, *s);
      if (auto* l = std::get_if<IdList>(&*row[f])) (*w)->AddIdList(f, l->ids, l->scores);
    }
    Check((*w)->EndRow().ok(), "table EndRow");
  }
  Check((*w)->Finish().ok(), "table Finish");
}

void TableRoundTrip(Input& in) {
  std::vector<pcr::FeatureInfo> features(1 + in.below(6));
  for (size_t f = 0; f < features.size(); ++f) {
    features[f].name = "f" + std::to_string(f);
    // Types 1..7 and 11..16: those a table writer takes one value of at a time.
    const uint32_t t = in.below(13);
    features[f].type = static_cast<pcr::FeatureType>(t < 7 ? 1 + t : 4 + t);
  }
  std::vector<std::vector<Cell>> rows(in.below(40));
  for (auto& row : rows) {
    for (const auto& f : features) row.push_back(RandomCell(in, f.type));
  }
  const pcr::TableWriterOptions options{.rows_per_stripe = 1 + in.below(8), .zstd_level = 1};
  const fs::path a = WorkDir() / "a.pcr", b = WorkDir() / "b.pcr";
  fs::remove(a);
  fs::remove(b);
  WriteTable(a, features, rows, options);
  WriteTable(b, features, rows, options);
  Check(ReadAll(a) == ReadAll(b), "two writes of one table differ");

  auto table = pcr::Table::Open(a.string());
  Check(table.ok(), "table does not open");
  Check((*table)->schema().row_count == rows.size(), "table row count");
  std::vector<uint32_t> all(features.size());
  for (size_t f = 0; f < all.size(); ++f) all[f] = static_cast<uint32_t>(f);
  auto batch = (*table)->Read(all, 0, (*table)->stripe_count());
  Check(batch.ok(), "table does not read");
  for (size_t f = 0; f < features.size(); ++f) {
    const pcr::Column& c = batch->columns[f];
    const pcr::FeatureType t = features[f].type;
    Check(c.rows == rows.size(), "column rows");
    uint64_t element = 0;
    for (size_t r = 0; r < rows.size(); ++r) {
      const Cell& want = rows[r][f];
      Check(c.present[r] == (want ? 1 : 0), "presence differs");
      if (t == pcr::FeatureType::kInt64 || t >= pcr::FeatureType::kBool) {
        Check(c.ints[r] == (want ? std::get<int64_t>(*want) : 0), "integer differs");
      } else if (t == pcr::FeatureType::kFloat64) {
        Check(SameBits(c.doubles[r], want ? std::get<double>(*want) : 0.0), "float64 differs");
      } else if (t == pcr::FeatureType::kFloat32) {
        Check(SameBits(c.floats[r], want ? static_cast<float>(std::get<double>(*want)) : 0.0f), "float32 differs");
      } else if (t == pcr::FeatureType::kString) {
        Check(c.string(r) == (want ? std::get<std::string>(*want) : std::string()), "string differs");
      } else if (IsList(t)) {
        const IdList empty;
        const IdList& l = want ? std::get<IdList>(*want) : empty;
        Check(c.offsets[r + 1] - c.offsets[r] == l.ids.size(), "list length differs");
        for (size_t i = 0; i < l.ids.size(); ++i, ++element) {
          Check(c.ints[element] == l.ids[i], "id differs");
          if (t == pcr::FeatureType::kScoredIdList64) Check(SameBits(c.doubles[element], l.scores[i]), "score differs");
          if (t == pcr::FeatureType::kScoredIdList32) {
            Check(SameBits(c.floats[element], static_cast<float>(l.scores[i])), "score differs");
          }
        }
      }
    }
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
  auto ds = pcr::ImageDataset::Open(outs[0].string());
  Check(ds.ok(), "dataset does not open");
  Check((*ds)->num_images() == count, "image count");
  const int groups = (*ds)->num_scan_groups();
  for (uint64_t i = 0; i < count; ++i) {
    auto original = pcr::DecodeJpeg(ReadAll(src / (*ds)->sample(i).key));
    Check(original.ok(), "original does not decode");
    for (int k = 1; k <= groups; ++k) {
      auto img = (*ds)->ReadImage(i, k);
      Check(img.ok(), "image does not read");
      auto decoded = pcr::DecodeJpeg(img->jpeg);
      Check(decoded.ok(), "image does not decode");
      if (k == groups) Check(decoded->pixels == original->pixels, "full fidelity differs from the original");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  TableRoundTrip(in);
  ImageRoundTrip(in);
  return 0;
}
