#include "topology/nodes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>

#include "core/config_values.hpp"
#include "core/mpi_check.hpp"
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
  n.placement = !n.uniform    ? Placement::uneven
                : by_node     ? Placement::by_node
                : round_robin ? Placement::round_robin
                              : Placement::scattered;
  return n;
}

std::string_view to_string(Placement p) noexcept {
  switch (p) {
    case Placement::by_node:
      return "by node";
    case Placement::round_robin:
      return "round robin";
    case Placement::scattered:
      return "scattered";
    case Placement::uneven:
      return "uneven";
  }
  return "?";
}

NodeLayout discover_nodes(MPI_Comm comm, const std::string& emulated) {
  int rank = 0, size = 1;
  mpi_check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  mpi_check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  std::vector<int> node(size);
  if (!emulated.empty()) {
    const std::vector<int> counts = parse_node_counts(emulated, "TOROID_NODES");
    // parse_node_counts bounds the total, so this sum cannot overflow.
    const int total = std::accumulate(counts.begin(), counts.end(), 0);
    if (total != size)
      throw InvalidArgument(fmt::format(
          "TOROID_NODES: '{}' adds up to {} ranks, communicator has {}", emulated, total, size));
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

}  // namespace toroid::topology
