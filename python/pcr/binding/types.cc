// Errors and the conversions of types: exceptions, option dicts, columns
// and epochs between Python and pcr.
#include "common.h"
#include "_pcr_docs.h"

namespace pcr_python {

const char* Doc(std::string_view name) {
  for (const pcr_docs::Entry& e : pcr_docs::kEntries) {
    if (e.name == name) return e.doc;
  }
  return nullptr;
}

py::object g_corruption_error;
py::object g_not_supported_error;

void InitErrors() {
  g_corruption_error = py::reinterpret_borrow<py::object>(py::module_::import("pcr._errors").attr("CorruptionError"));
  g_not_supported_error =
      py::reinterpret_borrow<py::object>(py::module_::import("pcr._errors").attr("NotSupportedError"));
}

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

uint64_t NonNegative(int64_t value, const char* name) {
  if (value < 0) throw py::value_error(std::string(name) + " must be at least 0, not " + std::to_string(value));
  return static_cast<uint64_t>(value);
}

py::dict CountersDict(const pcr::IoCounters& c) {
  py::dict d;
  d["reads"] = c.reads;
  d["ios"] = c.ios;
  d["bytes_read"] = c.bytes_read;
  d["seconds"] = c.seconds;
  return d;
}

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

pcr::UnevenShares Uneven(const std::string& uneven) {
  if (uneven != "pad" && uneven != "drop") throw py::value_error("uneven must be 'pad' or 'drop', not '" + uneven + "'");
  return uneven == "pad" ? pcr::UnevenShares::kPad : pcr::UnevenShares::kDrop;
}

pcr::EpochOptions Epoch(int64_t batch_size, int64_t rank, int64_t world_size, int64_t worker, int64_t num_workers,
                        const std::string& uneven, bool shuffle, int64_t shuffle_buffer,
                        const Delivered& delivered) {
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

py::dict FieldLists(const std::vector<std::string>& names, const std::vector<pcr::Column>& columns) {
  py::dict fields;
  for (size_t j = 0; j < names.size(); ++j) {
    py::list values;
    for (uint64_t r = 0; r < columns[j].rows; ++r) values.append(ColumnValue(columns[j], r));
    fields[py::str(names[j])] = values;
  }
  return fields;
}

py::dict StateDict(const pcr::LoaderState& st) {
  py::dict d;
  d["seed"] = st.seed;
  d["epoch"] = st.epoch;
  d["batches"] = st.batches;
  d["num_workers"] = st.num_workers;
  return d;
}

}  // namespace pcr_python
