// For code that makes MPI calls of its own beside toroid's (bindings, framework backends, tools):
// MPI's return codes as toroid's errors, and a piece of work whose failure on one rank is an
// error on every rank. The Python module and the torch backend use these.
#pragma once

#include <mpi.h>

#include <functional>
#include <string_view>

#include "toroid/export.hpp"

TOROID_API_BEGIN
namespace toroid {

// Throws MpiError "<what> failed on world rank R: <MPI error string>" when rc != MPI_SUCCESS.
// R is the rank in MPI_COMM_WORLD, whatever communicator the call was on: the one number that
// names the process in a job. (toroid's communicators use MPI_ERRORS_RETURN.)
void mpi_check(int rc, std::string_view what);

// Collective over `comm`: runs `f` on every rank. If it throws a toroid::Error on any rank,
// every rank throws: a failing rank its own error, the others an error of the same kind with
// the message of the lowest failing rank prefixed with "rank N: ". A bad argument on one rank
// never leaves the others waiting in a collective.
//
// With timeout_s > 0 (TOROID_TIMEOUT) the agreeing collectives are watched like a collective: a
// rank that never joins (it skipped the call) gets the job ended with a message instead of a
// hang inside the check.
void run_agreed(MPI_Comm comm, const std::function<void()>& f, double timeout_s = 0);

}  // namespace toroid
TOROID_API_END
