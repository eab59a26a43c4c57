// `toroid._toroid_c10d`: ProcessGroupToroid as a torch.distributed ProcessGroup (toroid/distributed.py
// registers it as the "toroid" backend).
#include <torch/csrc/utils/pybind.h>

#include "process_group.hpp"

namespace py = pybind11;

PYBIND11_MODULE(_toroid_c10d, m) {
  py::module_::import("torch.distributed");  // registers c10d::ProcessGroup, our base class
  py::class_<toroid::torch_backend::ProcessGroupToroid, c10d::ProcessGroup,
             c10::intrusive_ptr<toroid::torch_backend::ProcessGroupToroid>>(m, "ProcessGroupToroid")
      .def(py::init([](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size) {
             return c10::make_intrusive<toroid::torch_backend::ProcessGroupToroid>(store, rank,
                                                                                   size);
           }),
           py::arg("store"), py::arg("rank"), py::arg("size"),
           py::call_guard<py::gil_scoped_release>())
      .def_property_readonly(
          "topology",
          [](toroid::torch_backend::ProcessGroupToroid& g) {
            return g.communicator().shape().to_string();
          },
          "The group's torus, e.g. \"4x2\" or a row's \"4x1\" (\":wrap=none\" where it is a line)");
}
