// Python binding of the event client (src/client/titan_client.h): plain functions on the
// process-wide titan::Client, so a call is one pybind11 dispatch plus one non-blocking sendto().
// None of them raises when the agent is down; each returns True iff every socket accepted the
// event (drops are counted by dropped()). The GIL is kept: sendto() never blocks.
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "src/client/titan_client.h"

namespace titan::python {
namespace py = pybind11;

namespace {
Client& C() { return Client::Default(); }
}  // namespace

void BindClient(py::module_& m) {
  m.def(
      "hello", [](const std::string& job) { return C().Hello(job); }, py::arg("job") = "",
      "Announce this process (rank, pid) with a job name.");
  m.def(
      "step_begin", [](int64_t step) { return C().StepBegin(step); }, py::arg("step"));
  m.def(
      "step_end", [](int64_t step) { return C().StepEnd(step); }, py::arg("step"));
  m.def(
      "checkpoint_begin", [](int64_t step) { return C().CheckpointBegin(step); }, py::arg("step"));
  m.def(
      "checkpoint_end",
      [](int64_t step, int64_t bytes, const std::string& tag) {
        return C().CheckpointEnd(step, bytes, tag);
      },
      py::arg("step"), py::arg("bytes") = 0, py::arg("tag") = "",
      "tag \"staged\": an asynchronous save returned; its checkpoint_committed event follows.");
  m.def(
      "checkpoint_committed",
      [](int64_t step, int64_t bytes) { return C().CheckpointCommitted(step, bytes); },
      py::arg("step"), py::arg("bytes") = 0,
      "The background part of a save of `step` ended (committed); titan.checkpoint sends it.");
  m.def(
      "checkpoint_durable",
      [](int64_t step, int64_t bytes) { return C().CheckpointDurable(step, bytes); },
      py::arg("step"), py::arg("bytes") = 0, "`step` was copied to durable storage.");
  m.def(
      "mark", [](const std::string& name) { return C().Mark(name); }, py::arg("name"),
      "A named instant; the name is cut to 23 bytes.");
  m.def("heartbeat", [] { return C().Heartbeat(); });
  m.def(
      "goodbye", [] { return C().Goodbye(); },
      "Announce a clean exit; waits at most 20 ms for deferred events to go out.");
  m.def(
      "set_rank", [](int32_t rank) { C().SetRank(rank); }, py::arg("rank"),
      "Override the rank read from TITAN_RANK / RANK.");
  m.def("rank", [] { return C().rank(); });
  m.def(
      "dropped", [] { return C().dropped(); }, "Events the kernel refused (agent down, full).");
  m.def(
      "sent", [] { return C().sent(); }, "Events the kernel accepted.");
  m.def(
      "deferred", [] { return C().deferred(); },
      "Events waiting for room in the agent's queue (sent before the next event).");
  m.def(
      "flush", [] { return C().Flush(); },
      "Tries once to send deferred events; returns how many still wait.");
  m.def("last_errno", [] { return C().last_errno(); });
  m.def("socket_paths", [] { return C().socket_paths(); });
}

}  // namespace titan::python
