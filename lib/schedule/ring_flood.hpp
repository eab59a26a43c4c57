// All-reduce round a ring in about half its hops, for a range too small for its bytes to count.
#pragma once

#include "schedule/group.hpp"

namespace toroid::schedule {

// All-reduce of `partial` (each member's own, overwritten with the total) round a ring of more
// than 2, every member its own root (ring_flood.cpp): about k/2 hops where a reduce-scatter and
// an all-gather take k, each link direction carrying the range k/2 times instead of once. For
// ranges that cross a link in less than a hop's latency (the last row of a torus's all-reduce,
// where the rows before have cut the range by their sizes). Uses scratch [scratch_at,
// scratch_at + 5·partial.count), tags `tag` (rightward) and `tag + 1`. Returns the next free
// phase.
std::uint32_t append_ring_flood_allreduce(Schedule& s, const Group& g, int tag, Chunk partial,
                                          std::uint64_t scratch_at, std::uint32_t phase);

}  // namespace toroid::schedule
