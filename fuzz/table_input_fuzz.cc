// Converts arbitrary bytes as a CSV (first byte even) or JSON Lines (odd)
// table, then reads back and verifies what was written. Conversion must fail
// cleanly or produce a table that reads and verifies. The same conversion in
// 2 to 4 shards of small splits must write the same bytes, or fail with the
// same error; bytes that start as gzip or zstd data (decompressed as they
// are converted) must be refused in shards. The bytes after the first, read
// as a shard survey's or a plan's encoding (spec section 15), must be refused
// or decode to what their encoding decodes to again.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "format/table_shard_plan.h"
#include "fuzz/work_dir.h"
#include "pcr/table.h"
#include "pcr/verify.h"
#include "pcr/convert.h"
#include "writer/decompress.h"
#include "tests/table_shards.h"

using pcr::fuzz::WorkDir;

namespace {

template <typename Decode, typename Encode>
void CheckDecoding(std::string_view magic, std::string_view bytes, Decode decode, Encode encode) {
  auto first = decode(std::string(magic) + std::string(bytes));
  if (!first.ok()) return;
  const std::string once = encode(*first);
  auto second = decode(once);
  if (!second.ok() || encode(*second) != once) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  CheckDecoding(pcr::kShardSurveyMagic, rest, pcr::DecodeShardSurvey, pcr::EncodeShardSurvey);
  CheckDecoding(pcr::kTableConversionPlanMagic, rest, pcr::DecodeTableConversionPlan,
                pcr::EncodeTableConversionPlan);
  const std::filesystem::path dir = WorkDir();
  const std::string input = (dir / ((data[0] & 1) ? "in.jsonl" : "in.csv")).string();
  {
    std::ofstream out(input, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data + 1), static_cast<std::streamsize>(size - 1));
  }
  for (const char* d : {"out", "sharded", "parts"}) std::filesystem::remove_all(dir / d);
  pcr::TableConvertOptions options{.input = input, .out_dir = (dir / "out").string()};
  options.writer.rows_per_stripe = 1 + data[0] % 7;
  options.split_bytes = 1 + data[0] / 8 % 32;
  auto report = pcr::ConvertTable(options);
  options.out_dir = (dir / "sharded").string();
  const pcr::ShardedConversion sharded = pcr::ConvertTableInShards(options, 2 + data[0] / 2 % 3, dir / "parts");
  std::filesystem::remove(input);
  const bool compressed =
      pcr::CompressionOf(std::string_view(reinterpret_cast<const char*>(data + 1), size - 1).substr(0, 4)) !=
      pcr::Compression::kNone;
  if (compressed ? sharded.status.message().find("cannot be converted in shards") == std::string::npos
                 : sharded.status.message() != report.status().message()) {
    std::abort();
  }
  if (!report.ok()) return 0;
  if (!compressed) {
    const std::filesystem::path name = std::filesystem::path(report->path).filename();
    std::ifstream one(report->path, std::ios::binary), other(dir / "sharded" / name, std::ios::binary);
    if (std::string(std::istreambuf_iterator<char>(one), {}) !=
        std::string(std::istreambuf_iterator<char>(other), {})) {
      std::abort();
    }
  }
  auto table = pcr::Table::Open(report->path);
  if (!table.ok()) std::abort();
  std::vector<uint32_t> all((*table)->schema().features.size());
  for (uint32_t f = 0; f < all.size(); ++f) all[f] = f;
  auto batch = (*table)->Read(all, 0, (*table)->stripe_count());
  if (!batch.ok() || batch->rows != report->schema.row_count) std::abort();
  if (!pcr::VerifyPath(report->path).errors.empty()) std::abort();
  return 0;
}
