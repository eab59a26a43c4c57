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
// The phases write the output and a scratch copy in turn, the last one the output; the slots
// a chip keeps are copied across. Direct is the same with one dimension of all p ranks.
#include <fmt/format.h>

#include "schedule/build.hpp"
#include "schedule/group.hpp"

namespace toroid::schedule {
namespace {

// One dimension of the phases: its length and my row along it (rank of each coordinate).
struct Row {
  int size;
  int mine;  // my coordinate along it
  std::vector<int> members;
};

}  // namespace

Schedule build_alltoall(Algorithm a, const Spec& r, const Context& ctx) {
  Schedule s;
  const int p = ctx.nranks();
  const std::uint64_t b = r.count / static_cast<std::uint64_t>(p);
  std::vector<Row> rows;
  if (a == Algorithm::direct) {
    rows.push_back({p, ctx.rank, {}});
    for (int q = 0; q < p; ++q) rows.back().members.push_back(q);
  } else {
    const std::vector<int> at = ctx.topology.coord_of(ctx.rank);
    for (int d = 0; d < ctx.topology.dimensions(); ++d)
      if (ctx.topology.size(d) > 1)
        rows.push_back({ctx.topology.size(d), at[static_cast<std::size_t>(d)],
                        ctx.topology.line_through(ctx.rank, d)});
  }
  if (b == 0) return s;
  if (rows.empty()) {  // one rank: its own block
    if (!r.in_place)
      s.steps.push_back({Kind::copy, -1, 0, 0, {Buf::input, 0, b}, {Buf::output, 0, b}});
    return s;
  }
  const auto phases = static_cast<int>(rows.size());
  if (phases > 1) s.scratch_count = r.count;
  // The slots with coordinate x along the row of stride `before` (A') and length k: runs of
  // `before` blocks, one per z''.
  const auto slots = [&](Buf buf, std::uint64_t before, int k, int x) {
    std::vector<Block> runs;
    const std::uint64_t stride = before * static_cast<std::uint64_t>(k);
    for (std::uint64_t first = before * static_cast<std::uint64_t>(x);
         first < static_cast<std::uint64_t>(p); first += stride)
      runs.push_back({first * b, before * b});
    return gathered_chunk(s, buf, runs);
  };
  Buf from = Buf::input;
  std::uint64_t before = 1;
  for (int d = 0; d < phases; ++d) {
    const Row& row = rows[static_cast<std::size_t>(d)];
    const Buf to = (phases - 1 - d) % 2 == 0 ? Buf::output : Buf::scratch;
    const auto phase = static_cast<std::uint32_t>(d);
    for (int x = 0; x < row.size; ++x) {
      if (x == row.mine) continue;
      const int peer = row.members[static_cast<std::size_t>(x)];
      s.steps.push_back({Kind::send, peer, 0, phase, slots(from, before, row.size, x), {}});
      s.steps.push_back({Kind::recv, peer, 0, phase, {}, slots(to, before, row.size, x)});
    }
    // The slots I keep, run by run.
    const std::uint64_t stride = before * static_cast<std::uint64_t>(row.size);
    for (std::uint64_t first = before * static_cast<std::uint64_t>(row.mine);
         first < static_cast<std::uint64_t>(p); first += stride)
      s.steps.push_back(
          {Kind::copy, -1, 0, phase, {from, first * b, before * b}, {to, first * b, before * b}});
    from = to;
    before *= static_cast<std::uint64_t>(row.size);
  }
  return s;
}

}  // namespace toroid::schedule
