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
                                    Chunk own, const Source& out, std::uint32_t phase);

// All-reduce along a line of more than 2: every member's own partial in `partial`, reduced
// towards the middle member from both ends (in place there: `partial` is overwritten), the total
// sent back out both ways into `total` (line.cpp). The two must not overlap: the total arrives
// while the partials still pass. Tags `tag` (rightward) and `tag + 1` (leftward). Returns the
// next free phase.
std::uint32_t append_line_allreduce(Schedule& s, const Group& g, int tag, Chunk partial,
                                    Chunk total, std::uint32_t phase);

}  // namespace toroid::schedule
