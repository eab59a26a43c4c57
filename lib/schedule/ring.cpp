// Ring collectives.
//
// p ranks in a ring; the region is cut into p blocks B0..B(p-1) (block rule of block_of);
// rank i owns Bi. Direction d = +1 shown, p = 4:
//
//   reduce-scatter, step s = 0..p-2: rank i sends partial block B(i-s-1) to i+1 and
//   receives B(i-s-2) from i-1, reducing it with its own input for that block. After p-1
//   steps rank i holds Bi reduced over all ranks.
//
//      step 0:  r0 --B3--> r1 --B0--> r2 --B1--> r3 --B2--> r0
//      step 1:  r0 --B2--> r1 --B3--> r2 --B0--> r3 --B1--> r0     (partials grow)
//      step 2:  r0 --B1--> r1 --B2--> r2 --B3--> r3 --B0--> r0     r_i now owns B_i
//
//   all-gather, step s = 0..p-2: rank i sends B(i-s) (its own at s = 0, else the block it
//   received in the previous step) and receives B(i-s-1).
//
// Each step is one phase: its send reads a block written in an earlier phase and its
// receive writes a different block, so the executor may run both at once and pipeline each
// in segments. Empty blocks (count < p) are skipped on both sides alike.
#include "schedule/ring.hpp"

#include "toroid/collectives.hpp"

namespace toroid::schedule {
namespace {

int wrap(int v, int p) { return ((v % p) + p) % p; }

Chunk block_chunk(Buf buf, Region region, int p, int j) {
  const Block b = block_of(region.count, p, j);
  return {buf, region.offset + b.offset, b.count};
}

bool same_place(const Chunk& a, const Chunk& b) { return a.buf == b.buf && a.offset == b.offset; }

}  // namespace

std::uint32_t append_ring_reduce_scatter(Schedule& s, const Ring& ring, Region region, Buf from,
                                         Buf acc, Chunk result, std::uint32_t phase) {
  const int p = ring.size(), i = ring.position, d = ring.direction;
  if (p == 1) {
    const Chunk all{from, region.offset, region.count};
    if (region.count > 0 && !same_place(all, result))
      s.steps.push_back({Kind::copy, -1, 0, phase++, all, result});
    return phase;
  }
  const int next = ring.members[wrap(i + d, p)], prev = ring.members[wrap(i - d, p)];
  for (int step = 0; step < p - 1; ++step, ++phase) {
    const int sent = wrap(i - d * (step + 1), p), got = wrap(i - d * (step + 2), p);
    const Chunk out = block_chunk(step == 0 ? from : acc, region, p, sent);
    if (out.count > 0) s.steps.push_back({Kind::send, next, ring.tag, phase, out, {}});
    const Chunk local = block_chunk(from, region, p, got);
    const Chunk into = step == p - 2 ? result : block_chunk(acc, region, p, got);
    if (local.count > 0) s.steps.push_back({Kind::recv_reduce, prev, ring.tag, phase, local, into});
  }
  return phase;
}

std::uint32_t append_ring_allgather(Schedule& s, const Ring& ring, Region region, Chunk own,
                                    Buf out, std::uint32_t phase) {
  const int p = ring.size(), i = ring.position, d = ring.direction;
  const Chunk own_place = block_chunk(out, region, p, i);
  const bool needs_copy = own.count > 0 && !same_place(own, own_place);
  if (p == 1) {
    if (needs_copy) s.steps.push_back({Kind::copy, -1, 0, phase++, own, own_place});
    return phase;
  }
  const int next = ring.members[wrap(i + d, p)], prev = ring.members[wrap(i - d, p)];
  if (needs_copy) s.steps.push_back({Kind::copy, -1, 0, phase, own, own_place});
  for (int step = 0; step < p - 1; ++step, ++phase) {
    const Chunk send = step == 0 ? own : block_chunk(out, region, p, wrap(i - d * step, p));
    if (send.count > 0) s.steps.push_back({Kind::send, next, ring.tag, phase, send, {}});
    const Chunk recv = block_chunk(out, region, p, wrap(i - d * (step + 1), p));
    if (recv.count > 0) s.steps.push_back({Kind::recv, prev, ring.tag, phase, {}, recv});
  }
  return phase;
}

Schedule build_ring(Collective c, int rank, int nranks, std::uint64_t count, bool in_place,
                    bool average) {
  Schedule s;
  s.algorithm = "ring";
  s.rank = rank;
  s.nranks = nranks;
  Ring ring;
  for (int r = 0; r < nranks; ++r) ring.members.push_back(r);
  ring.position = rank;
  const Region all{0, count};
  const Block own = block_of(count, nranks, rank);
  const Chunk own_in_out{Buf::output, own.offset, own.count};
  std::uint32_t phase = 0;
  auto scale = [&](Chunk c) {
    if (average && c.count > 0) s.steps.push_back({Kind::scale, -1, 0, phase++, {}, c, static_cast<std::uint32_t>(nranks)});
  };
  switch (c) {
    case Collective::allreduce:
      phase = append_ring_reduce_scatter(s, ring, all, Buf::input, Buf::output, own_in_out, phase);
      scale(own_in_out);
      append_ring_allgather(s, ring, all, own_in_out, Buf::output, phase);
      break;
    case Collective::reduce_scatter: {
      const Chunk result = in_place ? own_in_out : Chunk{Buf::output, 0, own.count};
      if (!in_place) s.scratch_count = count;
      phase = append_ring_reduce_scatter(s, ring, all, Buf::input,
                                         in_place ? Buf::output : Buf::scratch, result, phase);
      scale(result);
      break;
    }
    case Collective::allgather: {
      const Chunk own_src = in_place ? own_in_out : Chunk{Buf::input, 0, own.count};
      append_ring_allgather(s, ring, all, own_src, Buf::output, phase);
      break;
    }
  }
  return s;
}

}  // namespace toroid::schedule

