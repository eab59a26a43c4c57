// Runs a schedule with non-blocking MPI point-to-point, one phase at a time.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

#include "exec/buffers.hpp"
#include "schedule/step.hpp"
#include "toroid/types.hpp"

namespace toroid::exec {

struct ExecParams {
  DataType type = DataType::f32;
  ReduceOp op = ReduceOp::sum;
  std::size_t segment_bytes = 256 * 1024;
  int depth = 4;  // receive-and-reduce segments in flight per step
};

// Reusable memory of the executor (staging for received segments), kept by the Communicator so
// repeated collectives do not allocate.
struct Workspace {
  std::vector<std::byte> staging;
  std::vector<std::byte> scratch;
  std::vector<MPI_Request> requests;
};

void run_mpi(const schedule::Schedule& s, const BufferSet& buffers, const ExecParams& params,
             MPI_Comm comm, Workspace& ws);

}  // namespace toroid::exec
