// How a served non-blocking or persistent collective starts on toroid, in MPI's layout: one
// function per kind, used by MPI_I<call> (`persistent` false: toroid's i<call>) and by
// MPI_<call>_init / MPIX_<call>_init (true: toroid's <call>_init, bound once). Each returns
// toroid's request and what must happen on the program's thread at every completion.
#pragma once

#include <mpi.h>

#include "pmpi/plan.hpp"
#include "pmpi/requests.hpp"

namespace toroid::pmpi {

Started allreduce_start(bool persistent, const void* sendbuf, void* recvbuf, const Plan& p,
                        Communicator& c);
// This rank's block at the start of recvbuf; in place, toroid leaves it at its own offset and
// the completion moves it to the front.
Started reduce_scatter_start(bool persistent, const void* sendbuf, void* recvbuf, const Plan& p,
                             Communicator& c);
Started allgather_start(bool persistent, const void* sendbuf, void* recvbuf, const Plan& p,
                        Communicator& c);
// Blocks the block rule does not place where this rank's displacements want them are gathered
// into scratch and copied out at every completion.
Started allgatherv_start(bool persistent, const void* sendbuf, void* recvbuf, const int displs[],
                         const Plan& p, Communicator& c);
Started bcast_start(bool persistent, void* buffer, int root, const Plan& p, Communicator& c);

// The send side of an all-gather(v) described otherwise than the receive side is MPI's: `p`, or
// a forward saying so.
Decision same_send_side(Decision p, const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                        int recvcount, MPI_Datatype recvtype);

}  // namespace toroid::pmpi
