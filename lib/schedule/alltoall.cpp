// All-to-all (Collective::alltoall): rank r's input is p blocks of b = n/p elements, block j
// for rank j; its output's block i is rank i's block r.
//
// direct: every block straight to its rank, all at once (p − 1 messages a rank), its own
// block copied.
//
// torus2d: one phase per dimension longer than one chip, blocks aggregated. In the phase of
// dimension d a chip sends each member of its row along d, in one message, every block it
// holds whose destination has that member's coordinate along d: p/k_d blocks. A chip sends
// Σ(k_d − 1) messages where direct sends p − 1 (62 against 1023 on 32x32), each block crossing
// one row a dimension.
//
// Slots: before the phase of d a chip holds p blocks, slot a' + A'·x + A'·k_d·z'' holding the
// block from source coordinates a' (along the dimensions before d, mixed radix, first fastest;
// along the others the chip's own) to destination coordinates x (along d) and z'' (after d; the
// earlier ones the chip's own), A' = Π_{e<d} k_e. The phase sends member q the slots with
// x = q's coordinate and receives q's into the same slots: the layout after it is this one with
// d done. Before the first phase the slots are the input's blocks (by destination rank), after
// the last the output's (by source rank), so no block is ever rearranged locally.
//
//   4x2, chip 0 (x, y) = (0, 0), slots 0..7:
//     phase x: sends member x=1 slots {1, 5} (its blocks for chips 1 and 5), x=2 {2, 6},
//              x=3 {3, 7}; receives into the same slots; keeps {0, 4}
//     phase y: now holds, from sources x = 0..3, blocks for (·, y): sends member y=1 slots
//              4..7 (sources 0..3's blocks for chip 4), keeps 0..3, receives 4..7 from chip 4
//
// The slots' layout does not depend on the order the dimensions are taken in: a block (source
// i, destination j) held by a chip, the dimensions done holding i's coordinates and the others
// j's, sits at the rank-order index of those coordinates. So torus2d_both takes one part of
// every block through each order x-y-z, y-z-x, z-x-y (one part per dimension, its share of each
// block), and in every phase each dimension's rows carry a part: all links busy, as torus2d_both
// keeps them in the all-reduce.
//
// The phases write the output and a scratch copy in turn, the last one the output; the slots
// a chip keeps are copied across. Direct is the same with one dimension of all p ranks.
//
// ring: torus2d_both's parts and slots, each phase a relay along the row instead of an
// exchange, so that a chip only ever talks to its two neighbours along each dimension (where
// an exchange would skip a chip: a line of more than 2, a ring of more than 3). Terms, along a
// row of k chips: q = the elements of one member's slots (p/k blocks of the part's share); a
// chip's *reach* in a direction = how many members its slots go to that way: on a line every
// one on that side, on a ring the nearer half, the opposite member of an even ring up from the
// even chips and down from the odd ones (so both directions carry alike); *beyond* = the members
// past the receiving chip that a source's slots still have to reach.
//
//   line of 5, going up, chip 1:  own: slots for 2 → chip 2's slots, slots for 4, 3 (packed,
//                                 farthest first) → chip 2's stage
//   step 1, from chip 0:          its slots for 1 → my slots; for 4, 3, 2 → my stage
//   step 2, forward to chip 2:    stage [4 3] → chip 2's stage, then stage [2] → its slots
//
// Each direction carries what the shortest paths carry: on a line link x → x+1 takes
// (x+1)(k−1−x)·q, as routed messages would. The stage's far part goes first on the channel and
// follows its receive segment by segment (it streams on as it lands); the pack is made while
// the next chip's own slots go. Scratch: two packs and two pairs of stages (a stage is written
// again two steps later, once its forwards have read it), (k − 2)·q elements each, per part.
//
// bruck (Bruck et al., 1997): ceil(log2 p) rounds on any p, for small blocks, where a message's
// cost is its latency. A rank's slot i holds, at first, its block for rank r + i (mod p). In
// round k it sends every slot i with bit k set to rank r + 2^k and receives the same slots from
// rank r − 2^k, so after the rounds below k slot i holds the block of source r − (i mod 2^k)
// for r + (i − i mod 2^k), and after the last, of source r − i for r itself:
//
//   p = 5, rank 0, slots 0..4 (block for 0+i from 0):   0→0 0→1 0→2 0→3 0→4
//     round 0 (to 1, from 4): slots 1, 3               0→0 4→0 0→2 4→2 0→4
//     round 1 (to 2, from 3): slots 2, 3               0→0 4→0 3→0 2→0 0→4
//     round 2 (to 4, from 1): slot 4                   0→0 4→0 3→0 2→0 1→0
//     output block (0 − i) mod 5 ← slot i
//
// A rank sends about p/2 blocks a round, log2(p)·p/2 in all against direct's p − 1, in log2(p)
// messages against p − 1. The slots live in scratch in slot order, so every message is one
// ascending gathered chunk; the input is rotated into them first and the output taken out of
// them last (two local copies of the vector, as Bruck's algorithm has). A slot sent and
// received in the same round cannot stay in place: the scratch holds two copies of the slots,
// and a slot moves to the other one at each receive, so it sits in copy popcount(i mod 2^k) mod
// 2 before round k; each round sends the slots of either copy in a message of its own (tags 0
// and 1), each received into the other copy.
//
// hierarchical (node-aware, as Tutel's two-dimensional all-to-all): the ranks of a node first
// exchange among themselves so that each holds what its node sends to the ranks of its own local
// index on every node, then each exchanges with the ranks of its local index on the other nodes,
// in one message per node. Nodes of L ranks each, N nodes (local index = position among the
// node's ranks, ascending):
//
//   node 0: r0 r1      phase 1 (inside nodes): r0 sends r1 its blocks for r1 and r3 (the
//   node 1: r2 r3      ranks of local index 1), receives r1's for r0 and r2
//                      phase 2 (across nodes): r0 sends r2 the blocks of r0 and r1 for r2,
//                      receives r2's and r3's for r0
//
// L − 1 messages of N blocks inside the node and N − 1 of L blocks across, where direct sends
// p − 1, (N − 1)·L of them across nodes. In scratch, after phase 1,
// slot l·N + j holds the block from my node's rank of local index l for the j-th rank (in rank
// order) of my local index: what a node peer sends is one run, and what goes to one node is
// one run of every N slots, arriving in its senders' rank order straight into the output.
//
// alltoallv (Spec::blocks): direct only, each rank's own counts and offsets. A chip that
// forwarded others' blocks would need their counts, which only their senders know. Rank r
// sends to r+1, r+2, ... and receives from r−1, r−2, ... (mod p), so at any moment the ranks
// send to p different ranks rather than all to rank 0 first. Every peer gets one message, an
// empty one too (Schedule::exact_messages): a receiver learns every sender's count from what
// arrives, and a disagreement cannot leave a message unmatched.
//
//   3 ranks, rank 1:  send in[off1[2], +cnt1[2]) → 2,  in[off1[0], +cnt1[0]) → 0
//                     recv out[roff1[0], +rcnt1[0]) ← 0, out[roff1[2], +rcnt1[2]) ← 2
//                     copy in[off1[1], +cnt1[1]) → out[roff1[1], ...]
#include <fmt/format.h>

#include <bit>
#include <functional>
#include <map>

#include "schedule/build.hpp"
#include "schedule/group.hpp"
#include "toroid/error.hpp"

namespace toroid::schedule {
namespace {

// One dimension of the phases: its length, my row along it (rank of each coordinate) and its
// stride in rank order (the product of the sizes before it).
struct ExchangeRow {
  int size;
  int mine;  // my coordinate along it
  std::vector<int> members;
  std::uint64_t stride;
  bool line = false;  // a mesh dimension (no wraparound): ring relays it one way each side
};

}  // namespace

namespace {

// The Bruck schedule (the block comment above).
Schedule build_bruck(const Spec& r, const Context& ctx) {
  Schedule s;
  const int p = ctx.nranks(), me = ctx.rank;
  const auto P = static_cast<std::uint64_t>(p);
  const std::uint64_t b = r.count / P;
  if (b == 0) return s;
  if (p == 1) {
    s.steps.push_back({Kind::copy, -1, 0, 0, {Buf::input, 0, b}, {Buf::output, 0, b}});
    return s;
  }
  s.scratch_count = 2 * r.count;
  const auto slot = [&](int copy, std::uint64_t i) {
    return static_cast<std::uint64_t>(copy) * r.count + i * b;
  };
  // Slot i <- input block me + i: blocks [me, p) then [0, me).
  const std::uint64_t tail = P - static_cast<std::uint64_t>(me);
  s.steps.push_back(
      {Kind::copy, -1, 0, 0, {Buf::input, me * b, tail * b}, {Buf::scratch, 0, tail * b}});
  if (me > 0)
    s.steps.push_back(
        {Kind::copy, -1, 0, 0, {Buf::input, 0, me * b}, {Buf::scratch, slot(0, tail), me * b}});
  std::uint32_t phase = 1;
  for (std::uint64_t bit = 1; bit < P; bit <<= 1, ++phase) {
    const int to = static_cast<int>((static_cast<std::uint64_t>(me) + bit) % P);
    const int from = static_cast<int>((static_cast<std::uint64_t>(me) + P - bit % P) % P);
    for (int copy = 0; copy < 2; ++copy) {
      std::vector<Block> sent, received;
      for (std::uint64_t i = 1; i < P; ++i) {
        if ((i & bit) == 0 || std::popcount(i & (bit - 1)) % 2 != copy) continue;
        sent.push_back({slot(copy, i), b});
        received.push_back({slot(1 - copy, i), b});
      }
      if (sent.empty()) continue;
      s.steps.push_back({Kind::send, to, copy, phase, gathered_chunk(s, Buf::scratch, sent), {}});
      s.steps.push_back(
          {Kind::recv, from, copy, phase, {}, gathered_chunk(s, Buf::scratch, received)});
    }
  }
  // Output block me − i <- slot i, from the copy its last receive left it in.
  for (std::uint64_t i = 0; i < P; ++i) {
    const std::uint64_t source = (static_cast<std::uint64_t>(me) + P - i) % P;
    s.steps.push_back({Kind::copy,
                       -1,
                       0,
                       phase,
                       {Buf::scratch, slot(std::popcount(i) % 2, i), b},
                       {Buf::output, source * b, b}});
  }
  return s;
}

// The hierarchical schedule (the block comment above).
Schedule build_hierarchical_alltoall(const Spec& r, const Context& ctx) {
  Schedule s;
  const int p = ctx.nranks(), me = ctx.rank;
  const auto P = static_cast<std::uint64_t>(p);
  const std::uint64_t b = r.count / P;
  std::vector<int> node = ctx.node_of_rank;
  if (node.empty()) node.assign(static_cast<std::size_t>(p), 0);
  std::map<int, std::vector<int>> members;  // node -> its ranks, ascending
  for (int q = 0; q < p; ++q) members[node[static_cast<std::size_t>(q)]].push_back(q);
  const std::size_t L = members.begin()->second.size();
  for (const auto& [n, m] : members)
    if (m.size() != L)
      throw InvalidArgument(fmt::format(
          "algorithm hierarchical cannot run alltoall on rank {}: its nodes hold {} and {} ranks; "
          "the hierarchical all-to-all needs as many ranks on every node",
          me, L, m.size()));
  if (b == 0) return s;
  const auto N = static_cast<std::uint64_t>(members.size());
  std::vector<std::uint64_t> local(P);  // every rank's local index
  for (const auto& [n, m] : members)
    for (std::size_t l = 0; l < m.size(); ++l) local[static_cast<std::size_t>(m[l])] = l;
  const std::vector<int>& mine = members[node[static_cast<std::size_t>(me)]];
  const std::uint64_t my_local = local[static_cast<std::size_t>(me)];
  // The ranks of local index l, ascending (slot j of a node peer's run: the j-th of them).
  const auto of_local = [&](std::uint64_t l) {
    std::vector<int> q;
    for (int x = 0; x < p; ++x)
      if (local[static_cast<std::size_t>(x)] == l) q.push_back(x);
    return q;
  };
  s.scratch_count = r.count;
  // Phase 0, inside the node: to the peer of local index l my blocks for the ranks of l.
  for (std::uint64_t l = 0; l < L; ++l) {
    std::vector<Block> blocks;
    for (int q : of_local(l)) blocks.push_back({static_cast<std::uint64_t>(q) * b, b});
    const Chunk from_input = gathered_chunk(s, Buf::input, blocks);
    if (l == my_local) {
      s.steps.push_back(
          {Kind::copy, -1, 0, 0, from_input, {Buf::scratch, my_local * N * b, N * b}});
      continue;
    }
    const int peer = mine[static_cast<std::size_t>(l)];
    s.steps.push_back({Kind::send, peer, 0, 0, from_input, {}});
  }
  for (std::uint64_t l = 0; l < L; ++l) {
    if (l == my_local) continue;
    const int peer = mine[static_cast<std::size_t>(l)];
    s.steps.push_back({Kind::recv, peer, 0, 0, {}, {Buf::scratch, l * N * b, N * b}});
  }
  // Phase 1, across nodes: to the j-th rank of my local index, slots l·N + j for every l; from
  // it, its node's blocks for me, into their senders' places in the output.
  const std::vector<int> same = of_local(my_local);
  for (std::uint64_t j = 0; j < N; ++j) {
    const int peer = same[static_cast<std::size_t>(j)];
    std::vector<Block> slots, places;
    for (std::uint64_t l = 0; l < L; ++l) slots.push_back({(l * N + j) * b, b});
    for (int src : members[node[static_cast<std::size_t>(peer)]])
      places.push_back({static_cast<std::uint64_t>(src) * b, b});
    if (peer == me) {  // my node's blocks for me, one copy each (a copy gathers one side only)
      for (std::size_t k = 0; k < slots.size(); ++k)
        s.steps.push_back({Kind::copy,
                           -1,
                           0,
                           1,
                           {Buf::scratch, slots[k].offset, b},
                           {Buf::output, places[k].offset, b}});
      continue;
    }
    s.steps.push_back({Kind::send, peer, 1, 1, gathered_chunk(s, Buf::scratch, slots), {}});
    s.steps.push_back({Kind::recv, peer, 1, 1, {}, gathered_chunk(s, Buf::output, places)});
  }
  return s;
}

// ring's relay along one row (the block comment): sub-phases phase .. phase + 2k (the slots a
// chip keeps are copied by the caller). `slots(x)`: the runs of the slots with coordinate x;
// `q`: their elements; scratch from `room` on holds the two packs and the two pairs of stages,
// (k − 2)·q elements each.
//
// One channel to each neighbour (tag `tag`), its messages in this order: my blocks for it,
// my pack, then per step the stage's forwarded part and the next chip's own q elements. Each
// message has a sub-phase of its own (no two steps of a phase share a channel): the sends of my
// blocks 1 and 2, step t's receives 2t + 1 and 2t + 2 (as they were sent), its forwards 2t + 3
// and 2t + 4. On one channel the forwarded part goes first and streams on as it lands; on two,
// the next chip's blocks shared the link with it and delayed the stream (ring of 12, 24 MiB:
// 550 us against 518).
void append_relay(Schedule& s, const ExchangeRow& row, int tag, std::uint32_t phase, Buf from,
                  Buf to, const std::function<std::vector<Block>(int)>& slots, std::uint64_t room,
                  std::uint64_t q) {
  const int k = row.size, m = row.mine;
  const std::uint64_t area = static_cast<std::uint64_t>(k - 2) * q;
  const auto member = [&](int x) { return row.members[static_cast<std::size_t>((x % k + k) % k)]; };
  const auto slots_at = [&](int x) { return slots((x % k + k) % k); };
  const auto sub = [&](int n) { return phase + static_cast<std::uint32_t>(n); };
  for (int dir : {+1, -1}) {  // towards higher coordinates, then lower
    const int side = dir > 0 ? 0 : 1;
    // How many destinations chip c's blocks reach in this direction: on a line every one on
    // that side, on a ring the nearer half; on a ring of even length the one opposite goes up
    // from the even chips and down from the odd ones, so both directions carry alike.
    const auto reach = [&](int c) {
      if (row.line) return dir > 0 ? k - 1 - c : c;
      const int opposite = k % 2 == 0 && (((c % k) + k) % 2 == 0) == (dir > 0) ? 1 : 0;
      return (k - 1) / 2 + opposite;
    };
    const std::uint64_t pack = room + static_cast<std::uint64_t>(side) * area;
    const auto stage = [&](int t) {
      return room +
             (2 + 2 * static_cast<std::uint64_t>(side) + static_cast<std::uint64_t>(t % 2)) * area;
    };
    const int next = m + dir, prev = m - dir;
    // Sub-phase 0 packs my blocks for the chips past the next, farthest first; then the next
    // chip gets its own blocks (at once) and the pack (once made).
    if (reach(m) >= 1) {
      s.steps.push_back(
          {Kind::send, member(next), tag, sub(1), gathered_chunk(s, from, slots_at(next)), {}});
      if (reach(m) >= 2) {
        for (int d = 2; d <= reach(m); ++d)
          s.steps.push_back(
              {Kind::copy,
               -1,
               0,
               phase,
               gathered_chunk(s, from, slots_at(m + dir * d)),
               {Buf::scratch, pack + static_cast<std::uint64_t>(reach(m) - d) * q, q}});
        s.steps.push_back({Kind::send,
                           member(next),
                           tag,
                           sub(2),
                           {Buf::scratch, pack, static_cast<std::uint64_t>(reach(m) - 1) * q},
                           {}});
      }
    }
    // Step t: from the chip before, source m − dir·t's blocks for me (into their slots) and,
    // where some go further, for those (into a stage, farthest first). Step t + 1 forwards the
    // stage: all but its last q elements to the next chip's stage, then the last q into the
    // next chip's slots.
    for (int t = 1;; ++t) {
      const int source = m - dir * t;
      if (row.line ? source < 0 || source >= k : t > k / 2) break;
      if (!row.line && t > reach(source)) continue;  // its blocks stop short of me
      const int beyond = reach(source) - t;          // destinations past me
      const auto rest = static_cast<std::uint64_t>(std::max(beyond, 0)) * q;
      const Chunk into_slots = gathered_chunk(s, to, slots_at(source));
      const Chunk into_stage{Buf::scratch, stage(t), rest};
      if (t == 1) {  // as the chip before sent its own: its blocks for me first
        s.steps.push_back({Kind::recv, member(prev), tag, sub(3), {}, into_slots});
        if (beyond >= 1) s.steps.push_back({Kind::recv, member(prev), tag, sub(4), {}, into_stage});
      } else {  // as it forwarded them: the stage's part first
        if (beyond >= 1)
          s.steps.push_back({Kind::recv, member(prev), tag, sub(2 * t + 1), {}, into_stage});
        s.steps.push_back({Kind::recv, member(prev), tag, sub(2 * t + 2), {}, into_slots});
      }
      if (beyond < 1) continue;
      if (beyond >= 2)
        s.steps.push_back({Kind::send,
                           member(next),
                           tag,
                           sub(2 * t + 3),
                           {Buf::scratch, stage(t), rest - q},
                           {}});
      s.steps.push_back({Kind::send,
                         member(next),
                         tag,
                         sub(2 * t + 4),
                         {Buf::scratch, stage(t) + rest - q, q},
                         {}});
    }
  }
}

}  // namespace

Schedule build_alltoall(Algorithm a, const Spec& r, const Context& ctx) {
  if (a == Algorithm::bruck) return build_bruck(r, ctx);
  if (a == Algorithm::hierarchical) return build_hierarchical_alltoall(r, ctx);
  Schedule s;
  const int p = ctx.nranks();
  const std::uint64_t b = r.count / static_cast<std::uint64_t>(p);
  std::vector<ExchangeRow> rows;
  if (a == Algorithm::direct) {
    rows.push_back({p, ctx.rank, {}, 1});
    for (int q = 0; q < p; ++q) rows.back().members.push_back(q);
  } else {
    const std::vector<int> at = ctx.topology.coord_of(ctx.rank);
    std::uint64_t stride = 1;
    for (int d = 0; d < ctx.topology.dimensions(); ++d) {
      if (ctx.topology.size(d) > 1)
        rows.push_back({ctx.topology.size(d), at[static_cast<std::size_t>(d)],
                        ctx.topology.line_through(ctx.rank, d), stride,
                        !ctx.topology.ring_along(d)});
      stride *= static_cast<std::uint64_t>(ctx.topology.size(d));
    }
  }
  if (b == 0) return s;
  if (rows.empty()) {  // one rank: its own block
    if (!r.in_place)
      s.steps.push_back({Kind::copy, -1, 0, 0, {Buf::input, 0, b}, {Buf::output, 0, b}});
    return s;
  }
  const auto phases = static_cast<int>(rows.size());
  if (phases > 1) s.scratch_count = r.count;
  // ring relays along every row where an exchange would skip a chip (a line of more than 2, a
  // ring of more than 3); its room (the packs and the stages) follows the slots' scratch.
  const auto relays = [&](const ExchangeRow& row) {
    return a == Algorithm::ring && row.size > (row.line ? 2 : 3);
  };
  std::uint64_t relay_room = 0;  // per part, for the largest share
  for (const ExchangeRow& row : rows)
    if (relays(row))
      relay_room = std::max(
          relay_room, 6 * static_cast<std::uint64_t>(row.size - 2) *
                          (static_cast<std::uint64_t>(p) / static_cast<std::uint64_t>(row.size)));
  // Elements [lo, lo + len) of every block in the slots with coordinate x along `row`: runs of
  // `stride` blocks (whole blocks: one run each).
  const auto runs_of = [&](const ExchangeRow& row, int x, std::uint64_t lo, std::uint64_t len) {
    std::vector<Block> runs;
    const std::uint64_t step = row.stride * static_cast<std::uint64_t>(row.size);
    for (std::uint64_t first = row.stride * static_cast<std::uint64_t>(x);
         first < static_cast<std::uint64_t>(p); first += step) {
      if (len == b) {
        runs.push_back({first * b, row.stride * b});
        continue;
      }
      for (std::uint64_t blk = first; blk < first + row.stride; ++blk)
        runs.push_back({blk * b + lo, len});
    }
    return runs;
  };
  // Parts: torus2d and direct one, the dimensions in order; torus2d_both one per dimension,
  // part i taking its share of every block through the dimensions from i on, so that in every
  // phase each dimension's rows carry a part.
  const int parts = a == Algorithm::torus2d_both || a == Algorithm::ring ? phases : 1;
  const std::uint64_t relay_base = s.scratch_count;
  if (relay_room > 0)
    s.scratch_count = relay_base + static_cast<std::uint64_t>(parts) * relay_room * b;
  for (int part = 0; part < parts; ++part) {
    const Block share = block_of(b, parts, part);
    if (share.count == 0) continue;
    Buf from = Buf::input;
    std::uint32_t phase = 0;  // a relay takes 2k + 1 of them, an exchange one
    for (int t = 0; t < phases; ++t) {
      const ExchangeRow& row = rows[static_cast<std::size_t>((part + t) % phases)];
      const Buf to = (phases - 1 - t) % 2 == 0 ? Buf::output : Buf::scratch;
      const auto keep = [&] {  // the slots I keep, copied across in the phase's first step
        for (const Block& run : runs_of(row, row.mine, share.offset, share.count))
          s.steps.push_back({Kind::copy,
                             -1,
                             0,
                             phase,
                             {from, run.offset, run.count},
                             {to, run.offset, run.count}});
      };
      if (relays(row)) {
        const auto slots = [&](int x) { return runs_of(row, x, share.offset, share.count); };
        append_relay(
            s, row, part, phase, from, to, slots,
            relay_base + static_cast<std::uint64_t>(part) * relay_room * b,
            static_cast<std::uint64_t>(p) / static_cast<std::uint64_t>(row.size) * share.count);
        keep();
        phase += 2 * static_cast<std::uint32_t>(row.size) + 1;
        from = to;
        continue;
      }
      for (int x = 0; x < row.size; ++x) {
        if (x == row.mine) continue;
        const int peer = row.members[static_cast<std::size_t>(x)];
        s.steps.push_back({Kind::send,
                           peer,
                           part,
                           phase,
                           gathered_chunk(s, from, runs_of(row, x, share.offset, share.count)),
                           {}});
        s.steps.push_back({Kind::recv,
                           peer,
                           part,
                           phase,
                           {},
                           gathered_chunk(s, to, runs_of(row, x, share.offset, share.count))});
      }
      keep();
      from = to;
      ++phase;
    }
  }
  return s;
}

Schedule build_alltoallv(const VarBlocks& v, const Context& ctx) {
  Schedule s;
  s.exact_messages = true;
  const int p = ctx.nranks(), me = ctx.rank;
  const auto at = [](int q) { return static_cast<std::size_t>(q); };
  for (const auto* list : {&v.send_counts, &v.send_offsets, &v.recv_counts, &v.recv_offsets})
    if (list->size() != at(p))
      throw InvalidArgument(fmt::format(
          "alltoallv on rank {}: its counts and offsets need one entry per rank ({}), got {}", me,
          p, list->size()));
  if (v.send_counts[at(me)] != v.recv_counts[at(me)])
    throw InvalidArgument(fmt::format(
        "alltoallv on rank {}: it sends {} elements to itself but its receive count for itself "
        "is {}",
        me, v.send_counts[at(me)], v.recv_counts[at(me)]));
  for (int k = 1; k < p; ++k) {
    const int to = (me + k) % p, from = (me - k + p) % p;
    s.steps.push_back(
        {Kind::send, to, 0, 0, {Buf::input, v.send_offsets[at(to)], v.send_counts[at(to)]}, {}});
    s.steps.push_back({Kind::recv,
                       from,
                       0,
                       0,
                       {},
                       {Buf::output, v.recv_offsets[at(from)], v.recv_counts[at(from)]}});
  }
  if (v.send_counts[at(me)] > 0)
    s.steps.push_back({Kind::copy,
                       -1,
                       0,
                       0,
                       {Buf::input, v.send_offsets[at(me)], v.send_counts[at(me)]},
                       {Buf::output, v.recv_offsets[at(me)], v.recv_counts[at(me)]}});
  s.algorithm = std::string(to_string(Algorithm::direct));
  s.rank = me;
  s.nranks = p;
  // No dependencies: one phase whose steps read the input and write apart blocks of the output
  // (the caller checks the receive blocks apart). derive_dependencies would find none, at a
  // cost (a sort of every step's memory) an alltoallv pays at each call: 21% of a 2-rank 16 KiB
  // call's time.
  return s;
}

}  // namespace toroid::schedule
