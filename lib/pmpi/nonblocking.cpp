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

#include "api/executor.hpp"
#include "pmpi/guard.hpp"
#include "pmpi/plan.hpp"
#include "pmpi/report.hpp"
#include "pmpi/requests.hpp"
#include "pmpi/starts.hpp"
#include "pmpi/state.hpp"
#include "toroid/request.hpp"

using namespace toroid;
using namespace toroid::pmpi;

namespace {

// Calls the waits pass straight to MPI: toroid's own, and every call while nothing is served.
bool straight_to_mpi() noexcept {
  return !any_served() || inside_toroid() || api::on_progress_thread();
}

}  // namespace

extern "C" {

int MPI_Iallreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
                   MPI_Comm comm, MPI_Request* request) {
  const Decision p = in_background(comm, plan_allreduce(count, type, op, comm));
  report("MPI_Iallreduce", p, type);
  if (!p) return PMPI_Iallreduce(sendbuf, recvbuf, count, type, op, comm, request);
  return start_served(comm, "MPI_Iallreduce", request, [&](Communicator& c) {
    return allreduce_start(false, sendbuf, recvbuf, *p, c);
  });
}

int MPI_Ireduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype type,
                              MPI_Op op, MPI_Comm comm, MPI_Request* request) {
  const Decision p = in_background(comm, plan_reduce_scatter_block(recvcount, type, op, comm));
  report("MPI_Ireduce_scatter_block", p, type);
  if (!p) return PMPI_Ireduce_scatter_block(sendbuf, recvbuf, recvcount, type, op, comm, request);
  return start_served(comm, "MPI_Ireduce_scatter_block", request, [&](Communicator& c) {
    return reduce_scatter_start(false, sendbuf, recvbuf, *p, c);
  });
}

int MPI_Ireduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                        MPI_Datatype type, MPI_Op op, MPI_Comm comm, MPI_Request* request) {
  const Decision p = in_background(comm, plan_reduce_scatter(recvcounts, type, op, comm));
  report("MPI_Ireduce_scatter", p, type);
  if (!p) return PMPI_Ireduce_scatter(sendbuf, recvbuf, recvcounts, type, op, comm, request);
  return start_served(comm, "MPI_Ireduce_scatter", request, [&](Communicator& c) {
    return reduce_scatter_start(false, sendbuf, recvbuf, *p, c);
  });
}

int MPI_Iallgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                   int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  const Decision p =
      in_background(comm, same_send_side(plan_allgather(recvcount, recvtype, comm), sendbuf,
                                         sendcount, sendtype, recvcount, recvtype));
  report("MPI_Iallgather", p, recvtype);
  if (!p)
    return PMPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                           request);
  return start_served(comm, "MPI_Iallgather", request, [&](Communicator& c) {
    return allgather_start(false, sendbuf, recvbuf, *p, c);
  });
}

int MPI_Iallgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                    const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                    MPI_Comm comm, MPI_Request* request) {
  Decision p = plan_allgatherv(recvcounts, recvtype, comm);
  int rank = 0;
  if (p && PMPI_Comm_rank(comm, &rank) == MPI_SUCCESS)
    p = same_send_side(p, sendbuf, sendcount, sendtype, recvcounts[rank], recvtype);
  p = in_background(comm, p);
  report("MPI_Iallgatherv", p, recvtype);
  if (!p)
    return PMPI_Iallgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                            comm, request);
  return start_served(comm, "MPI_Iallgatherv", request, [&](Communicator& c) {
    return allgatherv_start(false, sendbuf, recvbuf, displs, *p, c);
  });
}

int MPI_Ialltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  const Decision p =
      in_background(comm, alltoall_sides(plan_alltoall(recvcount, recvtype, comm), sendbuf,
                                         sendcount, sendtype, recvcount, recvtype));
  report("MPI_Ialltoall", p, recvtype);
  if (!p)
    return PMPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                          request);
  return start_served(comm, "MPI_Ialltoall", request, [&](Communicator& c) {
    return alltoall_start(false, sendbuf, recvbuf, *p, c);
  });
}

int MPI_Ialltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                   MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                   const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                   MPI_Request* request) {
  const Decision p = in_background(
      comm, alltoall_sides(plan_alltoallv(recvtype, comm), sendbuf, 0, sendtype, 0, recvtype),
      Messages::exact);
  report("MPI_Ialltoallv", p, recvtype);
  if (!p)
    return PMPI_Ialltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                           recvtype, comm, request);
  return start_served(comm, "MPI_Ialltoallv", request, [&](Communicator& c) {
    return alltoallv_start(sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, *p, c);
  });
}

int MPI_Ibcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm,
               MPI_Request* request) {
  const Decision p = in_background(comm, plan_bcast(count, type, root, comm));
  report("MPI_Ibcast", p, type);
  if (!p) return PMPI_Ibcast(buffer, count, type, root, comm, request);
  return start_served(comm, "MPI_Ibcast", request,
                      [&](Communicator& c) { return bcast_start(false, buffer, root, *p, c); });
}

// ---- Completion.
//
// Each function settles the served requests in its array, completes the preload's persistent
// handles itself (requests.hpp) and gives MPI the array with those replaced by
// MPI_REQUEST_NULL, which MPI skips.

}  // extern "C"

namespace {

// The array as MPI sees it: the preload's persistent handles as MPI_REQUEST_NULL.
struct Hidden {
  std::vector<MPI_Request> mpi;
  std::vector<int> ours;  // their indices, ascending
  Hidden(const MPI_Request* r, int n) : mpi(r, r + n) {
    for (int i = 0; i < n; ++i)
      if (is_persistent(r[i])) {
        ours.push_back(i);
        mpi[static_cast<std::size_t>(i)] = MPI_REQUEST_NULL;
      }
  }
  // MPI's updates (completed requests set to MPI_REQUEST_NULL) back into the caller's array.
  void restore(MPI_Request* r) const {
    std::size_t k = 0;
    for (std::size_t i = 0; i < mpi.size(); ++i) {
      if (k < ours.size() && static_cast<std::size_t>(ours[k]) == i)
        ++k;
      else
        r[i] = mpi[i];
    }
  }
};

MPI_Status* at(MPI_Status* statuses, int i) {
  return statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : statuses + i;
}

int test_any(int n, MPI_Request r[], int* index, int* flag, MPI_Status* status, bool& pending) {
  pending = settle(r, n, false);
  const Hidden h(r, n);
  for (int i : h.ours) {
    const Outcome o = complete_persistent(r[i], false, status);
    if (o == Outcome::completed) {
      *index = i;
      *flag = 1;
      return status == MPI_STATUS_IGNORE ? MPI_SUCCESS : status->MPI_ERROR;
    }
    pending = pending || o == Outcome::running;
  }
  Hidden mine = h;
  const int rc = PMPI_Testany(n, mine.mpi.data(), index, flag, status);
  mine.restore(r);
  if (rc == MPI_SUCCESS && *flag && *index == MPI_UNDEFINED && pending) *flag = 0;
  return rc;
}

int test_some(int n, MPI_Request r[], int* outcount, int indices[], MPI_Status statuses[],
              bool& pending) {
  pending = settle(r, n, false);
  Hidden h(r, n);
  int k = 0;
  for (int i : h.ours) {
    const Outcome o = complete_persistent(r[i], false, at(statuses, k));
    if (o == Outcome::completed) indices[k++] = i;
    pending = pending || o == Outcome::running;
  }
  int theirs = 0;
  const int rc = PMPI_Testsome(n, h.mpi.data(), &theirs, indices + k, at(statuses, k));
  h.restore(r);
  if (rc != MPI_SUCCESS) return rc;
  if (theirs == MPI_UNDEFINED) theirs = 0;
  *outcount = k + theirs;
  if (*outcount == 0 && !pending) {
    bool active = false;  // MPI_UNDEFINED only when nothing is active at all
    for (int i = 0; i < n && !active; ++i)
      active = h.mpi[static_cast<std::size_t>(i)] != MPI_REQUEST_NULL;
    if (!active) *outcount = MPI_UNDEFINED;
  }
  return MPI_SUCCESS;
}

}  // namespace

extern "C" {

int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  if (straight_to_mpi()) return PMPI_Wait(request, status);
  if (is_persistent(*request)) {
    complete_persistent(*request, true, status);
    return status == MPI_STATUS_IGNORE ? MPI_SUCCESS : status->MPI_ERROR;
  }
  settle(request, 1, true);
  return PMPI_Wait(request, status);
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  if (straight_to_mpi()) return PMPI_Waitall(count, requests, statuses);
  settle(requests, count, true);
  Hidden h(requests, count);
  for (int i : h.ours) complete_persistent(requests[i], true, MPI_STATUS_IGNORE);
  const int rc = PMPI_Waitall(count, h.mpi.data(), statuses);  // empty statuses for ours
  h.restore(requests);
  return rc;
}

int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  if (straight_to_mpi()) return PMPI_Test(request, flag, status);
  if (is_persistent(*request)) {
    *flag = complete_persistent(*request, false, status) != Outcome::running;
    return MPI_SUCCESS;
  }
  settle(request, 1, false);
  return PMPI_Test(request, flag, status);
}

int MPI_Testall(int count, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
  if (straight_to_mpi()) return PMPI_Testall(count, requests, flag, statuses);
  settle(requests, count, false);
  Hidden h(requests, count);
  // MPI_Testall completes all or nothing: ours must have finished before MPI's are asked.
  for (int i : h.ours)
    if (!persistent_finished(requests[i])) return *flag = 0, MPI_SUCCESS;
  const int rc = PMPI_Testall(count, h.mpi.data(), flag, statuses);
  h.restore(requests);
  if (rc == MPI_SUCCESS && *flag)
    for (int i : h.ours) complete_persistent(requests[i], true, at(statuses, i));
  return rc;
}

int MPI_Testany(int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status) {
  if (straight_to_mpi()) return PMPI_Testany(count, requests, index, flag, status);
  bool pending = false;
  return test_any(count, requests, index, flag, status, pending);
}

int MPI_Testsome(int incount, MPI_Request requests[], int* outcount, int indices[],
                 MPI_Status statuses[]) {
  if (straight_to_mpi()) return PMPI_Testsome(incount, requests, outcount, indices, statuses);
  bool pending = false;
  return test_some(incount, requests, outcount, indices, statuses, pending);
}

// Waitany and Waitsome return as soon as one request completes, whichever kind it is: while a
// served or persistent one is still running they poll (ours, then MPI's test), yielding the
// core between rounds; once none is, MPI's own wait takes over.
int MPI_Waitany(int count, MPI_Request requests[], int* index, MPI_Status* status) {
  if (straight_to_mpi()) return PMPI_Waitany(count, requests, index, status);
  for (;;) {
    bool pending = false;
    int flag = 0;
    const int rc = test_any(count, requests, index, &flag, status, pending);
    if (rc != MPI_SUCCESS || flag) return rc;
    if (!pending) break;
    std::this_thread::yield();
  }
  Hidden h(requests, count);  // nothing of ours runs: MPI's wait on the rest
  const int rc = PMPI_Waitany(count, h.mpi.data(), index, status);
  h.restore(requests);
  return rc;
}

int MPI_Waitsome(int incount, MPI_Request requests[], int* outcount, int indices[],
                 MPI_Status statuses[]) {
  if (straight_to_mpi()) return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
  for (;;) {
    bool pending = false;
    const int rc = test_some(incount, requests, outcount, indices, statuses, pending);
    if (rc != MPI_SUCCESS || *outcount != 0) return rc;
    if (!pending) break;
    std::this_thread::yield();
  }
  Hidden h(requests, incount);  // nothing of ours runs: MPI's wait on the rest
  const int rc = PMPI_Waitsome(incount, h.mpi.data(), outcount, indices, statuses);
  h.restore(requests);
  return rc;
}

int MPI_Request_get_status(MPI_Request request, int* flag, MPI_Status* status) {
  if (straight_to_mpi()) return PMPI_Request_get_status(request, flag, status);
  if (is_persistent(request)) {
    *flag = persistent_finished(request);
    if (*flag && status != MPI_STATUS_IGNORE) empty_status(status), status->MPI_ERROR = MPI_SUCCESS;
    return MPI_SUCCESS;
  }
  settle(&request, 1, false);
  return PMPI_Request_get_status(request, flag, status);
}

// A served request the program frees keeps running; the preload completes it later (MPI
// releases it then), at MPI_Finalize at the latest. A persistent handle is freed.
int MPI_Request_free(MPI_Request* request) {
  if (!straight_to_mpi() && request) {
    if (is_persistent(*request)) return free_persistent(request);
    forget_if_served(*request);
  }
  return PMPI_Request_free(request);
}

int MPI_Start(MPI_Request* request) {
  if (!straight_to_mpi() && request && is_persistent(*request)) return start_persistent(*request);
  return PMPI_Start(request);
}

int MPI_Startall(int count, MPI_Request requests[]) {
  if (straight_to_mpi()) return PMPI_Startall(count, requests);
  for (int i = 0; i < count; ++i)
    if (const int rc =
            is_persistent(requests[i]) ? start_persistent(requests[i]) : PMPI_Start(&requests[i]);
        rc != MPI_SUCCESS)
      return rc;
  return MPI_SUCCESS;
}

}  // extern "C"
