// Which MPI datatypes and ops toroid can stand in for.
#pragma once

#include <mpi.h>

#include <optional>

#include "toroid/types.hpp"

namespace toroid::pmpi {

// Predefined contiguous types with a toroid element type of the same size and meaning:
// MPI_FLOAT, MPI_DOUBLE, MPI_INT32_T, MPI_INT64_T, and MPI_INT, MPI_LONG, MPI_LONG_LONG(_INT)
// as the signed integer of their size. Anything else (unsigned, 8/16-bit, Fortran and derived
// types) has no toroid twin: nullopt.
std::optional<DataType> toroid_type(MPI_Datatype t) noexcept;

// MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX; user-defined and other predefined ops: nullopt.
std::optional<ReduceOp> toroid_op(MPI_Op op) noexcept;

}  // namespace toroid::pmpi
