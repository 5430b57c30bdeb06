// Python binding of the checkpoint engine (src/checkpoint/). Owned by the checkpoint module.
// Thin: tensors cross as Python buffers (numpy views of torch storage, so no copy), errors as
// exceptions (RuntimeError; FileNotFoundError for NOT_FOUND). The GIL is released while the
// engine copies, hashes, writes or reads. The Python API is python/titan/checkpoint.py.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#ifdef TITAN_HAVE_CHECKPOINT
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "src/checkpoint/catalog.h"
#include "src/checkpoint/read_through_storage.h"
#include "src/checkpoint/reader.h"
#include "src/checkpoint/writer.h"
#include "src/client/titan_client.h"
#include "src/s3/config.h"

namespace py = pybind11;

namespace titan::python {
namespace {

using namespace titan::checkpoint;

// Raised as FileNotFoundError (translator in BindCheckpoint), so that Throw needs no GIL:
// calls that wait on storage (an object store is the network) release it.
struct NotFoundException : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void Throw(const Status& status) {
  if (status.ok()) return;
  if (status.code() == StatusCode::kNotFound) throw NotFoundException(status.ToString());
  throw std::runtime_error(status.ToString());
}

template <typename T>
T Unwrap(Result<T> result) {
  if (!result.ok()) Throw(result.status());
  return std::move(result).value();
}

std::shared_ptr<Storage> OpenRoot(const std::string& dir, bool create) {
  return Unwrap(OpenStorage(dir, create));
}

DType DTypeOf(const std::string& name) {
  auto dtype = ParseDType(name);
  if (!dtype) throw py::value_error("unsupported dtype \"" + name + "\"");
  return *dtype;
}

nlohmann::json ParseJsonObject(const std::string& text, const char* what) {
  nlohmann::json js = nlohmann::json::parse(text, nullptr, false);
  if (js.is_discarded() || !js.is_object()) {
    throw py::value_error(std::string(what) + " must be a JSON object");
  }
  return js;
}

// One tensor handed over by Python: (name, dtype, shape, offsets, lengths, replicated, buffer).
using PyTensor = std::tuple<std::string, std::string, std::vector<int64_t>, std::vector<int64_t>,
                            std::vector<int64_t>, bool, py::buffer>;

class PyWriter {
 public:
  // With a mirror ("s3://..."), rank 0 copies each committed checkpoint there in the
  // background (tiering, src/checkpoint/mirror.h).
  // The agent and titan run hear of each save's end and of each copy to the mirror
  // (checkpoint_committed / checkpoint_durable events, sent from the writer's threads).
  // node_local (with a mirror): `dir` is this node's own disk; every rank uploads its data to
  // the mirror and rank 0 commits there (writer.h), so a commit is also the copy to the mirror.
  PyWriter(const std::string& dir, const std::string& mirror, bool node_local)
      : writer_(OpenRoot(dir, true)) {
    if (node_local && mirror.empty()) {
      throw py::value_error("node_local needs a mirror (s3://bucket/prefix) to commit at");
    }
    writer_.SetOnSaved([this, node_local](const SaveStats& s) {
      titan::Client::Default().CheckpointCommitted(s.step, static_cast<int64_t>(s.written_bytes));
      if (node_local && s.committed) {
        committed_at_store_.store(s.step);
        titan::Client::Default().CheckpointDurable(s.step, static_cast<int64_t>(s.written_bytes));
      }
    });
    if (node_local) {
      writer_.SetCommitStore(OpenRoot(mirror, true));
    } else if (!mirror.empty()) {
      mirror_ = std::make_shared<CheckpointMirror>(
          OpenRoot(dir, true), OpenRoot(mirror, true), [](int64_t step, uint64_t bytes) {
            titan::Client::Default().CheckpointDurable(step, static_cast<int64_t>(bytes));
          });
      writer_.SetMirror(mirror_);
    }
  }

  void Save(int64_t step, const std::vector<PyTensor>& tensors, int rank, int world_size,
            const std::string& save_id, bool async, bool incremental, int keep_last, int keep_every,
            double commit_timeout_s, uint64_t chunk_bytes, const std::string& items_json,
            const std::string& layout_json) {
    std::vector<TensorToSave> to_save;
    std::vector<py::buffer_info> infos;  // keep the buffer views alive during the call
    infos.reserve(tensors.size());
    for (const PyTensor& t : tensors) {
      infos.push_back(std::get<6>(t).request());
      const py::buffer_info& info = infos.back();
      TensorToSave s{std::get<0>(t), DTypeOf(std::get<1>(t)), std::get<2>(t), std::get<3>(t),
                     std::get<4>(t), std::get<5>(t),          info.ptr};
      uint64_t want =
          static_cast<uint64_t>(std::max<int64_t>(NumElements(s.lengths), 0)) * DTypeSize(s.dtype);
      if (static_cast<uint64_t>(info.size * info.itemsize) != want) {
        throw py::value_error("tensor \"" + s.name + "\": buffer has " +
                              std::to_string(info.size * info.itemsize) + " bytes, expected " +
                              std::to_string(want));
      }
      to_save.push_back(std::move(s));
    }
    SaveOptions options;
    options.rank = rank;
    options.world_size = world_size;
    options.save_id = save_id;
    options.async = async;
    options.incremental = incremental;
    options.retention = RetentionPolicy{keep_last, keep_every};
    options.commit_timeout_seconds = commit_timeout_s;
    options.chunk_bytes = chunk_bytes;
    options.items = ParseJsonObject(items_json, "items");
    options.layout = ParseJsonObject(layout_json, "layout");
    Status status;
    {
      py::gil_scoped_release release;
      status = writer_.Save(step, std::move(to_save), std::move(options));
    }
    Throw(status);
  }

  void Wait() {
    Status status;
    {
      py::gil_scoped_release release;
      status = writer_.Wait();
    }
    Throw(status);
  }

  // Waits for the mirror's copies; returns the newest durable step (None without a mirror or
  // before the first copy). Raises the last copy's error. Node-local: the newest step this
  // rank committed at the store (rank 0), after wait().
  std::optional<int64_t> WaitDurable() {
    if (int64_t step = committed_at_store_.load(); step >= 0) return step;
    if (!mirror_) return std::nullopt;
    Status status;
    {
      py::gil_scoped_release release;
      status = mirror_->Wait();
    }
    Throw(status);
    return mirror_->durable_step();
  }

  void Seed(const std::string& dir, int64_t step) {
    auto storage = OpenRoot(dir, false);
    writer_.SeedIndex(Unwrap(ReadManifest(*storage, step)));
  }

  py::dict Stats() const {
    SaveStats s = writer_.last_stats();
    py::dict d;
    d["step"] = s.step;
    d["staged_bytes"] = s.staged_bytes;
    d["blocking_s"] = s.blocking_ns / 1e9;
    d["written_bytes"] = s.written_bytes;
    d["referenced_bytes"] = s.referenced_bytes;
    d["write_s"] = s.write_ns / 1e9;
    d["commit_s"] = s.commit_ns / 1e9;
    d["committed"] = s.committed;
    return d;
  }

 private:
  std::shared_ptr<CheckpointMirror> mirror_;     // outlives writer_, which submits to it
  std::atomic<int64_t> committed_at_store_{-1};  // node-local, rank 0; set by writer_'s thread
  CheckpointWriter writer_;
};

class PyReader {
 public:
  // cache (optional): a node-local directory whose whole data files are read instead of the
  // store's (read_through_storage.h).
  PyReader(const std::string& dir, int64_t step, const std::string& cache)
      : storage_(OpenRoot(dir, false)) {
    if (!cache.empty()) {
      if (auto local = OpenStorage(cache, false); local.ok()) {
        read_through_ = std::make_shared<ReadThroughStorage>(storage_, std::move(local).value());
        storage_ = read_through_;
      }
    }
    reader_ = Unwrap(CheckpointReader::Open(storage_, step));
  }

  int64_t step() const { return reader_->manifest().step; }
  int world_size() const { return reader_->manifest().world_size; }
  std::string items_json() const { return reader_->manifest().items.dump(); }
  std::string layout_json() const { return reader_->manifest().layout.dump(); }
  // This rank's items (rank_items[rank], or rank 0's when the checkpoint had fewer ranks).
  std::string rank_items_json(int rank) const {
    const auto& all = reader_->manifest().rank_items;
    if (all.empty()) return reader_->manifest().items.dump();
    size_t r = static_cast<size_t>(rank) < all.size() ? static_cast<size_t>(rank) : 0;
    return all[r].dump();
  }
  // {name: (dtype, shape)}
  py::dict tensors() const {
    py::dict d;
    for (const TensorEntry& t : reader_->manifest().tensors) {
      d[py::str(t.name)] = py::make_tuple(std::string(DTypeName(t.dtype)), t.shape);
    }
    return d;
  }

  void ReadSlice(const std::string& name, const std::vector<int64_t>& offsets,
                 const std::vector<int64_t>& lengths, py::buffer dst) {
    py::buffer_info info = dst.request(/*writable=*/true);
    Status status;
    {
      py::gil_scoped_release release;
      status = reader_->ReadSlice(name, offsets, lengths, info.ptr,
                                  static_cast<size_t>(info.size * info.itemsize));
    }
    Throw(status);
  }

  std::vector<std::string> Verify() {
    CheckpointReader::VerifyReport report;
    {
      py::gil_scoped_release release;
      report = reader_->VerifyAll();
    }
    std::vector<std::string> errors;
    for (const Status& s : report.errors) errors.push_back(s.ToString());
    return errors;
  }

  uint64_t bytes_read() const { return reader_->bytes_read(); }
  // Data files opened from the cache directory so far (0 without one).
  uint64_t files_from_cache() const {
    return read_through_ ? read_through_->files_from_cache() : 0;
  }

 private:
  std::shared_ptr<Storage> storage_;
  std::shared_ptr<ReadThroughStorage> read_through_;  // with a cache directory
  std::unique_ptr<CheckpointReader> reader_;
};

}  // namespace

void BindCheckpoint(py::module_& m) {
  py::module_ c = m.def_submodule("checkpoint", "checkpoint engine (see titan.checkpoint)");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const NotFoundException& e) {
      PyErr_SetString(PyExc_FileNotFoundError, e.what());
    }
  });
  using ReleaseGil = py::call_guard<py::gil_scoped_release>;
  py::class_<PyWriter>(c, "Writer")
      .def(py::init<const std::string&, const std::string&, bool>(), py::arg("dir"),
           py::arg("mirror") = "", py::arg("node_local") = false, ReleaseGil())
      .def("save", &PyWriter::Save, py::arg("step"), py::arg("tensors"), py::arg("rank"),
           py::arg("world_size"), py::arg("save_id"), py::arg("async_"), py::arg("incremental"),
           py::arg("keep_last"), py::arg("keep_every"), py::arg("commit_timeout_s"),
           py::arg("chunk_bytes"), py::arg("items_json"), py::arg("layout_json"))
      .def("wait", &PyWriter::Wait)
      .def("wait_durable", &PyWriter::WaitDurable)
      .def("seed", &PyWriter::Seed, py::arg("dir"), py::arg("step"), ReleaseGil())
      .def("stats", &PyWriter::Stats);
  py::class_<PyReader>(c, "Reader")
      .def(py::init<const std::string&, int64_t, const std::string&>(), py::arg("dir"),
           py::arg("step"), py::arg("cache") = "", ReleaseGil())
      .def_property_readonly("step", &PyReader::step)
      .def_property_readonly("world_size", &PyReader::world_size)
      .def("items_json", &PyReader::items_json)
      .def("layout_json", &PyReader::layout_json)
      .def("rank_items_json", &PyReader::rank_items_json, py::arg("rank"))
      .def("tensors", &PyReader::tensors)
      .def("read_slice", &PyReader::ReadSlice, py::arg("name"), py::arg("offsets"),
           py::arg("lengths"), py::arg("dst"))
      .def("verify", &PyReader::Verify)
      .def("bytes_read", &PyReader::bytes_read)
      .def("files_from_cache", &PyReader::files_from_cache);
  // A missing directory holds no checkpoint; an object store that cannot be reached or
  // refuses the credentials is an error (None would make a job silently start over).
  c.def(
      "latest_step",
      [](const std::string& dir) -> std::optional<int64_t> {
        auto storage = OpenStorage(dir, false);
        if (!storage.ok() && !s3::IsS3Url(dir)) return std::nullopt;
        return Unwrap(LatestStep(*Unwrap(std::move(storage))));
      },
      ReleaseGil());
  c.def(
      "list_steps",
      [](const std::string& dir) -> std::vector<int64_t> {
        auto storage = OpenStorage(dir, false);
        if (!storage.ok() && !s3::IsS3Url(dir)) return {};
        return Unwrap(ListCommittedSteps(*Unwrap(std::move(storage))));
      },
      ReleaseGil());
  c.def(
      "gc",
      [](const std::string& dir, int keep_last, int keep_every, bool dry_run) {
        auto storage = OpenRoot(dir, false);
        GcReport report = Unwrap(CollectGarbage(*storage, {keep_last, keep_every}, dry_run));
        py::dict d;
        d["dropped_steps"] = report.dropped_steps;
        d["removed_files"] = report.removed_files;
        d["removed_bytes"] = report.removed_bytes;
        d["skipped"] = report.skipped;
        return d;
      },
      py::arg("dir"), py::arg("keep_last") = 0, py::arg("keep_every") = 0,
      py::arg("dry_run") = false);
}

}  // namespace titan::python

#else  // built without the checkpoint library

namespace titan::python {
void BindCheckpoint(pybind11::module_& m) {}
}  // namespace titan::python

#endif
