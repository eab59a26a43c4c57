// One dimension's reduce-scatter / all-gather, over whatever links that dimension has.
//
//   ring            one direction (tag t)
//   bidir_ring      both directions, each block half way round each way (bidir_ring.hpp: about
//                   p/2 steps; tags t, t+1). The owners (members with a non-empty block) must
//                   hold blocks alike (to one element) and lie evenly round the ring; otherwise
//                   (bunched owners, or an odd count's parts whose blocks differ by more),
//                   chains that short would load some links more, so such blocks go as
//                   opposite_rings.
//   opposite_rings  each block cut in two halves: the first travels all the way round in
//                   direction +1 (tag t), the second in direction -1 (tag t+1), in the same
//                   phases: p-1 steps, every link carrying every block
//   line            no wraparound link: the mesh line algorithm of line.hpp (tags t, t+1)
#pragma once

#include "schedule/group.hpp"
#include "toroid/topology.hpp"

namespace toroid::schedule {

enum class Links { ring, bidir_ring, opposite_rings, line };

// A torus dimension of size > 2 with wraparound is a bidirectional ring; without, a line.
// Size 2: one neighbour either way, so a bidirectional ring (two lanes to the same peer).
inline Links links_of(bool wraps) { return wraps ? Links::bidir_ring : Links::line; }

// Whether dimension `a` of a 2D shape is a line of more than 2 chips: what keeps torus2d_both's
// all-reduce in its 2D form and cuts that line's parts into pieces (torus2d.cpp).
inline bool long_line(const Torus2D& t, Axis a) { return !t.wraps(a) && t.dim(a) > 2; }

// `cut`: where a bidirectional ring of even size cuts its blocks in halves (group.hpp).
std::uint32_t append_reduce_scatter(Schedule& s, Links links, const Group& g, const Blocks& blocks,
                                    int tag, const Source& from, Buf acc, Chunk result,
                                    std::uint32_t phase, const HalfCut& cut = {});
std::uint32_t append_allgather(Schedule& s, Links links, const Group& g, const Blocks& blocks,
                               int tag, Chunk own, const Source& out, std::uint32_t phase,
                               const HalfCut& cut = {});

}  // namespace toroid::schedule
