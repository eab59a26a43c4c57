// The stock MPI collectives of the same MPI library, with toroid's argument conventions:
// the "mpi" algorithm, and the baseline every benchmark compares against.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <map>
#include <utility>

#include "schedule/step.hpp"
#include "toroid/types.hpp"

namespace toroid::exec {

// MPI_Ops created for the 16-bit float types (MPI has none); freed with the owner.
class StockOps {
 public:
  StockOps() = default;
  StockOps(const StockOps&) = delete;
  StockOps& operator=(const StockOps&) = delete;
  ~StockOps();
  MPI_Op op(DataType type, ReduceOp op);

 private:
  std::map<std::pair<DataType, ReduceOp>, MPI_Op> created_;
};

MPI_Datatype mpi_type(DataType type);

// in == out means in place (allgather: in points at the own block inside out). Same layouts
// as toroid's own collectives (collectives.hpp).
void run_stock(schedule::Collective c, const void* in, void* out, std::uint64_t count,
               DataType type, ReduceOp op, MPI_Comm comm, StockOps& ops);

}  // namespace toroid::exec
