// The pcr Python extension (pcr._pcr): datasets, tables, decoding and
// conversion over the public C++ API. Every read, decode and conversion
// runs with the GIL released; arrays handed to Python own their memory or
// keep it alive. Over 700 lines: the bindings of every public class, in one
// module so the casters and the GIL policy are written once.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <atomic>
#include <cstring>
#include <regex>
#include <set>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <pcr/pcr.h>

#include "_pcr_docs.h"

namespace py = pybind11;

// Feature or field names: a list (any iterable) of str; a map feature's id
// may be given as an int. A lone str is refused rather than taken letter by
// letter.
struct Names {
  std::vector<std::string> names;
};

namespace pybind11::detail {
template <>
struct type_caster<Names> {
  PYBIND11_TYPE_CASTER(Names, const_name("Sequence[str]"));

  bool load(handle src, bool) {
    if (isinstance<str>(src) || isinstance<bytes>(src)) {
      throw type_error("names must be a list of str, not a str: [" + std::string(py::repr(src)) + "]");
    }
    if (!hasattr(src, "__iter__")) return false;
    value.names.clear();
    for (handle item : src) {
      if (isinstance<str>(item)) {
        value.names.push_back(item.cast<std::string>());
      } else if (!isinstance<bool_>(item) && hasattr(item, "__index__")) {
        value.names.push_back(std::string(py::str(py::module_::import("operator").attr("index")(item))));
      } else {
        throw type_error("names are str (or a map feature's int id), not " +
                         std::string(py::str(item.get_type().attr("__name__"))) + " " + std::string(py::repr(item)));
      }
    }
    return true;
  }

  static handle cast(const Names& n, return_value_policy policy, handle parent) {
    return list_caster<std::vector<std::string>, std::string>::cast(n.names, policy, parent);
  }
};
}  // namespace pybind11::detail

namespace {

// The docstring _pcr.pyi gives `name` ("Class", "Class.member" or
// "function"), or none.
const char* Doc(std::string_view name) {
  for (const pcr_docs::Entry& e : pcr_docs::kEntries) {
    if (e.name == name) return e.doc;
  }
  return nullptr;
}

py::object g_corruption_error;
py::object g_not_supported_error;

// Raises the Python exception that fits `status`, with pcr's message (a
// byte of no UTF-8 character in it, from a path or an input, as \xNN).
[[noreturn]] void Raise(const pcr::Status& status) {
  PyObject* type = PyExc_OSError;
  switch (status.code()) {
    case pcr::StatusCode::kCorruption:
      type = g_corruption_error.ptr();
      break;
    case pcr::StatusCode::kNotSupported:
      type = g_not_supported_error.ptr();
      break;
    case pcr::StatusCode::kInvalidArgument:
      type = PyExc_ValueError;
      break;
    case pcr::StatusCode::kNotFound:
      type = PyExc_FileNotFoundError;
      break;
    case pcr::StatusCode::kCancelled:
      type = PyExc_KeyboardInterrupt;
      break;
    case pcr::StatusCode::kOutOfMemory:
      type = PyExc_MemoryError;
      break;
    case pcr::StatusCode::kIOError:
    case pcr::StatusCode::kDataLoss:
    case pcr::StatusCode::kOk:
      break;
  }
  const std::string& message = status.message();
  PyObject* text = PyUnicode_DecodeUTF8(message.data(), static_cast<Py_ssize_t>(message.size()), "backslashreplace");
  if (text != nullptr) {
    PyErr_SetObject(type, text);
    Py_DECREF(text);
  }
  throw py::error_already_set();
}

// `value` as an unsigned option, or ValueError naming it.
uint64_t NonNegative(int64_t value, const char* name) {
  if (value < 0) throw py::value_error(std::string(name) + " must be at least 0, not " + std::to_string(value));
  return static_cast<uint64_t>(value);
}

void Check(const pcr::Status& status) {
  if (!status.ok()) Raise(status);
}

template <typename T>
T Take(pcr::Result<T> result) {
  if (!result.ok()) Raise(result.status());
  return std::move(result).value();
}

// Runs `call` (a pcr call returning Result<T> or Status) with the GIL
// released; returns its value, or raises its error.
template <typename F>
auto Unlocked(F&& call) {
  using R = decltype(call());
  std::optional<R> result;
  {
    py::gil_scoped_release release;
    result.emplace(call());
  }
  if constexpr (std::is_same_v<R, pcr::Status>) {
    Check(*result);
  } else {
    return Take(std::move(*result));
  }
}

py::bytes ToBytes(const pcr::Bytes& b) { return py::bytes(reinterpret_cast<const char*>(b.data()), b.size()); }

py::dict CountersDict(const pcr::IoCounters& c) {
  py::dict d;
  d["reads"] = c.reads;
  d["ios"] = c.ios;
  d["bytes_read"] = c.bytes_read;
  d["seconds"] = c.seconds;
  return d;
}

// A 1-D array over `values`, which the array then owns.
template <typename T, typename A>
py::array_t<T> Own(std::vector<T, A>&& values) {
  auto* held = new std::vector<T, A>(std::move(values));
  py::capsule owner(held, [](void* p) { delete static_cast<std::vector<T, A>*>(p); });
  return py::array_t<T>({static_cast<py::ssize_t>(held->size())}, {static_cast<py::ssize_t>(sizeof(T))},
                        held->data(), owner);
}

// `remote`: None, or a dict of RemoteOptions fields.
pcr::RemoteOptions RemoteFromDict(const py::object& remote) {
  pcr::RemoteOptions r;
  if (remote.is_none()) return r;
  if (!py::isinstance<py::dict>(remote)) throw py::type_error("remote must be a dict of options");
  for (const auto& [key_object, value] : remote.cast<py::dict>()) {
    const std::string key = py::str(key_object);
    auto number = [&](auto* field) {
      using T = std::remove_pointer_t<decltype(field)>;
      if (!py::isinstance<py::int_>(value) || py::isinstance<py::bool_>(value)) {
        throw py::type_error("remote option " + key + " must be an int");
      }
      const py::int_ low(0), high(std::numeric_limits<T>::max());
      if (value < low || value > high) {
        throw py::value_error("remote option " + key + " must be 0.." + std::to_string(std::numeric_limits<T>::max()));
      }
      *field = value.cast<T>();
    };
    auto text = [&](std::string* field) {
      if (!py::isinstance<py::str>(value)) throw py::type_error("remote option " + key + " must be a str");
      *field = value.cast<std::string>();
    };
    if (key == "concurrency") {
      number(&r.concurrency);
    } else if (key == "max_bytes_in_flight") {
      number(&r.max_bytes_in_flight);
    } else if (key == "retries") {
      number(&r.retries);
    } else if (key == "timeout_ms") {
      number(&r.timeout_ms);
    } else if (key == "answer_timeout_ms") {
      number(&r.answer_timeout_ms);
    } else if (key == "hole_limit") {
      number(&r.hole_limit);
    } else if (key == "max_read") {
      number(&r.max_read);
    } else if (key == "list_page_size") {
      number(&r.list_page_size);
    } else if (key == "s3_endpoint") {
      text(&r.s3_endpoint);
    } else if (key == "s3_region") {
      text(&r.s3_region);
    } else if (key == "anonymous" || key == "etag_is_md5") {
      if (!py::isinstance<py::bool_>(value)) throw py::type_error("remote option " + key + " must be a bool");
      (key == "anonymous" ? r.anonymous : r.etag_is_md5) = value.cast<bool>();
    } else {
      throw py::value_error("unknown remote option '" + key +
                            "' (expected concurrency, max_bytes_in_flight, retries, timeout_ms, answer_timeout_ms, "
                            "hole_limit, max_read, list_page_size, s3_endpoint, s3_region, anonymous or etag_is_md5)");
    }
  }
  return r;
}

pcr::IoEngineOptions IoOptions(const std::string& engine, bool direct, const py::object& remote) {
  pcr::IoEngineOptions io;
  io.kind = Take(pcr::ParseIoEngineKind(engine));
  io.direct = direct;
  io.remote = RemoteFromDict(remote);
  return io;
}

// The options of a conversion into s3:// (ignored for local outputs).
struct UploadArgs {
  std::string work_dir;
  pcr::RemoteOptions remote;
  pcr::UploadOptions upload;
};

UploadArgs UploadArgsOf(const std::string& work_dir, const py::object& remote, uint64_t part_size_mb,
                        uint64_t multipart_threshold_mb, unsigned upload_concurrency, uint64_t upload_memory_mb,
                        const std::string& input_endpoint, const std::string& output_endpoint) {
  UploadArgs a{.work_dir = work_dir, .remote = RemoteFromDict(remote)};
  if (part_size_mb < 5 || part_size_mb > 5120) throw py::value_error("part_size_mb must be 5..5120");
  if (multipart_threshold_mb == 0 || multipart_threshold_mb > (uint64_t{1} << 30)) {
    throw py::value_error("multipart_threshold_mb must be positive");
  }
  if (upload_concurrency < 1 || upload_concurrency > 64) throw py::value_error("upload_concurrency must be 1..64");
  if (upload_memory_mb == 0 || upload_memory_mb > (uint64_t{1} << 30)) {
    throw py::value_error("upload_memory_mb must be positive");
  }
  for (const auto& [name, url] : {std::pair{"input_endpoint", &input_endpoint}, std::pair{"output_endpoint", &output_endpoint}}) {
    if (!url->empty() && !url->starts_with("http://") && !url->starts_with("https://")) {
      throw py::value_error(std::string(name) + " must be an http(s):// URL, not '" + *url + "'");
    }
  }
  if (!input_endpoint.empty()) a.remote.s3_endpoint = input_endpoint;
  a.upload.part_size = part_size_mb << 20;
  a.upload.multipart_threshold = multipart_threshold_mb << 20;
  a.upload.concurrency = upload_concurrency;
  a.upload.memory = upload_memory_mb << 20;
  a.upload.s3_endpoint = output_endpoint;
  return a;
}

// [{"name", "type", "id", "present_count", "value_count"}, ...]
py::list SchemaList(const pcr::TableSchema& schema) {
  py::list out;
  for (const pcr::FeatureInfo& f : schema.features) {
    py::dict d;
    d["name"] = f.name;
    d["type"] = pcr::FeatureTypeName(f.type);
    d["id"] = f.has_id ? py::object(py::int_(f.id)) : py::object(py::none());
    d["present_count"] = f.present_count;
    d["value_count"] = f.value_count;
    out.append(d);
  }
  return out;
}

// numpy's dtype of a timestamp type: datetime64[s], [ms], [us] or [ns].
std::string DatetimeDtype(pcr::FeatureType type) {
  const char* name = pcr::FeatureTypeName(type);
  return std::string("datetime64[") + (std::strchr(name, '_') + 1) + "]";
}

// {"presence": bool[rows], "values": ..., ["offsets": ...], ["scores": ...]}
py::dict ColumnDict(pcr::Column&& c) {
  py::dict d;
  d["presence"] = Own(std::move(c.present)).attr("view")("bool");
  switch (c.type) {
    case pcr::FeatureType::kInt64:
      d["values"] = Own(std::move(c.ints));
      return d;
    case pcr::FeatureType::kFloat64:
      d["values"] = Own(std::move(c.doubles));
      return d;
    case pcr::FeatureType::kFloat32:
      d["values"] = Own(std::move(c.floats));
      return d;
    case pcr::FeatureType::kString:
    case pcr::FeatureType::kBytes:
      d["values"] = Own(std::vector<uint8_t>(c.bytes.begin(), c.bytes.end()));
      break;
    case pcr::FeatureType::kIdList:
      d["values"] = Own(std::move(c.ints));
      break;
    case pcr::FeatureType::kUInt64IdList:
      d["values"] = Own(std::move(c.ints)).attr("view")("uint64");
      break;
    case pcr::FeatureType::kScoredIdList64:
      d["values"] = Own(std::move(c.ints));
      d["scores"] = Own(std::move(c.doubles));
      break;
    case pcr::FeatureType::kScoredIdList32:
      d["values"] = Own(std::move(c.ints));
      d["scores"] = Own(std::move(c.floats));
      break;
    case pcr::FeatureType::kFloat32List:
      d["values"] = Own(std::move(c.floats));
      break;
    case pcr::FeatureType::kFloat64List:
      d["values"] = Own(std::move(c.doubles));
      break;
    case pcr::FeatureType::kBool:
      d["values"] = Own(std::move(c.ints)).attr("astype")("bool");
      return d;
    case pcr::FeatureType::kUInt64:
      d["values"] = Own(std::move(c.ints)).attr("view")("uint64");
      return d;
    case pcr::FeatureType::kTimestampS:
    case pcr::FeatureType::kTimestampMs:
    case pcr::FeatureType::kTimestampUs:
    case pcr::FeatureType::kTimestampNs:
      d["values"] = Own(std::move(c.ints)).attr("view")(DatetimeDtype(c.type));
      return d;
  }
  d["offsets"] = Own(std::move(c.offsets));
  return d;
}

// Row `row` of `c` as a Python value: None when missing; int, float, str
// (undecodable bytes kept as surrogates), bytes, or a list (of (id, score)
// pairs for scored lists).
py::object ColumnValue(const pcr::Column& c, uint64_t row) {
  if (!c.present[row]) return py::none();
  switch (c.type) {
    case pcr::FeatureType::kInt64:
      return py::int_(c.ints[row]);
    case pcr::FeatureType::kFloat64:
      return py::float_(c.doubles[row]);
    case pcr::FeatureType::kFloat32:
      return py::float_(c.floats[row]);
    case pcr::FeatureType::kBool:
      return py::bool_(c.ints[row] != 0);
    case pcr::FeatureType::kUInt64:
      return py::int_(static_cast<uint64_t>(c.ints[row]));
    case pcr::FeatureType::kTimestampS:
    case pcr::FeatureType::kTimestampMs:
    case pcr::FeatureType::kTimestampUs:
    case pcr::FeatureType::kTimestampNs:
      return py::module_::import("numpy").attr("datetime64")(c.ints[row], std::strchr(pcr::FeatureTypeName(c.type), '_') + 1);
    case pcr::FeatureType::kString: {
      const std::string_view v = c.string(row);
      PyObject* str = PyUnicode_DecodeUTF8(v.data(), static_cast<py::ssize_t>(v.size()), "surrogateescape");
      if (str == nullptr) throw py::error_already_set();
      return py::reinterpret_steal<py::object>(str);
    }
    case pcr::FeatureType::kBytes: {
      const std::string_view v = c.string(row);
      return py::bytes(v.data(), v.size());
    }
    default:
      break;
  }
  py::list out;
  for (uint64_t k = c.offsets[row]; k < c.offsets[row + 1]; ++k) {
    switch (c.type) {
      case pcr::FeatureType::kScoredIdList64:
        out.append(py::make_tuple(c.ints[k], c.doubles[k]));
        break;
      case pcr::FeatureType::kScoredIdList32:
        out.append(py::make_tuple(c.ints[k], c.floats[k]));
        break;
      case pcr::FeatureType::kFloat32List:
        out.append(c.floats[k]);
        break;
      case pcr::FeatureType::kFloat64List:
        out.append(c.doubles[k]);
        break;
      case pcr::FeatureType::kUInt64IdList:
        out.append(static_cast<uint64_t>(c.ints[k]));
        break;
      default:
        out.append(c.ints[k]);
        break;
    }
  }
  return out;
}

// Appends the rows of `from` to `into`, a column of the same type.
void AppendColumn(const pcr::Column& from, pcr::Column* into) {
  into->rows += from.rows;
  into->present.insert(into->present.end(), from.present.begin(), from.present.end());
  into->ints.insert(into->ints.end(), from.ints.begin(), from.ints.end());
  into->doubles.insert(into->doubles.end(), from.doubles.begin(), from.doubles.end());
  into->floats.insert(into->floats.end(), from.floats.begin(), from.floats.end());
  if (!from.offsets.empty()) {
    const uint64_t base = into->offsets.back();
    for (size_t r = 1; r < from.offsets.size(); ++r) into->offsets.push_back(base + from.offsets[r]);
  }
  into->bytes += from.bytes;
}

// A fidelity as Python passes it: "full", or an int 1..groups (and with
// `fields_only` 0), as pcr::ParseFidelity reads it; ValueError otherwise.
int ParseFidelity(const py::object& value, int groups, bool fields_only) {
  std::string text;  // of strings "full" alone: "1" is not 1
  if (py::isinstance<py::str>(value) && value.cast<std::string>() == "full") {
    text = "full";
  } else if (py::isinstance<py::int_>(value) && !py::isinstance<py::bool_>(value)) {
    const py::int_ k = value.cast<py::int_>();
    if (k >= py::int_(0) && k <= py::int_(groups)) text = std::to_string(k.cast<int>());
  }
  int fidelity = 0;
  if (!pcr::ParseFidelity(text, groups, fields_only, &fidelity)) {
    throw py::value_error("fidelity must be 1.." + std::to_string(groups) + " or 'full'" +
                          (fields_only ? " (or 0: fields alone, no image bytes)" : "") + ", not " +
                          std::string(py::repr(value)));
  }
  return fidelity;
}

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

pcr::UnevenShares Uneven(const std::string& uneven) {
  if (uneven != "pad" && uneven != "drop") throw py::value_error("uneven must be 'pad' or 'drop', not '" + uneven + "'");
  return uneven == "pad" ? pcr::UnevenShares::kPad : pcr::UnevenShares::kDrop;
}

// A rank's and worker's share of an epoch, from Python's arguments.
// Parts of an epoch delivered before resumes: (world_size, num_workers, batches).
using Delivered = std::vector<std::tuple<int64_t, int64_t, int64_t>>;

pcr::EpochOptions Epoch(int64_t batch_size, int64_t rank, int64_t world_size, int64_t worker, int64_t num_workers,
                        const std::string& uneven, bool shuffle, int64_t shuffle_buffer,
                        const Delivered& delivered = {}) {
  std::vector<pcr::EpochSegment> segments;
  for (const auto& [w, k, b] : delivered) {
    segments.push_back({NonNegative(w, "world_size"), NonNegative(k, "num_workers"), NonNegative(b, "batches")});
  }
  return {.rank = NonNegative(rank, "rank"),
          .world_size = NonNegative(world_size, "world_size"),
          .batch_size = NonNegative(batch_size, "batch_size"),
          .worker = NonNegative(worker, "worker"),
          .num_workers = NonNegative(num_workers, "num_workers"),
          .uneven = Uneven(uneven),
          .shuffle = shuffle,
          .shuffle_buffer = NonNegative(shuffle_buffer, "shuffle_buffer"),
          .delivered = std::move(segments)};
}

// {name: [value or None per row]} of a batch's field columns.
py::dict FieldLists(const std::vector<std::string>& names, const std::vector<pcr::Column>& columns) {
  py::dict fields;
  for (size_t j = 0; j < names.size(); ++j) {
    py::list values;
    for (uint64_t r = 0; r < columns[j].rows; ++r) values.append(ColumnValue(columns[j], r));
    fields[py::str(names[j])] = values;
  }
  return fields;
}

// One rank's share of an epoch in batches (pcr::SampleIterator).
class PySampleIterator {
 public:
  PySampleIterator(const PyImageDataset& ds, int64_t batch_size, const py::object& fidelity, int64_t rank, int64_t world_size,
                   int64_t worker, int64_t num_workers, const std::string& uneven, bool shuffle, int64_t shuffle_buffer,
                   uint64_t seed, int64_t epoch, int64_t position, int64_t read_ahead, const Names& fields_arg)
      : fields_(fields_arg.names) {
    const std::vector<std::string>& fields = fields_arg.names;
    const pcr::SampleIteratorOptions options{
        .epoch = Epoch(batch_size, rank, world_size, worker, num_workers, uneven, shuffle, shuffle_buffer),
        .fidelity = ds.Fidelity(fidelity),
        .read_ahead = NonNegative(read_ahead, "read_ahead"),
        .fields = fields};
    it_ = Take(pcr::SampleIterator::Create(
        ds.dataset(), options,
        {seed, NonNegative(epoch, "epoch"), NonNegative(position, "position")}));
  }

  // (indices, labels, jpegs): numpy uint64 and int64 arrays and a list of
  // bytes; with fields, also {name: [value or None per image]}.
  py::tuple next() {
    if (!Unlocked([&] { return it_->Next(&batch_); })) throw py::stop_iteration();
    std::vector<int64_t> labels;
    py::list jpegs;
    for (const pcr::Image& image : batch_.images) {
      labels.push_back(image.label);
      jpegs.append(ToBytes(image.jpeg));
    }
    std::vector<uint64_t> indices = batch_.indices;
    if (fields_.empty()) return py::make_tuple(Own(std::move(indices)), Own(std::move(labels)), jpegs);
    return py::make_tuple(Own(std::move(indices)), Own(std::move(labels)), jpegs, FieldLists(fields_, batch_.fields));
  }

  py::dict state() const {
    const pcr::IterationState st = it_->state();
    py::dict d;
    d["seed"] = st.seed;
    d["epoch"] = st.epoch;
    d["position"] = st.position;
    return d;
  }
  uint64_t num_batches() const { return it_->num_batches(); }
  uint64_t num_images() const { return it_->num_images(); }

 private:
  std::vector<std::string> fields_;
  std::unique_ptr<pcr::SampleIterator> it_;
  pcr::SampleBatch batch_;
};

// Batch buffers handed out as arrays and taken back when the last array
// over one is freed, so steady-state batches reuse memory instead of
// faulting in fresh zeroed pages. Keeps at most kKeep idle buffers, all of
// the largest size asked for. Called with the GIL held.
class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  // An idle buffer of `bytes` (contents unspecified), or a new one.
  std::vector<uint8_t> Take(size_t bytes) {
    if (bytes > bytes_) {
      bytes_ = bytes;
      idle_.clear();
    }
    std::vector<uint8_t> v;
    if (!idle_.empty()) {
      v = std::move(idle_.back());
      idle_.pop_back();
    }
    v.resize(bytes);
    return v;
  }
  // `data` as an array of `shape`; its buffer comes back to the pool when
  // the last array over it is freed.
  py::array_t<uint8_t> Wrap(std::vector<uint8_t>&& data, const std::vector<py::ssize_t>& shape) {
    struct Held {
      std::shared_ptr<BufferPool> pool;
      std::vector<uint8_t> data;
    };
    auto held = std::make_unique<Held>(Held{shared_from_this(), std::move(data)});
    uint8_t* bytes = held->data.data();
    py::capsule owner(held.get(), [](void* p) {
      std::unique_ptr<Held> h(static_cast<Held*>(p));
      BufferPool& pool = *h->pool;
      if (h->data.size() == pool.bytes_ && pool.idle_.size() < kKeep) pool.idle_.push_back(std::move(h->data));
    });
    held.release();  // the capsule owns it now
    return py::array_t<uint8_t>(shape, bytes, owner);
  }

 private:
  static constexpr size_t kKeep = 4;
  size_t bytes_ = 0;
  std::vector<std::vector<uint8_t>> idle_;
};

// n images of `options` in `data`: an array N x 3 x S x S, or N x S x S x
// 3, of the options' dtype.
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

// (mean, std) of three channels, each given as one value or three.
using Normalize = std::optional<std::pair<std::vector<float>, std::vector<float>>>;

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

// Decoded batches of one rank's (and worker's) share (pcr::ImageLoader).
// {"seed", "epoch", "batches", "num_workers"}
py::dict StateDict(const pcr::LoaderState& st) {
  py::dict d;
  d["seed"] = st.seed;
  d["epoch"] = st.epoch;
  d["batches"] = st.batches;
  d["num_workers"] = st.num_workers;
  return d;
}

class PyImageLoader {
 public:
  PyImageLoader(const PyImageDataset& ds, int64_t batch_size, const py::object& fidelity, int64_t rank,
                int64_t world_size, int64_t worker, int64_t num_workers, const std::string& uneven, bool shuffle,
                int64_t shuffle_buffer, uint64_t seed, int64_t epoch, int64_t batches, int64_t saved_workers,
                const Delivered& delivered, int64_t read_ahead, const Names& fields_arg, int size,
                const std::string& crop,
                std::pair<double, double> scale, std::pair<double, double> ratio, int resize, bool flip,
                bool fast_scale, bool channels_last, const Normalize& normalize, const std::string& dtype,
                int threads, const std::string& decoder, const std::string& on_error)
      : fields_(fields_arg.names) {
    if (on_error != "raise" && on_error != "skip") {
      throw py::value_error("on_error must be 'raise' or 'skip', not '" + on_error + "'");
    }
    const std::vector<std::string>& fields = fields_arg.names;
    const pcr::ImageLoaderOptions options{
        .epoch = Epoch(batch_size, rank, world_size, worker, num_workers, uneven, shuffle, shuffle_buffer, delivered),
        .fidelity = ds.Fidelity(fidelity),
        .transform = TransformOptions(size, crop, scale, ratio, resize, flip, fast_scale, channels_last, normalize,
                                      dtype, threads, decoder),
        .read_ahead = NonNegative(read_ahead, "read_ahead"),
        .fields = fields,
        .skip_corrupt = on_error == "skip",
        .replace_skipped = on_error == "skip"};
    transform_ = options.transform;
    batch_bytes_ = options.epoch.batch_size * Take(pcr::BatchDecoder::Create(transform_))->image_bytes();
    loader_ = Take(pcr::ImageLoader::Create(
        ds.dataset(), options,
        {seed, NonNegative(epoch, "epoch"), NonNegative(batches, "batches"), NonNegative(saved_workers, "num_workers")}));
  }

  // (images, labels, indices): an array N x 3 x size x size (or N x size x
  // size x 3) and int64 arrays; with fields, also {name: [value or None]}.
  py::tuple next() {
    // The loader decodes its next batch into this buffer: one of full size
    // from the pool costs no page faults or zeroing.
    batch_.images = buffers_->Take(batch_bytes_);
    if (!Unlocked([&] { return loader_->Next(&batch_); })) throw py::stop_iteration();
    const size_t n = batch_.labels.size();
    py::array images = Batch(*buffers_, std::move(batch_.images), n, transform_);
    py::array_t<int64_t> labels = Own(std::vector<int64_t>(batch_.labels));
    py::array_t<int64_t> indices = Own(std::vector<int64_t>(batch_.indices.begin(), batch_.indices.end()));
    if (fields_.empty()) return py::make_tuple(images, labels, indices);
    return py::make_tuple(images, labels, indices, FieldLists(fields_, batch_.fields));
  }

  py::dict state() const { return StateDict(loader_->state()); }
  uint64_t num_batches() const { return loader_->num_batches(); }

  // [(index, key, why)] of the images skipped so far (on_error="skip").
  std::vector<std::tuple<uint64_t, std::string, std::string>> skipped() const {
    std::vector<std::tuple<uint64_t, std::string, std::string>> out;
    for (const pcr::SkippedImage& s : loader_->skipped()) out.emplace_back(s.index, s.key, s.error.ToString());
    return out;
  }

 private:
  std::vector<std::string> fields_;
  pcr::BatchTransformOptions transform_;
  size_t batch_bytes_ = 0;
  std::unique_ptr<pcr::ImageLoader> loader_;
  pcr::LoaderBatch batch_;
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

// An object array with a row per `presence` entry: None where it is false,
// else values[offsets[r]:offsets[r + 1]] as a str (kind "str"; undecodable
// bytes kept as surrogates), bytes ("bytes") or a view of `values` ("view").
// Equal strs and bytes are one object (as pyarrow's to_pandas dedupes them)
// while at least a quarter of the rows so far repeat an earlier one.
py::array RowObjects(const py::array& values, const py::array_t<uint64_t, py::array::c_style>& offsets,
                     const py::array_t<bool, py::array::c_style>& presence, const std::string& kind) {
  const bool view = kind == "view";
  if (!view && kind != "str" && kind != "bytes") throw py::value_error("kind must be 'str', 'bytes' or 'view'");
  const py::ssize_t rows = presence.size();
  if (values.ndim() != 1 || offsets.ndim() != 1 || offsets.size() != rows + 1 || (!view && values.itemsize() != 1)) {
    throw py::value_error("values, offsets and presence do not make a column");
  }
  const uint64_t* o = offsets.data();
  for (py::ssize_t r = 0; r < rows; ++r) {
    if (o[r] > o[r + 1] || o[r + 1] > static_cast<uint64_t>(values.shape(0))) {
      throw py::value_error("offsets out of order or beyond the values");
    }
  }
  py::array out(py::dtype("O"), std::vector<py::ssize_t>{rows});
  auto** slots = static_cast<PyObject**>(out.mutable_data());
  const auto* base = static_cast<const char*>(values.data());
  const py::ssize_t stride = values.strides(0);
  const bool str = kind == "str";
  std::unordered_map<std::string_view, PyObject*> seen;  // borrowed from `out`
  bool dedupe = !view;
  int64_t looked = 0, repeats = 0;
  for (py::ssize_t r = 0; r < rows; ++r) {
    py::object item = py::none();
    if (presence.data()[r]) {
      const char* at = base + static_cast<py::ssize_t>(o[r]) * stride;
      const auto n = static_cast<py::ssize_t>(o[r + 1] - o[r]);
      const std::string_view key(at, static_cast<size_t>(n));
      PyObject** memo = nullptr;
      if (dedupe) {
        const auto [it, fresh] = seen.try_emplace(key, nullptr);
        if (!fresh) ++repeats;
        memo = &it->second;
      }
      if (view) {
        item = py::array(values.dtype(), std::vector<py::ssize_t>{n}, std::vector<py::ssize_t>{stride}, at, values);
      } else if (memo != nullptr && *memo != nullptr) {
        item = py::reinterpret_borrow<py::object>(*memo);
      } else if (str) {
        PyObject* decoded = PyUnicode_DecodeUTF8(at, n, "surrogateescape");
        if (decoded == nullptr) throw py::error_already_set();
        item = py::reinterpret_steal<py::object>(decoded);
      } else {
        item = py::bytes(at, n);
      }
      if (memo != nullptr) {
        *memo = item.ptr();
        if (++looked % 4096 == 0 && repeats * 4 < looked) {
          dedupe = false;
          seen = {};
        }
      }
    }
    PyObject* old = slots[r];
    slots[r] = item.release().ptr();
    Py_XDECREF(old);
  }
  return out;
}

class PyTable {
 public:
  PyTable(const std::filesystem::path& path_arg, const std::string& engine, bool direct, const py::object& remote,
          const std::optional<std::filesystem::path>& access_log, const std::optional<std::string>& job) {
    const std::string path = path_arg.string();
    if (job && !access_log) throw py::value_error("job names the job in access log lines: give access_log too");
    if (job && job->empty()) throw py::value_error("job must not be empty");
    if (access_log) {  // refused now, not at the first read
      std::error_code ec;
      const std::filesystem::path dir = std::filesystem::absolute(*access_log, ec).parent_path();
      if (!std::filesystem::is_directory(dir, ec)) {
        throw py::value_error("access_log " + access_log->string() + ": its directory does not exist");
      }
      if (std::filesystem::is_directory(*access_log, ec)) {
        throw py::value_error("access_log " + access_log->string() + ": a directory; give the log file's path");
      }
    }
    const pcr::TableReaderOptions options{.io = IoOptions(engine, direct, remote),
                                          .access_log = access_log ? pcr::FileAccessLog(access_log->string()) : nullptr,
                                          .job = job.value_or("")};
    table_ = Unlocked([&] { return pcr::Table::Open(path, options); });
  }

  py::list schema() const { return SchemaList(table_->schema()); }
  uint64_t num_rows() const { return table_->schema().row_count; }
  py::dict io_counters() const { return CountersDict(table_->io_counters()); }
  const std::string& content_id() const { return table_->content_id(); }
  size_t num_stripes() const { return table_->stripe_count(); }
  std::vector<uint64_t> stripe_rows() const {
    std::vector<uint64_t> rows(table_->stripe_count());
    for (size_t s = 0; s < rows.size(); ++s) rows[s] = Take(table_->stripe_rows(s));
    return rows;
  }

  // {name: {"values": ..., "presence": ..., ["offsets": ...], ["scores": ...]}}
  py::dict read(const Names& features_arg, size_t first, std::optional<size_t> count) const {
    const std::vector<std::string>& features = features_arg.names;
    const std::vector<uint32_t> index = Take(table_->Resolve(features));
    const size_t n = count.value_or(first <= table_->stripe_count() ? table_->stripe_count() - first : 0);
    pcr::TableBatch batch = Unlocked([&] { return table_->Read(index, first, n); });
    py::dict out;
    for (size_t j = 0; j < features.size(); ++j) {
      py::dict d = ColumnDict(std::move(batch.columns[j]));
      out[py::str(features[j])] = d;
    }
    return out;
  }

  const pcr::Table& table() const { return *table_; }

 private:
  std::unique_ptr<pcr::Table> table_;
};

class PyTableLoader {
 public:
  PyTableLoader(const PyTable& table, int64_t batch_size, int64_t rank, int64_t world_size, int64_t worker,
                int64_t num_workers, const std::string& uneven, bool shuffle, int64_t shuffle_stripes, uint64_t seed,
                int64_t epoch, int64_t batches, int64_t saved_workers, const std::optional<Names>& features) {
    const pcr::TableLoaderOptions options{
        .epoch = Epoch(batch_size, rank, world_size, worker, num_workers, uneven, shuffle, 0),
        .shuffle_stripes = NonNegative(shuffle_stripes, "shuffle_stripes"),
        .features = features ? features->names : std::vector<std::string>{}};
    loader_ = Take(pcr::TableLoader::Create(
        table.table(), options,
        {seed, NonNegative(epoch, "epoch"), NonNegative(batches, "batches"), NonNegative(saved_workers, "num_workers")}));
    for (const uint32_t f : loader_->features()) names_.push_back(table.table().schema().features[f].name);
  }

  // (rows, {name: {"values", "presence", ["offsets"], ["scores"]}}), the
  // columns as Table.read gives them.
  py::tuple next() {
    if (!Unlocked([&] { return loader_->Next(&batch_); })) throw py::stop_iteration();
    py::dict columns;
    for (size_t j = 0; j < names_.size(); ++j) columns[py::str(names_[j])] = ColumnDict(std::move(batch_.columns[j]));
    return py::make_tuple(Own(std::vector<int64_t>(batch_.rows.begin(), batch_.rows.end())), columns);
  }

  py::dict state() const { return StateDict(loader_->state()); }
  uint64_t num_batches() const { return loader_->num_batches(); }
  const std::vector<std::string>& features() const { return names_; }

 private:
  std::vector<std::string> names_;
  std::unique_ptr<pcr::TableLoader> loader_;
  pcr::TableLoaderBatch batch_;
};

// pcr-convert's options in a conversion's messages, as convert_images and
// convert_table spell them: --skip-bad is skip_bad=True, --column-type
// a=string is column_types={'a': 'string'}, --images-per-record N is
// images_per_record=N.
std::string PythonSpelling(const std::string& message) {
  static const std::regex kTyped("--(column|field)-type (\\S+)=(\\w+)");
  static const std::regex kFlag("--([a-z][a-z-]*[a-z])( missing)?");
  static const std::set<std::string> kSwitches = {"skip-bad",       "restart",          "keep-order", "by-content",
                                                  "strip-metadata", "exif-orientation", "strings",    "float32"};
  static const std::set<std::string> kValued = {"images-per-record", "records-per-file", "fields-key", "field-order",
                                                "scan-script",       "num-shards",       "shard",      "work-dir",
                                                "format",            "schema",           "list",       "fields",
                                                "on-bad-value",      "delimiter"};
  const std::string typed = std::regex_replace(message, kTyped, "$1_types={'$2': '$3'}");
  std::string out;
  auto at = typed.cbegin();
  for (std::sregex_iterator m(typed.begin(), typed.end(), kFlag), end; m != end; ++m) {
    out.append(at, (*m)[0].first);
    at = (*m)[0].second;
    std::string name = (*m)[1].str();
    const bool known = kSwitches.count(name) != 0 || kValued.count(name) != 0;
    std::replace(name.begin(), name.end(), '-', '_');
    if (!known) {
      out += (*m)[0].str();
    } else if (name == "on_bad_value" && (*m)[2].matched) {
      out += "on_bad_value='missing'";
    } else {
      out += name + (kSwitches.count((*m)[1].str()) != 0 ? "=True" : "") + (*m)[2].str();
    }
  }
  out.append(at, typed.cend());
  return out;
}

// Runs `convert` on a thread of its own while the caller's thread waits with
// the GIL released, taking it every 100 ms to run Python's signal handlers
// (Ctrl-C: KeyboardInterrupt, which cancels the conversion and leaves it
// resumable) and to hand the latest progress to `progress`, so that both
// run on the caller's thread. An exception `progress` raises cancels too.
template <typename F>
pcr::ConvertImagesSummary ConvertCancellable(pcr::ConvertImagesOptions options, const py::object& progress,
                                            F convert) {
  std::mutex mu;
  std::condition_variable changed;
  std::optional<pcr::ConvertProgress> latest;  // guarded by mu
  std::optional<pcr::Result<pcr::ConvertImagesSummary>> result;  // guarded by mu
  std::atomic<bool> cancel{false};
  options.cancel = &cancel;
  options.progress = [&](const pcr::ConvertProgress& p) {
    std::lock_guard lock(mu);
    latest = p;
  };
  std::optional<py::error_already_set> raised;
  auto report = [&](const pcr::ConvertProgress& p) {  // with the GIL held
    if (progress.is_none() || raised) return;
    py::dict d;
    d["images_done"] = p.images_done;
    d["images_total"] = p.images_total;
    d["images_resumed"] = p.images_resumed;
    d["bytes_read"] = p.bytes_read;
    try {
      progress(d);
    } catch (py::error_already_set& e) {
      raised.emplace(std::move(e));
      cancel = true;
    }
  };
  std::optional<pcr::ConvertProgress> last;
  {
    py::gil_scoped_release release;
    std::thread worker([&] {
      auto r = convert(options);
      std::lock_guard lock(mu);
      result.emplace(std::move(r));
      changed.notify_one();
    });
    std::unique_lock lock(mu);
    while (!result) {
      changed.wait_for(lock, std::chrono::milliseconds(100));
      std::optional<pcr::ConvertProgress> p = std::exchange(latest, std::nullopt);
      lock.unlock();
      {
        py::gil_scoped_acquire gil;
        if (!raised && PyErr_CheckSignals() != 0) {
          raised.emplace();
          cancel = true;
        }
        if (p) report(*p);
      }
      lock.lock();
    }
    last = std::exchange(latest, std::nullopt);
    lock.unlock();
    worker.join();
  }
  if (last) report(*last);
  if (raised) throw std::move(*raised);
  if (!result->ok()) Raise(result->status().WithMessage(PythonSpelling(result->status().message())));
  return std::move(**result);
}

// convert_images' arguments as options, for it and for checking pcr.dask's.
struct ImagesCall {
  pcr::ConvertImagesOptions options;
  py::object progress;
};

ImagesCall ImagesOptions(const std::filesystem::path& src_arg, const std::filesystem::path& out_arg, uint64_t images_per_record,
                       uint64_t records_per_file, int jobs, const std::string& scan_script, bool strip_metadata,
                       bool skip_bad, bool restart, uint64_t shuffle, bool keep_order, const std::filesystem::path& list_arg, bool by_content,
                       uint64_t shard, uint64_t num_shards, uint64_t max_pixels, uint64_t memory_mb,
                       const std::filesystem::path& fields_arg, const std::string& fields_key,
                       const std::map<std::string, std::string>& field_types,
                       const std::vector<std::string>& field_order, const std::vector<std::string>& shards,
                       bool exif_orientation, const std::filesystem::path& work_dir_arg, const py::object& remote,
                       uint64_t part_size_mb, uint64_t multipart_threshold_mb, unsigned upload_concurrency,
                       uint64_t upload_memory_mb, const std::string& input_endpoint,
                       const std::string& output_endpoint, const py::object& progress) {
  const std::string src = src_arg.string();
  const std::string out = out_arg.string();
  const std::string list = list_arg.string();
  const std::string fields = fields_arg.string();
  const std::string work_dir = work_dir_arg.string();
  UploadArgs up = UploadArgsOf(work_dir, remote, part_size_mb, multipart_threshold_mb, upload_concurrency,
                               upload_memory_mb, input_endpoint, output_endpoint);
  std::map<std::string, pcr::FeatureType> types;
  for (const auto& [name, type] : field_types) {
    if (!pcr::ParseFeatureTypeName(type, &types[name])) {
      throw py::value_error("field_types['" + name + "']: unknown type '" + type + "'");
    }
  }
  pcr::ConvertImagesOptions options{.src_dir = src,
                                          .list_file = list,
                                          .by_content = by_content,
                                          .out_dir = out,
                                          .images_per_record = images_per_record,
                                          .records_per_file = records_per_file,
                                          .jobs = jobs,
                                          .scan_script = scan_script,
                                          .strip_metadata = strip_metadata,
                                          .skip_bad = skip_bad,
                                          .restart = restart,
                                          .fields_file = fields,
                                          .fields_key = fields_key,
                                          .field_types = std::move(types),
                                          .field_order = field_order,
                                          .exif_orientation = exif_orientation,
                                          .shards = shards,
                                          .max_pixels = max_pixels,
                                          .memory_bytes = memory_mb << 20,
                                          .shuffle_seed = keep_order ? std::nullopt : std::optional(shuffle),
                                          .shard_index = shard,
                                          .num_shards = num_shards,
                                          .work_dir = std::move(up.work_dir),
                                          .remote = up.remote,
                                          .upload = up.upload};
  return {std::move(options), progress};
}

py::dict RunConvertImages(const ImagesCall& call) {
  const pcr::ConvertImagesSummary s = ConvertCancellable(call.options, call.progress, [](const pcr::ConvertImagesOptions& o) {
    return o.shards.empty() ? pcr::ConvertImages(o) : pcr::ConvertWebDataset(o);
  });
  py::dict d;
  d["images"] = s.images;
  d["records"] = s.records;
  d["files"] = s.files;
  d["input_bytes"] = s.input_bytes;
  d["output_bytes"] = s.output_bytes;
  d["skipped"] = s.skipped;
  d["ignored_files"] = s.ignored_files;
  d["resumed_files"] = s.resumed_files;
  return d;
}

py::dict Merge(const std::filesystem::path& out, const std::vector<std::filesystem::path>& parts,
              const std::filesystem::path& work_dir, const py::object& remote, uint64_t part_size_mb,
              uint64_t multipart_threshold_mb, unsigned upload_concurrency, uint64_t upload_memory_mb,
              const std::string& output_endpoint) {
  UploadArgs up = UploadArgsOf(work_dir.string(), remote, part_size_mb, multipart_threshold_mb, upload_concurrency,
                               upload_memory_mb, "", output_endpoint);
  pcr::MergeOptions options{.out_dir = out.string(), .work_dir = std::move(up.work_dir), .remote = up.remote,
                            .upload = up.upload};
  for (const auto& part : parts) options.part_dirs.push_back(part.string());
  pcr::Result<pcr::MergeSummary> merged = [&] {
    py::gil_scoped_release release;
    return pcr::MergeParts(options);
  }();
  const pcr::MergeSummary s = Take(std::move(merged));
  py::dict d;
  d["parts"] = s.parts;
  d["files"] = s.files;
  d["images"] = s.images;
  d["skipped"] = s.skipped;
  d["output_bytes"] = s.output_bytes;
  return d;
}

// convert_table's arguments as options, for it and pcr.dask's steps.
pcr::TableConvertOptions TableOptions(const std::filesystem::path& input_arg, const std::filesystem::path& out_arg,
                                      uint64_t rows_per_stripe, uint64_t stripe_mb, uint64_t split_mb,
                                      std::vector<std::string> stream_order, const std::filesystem::path& popularity_arg,
                                      bool float32, int zstd_level, const std::string& encoding,
                                      const std::map<std::string, std::string>& column_types, const py::object& schema,
                                      bool strings, const std::string& on_bad_value, const std::string& delimiter,
                                      const std::string& format, const std::filesystem::path& work_dir_arg, const py::object& remote,
                                      uint64_t part_size_mb, uint64_t multipart_threshold_mb,
                                      unsigned upload_concurrency, uint64_t upload_memory_mb,
                                      const std::string& input_endpoint, const std::string& output_endpoint) {
  const std::string input = input_arg.string();
  const std::string out = out_arg.string();
  const std::string popularity = popularity_arg.string();
  const std::string work_dir = work_dir_arg.string();
  UploadArgs up = UploadArgsOf(work_dir, remote, part_size_mb, multipart_threshold_mb, upload_concurrency,
                               upload_memory_mb, input_endpoint, output_endpoint);
  if (!popularity.empty()) {
    if (!stream_order.empty()) throw py::value_error("give stream_order or popularity, not both");
    stream_order = Take(pcr::ReadPopularityFile(popularity)).order;
  }
  if (delimiter.size() > 1) throw py::value_error("delimiter must be one character, not '" + delimiter + "'");
  if (stripe_mb == 0) throw py::value_error("stripe_mb must be positive");
  if (split_mb == 0) throw py::value_error("split_mb must be positive");
  pcr::TableConvertOptions options{.input = input,
                                   .format = format,
                                   .out_dir = out,
                                   .float32 = float32,
                                   .strings = strings,
                                   .delimiter = delimiter.empty() ? '\0' : delimiter[0],
                                   .work_dir = std::move(up.work_dir),
                                   .remote = up.remote,
                                   .upload = up.upload};
  auto declare = [&](const std::map<std::string, std::string>& types, const char* what) {
    for (const auto& [name, type] : types) {
      if (!pcr::ParseTableType(type, &options.column_types[name])) {
        throw py::value_error(std::string(what) + "['" + name + "']: unknown type '" + type + "' (" +
                              pcr::kTableTypeNames + ")");
      }
    }
  };
  if (py::isinstance<py::dict>(schema)) {
    std::map<std::string, std::string> types;
    for (const auto& [key, value] : schema.cast<py::dict>()) {
      if (!py::isinstance<py::str>(key) || !py::isinstance<py::str>(value)) {
        throw py::value_error("schema maps names (str) to type names (str), not " +
                              std::string(py::str(py::repr(key))) + ": " + std::string(py::str(py::repr(value))));
      }
      types[key.cast<std::string>()] = value.cast<std::string>();
    }
    declare(types, "schema");
  } else if (!schema.is_none() && !py::isinstance<py::str>(schema) &&
             !py::hasattr(schema, "__fspath__")) {
    throw py::type_error("schema must be a dict of names to types or a JSON file's path, not " +
                         std::string(py::str(schema.get_type().attr("__name__"))));
  } else if (!schema.is_none()) {
    options.schema_file = py::str(py::module_::import("os").attr("fspath")(schema));
  }
  declare(column_types, "column_types");
  if (on_bad_value != "error" && on_bad_value != "missing") {
    throw py::value_error("on_bad_value must be 'error' or 'missing', not '" + on_bad_value + "'");
  }
  options.on_bad_value = on_bad_value == "error" ? pcr::BadValue::kError : pcr::BadValue::kMissing;
  options.writer.rows_per_stripe = rows_per_stripe;
  options.writer.stripe_bytes = stripe_mb << 20;
  options.writer.stream_order = std::move(stream_order);
  options.writer.zstd_level = zstd_level;
  options.writer.stream_encoding = encoding;
  options.split_bytes = split_mb << 20;
  return options;
}

// The result of a table conversion step, its errors and notes spelt as
// Python's arguments.
template <typename T>
T TakeTable(pcr::Result<T> r) {
  if (!r.ok()) Raise(r.status().WithMessage(PythonSpelling(r.status().message())));
  return std::move(*r);
}

py::dict TableReport(pcr::TableConvertReport r) {
  for (std::string& note : r.notes) note = PythonSpelling(note);
  py::dict d;
  d["path"] = r.path;
  d["rows"] = r.schema.row_count;
  d["features"] = r.schema.features.size();
  d["stripes"] = r.stripes;
  d["input_bytes"] = r.input_bytes;
  d["output_bytes"] = r.output_bytes;
  d["notes"] = r.notes;
  py::list missing;
  for (const pcr::MissingValues& m : r.missing) {
    missing.append(py::dict(py::arg("index") = m.index, py::arg("feature") = m.feature, py::arg("type") = pcr::FeatureTypeName(m.type),
                            py::arg("count") = m.count, py::arg("line") = m.line, py::arg("column") = m.column,
                            py::arg("first") = m.first));
  }
  d["missing"] = missing;
  return d;
}

// The note of missing values counted over a sharded conversion's parts.
std::string MissingNote(const std::string& feature, const std::string& type, uint64_t count, uint64_t line,
                        uint64_t column, const std::string& first) {
  pcr::MissingValues m{.feature = feature, .count = count, .line = line, .column = column, .first = first};
  if (!pcr::ParseFeatureTypeName(type, &m.type)) throw py::value_error("unknown type '" + type + "'");
  return PythonSpelling(pcr::MissingValuesNote(m));
}

// Each note as a UserWarning, as pandas warns of what it changed.
void WarnNotes(const py::dict& report) {
  for (const std::string& note : report["notes"].cast<std::vector<std::string>>()) {
    if (PyErr_WarnEx(PyExc_UserWarning, note.c_str(), 1) != 0) throw py::error_already_set();
  }
}

py::dict RunConvertTable(const pcr::TableConvertOptions& options) {
  pcr::Result<pcr::TableConvertReport> converted = [&] {
    py::gil_scoped_release release;
    return pcr::ConvertTable(options);
  }();
  py::dict report = TableReport(TakeTable(std::move(converted)));
  WarnNotes(report);
  return report;
}

// A function of the arguments `make` takes, returning `run` of its options.
template <typename R, typename... A, typename Run>
auto Composed(R (*make)(A...), Run run) {
  return [make, run](A... a) { return run(make(a...)); };
}

// pcr.dask.convert_table's steps (pcr::SurveyTableShard and the rest) over one
// conversion's options.
struct PyTableConversion {
  pcr::TableConvertOptions options;

  py::bytes Scan(uint32_t shard, uint32_t num_shards, std::optional<uint64_t> start) const {
    pcr::Result<std::string> scan = [&] {
      py::gil_scoped_release release;
      return pcr::SurveyTableShard(options, shard, num_shards, start);
    }();
    return py::bytes(TakeTable(std::move(scan)));
  }
  py::dict Plan(const std::vector<std::string>& scans) const {
    pcr::TableShardPlan plan = TakeTable(pcr::PlanTableShards(options, scans));
    for (std::string& note : plan.notes) note = PythonSpelling(note);
    py::dict d;
    d["plan"] = plan.plan.empty() ? py::object(py::none()) : py::object(py::bytes(plan.plan));
    d["rescan"] = plan.rescan;
    d["notes"] = plan.notes;
    d["input_bytes"] = plan.input_bytes;
    return d;
  }
  py::dict ConvertShard(const std::string& plan, uint32_t shard, const std::filesystem::path& part) const {
    pcr::Result<pcr::TableConvertReport> r = [&] {
      py::gil_scoped_release release;
      return pcr::ConvertTableShard(options, plan, shard, part.string());
    }();
    return TableReport(TakeTable(std::move(r)));
  }
  py::dict Merge(const std::vector<std::filesystem::path>& parts) const {
    std::vector<std::string> paths;
    for (const auto& p : parts) paths.push_back(p.string());
    pcr::Result<pcr::TableConvertReport> r = [&] {
      py::gil_scoped_release release;
      return pcr::MergeTableParts(options, paths);
    }();
    return TableReport(TakeTable(std::move(r)));
  }
};

py::dict CountAccessLogs(const std::vector<std::filesystem::path>& logs, const std::optional<std::filesystem::path>& table) {
  std::vector<std::string> paths;
  for (const auto& log : logs) paths.push_back(log.string());
  pcr::Result<pcr::PopularityCount> counted = [&] {
    py::gil_scoped_release release;
    return pcr::CountAccessLogs(paths, table ? table->string() : "");
  }();
  const pcr::PopularityCount c = Take(std::move(counted));
  py::dict d;
  d["text"] = pcr::FormatPopularityFile(c);
  d["table"] = c.table;
  d["table_id"] = c.table_id;
  d["skipped"] = c.skipped;
  return d;
}

py::dict ReorderTable(const std::filesystem::path& input, const std::filesystem::path& output,
                      const std::optional<std::filesystem::path>& popularity,
                      const std::optional<Names>& stream_order) {
  if (popularity.has_value() == stream_order.has_value()) throw py::value_error("give popularity or stream_order");
  pcr::PopularityFile order;
  if (popularity) {
    order = Take(pcr::ReadPopularityFile(popularity->string()));
  } else {
    order.order = stream_order->names;
  }
  pcr::Result<pcr::TableConvertReport> reordered = [&] {
    py::gil_scoped_release release;
    return pcr::ReorderTable(input.string(), output.string(), order.order, {}, order.table_id);
  }();
  const pcr::TableConvertReport r = Take(std::move(reordered));
  py::dict d;
  d["path"] = r.path;
  d["rows"] = r.schema.row_count;
  d["stripes"] = r.stripes;
  d["output_bytes"] = r.output_bytes;
  d["notes"] = r.notes;
  WarnNotes(d);
  return d;
}

}  // namespace

PYBIND11_MODULE(_pcr, m) {
  m.doc() = "pcr: Progressive Compressed Records and feature-flattened tables";
  m.attr("__version__") = PCR_VERSION_STRING;
  g_corruption_error = py::reinterpret_borrow<py::object>(py::module_::import("pcr._errors").attr("CorruptionError"));
  g_not_supported_error =
      py::reinterpret_borrow<py::object>(py::module_::import("pcr._errors").attr("NotSupportedError"));

  py::class_<PyImageDataset>(m, "ImageDataset", Doc("ImageDataset"))
      .def(py::init<const std::filesystem::path&, const std::string&, bool, const py::object&, int64_t>(),
           py::arg("path"), py::arg("engine") = "auto", py::arg("direct") = false, py::arg("remote") = py::none(),
           py::arg("index_cache_bytes") = static_cast<int64_t>(pcr::ImageReaderOptions{}.index_cache_bytes),
           Doc("ImageDataset.__init__"))
      .def("__len__", &PyImageDataset::size, Doc("ImageDataset.__len__"))
      .def_property_readonly("num_scan_groups", &PyImageDataset::num_scan_groups, Doc("ImageDataset.num_scan_groups"))
      .def_property_readonly("classes", &PyImageDataset::classes, Doc("ImageDataset.classes"))
      .def_property_readonly("content_id", &PyImageDataset::content_id, Doc("ImageDataset.content_id"))
      .def_property_readonly("counts", &PyImageDataset::counts, Doc("ImageDataset.counts"))
      .def("sample", &PyImageDataset::sample, py::arg("index"), Doc("ImageDataset.sample"))
      .def("read", &PyImageDataset::read, py::arg("index"), py::arg("fidelity") = "full", py::arg("metadata") = false,
           Doc("ImageDataset.read"))
      .def("read_many", &PyImageDataset::read_many, py::arg("indices"), py::arg("fidelity") = "full",
           Doc("ImageDataset.read_many"))
      .def("lower_fidelity", &PyImageDataset::lower_fidelity, py::arg("index"), py::arg("jpeg"), py::arg("fidelity"),
           py::arg("jpeg_fidelity") = "full", Doc("ImageDataset.lower_fidelity"))
      .def_property_readonly("io_counters", &PyImageDataset::io_counters, Doc("ImageDataset.io_counters"))
      .def_property_readonly("num_records", &PyImageDataset::num_records, Doc("ImageDataset.num_records"))
      .def_property_readonly("field_schema", &PyImageDataset::field_schema, Doc("ImageDataset.field_schema"))
      .def("read_fields", &PyImageDataset::read_fields, py::arg("fields"), py::arg("first_record") = 0,
           py::arg("num_records") = py::none(), Doc("ImageDataset.read_fields"))
      .def("fields", &PyImageDataset::fields, py::arg("index"), py::arg("fields"), Doc("ImageDataset.fields"))
      .def("read_record", &PyImageDataset::read_record, py::arg("record"), py::arg("fidelity") = "full",
           py::arg("fields") = Names{}, py::arg("metadata") = false, Doc("ImageDataset.read_record"))
      .def("record_samples", &PyImageDataset::record_samples, py::arg("record"), py::arg("fidelity") = "full",
           py::arg("fields") = Names{}, Doc("ImageDataset.record_samples"))
      .def("verify", &PyImageDataset::verify, Doc("ImageDataset.verify"));

  py::class_<PySampleIterator>(m, "SampleIterator", Doc("SampleIterator"))
      .def(py::init<const PyImageDataset&, int64_t, const py::object&, int64_t, int64_t, int64_t, int64_t, const std::string&, bool,
                    int64_t, uint64_t, int64_t, int64_t, int64_t, const Names&>(),
           py::arg("dataset"), py::kw_only(), py::arg("batch_size"), py::arg("fidelity") = "full", py::arg("rank") = 0,
           py::arg("world_size") = 1, py::arg("worker") = 0, py::arg("num_workers") = 1, py::arg("uneven") = "pad", py::arg("shuffle") = true,
           py::arg("shuffle_buffer") = 4096, py::arg("seed") = 0, py::arg("epoch") = 0, py::arg("position") = 0,
           py::arg("read_ahead") = 2048, py::arg("fields") = Names{}, py::keep_alive<1, 2>(), Doc("SampleIterator.__init__"))
      .def("__iter__", [](PySampleIterator& it) -> PySampleIterator& { return it; })
      .def("__next__", &PySampleIterator::next)
      .def("__len__", &PySampleIterator::num_batches, Doc("SampleIterator.__len__"))
      .def_property_readonly("num_images", &PySampleIterator::num_images, Doc("SampleIterator.num_images"))
      .def("state", &PySampleIterator::state, Doc("SampleIterator.state"));

  py::class_<PyImageLoader>(m, "_ImageLoader")
      .def(py::init<const PyImageDataset&, int64_t, const py::object&, int64_t, int64_t, int64_t, int64_t,
                    const std::string&, bool, int64_t, uint64_t, int64_t, int64_t, int64_t, const Delivered&,
                    int64_t, const Names&, int, const std::string&, std::pair<double, double>,
                    std::pair<double, double>, int, bool, bool, bool, const Normalize&, const std::string&, int,
                    const std::string&, const std::string&>(),
           py::arg("dataset"), py::kw_only(), py::arg("batch_size"), py::arg("fidelity") = "full",
           py::arg("rank") = 0, py::arg("world_size") = 1, py::arg("worker") = 0, py::arg("num_workers") = 1,
           py::arg("uneven") = "pad", py::arg("shuffle") = true, py::arg("shuffle_buffer") = 4096,
           py::arg("seed") = 0, py::arg("epoch") = 0, py::arg("batches") = 0, py::arg("saved_workers") = 0,
           py::arg("delivered") = Delivered{}, py::arg("read_ahead") = 2048, py::arg("fields") = Names{},
           py::arg("size") = 224,
           py::arg("crop") = "random_resized", py::arg("scale") = std::pair<double, double>{0.08, 1.0},
           py::arg("ratio") = std::pair<double, double>{3.0 / 4.0, 4.0 / 3.0}, py::arg("resize") = 256,
           py::arg("flip") = true, py::arg("fast_scale") = false, py::arg("channels_last") = false,
           py::arg("normalize") = py::none(), py::arg("dtype") = "uint8", py::arg("threads") = 0,
           py::arg("decoder") = "auto", py::arg("on_error") = "raise")
      .def("__iter__", [](PyImageLoader& it) -> PyImageLoader& { return it; })
      .def("__next__", &PyImageLoader::next)
      .def("__len__", &PyImageLoader::num_batches)
      .def("state", &PyImageLoader::state)
      .def("skipped", &PyImageLoader::skipped);

  m.def(
      "_batches_per_rank",
      [](int64_t images, int64_t world_size, int64_t batch_size, const std::string& uneven) {
        const pcr::EpochOptions o{.world_size = NonNegative(world_size, "world_size"),
                                  .batch_size = NonNegative(batch_size, "batch_size"),
                                  .uneven = Uneven(uneven)};
        return Take(pcr::BatchesPerRank(NonNegative(images, "images"), o));
      },
      py::arg("images"), py::arg("world_size"), py::arg("batch_size"), py::arg("uneven") = "pad");
  m.def(
      "_resumed_batches_per_rank",
      [](const PyImageDataset& ds, int64_t world_size, int64_t batch_size, const std::string& uneven, bool shuffle,
         int64_t shuffle_buffer, uint64_t seed, int64_t epoch, const Delivered& delivered) {
        const pcr::EpochOptions o = Epoch(batch_size, 0, world_size, 0, 1, uneven, shuffle, shuffle_buffer, delivered);
        for (const auto& [w, k, b] : delivered) {
          if (w < 1 || k < 1) throw py::value_error("a delivered part's world_size and num_workers must be at least 1");
        }
        return Take(pcr::BatchesPerRank(ds.dataset(), o, seed, NonNegative(epoch, "epoch")));
      },
      py::arg("dataset"), py::kw_only(), py::arg("world_size"), py::arg("batch_size"), py::arg("uneven"),
      py::arg("shuffle"), py::arg("shuffle_buffer"), py::arg("seed"), py::arg("epoch"), py::arg("delivered"));

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

  m.def(
      "_fidelity_groups",
      [](const py::object& value, int groups) {
        const int fidelity = ParseFidelity(value, groups, false);
        return fidelity == pcr::kFullFidelity ? groups : fidelity;
      },
      py::arg("fidelity"), py::arg("num_scan_groups"));
  m.def("decode", &Decode, py::arg("jpeg"), py::arg("scale") = 1, py::arg("crop") = py::none(),
        py::arg("format") = "rgb", py::arg("strict") = true, py::arg("decoder") = "auto", Doc("decode"));

  py::class_<PyTable>(m, "Table", Doc("Table"))
      .def(py::init<const std::filesystem::path&, const std::string&, bool, const py::object&,
                    const std::optional<std::filesystem::path>&, const std::optional<std::string>&>(),
           py::arg("path"), py::arg("engine") = "auto", py::arg("direct") = false, py::arg("remote") = py::none(),
           py::arg("access_log") = py::none(), py::arg("job") = py::none(), Doc("Table.__init__"))
      .def_property_readonly("schema", &PyTable::schema, Doc("Table.schema"))
      .def_property_readonly("content_id", &PyTable::content_id, Doc("Table.content_id"))
      .def_property_readonly("num_rows", &PyTable::num_rows, Doc("Table.num_rows"))
      .def_property_readonly("io_counters", &PyTable::io_counters, Doc("Table.io_counters"))
      .def_property_readonly("num_stripes", &PyTable::num_stripes, Doc("Table.num_stripes"))
      .def_property_readonly("stripe_rows", &PyTable::stripe_rows, Doc("Table.stripe_rows"))
      .def("read", &PyTable::read, py::arg("features"), py::arg("first_stripe") = 0,
           py::arg("num_stripes") = py::none(), Doc("Table.read"));

  py::class_<PyTableLoader>(m, "_TableLoader")
      .def(py::init<const PyTable&, int64_t, int64_t, int64_t, int64_t, int64_t, const std::string&, bool, int64_t,
                    uint64_t, int64_t, int64_t, int64_t, const std::optional<Names>&>(),
           py::arg("table"), py::kw_only(), py::arg("batch_size"), py::arg("rank") = 0, py::arg("world_size") = 1,
           py::arg("worker") = 0, py::arg("num_workers") = 1, py::arg("uneven") = "pad", py::arg("shuffle") = true,
           py::arg("shuffle_stripes") = 8, py::arg("seed") = 0, py::arg("epoch") = 0, py::arg("batches") = 0,
           py::arg("saved_workers") = 0, py::arg("features") = py::none(), py::keep_alive<1, 2>())
      .def("__iter__", [](PyTableLoader& it) -> PyTableLoader& { return it; })
      .def("__next__", &PyTableLoader::next)
      .def("__len__", &PyTableLoader::num_batches)
      .def_property_readonly("features", &PyTableLoader::features)
      .def("state", &PyTableLoader::state);

  m.def("_row_objects", &RowObjects, py::arg("values"), py::arg("offsets"), py::arg("presence"), py::arg("kind"));
  auto images_args = [](auto define) {
    define(py::arg("src"), py::arg("out"), py::kw_only(),
        py::arg("images_per_record") = 1024, py::arg("records_per_file") = 1, py::arg("jobs") = 0,
        py::arg("scan_script") = "spectral5", py::arg("strip_metadata") = false, py::arg("skip_bad") = false,
        py::arg("restart") = false, py::arg("shuffle") = 0, py::arg("keep_order") = false, py::arg("list") = "", py::arg("by_content") = false,
        py::arg("shard") = 0, py::arg("num_shards") = 1, py::arg("max_pixels") = pcr::kDefaultMaxPixels,
        py::arg("memory_mb") = 0, py::arg("fields") = "", py::arg("fields_key") = "path",
        py::arg("field_types") = std::map<std::string, std::string>(),
        py::arg("field_order") = std::vector<std::string>(), py::arg("shards") = std::vector<std::string>(), py::arg("exif_orientation") = false,
        py::arg("work_dir") = "", py::arg("remote") = py::none(), py::arg("part_size_mb") = 16,
        py::arg("multipart_threshold_mb") = 64, py::arg("upload_concurrency") = 8, py::arg("upload_memory_mb") = 256,
        py::arg("input_endpoint") = "", py::arg("output_endpoint") = "", py::arg("progress") = py::none());
  };
  images_args([&](auto... args) { m.def("convert_images", Composed(&ImagesOptions, &RunConvertImages), args..., Doc("convert_images")); });
  images_args([&](auto... args) {
    m.def("_check_convert_images", Composed(&ImagesOptions, [](const ImagesCall& call) {
            const pcr::Status checked = pcr::CheckConvertImagesOptions(call.options);
            if (!checked.ok()) Raise(checked.WithMessage(PythonSpelling(checked.message())));
          }), args...);
  });
  m.def("_default_job_id", &pcr::DefaultJobId);
  // Small objects beside an output in object storage (pcr.dask's parts).
  auto store = [](const py::object& remote, const std::string& output_endpoint) {
    return UploadArgsOf("", remote, 16, 64, 8, 256, "", output_endpoint);
  };
  m.def("_get_object", [store](const std::string& path, const py::object& remote, const std::string& output_endpoint)
        -> py::object {
          const UploadArgs a = store(remote, output_endpoint);
          pcr::Result<std::string> got = [&] {
            py::gil_scoped_release release;
            return pcr::GetObject(path, a.remote, a.upload);
          }();
          if (!got.ok() && got.status().code() == pcr::StatusCode::kNotFound) return py::none();
          return py::bytes(Take(std::move(got)));
        }, py::arg("path"), py::kw_only(), py::arg("remote") = py::none(), py::arg("output_endpoint") = "");
  m.def("_put_object", [store](const std::string& path, const py::bytes& data, const py::object& remote,
                               const std::string& output_endpoint) {
          const UploadArgs a = store(remote, output_endpoint);
          const std::string body = data;
          Unlocked([&] { return pcr::PutObject(path, body, a.remote, a.upload); });
        }, py::arg("path"), py::arg("data"), py::kw_only(), py::arg("remote") = py::none(),
        py::arg("output_endpoint") = "");
  m.def("_delete_objects", [store](const std::string& prefix, const py::object& remote,
                                   const std::string& output_endpoint) {
          const UploadArgs a = store(remote, output_endpoint);
          Unlocked([&] { return pcr::DeleteObjects(prefix, a.remote, a.upload); });
        }, py::arg("prefix"), py::kw_only(), py::arg("remote") = py::none(), py::arg("output_endpoint") = "");
  m.def("_missing_note", &MissingNote, py::arg("feature"), py::arg("type"), py::arg("count"), py::arg("line"),
        py::arg("column"), py::arg("first"));
  m.def("_count_access_logs", &CountAccessLogs, py::arg("logs"), py::arg("table") = py::none());
  m.def("reorder_table", &ReorderTable, py::arg("input"), py::arg("output"), py::kw_only(),
        py::arg("popularity") = py::none(), py::arg("stream_order") = py::none(), Doc("reorder_table"));
  m.def("merge", &Merge, py::arg("out"), py::arg("parts"), py::kw_only(), py::arg("work_dir") = "",
        py::arg("remote") = py::none(), py::arg("part_size_mb") = 16, py::arg("multipart_threshold_mb") = 64,
        py::arg("upload_concurrency") = 8, py::arg("upload_memory_mb") = 256, py::arg("output_endpoint") = "", Doc("merge"));
  auto table_args = [](auto define) {
    define(py::arg("input"), py::arg("out"), py::kw_only(), py::arg("rows_per_stripe") = 131072, py::arg("stripe_mb") = 128,
           py::arg("split_mb") = 64, py::arg("stream_order") = std::vector<std::string>{}, py::arg("popularity") = "",
           py::arg("float32") = false, py::arg("zstd_level") = 3, py::arg("encoding") = "auto",
           py::arg("column_types") = std::map<std::string, std::string>(), py::arg("schema") = py::none(),
           py::arg("strings") = false, py::arg("on_bad_value") = "error", py::arg("delimiter") = "",
           py::arg("format") = "", py::arg("work_dir") = "",
           py::arg("remote") = py::none(), py::arg("part_size_mb") = 16, py::arg("multipart_threshold_mb") = 64,
           py::arg("upload_concurrency") = 8, py::arg("upload_memory_mb") = 256, py::arg("input_endpoint") = "",
           py::arg("output_endpoint") = "");
  };
  table_args([&](auto... args) { m.def("convert_table", Composed(&TableOptions, &RunConvertTable), args..., Doc("convert_table")); });
  py::class_<PyTableConversion> conversion(m, "_TableConversion");
  table_args([&](auto... args) {
    conversion.def(py::init(Composed(&TableOptions, [](pcr::TableConvertOptions o) {
                     return PyTableConversion{std::move(o)};
                   })),
                   args...);
  });
  conversion.def("scan", &PyTableConversion::Scan, py::arg("shard"), py::arg("num_shards"), py::arg("start") = py::none())
      .def("plan", &PyTableConversion::Plan, py::arg("scans"))
      .def("convert_shard", &PyTableConversion::ConvertShard, py::arg("plan"), py::arg("shard"), py::arg("part"))
      .def("merge", &PyTableConversion::Merge, py::arg("parts"))
      .def("convert", [](const PyTableConversion& c) { return RunConvertTable(c.options); });
}
