// Shared by the binding files of the `_toroid` extension: the Python-side Communicator and the
// rule that a check failing on one rank raises on every rank.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <optional>
#include <utility>

#include "toroid/communicator.hpp"
#include "toroid/mpi_helpers.hpp"

namespace toroid::python {

struct PyCommunicator {
  std::unique_ptr<Communicator> comm;
  Communicator& get() const { return *comm; }
};

// Runs `f` (argument conversion that may throw on some ranks only) so that a failure on any
// rank raises on every rank when `agree`, else locally (as the C++ collectives check their
// arguments across ranks only with Options::check / TOROID_CHECK).
template <class F>
auto checked(const Communicator& comm, bool agree, F f) -> decltype(f()) {
  if (!agree) return f();
  std::optional<decltype(f())> out;
  toroid::run_agreed(
      comm.mpi_comm(), [&] { out.emplace(f()); }, comm.timeout_seconds());
  return std::move(*out);
}

void bind_communicator(pybind11::module_& m);
void bind_optimizer(pybind11::module_& m);

}  // namespace toroid::python
