// TOROID_LOG=info: what the preload did with each kind of call, said once per kind, e.g.
//   toroid: MPI_Bcast: served by toroid
//   toroid: MPI_Allreduce: forwarded to MPI: the datatype has no toroid twin (MPI_SHORT)
// Said by MPI_COMM_WORLD's rank 0 only: the decision is the same on every rank of a
// communicator (plan.hpp), so one rank's account is the job's; calls on communicators without
// world rank 0 are not reported. Calls toroid makes itself are never reported.
#pragma once

#include <mpi.h>

#include "pmpi/plan.hpp"

namespace toroid::pmpi {

void report(const char* call, const Decision& decision, MPI_Datatype type) noexcept;

// The served-call counter behind toroid_preload_calls: one more served call.
void note_served() noexcept;
unsigned long long served_count() noexcept;

}  // namespace toroid::pmpi
