// Keeping MPI's own operations moving while a rank waits inside toroid.
//
// MPI's progress rule: a process blocked in any MPI call, a collective included, still
// completes the operations it has pending (a send whose receive is posted, its part of a
// non-blocking collective). Programs count on it: rank A waits in MPI_Wait for a send to B,
// and B, its receive posted, has moved on into an all-reduce that needs A. Stock MPI's
// all-reduce moves B's receive while it waits; a toroid collective waiting on shared memory
// makes no MPI call of its own, so without this B would wait for A, and A for B, for ever.
//
//   rank A:  MPI_Isend(->B) ... MPI_Wait(send)             (needs B's progress)
//   rank B:  MPI_Irecv(<-A) ... toroid all-reduce          (needs A to join)
//                                 └─ idle rounds call poke_mpi_progress()
//
// The preload's hang under many non-blocking collectives (docs/preload.md, "Progress") was
// this: a rank waiting for a served collective its peers had not started, because they were in
// MPI_Waitall on forwarded requests that needed this rank to call into MPI.
#pragma once

#include <mpi.h>

namespace toroid {

// Runs one round of MPI's progress engine (every pending operation of the process, on every
// communicator) and completes nothing: an MPI_Iprobe on `comm` for a tag toroid never sends
// (kNeverSentTag), which matches no message and so always falls through to the progress
// engine (Open MPI's ob1 and MPICH both progress on an unmatched probe). Errors are ignored:
// this is a courtesy to the program's operations, whose own calls report their errors.
void poke_mpi_progress(MPI_Comm comm) noexcept;

// A tag no toroid step or message uses (schedule tags are lane ids, counted from 0; the few
// fixed tags of slot_fill and the tracer are far below): below 32767, the least MPI_TAG_UB
// MPI allows.
inline constexpr int kNeverSentTag = 32766;

}  // namespace toroid
