// One-dimensional collectives: a ring over every rank (rank order), or along one torus axis
// (Spec::axes naming at most one dimension longer than one chip; build.cpp).
//
//   all-reduce     = reduce-scatter (partials in the output) + scale (avg) + all-gather
//   reduce-scatter = partials in scratch (out of place) or in the buffer itself (in place)
//   all-gather     = the own block copied into place, then passed around
#include <stdexcept>

#include "schedule/build.hpp"
#include "schedule/dimension.hpp"
#include "schedule/group.hpp"

namespace toroid::schedule {

Schedule build_one_dimension(Algorithm a, const Spec& r, const Context& ctx) {
  Schedule s;
  Group g;
  Links links = a == Algorithm::ring ? Links::ring : Links::bidir_ring;
  if (r.axes) {
    g = group_of(ctx.topology.group_along(ctx.rank, *r.axes), ctx.rank);
    for (int d = 0; d < ctx.topology.dimensions(); ++d)
      if (r.axes->has(d) && ctx.topology.size(d) > 1 && !ctx.topology.ring_along(d))
        links = Links::line;  // no wraparound link to use
  } else {
    for (int q = 0; q < ctx.nranks(); ++q) g.members.push_back(q);
    g.position = ctx.rank;
  }
  // The reduce-scatter and all-gather keep the block rule (block.hpp: rank r's block is the
  // caller's); an all-reduce's blocks are its own, spread evenly: where blocks outnumber the
  // elements, every stretch of members then holds the same pattern of empty blocks, so chips a
  // translation of the torus carries onto each other run moved copies (the simulator runs one
  // chip per class: v5p's 6144-chip ring at 16 KiB ran every chip).
  const Blocks blocks = r.collective == Collective::allreduce ? spread_blocks(0, r.count, g.size())
                                                              : even_blocks(0, r.count, g.size());
  const Block own = blocks[g.position];
  const Chunk own_in_out = chunk(Buf::output, own);
  std::uint32_t phase = 0;
  const auto divisor = static_cast<std::uint32_t>(g.size());
  switch (r.collective) {
    case Collective::allreduce:
      phase =
          append_reduce_scatter(s, links, g, blocks, 0, Buf::input, Buf::output, own_in_out, phase);
      phase = append_average(s, r.average, own_in_out, divisor, phase);
      append_allgather(s, links, g, blocks, 0, own_in_out, Buf::output, phase);
      break;
    case Collective::reduce_scatter: {
      const Chunk result = r.in_place ? own_in_out : Chunk{Buf::output, 0, own.count};
      if (!r.in_place) s.scratch_count = r.count;
      phase = append_reduce_scatter(s, links, g, blocks, 0, Buf::input,
                                    r.in_place ? Buf::output : Buf::scratch, result, phase);
      append_average(s, r.average, result, divisor, phase);
      break;
    }
    case Collective::allgather: {
      const Chunk own_src = r.in_place ? own_in_out : Chunk{Buf::input, 0, own.count};
      append_allgather(s, links, g, blocks, 0, own_src, Buf::output, phase);
      break;
    }
    case Collective::broadcast:
    case Collective::alltoall:
      throw std::logic_error(
          "build_one_dimension: broadcast and all-to-all have their own builders");
  }
  return s;
}

}  // namespace toroid::schedule
