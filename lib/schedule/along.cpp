// Collectives along a set of the torus's dimensions (Spec::axes): every sub-torus those
// dimensions span runs the collective on its own, all at once.
//
//   4x2x2, axes {x, z}: the xz-planes y = 0 (o) and y = 1 (*), each a 4x2 torus of its own
//
//        z=0   o o o o    z=1   o o o o     plane member i = x + 4z: the algorithm's schedule
//              * * * *          * * * *     for member i of a 4x2 torus, its peers renamed from
//                                           members to the chips (Torus::group_along)
//
// A sub-torus's links are the torus's own (its chips differ along the chosen dimensions only),
// so a schedule that is neighbour-only on the 4x2 shape is neighbour-only on the planes, and
// the planes share no link. The algorithm's share of the vector between dimensions follows the
// chosen dimensions' link rates and hop latencies. A rank's block (reduce-scatter, all-gather)
// is its member index, as in a communicator of the sub-torus's shape.
#include "schedule/along.hpp"

#include <fmt/format.h>

#include <map>

#include "schedule/build.hpp"
#include "toroid/error.hpp"

namespace toroid::schedule {

PerDimensionValues values_along(const PerDimensionValues& from, PerDimensionValues into,
                                const Torus& t, Axes axes) {
  std::size_t k = 0;
  for (int d = 0; d < t.dimensions(); ++d)
    if (axes.has(d)) into[k++] = from[static_cast<std::size_t>(d)];
  return into;
}

std::vector<int> nodes_along(const std::vector<int>& node_of_rank,
                             const std::vector<int>& members) {
  if (node_of_rank.empty()) return {};
  std::vector<int> out;
  std::map<int, int> renumbered;
  for (int q : members) {
    const int node = node_of_rank.at(static_cast<std::size_t>(q));
    out.push_back(renumbered.emplace(node, static_cast<int>(renumbered.size())).first->second);
  }
  return out;
}

Schedule build_along(Algorithm a, const Spec& r, const Context& ctx) {
  const Axes axes = *r.axes;
  Spec whole = r;
  whole.axes.reset();
  Context sub{ctx.topology.position_along(ctx.rank, axes), ctx.topology.along(axes), {}};
  sub.link_rate = values_along(ctx.link_rate, sub.link_rate, ctx.topology, axes);
  sub.hop_seconds = values_along(ctx.hop_seconds, sub.hop_seconds, ctx.topology, axes);
  sub.reduce_rate = ctx.reduce_rate;
  const std::vector<int> members = ctx.topology.group_along(ctx.rank, axes);
  sub.node_of_rank = nodes_along(ctx.node_of_rank, members);
  Schedule s;
  try {
    s = build(a, whole, sub);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(fmt::format("along {} of {} (sub-tori {}): {}", axes.to_string(),
                                      ctx.topology.to_string(), sub.topology.to_string(),
                                      e.what()));
  }
  for (Step& st : s.steps)
    if (st.peer >= 0) st.peer = members.at(static_cast<std::size_t>(st.peer));
  s.rank = ctx.rank;
  s.nranks = ctx.nranks();
  return s;
}

}  // namespace toroid::schedule
