#include "topology/nodes.hpp"

#include <hwloc.h>

#include <cstdlib>

#include "exec/mpi_check.hpp"

namespace toroid::topology {

NodeLayout discover_nodes(MPI_Comm comm) {
  using exec::mpi_check;
  MPI_Comm local = MPI_COMM_NULL;
  int rank = 0;
  mpi_check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  mpi_check(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local),
            "MPI_Comm_split_type");
  NodeLayout n;
  mpi_check(MPI_Comm_rank(local, &n.local_rank), "MPI_Comm_rank");
  mpi_check(MPI_Comm_size(local, &n.local_size), "MPI_Comm_size");
  MPI_Comm_free(&local);
  const int leader = n.local_rank == 0 ? 1 : 0;
  mpi_check(MPI_Allreduce(&leader, &n.nodes, 1, MPI_INT, MPI_SUM, comm), "MPI_Allreduce");
  int sizes[2] = {n.local_size, -n.local_size}, ext[2] = {0, 0};
  mpi_check(MPI_Allreduce(sizes, ext, 2, MPI_INT, MPI_MAX, comm), "MPI_Allreduce");
  n.uniform = ext[0] == -ext[1];
  return n;
}

HostInfo host_info() {
  HostInfo h;
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) return h;
  if (hwloc_topology_load(topo) == 0) {
    h.cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    h.pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (set && hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0) {
      char* text = nullptr;
      if (hwloc_bitmap_list_asprintf(&text, set) >= 0 && text) {
        h.binding = text;
        std::free(text);
      }
    }
    if (set) hwloc_bitmap_free(set);
  }
  hwloc_topology_destroy(topo);
  return h;
}

}  // namespace toroid::topology
