// Ring reduce-scatter and all-gather over a group, in one direction.
#pragma once

#include "schedule/group.hpp"

namespace toroid::schedule {

// Reduce-scatter `blocks` around the ring (direction +1: send to the next member, receive from
// the previous; -1 the other way). The local contribution is read from `from`, partial sums are
// kept in `acc` at the blocks' offsets, and the fully reduced own block is written to `result`.
// Returns the first phase after the ring's steps.
std::uint32_t append_ring_reduce_scatter(Schedule& s, const Group& g, const Blocks& blocks,
                                         int direction, int tag, const Source& from, Buf acc,
                                         Chunk result, std::uint32_t phase);

// All-gather `blocks` around the ring: every block ends in `out` at its offset (through out's
// Gather, where it has one, at that offset's runs: received there in place); the own block is
// read from `own` (and copied into place first when it lives elsewhere).
std::uint32_t append_ring_allgather(Schedule& s, const Group& g, const Blocks& blocks,
                                    int direction, int tag, Chunk own, const Source& out,
                                    std::uint32_t phase);

}  // namespace toroid::schedule
