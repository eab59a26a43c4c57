// The stock MPI collectives of the same MPI library, with toroid's argument conventions:
// the "mpi" algorithm, and the baseline every benchmark compares against.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "schedule/build.hpp"
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
// Broadcast: `out` is the data, on every rank, from `root`.
// alltoallv: `blocks` set (count unused), MPI_Alltoallv.
void run_stock(schedule::Collective c, const void* in, void* out, std::uint64_t count,
               DataType type, ReduceOp op, MPI_Comm comm, StockOps& ops, int root = 0,
               const schedule::VarBlocks* blocks = nullptr);

// The same collectives started non-blocking (MPI_Iallreduce, MPI_Ireduce_scatter(_block),
// MPI_Iallgather(v), MPI_Ibcast); run_stock runs one blocking. What must happen after MPI
// completes them (avg's division, the in-place reduce-scatter's move to toroid's layout)
// happens in finish.
class StockCall {
 public:
  StockCall(schedule::Collective c, const void* in, void* out, std::uint64_t count, DataType type,
            ReduceOp op, MPI_Comm comm, StockOps& ops, int root = 0,
            const schedule::VarBlocks* blocks = nullptr);
  void start();
  bool test();  // true once complete (and finished)
  void wait();
  bool complete() const;  // MPI_Request_get_status: whether test() would be true

 private:
  friend void run_stock(schedule::Collective, const void*, void*, std::uint64_t, DataType, ReduceOp,
                        MPI_Comm, StockOps&, int, const schedule::VarBlocks*);
  void issue(bool blocking);  // the MPI call, blocking or started
  void finish();
  schedule::Collective c_;
  const void* in_;
  void* out_;
  std::uint64_t count_;
  DataType type_;
  ReduceOp op_;
  MPI_Comm comm_;
  MPI_Op mop_;
  int rank_ = 0, p_ = 1, root_ = 0;
  std::vector<int> counts_, displs_;            // MPI reads them until the call completes
  std::vector<int> recv_counts_, recv_displs_;  // alltoallv's (counts_, displs_: its sends')
  std::vector<MPI_Request> requests_;
};

}  // namespace toroid::exec
