#include "topology/nodes.hpp"

#include <hwloc.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>

#include "core/config_values.hpp"
#include "exec/mpi_check.hpp"
#include "toroid/error.hpp"

namespace toroid::topology {

NodeLayout layout_from_nodes(std::vector<int> node_of_rank, int rank) {
  NodeLayout n;
  const int p = static_cast<int>(node_of_rank.size());
  std::vector<int> sizes;
  for (int q = 0; q < p; ++q) {
    const int id = node_of_rank[q];
    if (id >= static_cast<int>(sizes.size())) sizes.resize(id + 1, 0);
    if (id == node_of_rank[rank] && q < rank) ++n.local_rank;
    ++sizes[id];
  }
  n.nodes = static_cast<int>(sizes.size());
  n.local_size = sizes[node_of_rank[rank]];
  n.uniform = std::all_of(sizes.begin(), sizes.end(), [&](int v) { return v == sizes[0]; });
  n.node_of_rank = std::move(node_of_rank);
  bool by_node = true, round_robin = true;
  for (int q = 0; q < p; ++q) {
    by_node = by_node && n.node_of_rank[q] == q / n.local_size;
    round_robin = round_robin && n.node_of_rank[q] == q % n.nodes;
  }
  n.placement = !n.uniform ? Placement::uneven
                : by_node  ? Placement::by_node
                : round_robin ? Placement::round_robin
                              : Placement::scattered;
  return n;
}

std::string_view to_string(Placement p) noexcept {
  switch (p) {
    case Placement::by_node: return "by node";
    case Placement::round_robin: return "round robin";
    case Placement::scattered: return "scattered";
    case Placement::uneven: return "uneven";
  }
  return "?";
}

NodeLayout discover_nodes(MPI_Comm comm, const std::string& emulated) {
  using exec::mpi_check;
  int rank = 0, size = 1;
  mpi_check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  mpi_check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  std::vector<int> node(size);
  if (!emulated.empty()) {
    const std::vector<int> counts = parse_node_counts(emulated, "TOROID_NODES");
    // parse_node_counts bounds the total, so this sum cannot overflow.
    const int total = std::accumulate(counts.begin(), counts.end(), 0);
    if (total != size)
      throw InvalidArgument(fmt::format("TOROID_NODES: '{}' adds up to {} ranks, communicator has {}", emulated,
                                        total, size));
    int q = 0;
    for (std::size_t id = 0; id < counts.size(); ++id)
      for (int k = 0; k < counts[id]; ++k) node[q++] = static_cast<int>(id);
    return layout_from_nodes(std::move(node), rank);
  }
  MPI_Comm local = MPI_COMM_NULL;
  mpi_check(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local),
            "MPI_Comm_split_type");
  // A node is named by its lowest rank; node indices follow those ranks in order.
  int leader = rank;
  mpi_check(MPI_Allreduce(&rank, &leader, 1, MPI_INT, MPI_MIN, local), "MPI_Allreduce");
  MPI_Comm_free(&local);
  std::vector<int> leaders(size);
  mpi_check(MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm), "MPI_Allgather");
  std::vector<int> ids(size, -1);
  int next = 0;
  for (int q = 0; q < size; ++q) {
    if (ids[leaders[q]] < 0) ids[leaders[q]] = next++;
    node[q] = ids[leaders[q]];
  }
  return layout_from_nodes(std::move(node), rank);
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
