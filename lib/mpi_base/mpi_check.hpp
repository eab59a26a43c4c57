// Turns MPI return codes into toroid::MpiError (communicators use MPI_ERRORS_RETURN).
#pragma once

#include <mpi.h>

#include <string_view>

namespace toroid {

// Throws MpiError "<what> failed on world rank R: <MPI error string>" when rc != MPI_SUCCESS.
// R is the rank in MPI_COMM_WORLD, whatever communicator the call was on: the one number that
// names the process in a job.
void mpi_check(int rc, std::string_view what);

}  // namespace toroid
