// Turning toroid's exceptions into MPI errors: no C++ exception crosses into the caller.
#pragma once

#include <mpi.h>

#include <exception>

namespace toroid::pmpi {

// Maps `failure` (a caught exception) to an MPI error class
// (InvalidArgument: MPI_ERR_ARG, TopologyError: MPI_ERR_TOPOLOGY, MpiError: the class of its
// code, bad_alloc: MPI_ERR_NO_MEM, anything else: MPI_ERR_OTHER / MPI_ERR_UNKNOWN), makes an
// error code of that class whose MPI_Error_string is "toroid: <call>: <message>", invokes
// comm's error handler with it (MPI_Comm_call_errhandler) and returns it.
int report_error(MPI_Comm comm, const char* call, std::exception_ptr failure) noexcept;

}  // namespace toroid::pmpi
