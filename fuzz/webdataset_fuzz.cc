// Converts arbitrary bytes as a WebDataset tar shard (with --skip-bad when
// the last byte is odd), then reads back and verifies what was written.
// Conversion must fail cleanly or produce a dataset that reads and verifies.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "fuzz/work_dir.h"
#include "pcr/convert.h"
#include "pcr/image_dataset.h"
#include "pcr/verify.h"

using pcr::fuzz::WorkDir;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::filesystem::path dir = WorkDir();
  const std::string shard = (dir / "shard.tar").string();
  {
    std::ofstream out(shard, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  std::filesystem::remove_all(dir / "out");
  pcr::ConvertImagesOptions options{.out_dir = (dir / "out").string(), .images_per_record = 2, .jobs = 1,
                                    .skip_bad = (data[size - 1] & 1) != 0, .shards = {shard}};
  auto summary = pcr::ConvertWebDataset(options);
  if (!summary.ok()) return 0;
  auto ds = pcr::ImageDataset::Open((dir / "out").string());
  if (!ds.ok() || (*ds)->num_images() != summary->images) std::abort();
  pcr::RecordSelection all{.fidelity = (*ds)->num_scan_groups()};
  for (uint32_t f = 0; f < (*ds)->field_schema().features.size(); ++f) all.fields.push_back(f);
  for (uint64_t r = 0; r < (*ds)->num_records(); ++r) {
    if (!(*ds)->ReadRecordBatches({&r, 1}, all).ok()) std::abort();
  }
  if (!pcr::VerifyPath((dir / "out").string()).errors.empty()) std::abort();
  return 0;
}
