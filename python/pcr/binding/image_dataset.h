// pcr.ImageDataset.
#pragma once

#include "common.h"

namespace pcr_python {

class PyImageDataset {
 public:
  PyImageDataset(const std::filesystem::path& path_arg, const std::string& engine, bool direct, const py::object& remote,
                 int64_t index_cache_bytes) {
    const std::string path = path_arg.string();
    io_ = IoOptions(engine, direct, remote);
    const pcr::ImageReaderOptions options{
        .io = io_, .index_cache_bytes = NonNegative(index_cache_bytes, "index_cache_bytes")};
    ds_ = Unlocked([&] { return pcr::ImageDataset::Open(path, options); });
    path_ = path;
  }

  size_t size() const { return ds_->num_images(); }
  uint64_t num_records() const { return ds_->num_records(); }
  int num_scan_groups() const { return ds_->num_scan_groups(); }
  std::vector<std::string> classes() const { return ds_->class_names(); }
  std::string content_id() const { return ds_->content_id(); }

  py::dict counts() const {
    const pcr::DatasetCounts c = Take(ds_->counts());
    py::dict d;
    d["images"] = c.images;
    d["records"] = c.records;
    d["files"] = c.files;
    d["file_bytes"] = c.file_bytes;
    std::vector<uint64_t> at;
    for (int k = 1; k <= ds_->num_scan_groups(); ++k) at.push_back(c.BytesAtFidelity(k));
    d["bytes_at_fidelity"] = at;
    d["segment_bytes"] = c.segment_bytes;
    return d;
  }

  std::pair<int64_t, std::string> sample(int64_t i) const {
    const uint64_t image = Index(i);
    const pcr::SampleMetadata s = Take(ds_->sample(image));
    return {s.label, s.key};
  }

  py::bytes read(int64_t i, const py::object& fidelity, bool metadata) const {
    const pcr::ImageRequest request{Index(i), Fidelity(fidelity), metadata};
    return ToBytes(Unlocked([&] { return ds_->ReadImages({&request, 1}); })[0].jpeg);
  }

  py::list read_many(const std::vector<int64_t>& indices, const py::object& fidelity) const {
    std::vector<pcr::ImageRequest> requests;
    const int k = Fidelity(fidelity);
    for (int64_t i : indices) requests.push_back({Index(i), k});
    const std::vector<pcr::Image> images = Unlocked([&] { return ds_->ReadImages(requests); });
    py::list out;
    for (const pcr::Image& image : images) out.append(ToBytes(image.jpeg));
    return out;
  }

  py::bytes lower_fidelity(int64_t i, const py::bytes& jpeg, const py::object& fidelity,
                           const py::object& jpeg_fidelity) const {
    const uint64_t image = Index(i);
    const int to = Fidelity(fidelity), from = Fidelity(jpeg_fidelity);
    const std::string_view bytes = jpeg;
    const pcr::ByteSpan span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    return ToBytes(Take(ds_->LowerFidelity(image, span, from, to)));
  }

  py::dict io_counters() const { return CountersDict(ds_->io_counters()); }

  const pcr::ImageDataset& dataset() const { return *ds_; }

  py::list field_schema() const { return SchemaList(ds_->field_schema()); }

  // {name: column} over the images of records [first, first + count), in
  // dataset order; no image bytes are read.
  py::dict read_fields(const Names& names_arg, uint64_t first, std::optional<uint64_t> count) const {
    const std::vector<std::string>& names = names_arg.names;
    const std::vector<uint32_t> fields = Take(ds_->ResolveFields(names));
    const uint64_t n = ds_->num_records();
    if (first > n || (count && *count > n - first)) {
      throw py::index_error("records [" + std::to_string(first) + ", +" + std::to_string(count.value_or(0)) +
                            ") out of range (" + std::to_string(n) + " records)");
    }
    std::vector<uint64_t> records(count.value_or(n - first));
    for (uint64_t r = 0; r < records.size(); ++r) records[r] = first + r;
    std::vector<pcr::RecordBatch> batches =
        Unlocked([&] { return ds_->ReadRecordBatches(records, {.fidelity = pcr::kFieldsOnly, .fields = fields}); });
    py::dict out;
    for (size_t j = 0; j < names.size(); ++j) {
      pcr::Column all(ds_->field_schema().features[fields[j]].type);
      for (const pcr::RecordBatch& b : batches) AppendColumn(b.fields[j], &all);
      out[py::str(names[j])] = ColumnDict(std::move(all));
    }
    return out;
  }

  // {name: value} of image `i` (None where it lacks the field); reads the
  // streams of these fields in the image's record.
  py::dict fields(int64_t i, const Names& names_arg) const {
    const std::vector<std::string>& names = names_arg.names;
    const uint64_t image = Index(i);
    const std::vector<uint32_t> fields = Take(ds_->ResolveFields(names));
    const auto [record, row] = Take(ds_->LocateImage(image));
    std::vector<pcr::RecordBatch> batches =
        Unlocked([&] { return ds_->ReadRecordBatches({&record, 1}, {.fidelity = pcr::kFieldsOnly, .fields = fields}); });
    py::dict out;
    for (size_t j = 0; j < names.size(); ++j) out[py::str(names[j])] = ColumnValue(batches[0].fields[j], row);
    return out;
  }

  // Record `record` with the fields `names` at `fidelity_arg` (0: fields
  // alone, no JPEGs) and, with `metadata`, the segments kept apart put back.
  struct OneRecord {
    pcr::RecordBatch batch;
    bool jpegs = true;
  };
  OneRecord ReadOne(uint64_t record, const py::object& fidelity_arg, const std::vector<std::string>& names,
                    bool metadata) const {
    const std::vector<uint32_t> fields = Take(ds_->ResolveFields(names));
    if (record >= ds_->num_records()) {
      throw py::index_error("record " + std::to_string(record) + " out of range (" +
                            std::to_string(ds_->num_records()) + " records)");
    }
    const int k = Fidelity(fidelity_arg, true);
    std::vector<pcr::RecordBatch> batches =
        Unlocked([&] {
          return ds_->ReadRecordBatches({&record, 1}, {.fidelity = k, .fields = fields, .segments = metadata});
        });
    return {std::move(batches[0]), k != pcr::kFieldsOnly};
  }

  // One dict per image of record `record`: {"index", "key", "label", "jpeg"
  // (unless fidelity is 0), "fields": {name: value or None}}.
  py::list record_samples(uint64_t record, const py::object& fidelity_arg, const Names& names_arg) const {
    const std::vector<std::string>& names = names_arg.names;
    const OneRecord one = ReadOne(record, fidelity_arg, names, false);
    std::call_once(record_first_once_, [&] {
      record_first_.assign(ds_->num_records(), 0);
      for (uint64_t i = ds_->num_images(); i-- > 0;) {
        const auto [r, row] = Take(ds_->LocateImage(i));
        if (row == 0) record_first_[r] = i;
      }
    });
    py::list out;
    for (const pcr::ImageView& v : one.batch.images) {
      py::dict d;
      d["index"] = record_first_[record] + v.row;
      d["key"] = py::str(v.key.data(), v.key.size());
      d["label"] = v.label;
      if (one.jpegs) d["jpeg"] = py::bytes(reinterpret_cast<const char*>(v.jpeg.data()), v.jpeg.size());
      py::dict values;
      for (size_t j = 0; j < names.size(); ++j) values[py::str(names[j])] = ColumnValue(one.batch.fields[j], v.row);
      d["fields"] = values;
      out.append(d);
    }
    return out;
  }

  // One record: {"labels", "keys", "jpegs" (unless fidelity is 0), "fields": {name: column}}.
  py::dict read_record(uint64_t record, const py::object& fidelity_arg, const Names& names_arg,
                       bool metadata) const {
    const std::vector<std::string>& names = names_arg.names;
    OneRecord one = ReadOne(record, fidelity_arg, names, metadata);
    std::vector<int64_t> labels;
    py::list keys, jpegs;
    for (const pcr::ImageView& v : one.batch.images) {
      labels.push_back(v.label);
      keys.append(py::str(v.key.data(), v.key.size()));
      if (one.jpegs) jpegs.append(py::bytes(reinterpret_cast<const char*>(v.jpeg.data()), v.jpeg.size()));
    }
    py::dict out;
    out["labels"] = Own(std::move(labels));
    out["keys"] = keys;
    if (one.jpegs) out["jpegs"] = jpegs;
    py::dict columns;
    for (size_t j = 0; j < names.size(); ++j) columns[py::str(names[j])] = ColumnDict(std::move(one.batch.fields[j]));
    out["fields"] = columns;
    return out;
  }

  py::dict verify() const {
    pcr::VerifyReport r;
    {
      py::gil_scoped_release release;
      r = pcr::VerifyPath(path_, io_);
    }
    if (!r.errors.empty()) {
      std::string message;
      for (const std::string& e : r.errors) message += (message.empty() ? "" : "\n") + e;
      PyErr_SetString(g_corruption_error.ptr(), message.c_str());
      throw py::error_already_set();
    }
    py::dict d;
    d["files"] = r.files;
    d["stripes"] = r.stripes;
    d["streams"] = r.streams;
    d["chunks"] = r.chunks;
    d["bytes"] = r.bytes;
    return d;
  }

 private:
  // Python indexing: negative counts from the end.
  uint64_t Index(int64_t i) const {
    const int64_t n = static_cast<int64_t>(ds_->num_images());
    if (i < -n || i >= n) throw py::index_error("image " + std::to_string(i) + " out of range (" + std::to_string(n) + " images)");
    return static_cast<uint64_t>(i < 0 ? i + n : i);
  }

 public:
  // "full" or 1..num_scan_groups, and with `fields_only` 0 (no image bytes).
  int Fidelity(const py::object& value, bool fields_only = false) const {
    return ParseFidelity(value, ds_->num_scan_groups(), fields_only);
  }

 private:
  std::unique_ptr<pcr::ImageDataset> ds_;
  std::string path_;
  pcr::IoEngineOptions io_;
  mutable std::once_flag record_first_once_;
  mutable std::vector<uint64_t> record_first_;  // each record's first image
};

}  // namespace pcr_python
