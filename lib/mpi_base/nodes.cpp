#include "mpi_base/nodes.hpp"

#include <algorithm>

#include "toroid/mpi_helpers.hpp"

namespace toroid::mpi_base {

NodeSplit::NodeSplit(MPI_Comm comm) {
  int size = 0;
  mpi_check(MPI_Comm_rank(comm, &rank_), "MPI_Comm_rank");
  mpi_check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  mpi_check(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node_),
            "MPI_Comm_split_type");
  try {
    mpi_check(MPI_Comm_size(node_, &size_), "MPI_Comm_size");
    mpi_check(MPI_Comm_rank(node_, &local_), "MPI_Comm_rank");
    // The node's ranks in local order; the lowest of them names the node.
    std::vector<int> ranks(static_cast<std::size_t>(size_));
    mpi_check(MPI_Allgather(&rank_, 1, MPI_INT, ranks.data(), 1, MPI_INT, node_), "MPI_Allgather");
    local_of_rank_.assign(static_cast<std::size_t>(size), -1);
    int leader = rank_;
    for (int i = 0; i < size_; ++i) {
      const int r = ranks[static_cast<std::size_t>(i)];
      local_of_rank_[static_cast<std::size_t>(r)] = i;
      leader = std::min(leader, r);
    }
    std::vector<int> leaders(static_cast<std::size_t>(size));
    mpi_check(MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm),
              "MPI_Allgather");
    // Node indices follow the nodes' lowest ranks in order.
    std::vector<int> ids(static_cast<std::size_t>(size), -1);
    node_of_rank_.resize(static_cast<std::size_t>(size));
    int next = 0;
    for (std::size_t q = 0; q < leaders.size(); ++q) {
      int& id = ids[static_cast<std::size_t>(leaders[q])];
      if (id < 0) id = next++;
      node_of_rank_[q] = id;
    }
  } catch (...) {
    MPI_Comm_free(&node_);
    throw;
  }
}

NodeSplit::~NodeSplit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && node_ != MPI_COMM_NULL) MPI_Comm_free(&node_);
}

topology::NodeLayout NodeSplit::layout() const {
  return topology::layout_from_nodes(node_of_rank_, rank_);
}

}  // namespace toroid::mpi_base
