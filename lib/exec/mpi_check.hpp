// Turns MPI return codes into toroid::MpiError (communicators use MPI_ERRORS_RETURN).
#pragma once

#include <mpi.h>

#include <string_view>

namespace toroid::exec {

// Throws MpiError "<what> failed on rank R: <MPI error string>" when rc != MPI_SUCCESS.
void mpi_check(int rc, std::string_view what);

}  // namespace toroid::exec
