// The interposed non-blocking collectives, and the MPI functions that complete requests.
//
// Served calls start on the communicator's background communicator and return a generalized
// request (requests.hpp). MPI_Wait*, MPI_Test*, MPI_Request_get_status and MPI_Request_free
// settle the served requests among theirs and then call MPI's own function on the whole
// array; without served requests alive, or when toroid itself calls them (its engine, its
// progress thread), they go straight to MPI.
#include <mpi.h>

#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "api/progress.hpp"
#include "pmpi/guard.hpp"
#include "pmpi/plan.hpp"
#include "pmpi/report.hpp"
#include "pmpi/requests.hpp"
#include "pmpi/state.hpp"
#include "toroid/request.hpp"

using namespace toroid;
using namespace toroid::pmpi;

namespace {

// Calls the waits pass straight to MPI: toroid's own, and every call while nothing is served.
bool straight_to_mpi() noexcept {
  return !any_served() || inside_toroid() || api::on_progress_thread();
}

std::optional<Algorithm> algorithm(Communicator& c, Collective k) {
  if (implements(c.default_algorithm(), k)) return std::nullopt;
  return Algorithm::automatic;
}

// A reduce-scatter in MPI's layout (this rank's block at the start of recvbuf); in place,
// toroid leaves the block at its own offset, and it is moved to the front on completion.
Started reduce_scatter_started(const void* sendbuf, void* recvbuf, const Plan& p, Communicator& c) {
  const Block own = block_of(p.count, p.size, c.rank());
  const auto algo = algorithm(c, Collective::reduce_scatter);
  if (sendbuf != MPI_IN_PLACE)
    return {ireduce_scatter(sendbuf, p.count, recvbuf, own.count, p.type, p.op, c, algo), {}};
  const std::size_t es = size_of(p.type);
  return {ireduce_scatter(recvbuf, p.count, recvbuf, p.count, p.type, p.op, c, algo),
          [recvbuf, own, es] {
            std::memmove(recvbuf, static_cast<std::byte*>(recvbuf) + own.offset * es,
                         own.count * es);
          }};
}

}  // namespace

extern "C" {

int MPI_Iallreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
                   MPI_Comm comm, MPI_Request* request) {
  const Decision p = in_background(plan_allreduce(count, type, op, comm));
  report("MPI_Iallreduce", p, type);
  if (!p) return PMPI_Iallreduce(sendbuf, recvbuf, count, type, op, comm, request);
  return start_served(comm, "MPI_Iallreduce", request, [&](Communicator& c) -> Started {
    const void* in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    return {iallreduce(in, p->count, recvbuf, p->count, p->type, p->op, c,
                       algorithm(c, Collective::allreduce)),
            {}};
  });
}

int MPI_Ireduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype type,
                              MPI_Op op, MPI_Comm comm, MPI_Request* request) {
  const Decision p = in_background(plan_reduce_scatter_block(recvcount, type, op, comm));
  report("MPI_Ireduce_scatter_block", p, type);
  if (!p) return PMPI_Ireduce_scatter_block(sendbuf, recvbuf, recvcount, type, op, comm, request);
  return start_served(comm, "MPI_Ireduce_scatter_block", request, [&](Communicator& c) {
    return reduce_scatter_started(sendbuf, recvbuf, *p, c);
  });
}

int MPI_Ireduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                        MPI_Datatype type, MPI_Op op, MPI_Comm comm, MPI_Request* request) {
  const Decision p = in_background(plan_reduce_scatter(recvcounts, type, op, comm));
  report("MPI_Ireduce_scatter", p, type);
  if (!p) return PMPI_Ireduce_scatter(sendbuf, recvbuf, recvcounts, type, op, comm, request);
  return start_served(comm, "MPI_Ireduce_scatter", request, [&](Communicator& c) {
    return reduce_scatter_started(sendbuf, recvbuf, *p, c);
  });
}

int MPI_Iallgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                   int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  const bool same_shape =
      sendbuf == MPI_IN_PLACE || (sendtype == recvtype && sendcount == recvcount);
  const Decision p =
      in_background(same_shape ? plan_allgather(recvcount, recvtype, comm)
                               : Decision::forward(inside_toroid() ? nullptr : kSendSideDiffers));
  report("MPI_Iallgather", p, recvtype);
  if (!p)
    return PMPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                           request);
  return start_served(comm, "MPI_Iallgather", request, [&](Communicator& c) -> Started {
    const Block own = block_of(p->count, p->size, c.rank());
    const void* in = sendbuf == MPI_IN_PLACE
                         ? static_cast<std::byte*>(recvbuf) + own.offset * size_of(p->type)
                         : sendbuf;
    return {iallgather(in, own.count, recvbuf, p->count, p->type, c,
                       algorithm(c, Collective::allgather)),
            {}};
  });
}

int MPI_Iallgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                    const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                    MPI_Comm comm, MPI_Request* request) {
  Decision p = plan_allgatherv(recvcounts, recvtype, comm);
  int rank = 0;
  if (p && (PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS ||
            (sendbuf != MPI_IN_PLACE && (sendtype != recvtype || sendcount != recvcounts[rank]))))
    p = Decision::forward(kSendSideDiffers);
  p = in_background(p);
  report("MPI_Iallgatherv", p, recvtype);
  if (!p)
    return PMPI_Iallgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                            comm, request);
  return start_served(comm, "MPI_Iallgatherv", request, [&](Communicator& c) -> Started {
    // As MPI_Allgatherv: blocks the block rule does not place where this rank wants them are
    // gathered into scratch and moved on completion.
    const std::size_t es = size_of(p->type);
    std::vector<std::uint64_t> places(static_cast<std::size_t>(p->size));
    bool rule_layout = true;
    for (int r = 0; r < p->size; ++r) {
      places[static_cast<std::size_t>(r)] = static_cast<std::uint64_t>(displs[r]);
      rule_layout = rule_layout &&
                    places[static_cast<std::size_t>(r)] == block_of(p->count, p->size, r).offset;
    }
    const Block own = block_of(p->count, p->size, rank);
    auto* out = static_cast<std::byte*>(recvbuf);
    const void* in =
        sendbuf == MPI_IN_PLACE ? out + static_cast<std::size_t>(displs[rank]) * es : sendbuf;
    const auto algo = algorithm(c, Collective::allgather);
    if (rule_layout) return {iallgather(in, own.count, recvbuf, p->count, p->type, c, algo), {}};
    auto scratch = std::make_shared<std::vector<std::byte>>(p->count * es);
    Request r = iallgather(in, own.count, scratch->data(), p->count, p->type, c, algo);
    const Plan plan = *p;
    return {std::move(r), [scratch, places = std::move(places), out, plan, es] {
              for (int q = 0; q < plan.size; ++q) {
                const Block b = block_of(plan.count, plan.size, q);
                std::memcpy(out + places[static_cast<std::size_t>(q)] * es,
                            scratch->data() + b.offset * es, b.count * es);
              }
            }};
  });
}

int MPI_Ibcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm,
               MPI_Request* request) {
  const Decision p = in_background(plan_bcast(count, type, root, comm));
  report("MPI_Ibcast", p, type);
  if (!p) return PMPI_Ibcast(buffer, count, type, root, comm, request);
  return start_served(comm, "MPI_Ibcast", request, [&](Communicator& c) -> Started {
    return {ibroadcast(buffer, p->count, p->type, root, c, algorithm(c, Collective::broadcast)),
            {}};
  });
}

// ---- Completion.

int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  if (!straight_to_mpi()) settle(request, 1, true);
  return PMPI_Wait(request, status);
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  if (!straight_to_mpi()) settle(requests, count, true);
  return PMPI_Waitall(count, requests, statuses);
}

int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  if (!straight_to_mpi()) settle(request, 1, false);
  return PMPI_Test(request, flag, status);
}

int MPI_Testall(int count, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
  if (!straight_to_mpi()) settle(requests, count, false);
  return PMPI_Testall(count, requests, flag, statuses);
}

int MPI_Testany(int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status) {
  if (!straight_to_mpi()) settle(requests, count, false);
  return PMPI_Testany(count, requests, index, flag, status);
}

int MPI_Testsome(int incount, MPI_Request requests[], int* outcount, int indices[],
                 MPI_Status statuses[]) {
  if (!straight_to_mpi()) settle(requests, incount, false);
  return PMPI_Testsome(incount, requests, outcount, indices, statuses);
}

// Waitany and Waitsome return as soon as one request completes, whichever kind it is: while a
// served one is still running they poll (settle, then MPI's test), yielding the core between
// rounds; once none is, MPI's own wait takes over.
int MPI_Waitany(int count, MPI_Request requests[], int* index, MPI_Status* status) {
  while (!straight_to_mpi() && settle(requests, count, false)) {
    int flag = 0;
    const int rc = PMPI_Testany(count, requests, index, &flag, status);
    if (rc != MPI_SUCCESS || flag) return rc;
    std::this_thread::yield();
  }
  return PMPI_Waitany(count, requests, index, status);
}

int MPI_Waitsome(int incount, MPI_Request requests[], int* outcount, int indices[],
                 MPI_Status statuses[]) {
  while (!straight_to_mpi() && settle(requests, incount, false)) {
    const int rc = PMPI_Testsome(incount, requests, outcount, indices, statuses);
    if (rc != MPI_SUCCESS || *outcount != 0) return rc;
    std::this_thread::yield();
  }
  return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
}

int MPI_Request_get_status(MPI_Request request, int* flag, MPI_Status* status) {
  if (!straight_to_mpi()) settle(&request, 1, false);
  return PMPI_Request_get_status(request, flag, status);
}

// A served request the program frees keeps running; the preload completes it later (MPI
// releases it then), at MPI_Finalize at the latest.
int MPI_Request_free(MPI_Request* request) {
  if (!straight_to_mpi() && request) forget_if_served(*request);
  return PMPI_Request_free(request);
}

}  // extern "C"
