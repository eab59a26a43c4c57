// Hierarchical (node-aware) all-reduce.
//
//   node   = ranks sharing memory (MPI_Comm_split_type shared, or TOROID_NODES)
//   L      = ranks on the smallest node; local index = position among the node's ranks
//   piece  = one of L blocks of the vector; local index j < L owns piece j
//
//   node 0: r0 r1 r2        1. reduce-scatter inside each node (bidirectional ring):
//   node 1: r3 r4 r5           local index j ends with piece j reduced over its node
//                           2. all-reduce of piece j among the ranks with local index j,
//            r0 - r3           one per node (bidirectional ring across nodes)
//            r1 - r4        3. all-gather inside each node
//            r2 - r5
//
// Unequal nodes: the vector is cut into L pieces only, so every node holds every piece after
// step 1 (ranks with local index >= L own an empty piece: they add their data in the node's
// ring and receive the result in step 3, but sit out step 2).
#include <algorithm>
#include <map>

#include "schedule/build.hpp"
#include "schedule/dimension.hpp"
#include "schedule/group.hpp"

namespace toroid::schedule {

Schedule build_hierarchical(const Spec& r, const Context& ctx) {
  Schedule s;
  const int p = ctx.nranks();
  std::vector<int> node = ctx.node_of_rank;
  if (node.empty()) node.assign(p, 0);
  std::map<int, std::vector<int>> members;  // node -> its ranks, ascending
  for (int q = 0; q < p; ++q) members[node[q]].push_back(q);
  std::size_t smallest = members.begin()->second.size();
  for (const auto& [n, m] : members) smallest = std::min(smallest, m.size());
  const int L = static_cast<int>(smallest);

  const Group local = group_of(members[node[ctx.rank]], ctx.rank);
  Blocks pieces = even_blocks(0, r.count, L);
  pieces.resize(local.size(), Block{r.count, 0});  // ranks beyond L own nothing
  const Block mine = pieces[local.position];

  std::uint32_t phase = append_reduce_scatter(s, Links::bidir_ring, local, pieces, 0, Buf::input,
                                              Buf::output, chunk(Buf::output, mine), 0);
  if (local.position < L) {
    std::vector<int> peers;  // the rank with my local index on every node, in node order
    for (const auto& [n, m] : members) peers.push_back(m[local.position]);
    const Group across = group_of(peers, ctx.rank);
    const Blocks parts = even_blocks(mine.offset, mine.count, across.size());
    const Block part = parts[across.position];
    phase = append_reduce_scatter(s, Links::bidir_ring, across, parts, 2, Buf::output, Buf::output,
                                  chunk(Buf::output, part), phase);
    phase = append_average(s, r.average, chunk(Buf::output, part), static_cast<std::uint32_t>(p),
                           phase);
    phase = append_allgather(s, Links::bidir_ring, across, parts, 2, chunk(Buf::output, part),
                             Buf::output, phase);
  }
  append_allgather(s, Links::bidir_ring, local, pieces, 0, chunk(Buf::output, mine), Buf::output,
                   phase);
  return s;
}

}  // namespace toroid::schedule
