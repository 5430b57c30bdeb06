// Python binding of the checkpoint engine (src/checkpoint/). Owned by the checkpoint module.
#include <pybind11/pybind11.h>

namespace titan::python {
void BindCheckpoint(pybind11::module_& m) {}
}  // namespace titan::python
