#include "topology/node_layout.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "core/config_values.hpp"
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

NodeLayout emulated_nodes(const std::string& text, int size, int rank) {
  const std::vector<int> counts = parse_node_counts(text, "TOROID_NODES");
  // parse_node_counts bounds the total, so this sum cannot overflow.
  const int total = std::accumulate(counts.begin(), counts.end(), 0);
  if (total != size)
    throw InvalidArgument(fmt::format("TOROID_NODES: '{}' adds up to {} ranks, communicator has {}",
                                      text, total, size));
  std::vector<int> node(static_cast<std::size_t>(size));
  int q = 0;
  for (std::size_t id = 0; id < counts.size(); ++id)
    for (int k = 0; k < counts[id]; ++k) node[static_cast<std::size_t>(q++)] = static_cast<int>(id);
  return layout_from_nodes(std::move(node), rank);
}

}  // namespace toroid::topology
