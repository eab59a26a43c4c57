// The `_toroid` extension: exceptions, then the bindings of each part. toroid/__init__.py is
// the public face.
#include <pybind11/pybind11.h>

#include "bindings.hpp"
#include "toroid/defaults.hpp"
#include "toroid/error.hpp"
#include "toroid/version.hpp"

namespace py = pybind11;

PYBIND11_MODULE(_toroid, m) {
  m.doc() = "toroid: TPU-pod style collectives over MPI (the compiled part; import toroid)";
  // toroid::Error and its kinds as Python exceptions: Error derives from RuntimeError, the kinds
  // from Error, so `except toroid.Error` catches every one of them.
  static py::exception<toroid::Error> error(m, "Error", PyExc_RuntimeError);
  static py::exception<toroid::InvalidArgument> invalid(m, "InvalidArgument", error.ptr());
  static py::exception<toroid::TopologyError> topology(m, "TopologyError", error.ptr());
  static py::exception<toroid::MpiError> mpi(m, "MpiError", error.ptr());
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const toroid::InvalidArgument& e) {
      PyErr_SetString(invalid.ptr(), e.what());
    } catch (const toroid::TopologyError& e) {
      PyErr_SetString(topology.ptr(), e.what());
    } catch (const toroid::MpiError& e) {
      PyErr_SetString(mpi.ptr(), e.what());
    } catch (const toroid::Error& e) {
      PyErr_SetString(error.ptr(), e.what());
    }
  });
  m.attr("__version__") = TOROID_VERSION_STRING;
  // The C++ defaults (toroid/defaults.hpp), so Python names each of them once too.
  m.attr("default_bucket_bytes") = toroid::default_bucket_bytes;
  m.attr("default_first_bucket_bytes") = toroid::default_first_bucket_bytes;
  toroid::python::bind_communicator(m);
  toroid::python::bind_optimizer(m);
}
