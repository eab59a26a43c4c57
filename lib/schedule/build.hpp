// The one entry point from (algorithm, collective, shape) to a rank's schedule.
#pragma once

#include <optional>
#include <vector>

#include "schedule/step.hpp"
#include "toroid/algorithm.hpp"
#include "toroid/topology.hpp"

namespace toroid::schedule {

struct Context {
  int rank = 0;
  Torus2D topology{1, 1};
  std::vector<int> node_of_rank;  // node index of every rank (hierarchical); empty: one node
  // Bandwidth of one link direction along X and along Y (any unit, only the ratio counts): the
  // 2D algorithms share the vector between their X-first and Y-first parts by what each
  // dimension carries (torus2d.cpp). Equal on every rank.
  double link_rate[2] = {1.0, 1.0};
  int nranks() const { return topology.size(); }
};

// What to build: the collective, its length and form (the schedule builder's request).
struct Spec {
  Collective collective = Collective::allreduce;
  std::uint64_t count = 0;  // full vector length
  bool in_place = false;
  bool average = false;
  std::optional<Axis> axis;  // set: the collective runs along this axis only (rows or columns)
  int root = 0;              // broadcast: the rank whose vector everyone receives
};

// Throws InvalidArgument saying why when the algorithm cannot run this request
// (e.g. rabenseifner for all-gather, or an axis collective with a latency algorithm).
// `automatic` and `mpi` are resolved before this point.
Schedule build(Algorithm a, const Spec& r, const Context& ctx);

// Schedules of the individual families (used by build and by the unit tests).
Schedule build_one_dimension(Algorithm a, const Spec& r,
                             const Context& ctx);  // ring, bidir_ring, axis
Schedule build_torus2d(bool both, const Spec& r, const Context& ctx);
Schedule build_hierarchical(const Spec& r, const Context& ctx);
Schedule build_halving_doubling(Algorithm a, const Spec& r, const Context& ctx);
Schedule build_swing(Algorithm a, const Spec& r, const Context& ctx);  // swing, swing_latency
Schedule build_broadcast(Algorithm a, const Spec& r,
                         const Context& ctx);  // ring, torus2d, recursive_doubling

}  // namespace toroid::schedule
