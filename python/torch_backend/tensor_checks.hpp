// Argument checks shared by the backend's operations: on toroid (process_group.cpp) and on MPI
// (mpi_ops.cpp). Each throws InvalidArgument naming the operation.
#pragma once

#include <fmt/format.h>

#include <vector>

#include "process_group.hpp"
#include "toroid/error.hpp"

namespace toroid::torch_backend {

// A CPU tensor whose elements are one dense run of memory.
inline void require_dense(const at::Tensor& t, const char* op, const char* what) {
  if (!t.device().is_cpu())
    throw InvalidArgument(
        fmt::format("toroid backend: {}: {} is on {}; toroid works on CPU tensors", op, what,
                    t.device().str()));
  if (!t.is_contiguous())
    throw InvalidArgument(fmt::format(
        "toroid backend: {}: {} is not contiguous (call .contiguous() first)", op, what));
}

inline void require_one(const std::vector<at::Tensor>& ts, const char* op) {
  if (ts.size() != 1)
    throw InvalidArgument(
        fmt::format("toroid backend: {}: expects one tensor per call (one device per rank), got {}",
                    op, ts.size()));
}

}  // namespace toroid::torch_backend
