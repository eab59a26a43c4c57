// Which ranks share a node (MPI_Comm_split_type shared memory), and what hwloc sees of it.
#pragma once

#include <mpi.h>

#include <string>

namespace toroid::topology {

struct NodeLayout {
  int nodes = 1;         // number of distinct shared-memory nodes
  int local_rank = 0;    // rank within my node
  int local_size = 1;    // ranks on my node
  bool uniform = true;   // every node has the same number of ranks
};

// Collective over comm.
NodeLayout discover_nodes(MPI_Comm comm);

struct HostInfo {
  int cores = 0;  // physical cores of this host (hwloc)
  int pus = 0;    // hardware threads
  std::string binding;  // cpuset this process is bound to, as hwloc prints it
};
HostInfo host_info();

}  // namespace toroid::topology
