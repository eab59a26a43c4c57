// How a served non-blocking or persistent collective starts on toroid, in MPI's layout: one
// function per kind, used by MPI_I<call> (`persistent` false: toroid's i<call>) and by
// MPI_<call>_init / MPIX_<call>_init (true: toroid's <call>_init, bound once). Each returns
// toroid's request and what must happen on the program's thread at every completion.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

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
// MPI's all-to-all layouts: sendbuf and recvbuf apart (the callers forward MPI_IN_PLACE).
Started alltoall_start(bool persistent, const void* sendbuf, void* recvbuf, const Plan& p,
                       Communicator& c);
Started alltoallv_start(const void* sendbuf, const int sendcounts[], const int sdispls[],
                        void* recvbuf, const int recvcounts[], const int rdispls[], const Plan& p,
                        Communicator& c);

// An MPI_Alltoallv's counts and displacements as toroid's (one entry per rank, non-negative:
// MPI's to be; a negative one raises InvalidArgument naming it), and the buffers' lengths
// they reach.
struct VarLayout {
  std::vector<std::uint64_t> send_counts, send_offsets, recv_counts, recv_offsets;
  std::uint64_t in_count = 0, out_count = 0;
};
VarLayout var_layout(const int sendcounts[], const int sdispls[], const int recvcounts[],
                     const int rdispls[], int size);

// An all-to-all's send side described otherwise than its receive side, or in place, is MPI's:
// `p`, or a forward saying so.
Decision alltoall_sides(Decision p, const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                        int recvcount, MPI_Datatype recvtype);

// The send side of an all-gather(v) described otherwise than the receive side is MPI's: `p`, or
// a forward saying so.
Decision same_send_side(Decision p, const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                        int recvcount, MPI_Datatype recvtype);

}  // namespace toroid::pmpi
