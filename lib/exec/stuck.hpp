// The watchdog's last words: what this rank waits for, then the end of the job.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "exec/params.hpp"

namespace toroid::exec {

// Prints "toroid: rank R: <what> made no progress for T s in phase P (TOROID_TIMEOUT)" and the
// `waiting` lines on stderr, then MPI_Abort(comm, 3): a hang becomes a message and an exit status.
[[noreturn]] void abort_stuck(const ExecParams& params, MPI_Comm comm, std::uint32_t phase,
                              const std::string& waiting);

}  // namespace toroid::exec
