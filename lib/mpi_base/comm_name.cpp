#include "mpi_base/comm_name.hpp"

namespace toroid {

std::string comm_name(MPI_Comm comm) {
  char name[MPI_MAX_OBJECT_NAME] = {};
  int len = 0;
  if (MPI_Comm_get_name(comm, name, &len) != MPI_SUCCESS || len <= 0)
    return "an unnamed communicator";
  return std::string(name, static_cast<std::size_t>(len));
}

}  // namespace toroid
