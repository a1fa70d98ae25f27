// Writing kTable files: rows are flattened into per-feature streams and
// written stripe by stripe, each stripe's streams in popularity order.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "format/file_format.h"
#include "writer/feature_streams.h"
#include "pcr/convert.h"
#include "writer/atomic_file.h"

namespace pcr {

class TableFileWriter {
 public:
  // `features` gives names, types and ids; their counts are computed. The
  // file appears at `path` on Finish, which fails if one is already there.
  static Result<std::unique_ptr<TableFileWriter>> Create(const std::string& path,
                                                         std::vector<FeatureInfo> features,
                                                         const TableWriterOptions& options);

  // Values of the current row. Each feature gets at most one value per row;
  // features not given a value are missing from the row. The file is
  // stamped with the lowest version holding every feature's type.
  // kInt64, and the bits of kUInt64 and the ticks of timestamp features.
  void AddInt64(size_t feature, int64_t v);
  void AddBool(size_t feature, bool v);
  // Stored as float for kFloat32 features.
  void AddFloat(size_t feature, double v);
  // kString and kBytes features.
  void AddString(size_t feature, std::string_view s);
  // Id lists (the bits of kUInt64IdList's ids). `scores` has one entry per
  // id for scored features and is empty otherwise.
  void AddIdList(size_t feature, std::span<const int64_t> ids, std::span<const double> scores);
  // kFloat32List (rounded to float) and kFloat64List features.
  void AddFloatList(size_t feature, std::span<const double> values);
  // Ends the current row; writes the stripe when it is full.
  Status EndRow();
  // Writes the stripe of the rows so far, if any: the next row starts a new one.
  Status EndStripe() { return WriteStripe(); }

  // Appends a stripe of already stored streams: streams[k] holds the stream of
  // (feature, role) given by stripe.table_streams[k]; the stripe is written in
  // the writer's stream order. Used to reorder a file without decoding it.
  Status AddStoredStripe(const StripeInfo& stripe, std::vector<Bytes> streams);
  // Counts of a copied stripe are not recomputed: the caller sets them here.
  void SetFeatureCounts(const std::vector<FeatureInfo>& features);

  size_t stripe_count() const { return index_.stripes.size(); }
  // Writes the last stripe, the index and the footer, and commits the file.
  Result<TableSchema> Finish();

 private:
  TableFileWriter(std::unique_ptr<AtomicFile> file, std::vector<FeatureInfo> features,
                  const TableWriterOptions& options, const EncodingChoice& choice, uint8_t version_minor);
  // Counts one more present row holding `values` values.
  void Counted(size_t feature, uint64_t values);
  Status WriteStripe();
  Status AppendStream(const StoredStream& s, uint32_t feature, StreamRole role, uint64_t checksum,
                      StripeInfo* stripe);

  std::unique_ptr<AtomicFile> file_;
  TableWriterOptions options_;
  EncodingChoice choice_;
  uint8_t version_minor_;
  FileIndex index_;
  std::vector<uint32_t> order_;
  std::vector<FeatureStreams> streams_;
  uint32_t stripe_rows_ = 0;
  uint64_t stripe_bytes_ = 0;
};

}  // namespace pcr
