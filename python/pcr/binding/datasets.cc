// pcr.ImageDataset and pcr.SampleIterator.
#include "image_dataset.h"

namespace pcr_python {
namespace {

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

}  // namespace

void DefineDatasets(py::module_& m) {
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

  m.def(
      "_fidelity_groups",
      [](const py::object& value, int groups) {
        const int fidelity = ParseFidelity(value, groups, false);
        return fidelity == pcr::kFullFidelity ? groups : fidelity;
      },
      py::arg("fidelity"), py::arg("num_scan_groups"));
}

}  // namespace pcr_python
