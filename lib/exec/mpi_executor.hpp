// Runs a schedule one phase at a time: steps to ranks on this node over shared-memory channels
// (when the communicator has them), the others with non-blocking MPI point-to-point.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string>
#include <vector>

#include "exec/buffers.hpp"
#include "exec/shm_links.hpp"
#include "exec/shm_transfer.hpp"
#include "schedule/step.hpp"
#include "toroid/types.hpp"

namespace toroid::exec {

struct ExecParams {
  DataType type = DataType::f32;
  ReduceOp op = ReduceOp::sum;
  std::size_t segment_bytes = 256 * 1024;
  int depth = 4;  // receive-and-reduce segments in flight per step
  // Watchdog: when > 0 and no request completes for this many seconds, the rank prints what it
  // waits for (collective, algorithm, phase, peer, bytes done) and aborts the job. 0: off.
  double timeout_s = 0;
  std::string what;  // "allreduce (torus2d)", for the watchdog's message
  // Shared-memory channels to the ranks on this node; null: every step goes over MPI.
  const ShmLinks* links = nullptr;
};

// Reusable memory of the executor (staging for received segments), kept by the Communicator so
// repeated collectives do not allocate.
namespace detail {
struct Stream {  // one receive-and-reduce step in flight
  const schedule::Step* step;
  std::size_t bytes, nseg, next_seg = 0;
  std::byte* staging;  // `depth` slots
};
struct WindowDeps {  // what a transfer of a shared-memory window waits for (shm_window.hpp)
  std::uint32_t phase = 0;
  int gate = -1;              // the earlier receive whose bytes it follows segment by segment
  std::size_t gate_offset = 0;  // where in the gate's bytes this transfer's start
  int relay = -1;             // receive: the later send that forwards its bytes (takes them in pop)
  std::vector<int> blockers;  // earlier transfers that must finish first
};
struct Pending {  // what a request index stands for
  int stream = -1;  // -1: a send or a plain receive
  int slot = 0;
  std::size_t seg = 0;
  const schedule::Step* step = nullptr;
};
}  // namespace detail

struct Workspace {
  std::vector<std::byte> staging;
  std::vector<std::byte> scratch;
  // Per-phase bookkeeping, kept so that small collectives do not allocate on every call.
  std::vector<MPI_Request> requests;
  std::vector<detail::Stream> streams;
  std::vector<detail::Pending> pending;
  std::vector<ShmTransfer> shm;  // this phase's (or window's) steps over shared memory
  std::vector<detail::WindowDeps> window;
};

// A copy or scale step (local: no peer), run at once.
void run_local_step(const schedule::Step& st, const BufferSet& buf, DataType type);

void run_mpi(const schedule::Schedule& s, const BufferSet& buffers, const ExecParams& params,
             MPI_Comm comm, Workspace& ws);

}  // namespace toroid::exec
