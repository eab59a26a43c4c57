// Ring reduce-scatter / all-gather / all-reduce schedules over any group of ranks.
#pragma once

#include <vector>

#include "schedule/step.hpp"

namespace toroid::schedule {

// A ring over `members` (communicator ranks, in ring order). Direction +1 sends to the next
// member and receives from the previous one; -1 the other way round.
struct Ring {
  std::vector<int> members;
  int position = 0;  // my index in members
  int direction = 1;
  int tag = 0;
  int size() const { return static_cast<int>(members.size()); }
};

// The slice of the full vector that a ring works on. Block j of the region (block_of(count,
// ring size, j), offset relative to the region) belongs to ring member j.
struct Region {
  std::uint64_t offset = 0;
  std::uint64_t count = 0;
};

// Reduce-scatter `region` around the ring, starting at `phase`.
// Reads the local contribution from `from`, keeps partial sums in `acc` (same offsets as the
// full vector) and writes the fully reduced own block to `result`. Returns the next free phase.
std::uint32_t append_ring_reduce_scatter(Schedule& s, const Ring& ring, Region region, Buf from,
                                         Buf acc, Chunk result, std::uint32_t phase);

// All-gather `region` around the ring, starting at `phase`: every member's block ends in `out`
// at its place. The own block is read from `own` (copied into place first when it is elsewhere).
std::uint32_t append_ring_allgather(Schedule& s, const Ring& ring, Region region, Chunk own,
                                    Buf out, std::uint32_t phase);

// Whole-communicator ring collectives (members 0..nranks-1 in rank order).
Schedule build_ring(Collective c, int rank, int nranks, std::uint64_t count, bool in_place,
                    bool average);

}  // namespace toroid::schedule
