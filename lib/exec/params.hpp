// How one collective is run: its element type and operation, the MPI segment size, the
// watchdog, and the shared-memory channels it may use.
#pragma once

#include <cstddef>
#include <string>

#include "exec/shm_links.hpp"
#include "toroid/types.hpp"

namespace toroid::exec {

struct ExecParams {
  DataType type = DataType::f32;
  ReduceOp op = ReduceOp::sum;
  std::size_t segment_bytes = 256 * 1024;
  int depth = 4;  // receive-and-reduce segments in flight per MPI step
  // Watchdog: when > 0 and nothing moves for this many seconds while a caller waits, the rank
  // prints what it waits for (collective, algorithm, step, peer, bytes done) and aborts the job.
  double timeout_s = 0;
  std::string what;  // "allreduce (torus2d)", for the watchdog's message
  // Shared-memory channels to the ranks on this node; null: every step goes over MPI.
  const ShmLinks* links = nullptr;
};

}  // namespace toroid::exec
