// pcr.Table and the object columns of its frames.
#include "table.h"

namespace pcr_python {
namespace {

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

}  // namespace

void DefineTables(py::module_& m) {
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
  m.def("_row_objects", &RowObjects, py::arg("values"), py::arg("offsets"), py::arg("presence"), py::arg("kind"));
}

}  // namespace pcr_python
