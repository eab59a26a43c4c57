// The interposed MPI functions. Each asks plan.hpp whether toroid serves the call; if not, the
// PMPI_ function gets the call unchanged. Served calls run on the communicator's toroid state
// (state.hpp) inside a ToroidScope (guard.hpp), so toroid's own MPI calls go to PMPI_.
#include <mpi.h>

#include <cstring>
#include <exception>
#include <vector>

#include "api/executor.hpp"
#include "kernels/reduce.hpp"
#include "pmpi/errors.hpp"
#include "pmpi/guard.hpp"
#include "pmpi/plan.hpp"
#include "pmpi/report.hpp"
#include "pmpi/settings.hpp"
#include "pmpi/starts.hpp"
#include "pmpi/state.hpp"
#include "pmpi/thread_level.hpp"
#include "toroid/collectives.hpp"

using namespace toroid;
using namespace toroid::pmpi;

namespace {

// Runs `call` on comm's state. An exception becomes an MPI error code through comm's error
// handler; the handler runs outside the ToroidScope, so MPI calls it makes are served normally.
template <class Call>
int serve(MPI_Comm comm, const char* name, Call&& call) noexcept {
  std::exception_ptr failure;
  {
    ToroidScope inside;
    try {
      call(state_of(comm));
      note_served();
      return MPI_SUCCESS;
    } catch (...) {
      failure = std::current_exception();
    }
  }
  return report_error(comm, name, failure);
}

// Reduce-scatter in MPI's layout: this rank's block at the start of recvbuf. toroid's in-place
// form leaves the block at its own offset, so it is moved to the front afterwards.
void reduce_scatter_to_front(const void* sendbuf, void* recvbuf, const Plan& p, AttachedComm& s) {
  const Block own = block_of(p.count, p.size, s.comm.rank());
  if (sendbuf != MPI_IN_PLACE) {
    reduce_scatter(sendbuf, p.count, recvbuf, own.count, p.type, p.reduction, s.comm,
                   s.algorithm_for(Collective::reduce_scatter));
    return;
  }
  reduce_scatter(recvbuf, p.count, recvbuf, p.count, p.type, p.reduction, s.comm,
                 s.algorithm_for(Collective::reduce_scatter));
  const std::size_t es = size_of(p.type);
  std::memmove(recvbuf, static_cast<std::byte*>(recvbuf) + own.offset * es, own.count * es);
}

}  // namespace

extern "C" {

// MPI_Init and MPI_Init_thread: MPI's, at the thread level thread_level.hpp asks for, then the
// settings compared across ranks once.
int MPI_Init(int* argc, char*** argv) {
  const int rc = init_thread(argc, argv, MPI_THREAD_SINGLE, true, nullptr);
  if (rc == MPI_SUCCESS) agree_on_settings();
  return rc;
}

int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  const int rc = init_thread(argc, argv, required, false, provided);
  if (rc == MPI_SUCCESS) agree_on_settings();
  return rc;
}

// The level the program asked for; toroid's own calls (and its progress threads) see MPI's.
int MPI_Query_thread(int* provided) {
  int level = 0;
  if (inside_toroid() || api::on_progress_thread() || !program_level(level) || !provided)
    return PMPI_Query_thread(provided);
  *provided = level;
  return MPI_SUCCESS;
}

int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm) {
  const Decision p = plan_allreduce(count, type, op, comm);
  report("MPI_Allreduce", p, type);
  if (!p) return PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
  return serve(comm, "MPI_Allreduce", [&](AttachedComm& s) {
    const void* in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    allreduce(in, p->count, recvbuf, p->count, p->type, p->reduction, s.comm,
              s.algorithm_for(Collective::allreduce));
  });
}

int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype type,
                             MPI_Op op, MPI_Comm comm) {
  const Decision p = plan_reduce_scatter_block(recvcount, type, op, comm);
  report("MPI_Reduce_scatter_block", p, type);
  if (!p) return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, type, op, comm);
  return serve(comm, "MPI_Reduce_scatter_block",
               [&](AttachedComm& s) { reduce_scatter_to_front(sendbuf, recvbuf, *p, s); });
}

int MPI_Reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                       MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  const Decision p = plan_reduce_scatter(recvcounts, type, op, comm);
  report("MPI_Reduce_scatter", p, type);
  if (!p) return PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, type, op, comm);
  return serve(comm, "MPI_Reduce_scatter",
               [&](AttachedComm& s) { reduce_scatter_to_front(sendbuf, recvbuf, *p, s); });
}

int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  // A send side described differently from the receive side (legal when the type signatures
  // match) is left to MPI; the decision then assumes every rank describes it alike.
  const bool same_shape =
      sendbuf == MPI_IN_PLACE || (sendtype == recvtype && sendcount == recvcount);
  const Decision p = same_shape ? plan_allgather(recvcount, recvtype, comm)
                                : Decision::forward(inside_toroid() ? nullptr : kSendSideDiffers);
  report("MPI_Allgather", p, recvtype);
  if (!p) return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  return serve(comm, "MPI_Allgather", [&](AttachedComm& s) {
    const Block own = block_of(p->count, p->size, s.comm.rank());
    const void* in = sendbuf == MPI_IN_PLACE
                         ? static_cast<std::byte*>(recvbuf) + own.offset * size_of(p->type)
                         : sendbuf;
    allgather(in, own.count, recvbuf, p->count, p->type, s.comm,
              s.algorithm_for(Collective::allgather));
  });
}

int MPI_Allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                   const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                   MPI_Comm comm) {
  Decision p = plan_allgatherv(recvcounts, recvtype, comm);
  // As MPI_Allgather: a send side described otherwise is MPI's. (recvcounts has a size here.)
  int rank = 0;
  if (p && (PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS ||
            (sendbuf != MPI_IN_PLACE && (sendtype != recvtype || sendcount != recvcounts[rank]))))
    p = Decision::forward(kSendSideDiffers);
  report("MPI_Allgatherv", p, recvtype);
  if (!p)
    return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                           comm);
  return serve(comm, "MPI_Allgatherv", [&](AttachedComm& s) {
    // The blocks land where the block rule puts them; a rank whose displacements differ (each
    // rank may lay out its receive buffer its own way) gathers into scratch and moves them.
    const std::size_t es = size_of(p->type);
    bool rule_layout = true;
    for (int r = 0; r < p->size; ++r)
      rule_layout = rule_layout &&
                    static_cast<std::uint64_t>(displs[r]) == block_of(p->count, p->size, r).offset;
    const Block own = block_of(p->count, p->size, rank);
    auto* out = static_cast<std::byte*>(recvbuf);
    const void* in =
        sendbuf == MPI_IN_PLACE ? out + static_cast<std::size_t>(displs[rank]) * es : sendbuf;
    if (rule_layout) {
      allgather(in, own.count, recvbuf, p->count, p->type, s.comm,
                s.algorithm_for(Collective::allgather));
      return;
    }
    std::vector<std::byte> scratch(p->count * es);
    allgather(in, own.count, scratch.data(), p->count, p->type, s.comm,
              s.algorithm_for(Collective::allgather));
    for (int r = 0; r < p->size; ++r) {
      const Block b = block_of(p->count, p->size, r);
      kernels::copy(out + static_cast<std::size_t>(displs[r]) * es, scratch.data() + b.offset * es,
                    b.count * es);
    }
  });
}

int MPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  const Decision p = alltoall_sides(plan_alltoall(recvcount, recvtype, comm), sendbuf, sendcount,
                                    sendtype, recvcount, recvtype);
  report("MPI_Alltoall", p, recvtype);
  if (!p) return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  return serve(comm, "MPI_Alltoall", [&](AttachedComm& s) {
    alltoall(sendbuf, p->count, recvbuf, p->count, p->type, s.comm,
             s.algorithm_for(Collective::alltoall));
  });
}

int MPI_Alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                  MPI_Datatype sendtype, void* recvbuf, const int recvcounts[], const int rdispls[],
                  MPI_Datatype recvtype, MPI_Comm comm) {
  const Decision p =
      alltoall_sides(plan_alltoallv(recvtype, comm), sendbuf, 0, sendtype, 0, recvtype);
  report("MPI_Alltoallv", p, recvtype);
  if (!p)
    return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                          recvtype, comm);
  return serve(comm, "MPI_Alltoallv", [&](AttachedComm& s) {
    // The same request as MPI_Ialltoallv's, waited for at once (starts.cpp).
    Started started =
        alltoallv_start(sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, *p, s.comm);
    started.request.wait();
  });
}

int MPI_Bcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  const Decision p = plan_bcast(count, type, root, comm);
  report("MPI_Bcast", p, type);
  if (!p) return PMPI_Bcast(buffer, count, type, root, comm);
  return serve(comm, "MPI_Bcast", [&](AttachedComm& s) {
    broadcast(buffer, p->count, p->type, root, s.comm, s.algorithm_for(Collective::broadcast));
  });
}

// Diagnostics: how many calls toroid has served in this process. Found with dlsym by programs
// that know nothing of toroid (the tests), so they can tell a served call from a forwarded one.
unsigned long long toroid_preload_calls(void) { return served_count(); }

}  // extern "C"
