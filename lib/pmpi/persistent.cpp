// The interposed persistent collectives (all-reduce, reduce-scatter(-block), all-gather(v),
// all-to-all, broadcast): MPI-4's MPI_<call>_init (MPICH 4) and Open MPI 4.1's
// MPIX_<call>_init, decided as their non-blocking forms, bound once on toroid (toroid's
// <call>_init) behind a handle of the preload's own (requests.hpp), started by MPI_Start and
// MPI_Startall (nonblocking.cpp). The info argument carries nothing toroid uses.
#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

#include "pmpi/plan.hpp"
#include "pmpi/report.hpp"
#include "pmpi/requests.hpp"
#include "pmpi/starts.hpp"

using namespace toroid;
using namespace toroid::pmpi;

namespace {

using AllreduceInit = int (*)(const void*, void*, int, MPI_Datatype, MPI_Op, MPI_Comm, MPI_Info,
                              MPI_Request*);
using ReduceScatterBlockInit = AllreduceInit;
using ReduceScatterInit = int (*)(const void*, void*, const int[], MPI_Datatype, MPI_Op, MPI_Comm,
                                  MPI_Info, MPI_Request*);
using AllgatherInit = int (*)(const void*, int, MPI_Datatype, void*, int, MPI_Datatype, MPI_Comm,
                              MPI_Info, MPI_Request*);
using AllgathervInit = int (*)(const void*, int, MPI_Datatype, void*, const int[], const int[],
                               MPI_Datatype, MPI_Comm, MPI_Info, MPI_Request*);
using AlltoallInit = AllgatherInit;
using BcastInit = int (*)(void*, int, MPI_Datatype, int, MPI_Comm, MPI_Info, MPI_Request*);

[[maybe_unused]] int allreduce_init(const char* name, AllreduceInit stock, const void* sendbuf,
                                    void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
                                    MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  const Decision p = in_background(comm, plan_allreduce(count, type, op, comm));
  report(name, p, type);
  if (!p) return stock(sendbuf, recvbuf, count, type, op, comm, info, request);
  return init_persistent(comm, name, request, [&](Communicator& c) {
    return allreduce_start(true, sendbuf, recvbuf, *p, c);
  });
}

[[maybe_unused]] int reduce_scatter_block_init(const char* name, ReduceScatterBlockInit stock,
                                               const void* sendbuf, void* recvbuf, int recvcount,
                                               MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                                               MPI_Info info, MPI_Request* request) {
  const Decision p = in_background(comm, plan_reduce_scatter_block(recvcount, type, op, comm));
  report(name, p, type);
  if (!p) return stock(sendbuf, recvbuf, recvcount, type, op, comm, info, request);
  return init_persistent(comm, name, request, [&](Communicator& c) {
    return reduce_scatter_start(true, sendbuf, recvbuf, *p, c);
  });
}

[[maybe_unused]] int reduce_scatter_init(const char* name, ReduceScatterInit stock,
                                         const void* sendbuf, void* recvbuf, const int recvcounts[],
                                         MPI_Datatype type, MPI_Op op, MPI_Comm comm, MPI_Info info,
                                         MPI_Request* request) {
  const Decision p = in_background(comm, plan_reduce_scatter(recvcounts, type, op, comm));
  report(name, p, type);
  if (!p) return stock(sendbuf, recvbuf, recvcounts, type, op, comm, info, request);
  return init_persistent(comm, name, request, [&](Communicator& c) {
    return reduce_scatter_start(true, sendbuf, recvbuf, *p, c);
  });
}

[[maybe_unused]] int allgather_init(const char* name, AllgatherInit stock, const void* sendbuf,
                                    int sendcount, MPI_Datatype sendtype, void* recvbuf,
                                    int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                                    MPI_Info info, MPI_Request* request) {
  const Decision p =
      in_background(comm, same_send_side(plan_allgather(recvcount, recvtype, comm), sendbuf,
                                         sendcount, sendtype, recvcount, recvtype));
  report(name, p, recvtype);
  if (!p)
    return stock(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, info, request);
  return init_persistent(comm, name, request, [&](Communicator& c) {
    return allgather_start(true, sendbuf, recvbuf, *p, c);
  });
}

[[maybe_unused]] int allgatherv_init(const char* name, AllgathervInit stock, const void* sendbuf,
                                     int sendcount, MPI_Datatype sendtype, void* recvbuf,
                                     const int recvcounts[], const int displs[],
                                     MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                     MPI_Request* request) {
  Decision p = plan_allgatherv(recvcounts, recvtype, comm);
  int rank = 0;
  if (p && PMPI_Comm_rank(comm, &rank) == MPI_SUCCESS)
    p = same_send_side(p, sendbuf, sendcount, sendtype, recvcounts[rank], recvtype);
  p = in_background(comm, p);
  report(name, p, recvtype);
  if (!p)
    return stock(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, info,
                 request);
  return init_persistent(comm, name, request, [&](Communicator& c) {
    return allgatherv_start(true, sendbuf, recvbuf, displs, *p, c);
  });
}

[[maybe_unused]] int alltoall_init(const char* name, AlltoallInit stock, const void* sendbuf,
                                   int sendcount, MPI_Datatype sendtype, void* recvbuf,
                                   int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                                   MPI_Info info, MPI_Request* request) {
  const Decision p =
      in_background(comm, alltoall_sides(plan_alltoall(recvcount, recvtype, comm), sendbuf,
                                         sendcount, sendtype, recvcount, recvtype));
  report(name, p, recvtype);
  if (!p)
    return stock(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, info, request);
  return init_persistent(comm, name, request, [&](Communicator& c) {
    return alltoall_start(true, sendbuf, recvbuf, *p, c);
  });
}

[[maybe_unused]] int bcast_init(const char* name, BcastInit stock, void* buffer, int count,
                                MPI_Datatype type, int root, MPI_Comm comm, MPI_Info info,
                                MPI_Request* request) {
  const Decision p = in_background(comm, plan_bcast(count, type, root, comm));
  report(name, p, type);
  if (!p) return stock(buffer, count, type, root, comm, info, request);
  return init_persistent(comm, name, request,
                         [&](Communicator& c) { return bcast_start(true, buffer, root, *p, c); });
}

}  // namespace

extern "C" {

// One definition per name the MPI library declares; the same body behind both spellings.
#define TOROID_PERSISTENT(PREFIX)                                                                  \
  int PREFIX##_Allreduce_init(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type,    \
                              MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request* request) {     \
    return allreduce_init(#PREFIX "_Allreduce_init", P##PREFIX##_Allreduce_init, sendbuf, recvbuf, \
                          count, type, op, comm, info, request);                                   \
  }                                                                                                \
  int PREFIX##_Reduce_scatter_block_init(const void* sendbuf, void* recvbuf, int recvcount,        \
                                         MPI_Datatype type, MPI_Op op, MPI_Comm comm,              \
                                         MPI_Info info, MPI_Request* request) {                    \
    return reduce_scatter_block_init(#PREFIX "_Reduce_scatter_block_init",                         \
                                     P##PREFIX##_Reduce_scatter_block_init, sendbuf, recvbuf,      \
                                     recvcount, type, op, comm, info, request);                    \
  }                                                                                                \
  int PREFIX##_Reduce_scatter_init(const void* sendbuf, void* recvbuf, const int recvcounts[],     \
                                   MPI_Datatype type, MPI_Op op, MPI_Comm comm, MPI_Info info,     \
                                   MPI_Request* request) {                                         \
    return reduce_scatter_init(#PREFIX "_Reduce_scatter_init", P##PREFIX##_Reduce_scatter_init,    \
                               sendbuf, recvbuf, recvcounts, type, op, comm, info, request);       \
  }                                                                                                \
  int PREFIX##_Allgather_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype,           \
                              void* recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,  \
                              MPI_Info info, MPI_Request* request) {                               \
    return allgather_init(#PREFIX "_Allgather_init", P##PREFIX##_Allgather_init, sendbuf,          \
                          sendcount, sendtype, recvbuf, recvcount, recvtype, comm, info, request); \
  }                                                                                                \
  int PREFIX##_Allgatherv_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype,          \
                               void* recvbuf, const int recvcounts[], const int displs[],          \
                               MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,                \
                               MPI_Request* request) {                                             \
    return allgatherv_init(#PREFIX "_Allgatherv_init", P##PREFIX##_Allgatherv_init, sendbuf,       \
                           sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, info, \
                           request);                                                               \
  }                                                                                                \
  int PREFIX##_Alltoall_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype,            \
                             void* recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,   \
                             MPI_Info info, MPI_Request* request) {                                \
    return alltoall_init(#PREFIX "_Alltoall_init", P##PREFIX##_Alltoall_init, sendbuf, sendcount,  \
                         sendtype, recvbuf, recvcount, recvtype, comm, info, request);             \
  }                                                                                                \
  int PREFIX##_Bcast_init(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm,     \
                          MPI_Info info, MPI_Request* request) {                                   \
    return bcast_init(#PREFIX "_Bcast_init", P##PREFIX##_Bcast_init, buffer, count, type, root,    \
                      comm, info, request);                                                        \
  }

#if MPI_VERSION >= 4
TOROID_PERSISTENT(MPI)
#endif
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
TOROID_PERSISTENT(MPIX)
#endif

}  // extern "C"
