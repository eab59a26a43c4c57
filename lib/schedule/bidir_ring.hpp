// Reduce-scatter and all-gather around a ring in both directions at once: every block travels
// half way round each way (bidir_ring.cpp), so a ring of p takes about p/2 steps each, not p-1.
#pragma once

#include "schedule/group.hpp"

namespace toroid::schedule {

// Same contract as the one-direction ring (ring.hpp); uses tags `tag` and `tag + 1`. An even
// ring cuts its blocks in halves where `cut` says (group.hpp).
std::uint32_t append_bidir_ring_reduce_scatter(Schedule& s, const Group& g, const Blocks& blocks,
                                               int tag, const Source& from, Buf acc, Chunk result,
                                               std::uint32_t phase, const HalfCut& cut = {});
std::uint32_t append_bidir_ring_allgather(Schedule& s, const Group& g, const Blocks& blocks,
                                          int tag, Chunk own, const Source& out,
                                          std::uint32_t phase, const HalfCut& cut = {});

}  // namespace toroid::schedule
