// What a Communicator holds: separate parts, each with its own job.
#pragma once

#include <map>
#include <memory>
#include <tuple>

#include "api/config.hpp"
#include "exec/mpi_executor.hpp"
#include "exec/shm_links.hpp"
#include "exec/stock.hpp"
#include "schedule/step.hpp"
#include "toroid/communicator.hpp"
#include "topology/nodes.hpp"

namespace toroid {

// Built schedules, keyed by everything a builder looks at. Bounded: cleared when full.
class ScheduleCache {
 public:
  // collective, algorithm, count, in place, average, axis (-1: whole communicator)
  using Key = std::tuple<schedule::Collective, Algorithm, std::uint64_t, bool, bool, int>;
  template <class Build>
  const schedule::Schedule& get(const Key& key, Build&& build) {
    auto it = entries_.find(key);
    if (it != entries_.end()) return *it->second;
    if (entries_.size() >= capacity) entries_.clear();
    return *entries_.emplace(key, std::make_unique<schedule::Schedule>(build())).first->second;
  }
  static constexpr std::size_t capacity = 256;

 private:
  std::map<Key, std::unique_ptr<schedule::Schedule>> entries_;
};

struct Communicator::Impl {
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm row = MPI_COMM_NULL;     // ranks with my y (ordered by x)
  MPI_Comm column = MPI_COMM_NULL;  // ranks with my x (ordered by y)
  int rank = 0, size = 1;
  api::Config config;
  Torus2D topology{1, 1};
  topology::NodeLayout nodes;
  ScheduleCache schedules;
  exec::Workspace workspace;
  exec::StockOps stock_ops;
  std::unique_ptr<exec::ShmLinks> links;  // null with Transport::mpi
};

}  // namespace toroid
