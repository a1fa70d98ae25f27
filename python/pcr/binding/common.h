// What the files of the pcr extension (pcr._pcr) share: the casters, the
// errors, the GIL policy and the conversions of types. Every read, decode
// and conversion runs with the GIL released; arrays handed to Python own
// their memory or keep it alive.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <atomic>
#include <cstring>
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

namespace pcr_python {

// The docstring _pcr.pyi gives `name` ("Class", "Class.member" or
// "function"), or none.
const char* Doc(std::string_view name);

// Raises the Python exception that fits `status`, with pcr's message (a
// byte of no UTF-8 character in it, from a path or an input, as \xNN).
[[noreturn]] void Raise(const pcr::Status& status);

// `value` as an unsigned option, or ValueError naming it.
uint64_t NonNegative(int64_t value, const char* name);

inline py::bytes ToBytes(const pcr::Bytes& b) { return py::bytes(reinterpret_cast<const char*>(b.data()), b.size()); }

py::dict CountersDict(const pcr::IoCounters& c);

// `remote`: None, or a dict of RemoteOptions fields.
pcr::RemoteOptions RemoteFromDict(const py::object& remote);

pcr::IoEngineOptions IoOptions(const std::string& engine, bool direct, const py::object& remote);

// pcr.CorruptionError and pcr.NotSupportedError, set by InitErrors.
extern py::object g_corruption_error;
extern py::object g_not_supported_error;
void InitErrors();

inline void Check(const pcr::Status& status) {
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

// A 1-D array over `values`, which the array then owns.
template <typename T, typename A>
py::array_t<T> Own(std::vector<T, A>&& values) {
  auto* held = new std::vector<T, A>(std::move(values));
  py::capsule owner(held, [](void* p) { delete static_cast<std::vector<T, A>*>(p); });
  return py::array_t<T>({static_cast<py::ssize_t>(held->size())}, {static_cast<py::ssize_t>(sizeof(T))},
                        held->data(), owner);
}

// The options of a conversion into s3:// (ignored for local outputs).
struct UploadArgs {
  std::string work_dir;
  pcr::RemoteOptions remote;
  pcr::UploadOptions upload;
};

UploadArgs UploadArgsOf(const std::string& work_dir, const py::object& remote, uint64_t part_size_mb,
                        uint64_t multipart_threshold_mb, unsigned upload_concurrency, uint64_t upload_memory_mb,
                        const std::string& input_endpoint, const std::string& output_endpoint);

// [{"name", "type", "id", "present_count", "value_count"}, ...]
py::list SchemaList(const pcr::TableSchema& schema);

// {"presence": bool[rows], "values": ..., ["offsets": ...], ["scores": ...]}
py::dict ColumnDict(pcr::Column&& c);

// Row `row` of `c` as a Python value: None when missing; int, float, str
// (undecodable bytes kept as surrogates), bytes, or a list (of (id, score)
// pairs for scored lists).
py::object ColumnValue(const pcr::Column& c, uint64_t row);

// Appends the rows of `from` to `into`, a column of the same type.
void AppendColumn(const pcr::Column& from, pcr::Column* into);

// A fidelity as Python passes it: "full", or an int 1..groups (and with
// `fields_only` 0), as pcr::ParseFidelity reads it; ValueError otherwise.
int ParseFidelity(const py::object& value, int groups, bool fields_only);

pcr::UnevenShares Uneven(const std::string& uneven);

// Parts of an epoch delivered before resumes: (world_size, num_workers, batches).
using Delivered = std::vector<std::tuple<int64_t, int64_t, int64_t>>;

// A rank's and worker's share of an epoch, from Python's arguments.
pcr::EpochOptions Epoch(int64_t batch_size, int64_t rank, int64_t world_size, int64_t worker, int64_t num_workers,
                        const std::string& uneven, bool shuffle, int64_t shuffle_buffer,
                        const Delivered& delivered = {});

// {name: [value or None per row]} of a batch's field columns.
py::dict FieldLists(const std::vector<std::string>& names, const std::vector<pcr::Column>& columns);

// {"seed", "epoch", "batches", "num_workers"}
py::dict StateDict(const pcr::LoaderState& st);

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

// The process's pool for buffers of `bytes`, shared by the loaders that ask
// for that size, so that a loader made for each part of an epoch reuses the
// buffers of the last (the pool of the latest size asked for stays while
// none holds it). Called with the GIL held.
std::shared_ptr<BufferPool> SharedBufferPool(size_t bytes);

// n images of `options` in `data`: an array N x 3 x S x S, or N x S x S x
// 3, of the options' dtype.
py::array Batch(BufferPool& pool, std::vector<uint8_t>&& data, size_t n, const pcr::BatchTransformOptions& options);

pcr::DecoderChoice Decoder(const std::string& name);

// (mean, std) of three channels, each given as one value or three.
using Normalize = std::optional<std::pair<std::vector<float>, std::vector<float>>>;
pcr::BatchTransformOptions TransformOptions(int size, const std::string& crop, std::pair<double, double> scale,
                                            std::pair<double, double> ratio, int resize, bool flip, bool fast_scale,
                                            bool channels_last, const Normalize& normalize, const std::string& dtype,
                                            int threads, const std::string& decoder);

// The module's parts, by area, in the order the module defines them.
void DefineDatasets(py::module_& m);
void DefineDecoding(py::module_& m);
void DefineTables(py::module_& m);
void DefineLoaders(py::module_& m);
void DefineConversions(py::module_& m);

}  // namespace pcr_python
