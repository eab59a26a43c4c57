// The one entry point from (algorithm, collective, shape) to a rank's schedule.
#pragma once

#include <array>
#include <optional>
#include <string_view>
#include <vector>

#include "schedule/step.hpp"
#include "toroid/algorithm.hpp"
#include "toroid/topology.hpp"
#include "toroid/torus.hpp"

namespace toroid::schedule {

struct Context {
  int rank = 0;
  Torus topology{Torus2D{1, 1}};  // any number of dimensions (the 2D builders: grid())
  std::vector<int> node_of_rank;  // node index of every rank (hierarchical); empty: one node
  // Bandwidth of one link direction along each dimension (any unit, only the ratio counts): the
  // torus algorithms share the vector between their parts by what each dimension carries
  // (torus2d.cpp, torus_dims.cpp). Equal on every rank.
  std::array<double, Torus::kMaxDimensions> link_rate{1, 1, 1, 1, 1, 1};
  // The latency of one hop along each dimension in seconds, with link_rate then in bytes per
  // second: torus2d_both's all-reduce weighs its two parts' different step counts (a line's
  // middle phase is shorter than its reduce-scatter and all-gather) against their link time
  // (torus2d.cpp). 0: unknown, the share follows the link rates alone.
  std::array<double, Torus::kMaxDimensions> hop_seconds{};
  // Received bytes a chip reduces per second, with link_rate in bytes per second (the
  // simulator's model): where reduction, not the links, bounds an all-reduce, torus2d_both runs
  // its parts in more pipelined pieces (torus_dims.cpp). 0: unknown.
  double reduce_rate = 0;
  bool knows_hops() const {
    for (double h : hop_seconds)
      if (h > 0) return true;
    return false;
  }
  int nranks() const { return topology.chips(); }
  // The shape as a 2D torus, for the builders of two dimensions; throws InvalidArgument naming
  // `who` where the shape has more dimensions or a twist.
  Torus2D grid(std::string_view who) const;
};

// An all-to-all's blocks where they differ from rank to rank and call to call (alltoallv): per
// peer q, how many elements go to q and where they start in the input, how many come from q and
// where they go in the output. Each rank knows only its own; the schedule sends and receives
// exactly these, one message per peer (Schedule::exact_messages).
struct VarBlocks {
  std::vector<std::uint64_t> send_counts, send_offsets, recv_counts, recv_offsets;
};

// What to build: the collective, its length and form (the schedule builder's request).
struct Spec {
  Collective collective = Collective::allreduce;
  std::uint64_t count = 0;  // full vector length
  bool in_place = false;
  bool average = false;
  std::optional<Axes> axes;  // set: the collective runs in each sub-torus along these (along.cpp)
  int root = 0;              // broadcast: the rank whose vector everyone receives
  std::uint32_t elem_bytes = 0;  // an element's size; 0: unknown (see Context::hop_seconds)
};

// Throws InvalidArgument saying why when the algorithm cannot run this request
// (e.g. rabenseifner for all-gather, or an axis collective with a latency algorithm).
// `automatic` and `mpi` are resolved before this point.
Schedule build(Algorithm a, const Spec& r, const Context& ctx);

// Schedules of the individual families (used by build and by the unit tests).
// Spec::axes set: the collective in each sub-torus along them.
Schedule build_along(Algorithm a, const Spec& r, const Context& ctx);
Schedule build_one_dimension(Algorithm a, const Spec& r,
                             const Context& ctx);                // ring, bidir_ring, axis
Schedule build_torus2d_both(const Spec& r, const Context& ctx);  // 2D all-reduce with a line
Schedule build_torus_dims(bool busy, const Spec& r, const Context& ctx);  // any shape
Schedule build_hierarchical(const Spec& r, const Context& ctx);
Schedule build_halving_doubling(Algorithm a, const Spec& r, const Context& ctx);
Schedule build_swing(Algorithm a, const Spec& r, const Context& ctx);  // swing, swing_latency
Schedule build_swing_latency_dims(const Spec& r, const Context& ctx);  // any shape: all-reduce
Schedule build_swing_dims(const Spec& r, const Context& ctx);          // 3D and more: all-reduce
// All-to-all: direct, bruck, ring, hierarchical, torus2d, torus2d_both.
Schedule build_alltoall(Algorithm a, const Spec& r, const Context& ctx);
// An alltoallv's schedule (direct, the only one), complete as build's; throws InvalidArgument
// where the blocks are not one per rank or its own send and receive counts differ.
Schedule build_alltoallv(const VarBlocks& v, const Context& ctx);
Schedule build_broadcast(Algorithm a, const Spec& r,
                         const Context& ctx);  // ring, torus2d, recursive_doubling

}  // namespace toroid::schedule
