// Non-blocking collectives the preload serves, as MPI requests.
//
// A served MPI_Iallreduce (MPI_Ibcast, ...) starts toroid's non-blocking collective on the
// communicator's background toroid communicator, whose progress thread moves it while the
// program computes, blocks in MPI_Recv, or waits on anything else. The program gets a
// generalized request (MPI_Grequest_start): a real MPI_Request that MPI's own MPI_Wait*,
// MPI_Test* and MPI_Request_free accept, in arrays mixed with point-to-point requests and
// forwarded collectives.
//
// MPI_Grequest_complete is called on the program's thread, never the progress thread: the
// interposed MPI_Wait* and MPI_Test* (and MPI_Request_get_status) first settle the served
// requests among theirs (wait for toroid's, or see whether it finished, then complete the MPI
// request), then hand the whole array to MPI. A request the program frees with
// MPI_Request_free is settled at the next interposed call that finds it finished, and at
// MPI_Finalize at the latest.
//
//   MPI_Iallreduce -> toroid::iallreduce (progress thread) + MPI_Grequest_start -> request
//   MPI_Wait(request): toroid wait, finish (a block moved to the front, ...),
//                      MPI_Grequest_complete, then PMPI_Wait frees it and fills the status
//
// The status of a completed served request is an empty one (source MPI_ANY_SOURCE, tag
// MPI_ANY_TAG, no elements, not cancelled). MPI_Cancel on one cancels nothing (the collective
// completes as usual and MPI_Test_cancelled says false), as MPI allows for an operation that
// cannot be cancelled.
#pragma once

#include <mpi.h>

#include <functional>

#include "pmpi/state.hpp"
#include "toroid/request.hpp"

namespace toroid::pmpi {

// What a served non-blocking call started: toroid's request, and what to do on the program's
// thread once it completes (move a block into MPI's layout, copy out of scratch); may be empty.
struct Started {
  Request request;
  std::function<void()> finish;
};

// Starts `start` on comm's background communicator and sets *request to its MPI request.
// Errors become MPI errors through comm's error handler (report_error).
int start_served(MPI_Comm comm, const char* name, MPI_Request* request,
                 const std::function<Started(Communicator&)>& start) noexcept;

// Whether any served request (or persistent handle) is alive: the interposed waits' fast path.
bool any_served() noexcept;

// Settles the served requests among `requests`: completes those toroid has finished, waiting
// for them first when `block`. Also settles freed ones that have finished. Returns whether an
// active served request remains among `requests` (not finished, not `block`).
bool settle(MPI_Request* requests, int count, bool block) noexcept;

// MPI_Request_free on a served request: the program gives it up; the preload settles it later.
bool forget_if_served(MPI_Request request) noexcept;

// Waits for and completes every served request still alive (MPI_Finalize), or those of `comm`
// (its toroid state is about to be freed); persistent ones are completed and retired (a later
// MPI_Start on one is an error saying why).
void drain_served_requests(MPI_Comm comm = MPI_COMM_NULL) noexcept;

// ---- Persistent collectives (MPI_Allreduce_init & co; Open MPI: MPIX_Allreduce_init & co).
//
// A generalized request cannot be restarted, so a served persistent collective's handle is the
// preload's own: a generalized request completed at once, kept as the handle's identity, and
// never shown to MPI's waits. MPI_Start starts toroid's persistent request (bound once at init)
// behind it; the interposed MPI_Wait*/MPI_Test* complete it themselves (an empty status; the
// handle stays valid and inactive) and hand MPI the rest of the array with MPI_REQUEST_NULL in
// its place. MPI_Request_free frees it.
int init_persistent(MPI_Comm comm, const char* name, MPI_Request* request,
                    const std::function<Started(Communicator&)>& init) noexcept;
bool is_persistent(MPI_Request request) noexcept;
// MPI_Start on one: an error (through comm's handler) when it is active or retired.
int start_persistent(MPI_Request request) noexcept;
// Completes an active one (`block`: waiting for it first). The status, when not
// MPI_STATUS_IGNORE, is set for `completed` and `inactive` (the empty one, with the error code).
enum class Outcome { inactive, completed, running };
Outcome complete_persistent(MPI_Request request, bool block, MPI_Status* status) noexcept;
// Whether it is inactive or its collective has finished (completes nothing).
bool persistent_finished(MPI_Request request) noexcept;
// MPI_Request_free on one: waits for it if active (freeing an active one is erroneous in MPI),
// frees the handle and sets it to MPI_REQUEST_NULL.
int free_persistent(MPI_Request* request) noexcept;

// The empty status MPI gives a completed collective (its error field is the caller's).
void empty_status(MPI_Status* status) noexcept;

}  // namespace toroid::pmpi
