// Python binding of the event client (src/client/). Owned by the client module.
#include <pybind11/pybind11.h>

namespace titan::python {
void BindClient(pybind11::module_& m) {}
}  // namespace titan::python
