// Which ranks of a communicator share a node: the one MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)
// of a communicator, which its node layout, shared-memory links and node memory all take.
#pragma once

#include <mpi.h>

#include <vector>

#include "topology/node_layout.hpp"

namespace toroid::mpi_base {

class NodeSplit {
 public:
  explicit NodeSplit(MPI_Comm comm);  // collective over comm
  ~NodeSplit();                       // frees the node's communicator (unless MPI is finalized)
  NodeSplit(const NodeSplit&) = delete;
  NodeSplit& operator=(const NodeSplit&) = delete;

  MPI_Comm comm() const noexcept { return node_; }  // the ranks on this rank's node
  int local() const noexcept { return local_; }     // this rank's index among them
  int size() const noexcept { return size_; }       // how many they are
  // Each communicator rank's index on this node; -1 for ranks on other nodes.
  const std::vector<int>& local_of_rank() const noexcept { return local_of_rank_; }
  // Each communicator rank's node: 0..nodes-1, numbered in the order of their lowest ranks.
  const std::vector<int>& node_of_rank() const noexcept { return node_of_rank_; }
  // The real nodes as seen from this rank.
  topology::NodeLayout layout() const;

 private:
  MPI_Comm node_ = MPI_COMM_NULL;
  int rank_ = 0, local_ = 0, size_ = 1;
  std::vector<int> local_of_rank_, node_of_rank_;
};

}  // namespace toroid::mpi_base
