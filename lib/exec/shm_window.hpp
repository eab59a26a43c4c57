// Runs consecutive phases that travel only over shared memory as one dataflow window, so a
// segment moves on as soon as it is final instead of when its whole phase has ended.
//
//   phase k:    recv_reduce  X <- left      (segments 0 1 2 3 ... arrive and are reduced)
//   phase k+1:  send         X -> right     (segment j may leave once segment j of X is reduced)
//
// Each transfer of a later phase waits for the unfinished earlier transfers whose bytes it
// conflicts with (it reads what they write, or writes what they read or write), except one case
// it follows segment by segment: it reads exactly the chunk one earlier receive writes (a *gate*).
// Transfers on one channel keep their schedule order (the ring is FIFO). A ring all-reduce then
// becomes one pipeline: a reduced segment is forwarded while it is still in cache.
//
//   window  = the phases run together: a first phase (which may hold local copies/scales, run
//             at once as in any phase) and the following phases with shared-memory steps only
#pragma once

#include <cstddef>

#include "exec/mpi_executor.hpp"

namespace toroid::exec {

// Whether steps [b, e) of one phase could join a window: every step goes over shared memory
// (`first`: local steps allowed too).
bool shm_only(const schedule::Schedule& s, std::size_t b, std::size_t e, const ShmLinks& links, bool first);

// Runs the window starting at step b (a phase for which shm_only(.., first = true) holds);
// returns the index of the first step after it.
std::size_t run_shm_window(const schedule::Schedule& s, std::size_t b, const BufferSet& buf,
                           const ExecParams& params, MPI_Comm comm, Workspace& ws);

}  // namespace toroid::exec
