// Reduce-scatter and all-gather along a line: a torus dimension without wraparound (mesh),
// where only physical neighbours may talk.
#pragma once

#include "schedule/group.hpp"

namespace toroid::schedule {

// Same contract as the ring versions (ring.hpp); uses tags `tag` (rightward) and `tag + 1`
// (leftward).
std::uint32_t append_line_reduce_scatter(Schedule& s, const Group& g, const Blocks& blocks, int tag,
                                         const Source& from, Buf acc, Chunk result,
                                         std::uint32_t phase);
std::uint32_t append_line_allgather(Schedule& s, const Group& g, const Blocks& blocks, int tag,
                                    Chunk own, Buf out, std::uint32_t phase);

}  // namespace toroid::schedule
