// Which ranks share a node (MPI_Comm_split_type shared memory).
#pragma once

#include <mpi.h>

#include <string>
#include <string_view>
#include <vector>

namespace toroid::topology {

// How ranks are laid out over the nodes: consecutive blocks (by_node: mpirun's default
// --map-by slot), dealt out in turn (round_robin: --map-by node, rank r on node r mod nodes),
// neither (scattered), or nodes of different sizes (uneven).
enum class Placement { by_node, round_robin, scattered, uneven };
std::string_view to_string(Placement p) noexcept;

struct NodeLayout {
  int nodes = 1;                  // number of distinct shared-memory nodes
  int local_rank = 0;             // rank within my node
  int local_size = 1;             // ranks on my node
  bool uniform = true;            // every node has the same number of ranks
  std::vector<int> node_of_rank;  // node index (0..nodes-1, by lowest rank) of every rank
  Placement placement = Placement::by_node;
};

// Collective over comm. `emulated` ("3,2,3": ranks per node, consecutive ranks) replaces the
// shared-memory split, so node-aware algorithms can be studied and tested on one machine;
// throws InvalidArgument when it is malformed or does not add up to the communicator size.
NodeLayout discover_nodes(MPI_Comm comm, const std::string& emulated = "");
NodeLayout layout_from_nodes(std::vector<int> node_of_rank, int rank);

}  // namespace toroid::topology
