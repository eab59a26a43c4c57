// How a communicator's ranks lie over the nodes (found by mpi_base/nodes.hpp).
#pragma once

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

// The layout seen from `rank`, given every rank's node (0..nodes-1, numbered by lowest rank).
NodeLayout layout_from_nodes(std::vector<int> node_of_rank, int rank);

// Emulated nodes, `text` = "3,2,3": ranks per node, consecutive ranks (TOROID_NODES), so
// node-aware algorithms can be studied and tested on one machine. Throws InvalidArgument when
// it is malformed or does not add up to `size`.
NodeLayout emulated_nodes(const std::string& text, int size, int rank);

}  // namespace toroid::topology
