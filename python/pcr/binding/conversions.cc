// Conversions: convert_images, convert_table, merge, reorder_table, the
// steps pcr.dask runs, and popularity counting.
#include "common.h"

namespace pcr_python {
namespace {

// The conversion options as convert_images, convert_table and pcr.popularity
// spell them, for the library's messages.
constexpr pcr::OptionNames kPythonOptionNames = {
    {pcr::Option::kImagesPerRecord, {"images_per_record", ""}},
    {pcr::Option::kRecordsPerFile, {"records_per_file", ""}},
    {pcr::Option::kScanScript, {"scan_script", ""}},
    {pcr::Option::kStripMetadata, {"strip_metadata=True", ""}},
    {pcr::Option::kSkipBad, {"skip_bad=True", ""}},
    {pcr::Option::kRestart, {"restart=True", ""}},
    {pcr::Option::kShuffle, {"shuffle", ""}},
    {pcr::Option::kKeepOrder, {"keep_order=True", ""}},
    {pcr::Option::kList, {"list", ""}},
    {pcr::Option::kByContent, {"by_content=True", ""}},
    {pcr::Option::kFields, {"fields", ""}},
    {pcr::Option::kFieldsKey, {"fields_key", ""}},
    {pcr::Option::kFieldType, {"field_types", "field_types={'{}': '{}'}"}},
    {pcr::Option::kFieldOrder, {"field_order", ""}},
    {pcr::Option::kExifOrientation, {"exif_orientation=True", ""}},
    {pcr::Option::kShard, {"shard", ""}},
    {pcr::Option::kNumShards, {"num_shards", ""}},
    {pcr::Option::kShards, {"shards", ""}},
    {pcr::Option::kWorkDir, {"work_dir", ""}},
    {pcr::Option::kFormat, {"format", ""}},
    {pcr::Option::kColumnType, {"column_types", "column_types={'{}': '{}'}"}},
    {pcr::Option::kSchema, {"schema", ""}},
    {pcr::Option::kStrings, {"strings=True", ""}},
    {pcr::Option::kOnBadValueMissing, {"on_bad_value='missing'", ""}},
    {pcr::Option::kCountOneTable, {"pcr.popularity(logs, table=...)", "pcr.popularity(logs, table={})"}},
};
static_assert(kPythonOptionNames.complete());

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
  if (!result->ok()) Raise(result->status());
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
                                          .upload = up.upload,
                                          .option_names = &kPythonOptionNames};
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
  options.option_names = &kPythonOptionNames;
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
  options.option_names = &kPythonOptionNames;
  return options;
}

py::dict TableReport(pcr::TableConvertReport r) {
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
  return pcr::MissingValuesNote(m);
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
  py::dict report = TableReport(Take(std::move(converted)));
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

  void Check(const std::string& part_prefix) const {
    pcr::Status checked = [&] {
      py::gil_scoped_release release;
      return pcr::CheckTableShards(options, part_prefix);
    }();
    if (!checked.ok()) Raise(checked);
  }

  py::bytes Scan(uint32_t shard, uint32_t num_shards, std::optional<uint64_t> start) const {
    pcr::Result<std::string> scan = [&] {
      py::gil_scoped_release release;
      return pcr::SurveyTableShard(options, shard, num_shards, start);
    }();
    return py::bytes(Take(std::move(scan)));
  }
  py::dict Plan(const std::vector<std::string>& scans) const {
    pcr::TableShardPlan plan = Take(pcr::PlanTableShards(options, scans));
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
    return TableReport(Take(std::move(r)));
  }
  py::dict Merge(const std::vector<std::filesystem::path>& parts, const std::string& part_prefix) const {
    std::vector<std::string> paths;
    for (const auto& p : parts) paths.push_back(p.string());
    pcr::Result<pcr::TableConvertReport> r = [&] {
      py::gil_scoped_release release;
      return pcr::MergeTableParts(options, paths, part_prefix);
    }();
    return TableReport(Take(std::move(r)));
  }
};

py::dict CountAccessLogs(const std::vector<std::filesystem::path>& logs, const std::optional<std::filesystem::path>& table) {
  std::vector<std::string> paths;
  for (const auto& log : logs) paths.push_back(log.string());
  pcr::Result<pcr::PopularityCount> counted = [&] {
    py::gil_scoped_release release;
    return pcr::CountAccessLogs(paths, table ? table->string() : "", {}, kPythonOptionNames);
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
    return pcr::ReorderTable(input.string(), output.string(), order.order, {}, order.table_id, kPythonOptionNames);
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

void DefineConversions(py::module_& m) {
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
  // pcr.dask's checks of its arguments, named as the functions they check, so that their errors are those functions'.
  images_args([&](auto... args) {
    m.attr("_check_convert_images") = py::cpp_function(Composed(&ImagesOptions, [](const ImagesCall& call) {
                                                          Check(pcr::CheckConvertImagesOptions(call.options));
                                                          Check(pcr::CheckMergeOutput(call.options.out_dir));
                                                        }),
                                                        py::name("convert_images"), py::scope(m), args...);
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
    m.attr("_table_conversion") = py::cpp_function(Composed(&TableOptions, [](pcr::TableConvertOptions o) {
                                                     return PyTableConversion{std::move(o)};
                                                   }),
                                                   py::name("convert_table"), py::scope(m), args...);
  });
  conversion.def("check", &PyTableConversion::Check, py::arg("part_prefix"))
      .def("scan", &PyTableConversion::Scan, py::arg("shard"), py::arg("num_shards"), py::arg("start") = py::none())
      .def("plan", &PyTableConversion::Plan, py::arg("scans"))
      .def("convert_shard", &PyTableConversion::ConvertShard, py::arg("plan"), py::arg("shard"), py::arg("part"))
      .def("merge", &PyTableConversion::Merge, py::arg("parts"), py::arg("part_prefix") = "")
      .def("convert", [](const PyTableConversion& c) { return RunConvertTable(c.options); });
}

}  // namespace pcr_python
