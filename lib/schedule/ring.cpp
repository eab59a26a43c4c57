// Ring collectives.
//
// p members in a ring; member i owns block Bi. Direction d = +1 shown, p = 4:
//
//   reduce-scatter, step s = 0..p-2: member i sends partial block B(i-s-1) to i+1 and
//   receives B(i-s-2) from i-1, reducing it with its own input for that block. After p-1
//   steps member i holds Bi reduced over all members.
//
//      step 0:  m0 --B3--> m1 --B0--> m2 --B1--> m3 --B2--> m0
//      step 1:  m0 --B2--> m1 --B3--> m2 --B0--> m3 --B1--> m0     (partials grow)
//      step 2:  m0 --B1--> m1 --B2--> m2 --B3--> m3 --B0--> m0     m_i now owns B_i
//
//   all-gather, step s = 0..p-2: member i sends B(i-s) (its own at s = 0, else the block it
//   received in the previous step) and receives B(i-s-1).
//
// Each step is one phase: its send reads a block written in an earlier phase and its
// receive writes a different block, so the executor may run both at once and pipeline each
// in segments. Empty blocks (count < p) are skipped on both sides alike.
#include "schedule/ring.hpp"

namespace toroid::schedule {

std::uint32_t append_ring_reduce_scatter(Schedule& s, const Group& g, const Blocks& blocks, int d,
                                         int tag, const Source& from, Buf acc, Chunk result,
                                         std::uint32_t phase) {
  const int p = g.size(), i = g.position;
  if (p == 1) return phase + (append_move(s, from.chunk(s, blocks[0]), result, phase) ? 1 : 0);
  const int next = g.members[ring_position(i + d, p)], prev = g.members[ring_position(i - d, p)];
  for (int step = 0; step < p - 1; ++step, ++phase) {
    const int sent = ring_position(i - d * (step + 1), p),
              got = ring_position(i - d * (step + 2), p);
    const Chunk out = step == 0 ? from.chunk(s, blocks[sent]) : chunk(acc, blocks[sent]);
    append_transfer(s, Kind::send, next, tag, phase, out, {});
    const Chunk local = from.chunk(s, blocks[got]);
    const Chunk into = step == p - 2 ? result : chunk(acc, blocks[got]);
    if (local.count > 0) s.steps.push_back({Kind::recv_reduce, prev, tag, phase, local, into});
  }
  return phase;
}

std::uint32_t append_ring_allgather(Schedule& s, const Group& g, const Blocks& blocks, int d,
                                    int tag, Chunk own, const Source& out, std::uint32_t phase) {
  const int p = g.size(), i = g.position;
  const Chunk own_place = out.chunk(s, blocks[i]);
  const bool moved = append_move(s, own, own_place, phase);
  if (p == 1) return phase + (moved ? 1 : 0);
  const int next = g.members[ring_position(i + d, p)], prev = g.members[ring_position(i - d, p)];
  for (int step = 0; step < p - 1; ++step, ++phase) {
    const Chunk send = step == 0 ? own : out.chunk(s, blocks[ring_position(i - d * step, p)]);
    append_transfer(s, Kind::send, next, tag, phase, send, {});
    const Chunk recv = out.chunk(s, blocks[ring_position(i - d * (step + 1), p)]);
    append_transfer(s, Kind::recv, prev, tag, phase, {}, recv);
  }
  return phase;
}

}  // namespace toroid::schedule
