// How toroid's messages name a communicator: the name MPI keeps for it (MPI_COMM_WORLD, MPI's
// name for a duplicate, or the program's own from MPI_Comm_set_name; a toroid Communicator's
// copy carries its program's name).
#pragma once

#include <mpi.h>

#include <string>

namespace toroid {

// The name, or "an unnamed communicator".
std::string comm_name(MPI_Comm comm);

}  // namespace toroid
