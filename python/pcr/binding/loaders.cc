// The loaders pcr.torch wraps, and the epoch arithmetic of its resumes.
#include "image_dataset.h"
#include "table.h"

namespace pcr_python {
namespace {

// The process's stripe cache, holding at least max_stripes: the table
// loaders made for runs of one epoch (pcr.dask.RemoteLoader's tasks) share
// it. Called with the GIL held.
std::shared_ptr<pcr::StripeCache> ProcessStripeCache(uint64_t max_stripes) {
  static const auto cache = std::make_shared<pcr::StripeCache>(0);
  cache->Reserve(max_stripes);
  return cache;
}

// Decoded batches of one rank's (and worker's) share (pcr::ImageLoader).
class PyImageLoader {
 public:
  PyImageLoader(const PyImageDataset& ds, int64_t batch_size, const py::object& fidelity, int64_t rank,
                int64_t world_size, int64_t worker, int64_t num_workers, const std::string& uneven, bool shuffle,
                int64_t shuffle_buffer, uint64_t seed, int64_t epoch, int64_t batches, int64_t saved_workers,
                int64_t max_batches, const Delivered& delivered, int64_t read_ahead, const Names& fields_arg,
                int size, const std::string& crop,
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
        .replace_skipped = on_error == "skip",
        .max_batches = NonNegative(max_batches, "max_batches")};
    transform_ = options.transform;
    batch_bytes_ = options.epoch.batch_size * Take(pcr::BatchDecoder::Create(transform_))->image_bytes();
    buffers_ = SharedBufferPool(batch_bytes_);
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
  std::shared_ptr<BufferPool> buffers_;
};

class PyTableLoader {
 public:
  PyTableLoader(const PyTable& table, int64_t batch_size, int64_t rank, int64_t world_size, int64_t worker,
                int64_t num_workers, const std::string& uneven, bool shuffle, int64_t shuffle_stripes, uint64_t seed,
                int64_t epoch, int64_t batches, int64_t saved_workers, int64_t max_batches, bool stripe_cache,
                const std::optional<Names>& features) {
    const pcr::TableLoaderOptions options{
        .epoch = Epoch(batch_size, rank, world_size, worker, num_workers, uneven, shuffle, 0),
        .shuffle_stripes = NonNegative(shuffle_stripes, "shuffle_stripes"),
        .max_batches = NonNegative(max_batches, "max_batches"),
        .stripe_cache = stripe_cache ? ProcessStripeCache(2 * NonNegative(shuffle_stripes, "shuffle_stripes"))
                                     : nullptr,
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

}  // namespace

void DefineLoaders(py::module_& m) {
  py::class_<PyImageLoader>(m, "_ImageLoader")
      .def(py::init<const PyImageDataset&, int64_t, const py::object&, int64_t, int64_t, int64_t, int64_t,
                    const std::string&, bool, int64_t, uint64_t, int64_t, int64_t, int64_t, int64_t, const Delivered&,
                    int64_t, const Names&, int, const std::string&, std::pair<double, double>,
                    std::pair<double, double>, int, bool, bool, bool, const Normalize&, const std::string&, int,
                    const std::string&, const std::string&>(),
           py::arg("dataset"), py::kw_only(), py::arg("batch_size"), py::arg("fidelity") = "full",
           py::arg("rank") = 0, py::arg("world_size") = 1, py::arg("worker") = 0, py::arg("num_workers") = 1,
           py::arg("uneven") = "pad", py::arg("shuffle") = true, py::arg("shuffle_buffer") = 4096,
           py::arg("seed") = 0, py::arg("epoch") = 0, py::arg("batches") = 0, py::arg("saved_workers") = 0,
           py::arg("max_batches") = 0, py::arg("delivered") = Delivered{}, py::arg("read_ahead") = 2048,
           py::arg("fields") = Names{}, py::arg("size") = 224,
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

  py::class_<PyTableLoader>(m, "_TableLoader")
      .def(py::init<const PyTable&, int64_t, int64_t, int64_t, int64_t, int64_t, const std::string&, bool, int64_t,
                    uint64_t, int64_t, int64_t, int64_t, int64_t, bool, const std::optional<Names>&>(),
           py::arg("table"), py::kw_only(), py::arg("batch_size"), py::arg("rank") = 0, py::arg("world_size") = 1,
           py::arg("worker") = 0, py::arg("num_workers") = 1, py::arg("uneven") = "pad", py::arg("shuffle") = true,
           py::arg("shuffle_stripes") = 8, py::arg("seed") = 0, py::arg("epoch") = 0, py::arg("batches") = 0,
           py::arg("saved_workers") = 0, py::arg("max_batches") = 0, py::arg("stripe_cache") = false,
           py::arg("features") = py::none(), py::keep_alive<1, 2>())
      .def("__iter__", [](PyTableLoader& it) -> PyTableLoader& { return it; })
      .def("__next__", &PyTableLoader::next)
      .def("__len__", &PyTableLoader::num_batches)
      .def_property_readonly("features", &PyTableLoader::features)
      .def("state", &PyTableLoader::state);
}

}  // namespace pcr_python
