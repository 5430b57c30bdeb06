// The `titan._titan` extension: one module, one binding file per part of the public C++ API.
// Errors cross into Python only here, as exceptions (DESIGN.md rule 1).
#include <pybind11/pybind11.h>

namespace titan::python {
void BindClient(pybind11::module_& m);      // client_binding.cc
void BindCheckpoint(pybind11::module_& m);  // checkpoint_binding.cc
}  // namespace titan::python

PYBIND11_MODULE(_titan, m) {
  m.doc() = "titan native core: event client and checkpoint engine";
  m.attr("__version__") = TITAN_VERSION;  // the project() version in CMakeLists.txt
  titan::python::BindClient(m);
  titan::python::BindCheckpoint(m);
}
