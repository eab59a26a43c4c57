#include "pmpi/mpi_types.hpp"

#include <cstdint>

namespace toroid::pmpi {
namespace {

// The signed integer element of a C integer type's size (the C and MPI ABIs share sizes).
template <class Int>
std::optional<DataType> signed_of_size() noexcept {
  if constexpr (sizeof(Int) == sizeof(std::int32_t))
    return DataType::i32;
  else if constexpr (sizeof(Int) == sizeof(std::int64_t))
    return DataType::i64;
  else
    return std::nullopt;
}

// A Fortran type's twin by its size in this MPI (a compiler flag such as -fdefault-real-8 may
// change it): `real` kinds as f32/f64, `integer` kinds as i32/i64, else none.
std::optional<DataType> fortran_of_size(MPI_Datatype t, bool real) noexcept {
  int bytes = 0;
  if (t == MPI_DATATYPE_NULL || PMPI_Type_size(t, &bytes) != MPI_SUCCESS) return std::nullopt;
  if (bytes == 4) return real ? DataType::f32 : DataType::i32;
  if (bytes == 8) return real ? DataType::f64 : DataType::i64;
  return std::nullopt;
}

}  // namespace

std::optional<DataType> toroid_type(MPI_Datatype t) noexcept {
  // Handles are compared, not names: MPI_LONG_LONG and MPI_LONG_LONG_INT may be one handle.
  if (t == MPI_FLOAT) return DataType::f32;
  if (t == MPI_DOUBLE) return DataType::f64;
  if (t == MPI_INT32_T) return DataType::i32;
  if (t == MPI_INT64_T) return DataType::i64;
  if (t == MPI_INT) return signed_of_size<int>();
  if (t == MPI_LONG) return signed_of_size<long>();
  if (t == MPI_LONG_LONG || t == MPI_LONG_LONG_INT) return signed_of_size<long long>();
  // Fortran's (its bindings hand the preload these handles: fortran.cpp).
  if (t == MPI_REAL || t == MPI_DOUBLE_PRECISION || t == MPI_REAL4 || t == MPI_REAL8)
    return fortran_of_size(t, true);
  if (t == MPI_INTEGER || t == MPI_INTEGER4 || t == MPI_INTEGER8) return fortran_of_size(t, false);
  return std::nullopt;
}

std::optional<ReduceOp> toroid_op(MPI_Op op) noexcept {
  if (op == MPI_SUM) return ReduceOp::sum;
  if (op == MPI_PROD) return ReduceOp::prod;
  if (op == MPI_MIN) return ReduceOp::min;
  if (op == MPI_MAX) return ReduceOp::max;
  return std::nullopt;
}

}  // namespace toroid::pmpi
