// 2D torus collectives on X x Y (each dimension a bidirectional ring, or a line without
// wraparound). Terms: a *row* is the X ranks sharing y, a *column* the Y ranks sharing x; a
// rank's *shard* is its 1/X share of the vector after the row phase.
//
// all-reduce (torus2d), three phases, every row (column) at once:
//
//     1. reduce-scatter along X:   [ A | B | C | D ]  ->  rank x holds shard x, row-reduced
//     2. all-reduce along Y on the shard (reduce-scatter + all-gather in the column)
//     3. all-gather along X:       shards travel back along the row
//
//   Per chip: 2(X-1)/X·n + 2(Y-1)/(XY)·n = 2(N-1)/N·n elements sent, 2(X-1)+2(Y-1) steps.
//
// torus2d_both: a share a of the vector runs X-then-Y while the rest runs Y-then-X, in the same
// phases, so X and Y links are busy together (tags 0-3 vs 4-7). The share balances the two
// dimensions' link time. With c = what a dimension carries per direction (its link rate, twice
// that for a ring of more than 2, whose halves go both ways; once for a line), the X links move
// about a + (1−a)/Y of the vector and the Y links (1−a) + a/X, so
//
//     (a + (1−a)/Y) / cx = ((1−a) + a/X) / cy
//     =>   a = (1/cy − 1/(Y·cx)) / ((1−1/Y)/cx + (1−1/X)/cy)
//
// a = 1/2 on a square torus; 0.32 on 128x32 with X a line (its links carry half a ring's).
//
// reduce-scatter (torus2d) with the global block rule (rank r = y*X + x ends with block r):
// first along Y with Y-block y = global blocks [y*X, y*X + X) (contiguous), then along X inside
// it, where member x's piece is global block y*X + x. all-gather is the reverse (X, then Y).
#include <algorithm>
#include <cmath>

#include "schedule/build.hpp"
#include "schedule/dimension.hpp"
#include "schedule/group.hpp"

namespace toroid::schedule {
namespace {

struct Grid {
  Group row, column;  // my row (members ordered by x) and column (ordered by y)
  Links row_links, column_links;
};

Grid grid_of(const Context& ctx) {
  const Torus2D& t = ctx.topology;
  return {group_of(t.line_through(ctx.rank, Axis::x), ctx.rank),
          group_of(t.line_through(ctx.rank, Axis::y), ctx.rank), links_of(t.wraps(Axis::x)),
          links_of(t.wraps(Axis::y))};
}

// All-reduce of [offset, offset+count): reduce-scatter along `first`, all-reduce along the
// other axis on the shard, all-gather along `first`. Returns the next phase.
std::uint32_t allreduce_2d(Schedule& s, const Grid& g, bool x_first, Block region, int tag,
                           bool average, std::uint32_t divisor, std::uint32_t phase) {
  const Group& a = x_first ? g.row : g.column;
  const Group& b = x_first ? g.column : g.row;
  const Links la = x_first ? g.row_links : g.column_links;
  const Links lb = x_first ? g.column_links : g.row_links;
  const Blocks outer = even_blocks(region.offset, region.count, a.size());
  const Block shard = outer[a.position];
  const Blocks inner = even_blocks(shard.offset, shard.count, b.size());
  const Block piece = inner[b.position];
  phase = append_reduce_scatter(s, la, a, outer, tag, Buf::input, Buf::output,
                                chunk(Buf::output, shard), phase);
  phase = append_reduce_scatter(s, lb, b, inner, tag + 2, Buf::output, Buf::output,
                                chunk(Buf::output, piece), phase);
  phase = append_average(s, average, chunk(Buf::output, piece), divisor, phase);
  phase = append_allgather(s, lb, b, inner, tag + 2, chunk(Buf::output, piece), Buf::output, phase);
  return append_allgather(s, la, a, outer, tag, chunk(Buf::output, shard), Buf::output, phase);
}

// The X-first share of torus2d_both (the block comment above); 1/2 when a dimension is 1 long.
double x_first_share(const Context& ctx) {
  const Torus2D& t = ctx.topology;
  const double X = t.x_dim(), Y = t.y_dim();
  if (X < 2 || Y < 2) return 0.5;
  const double cx = ctx.link_rate[0] * (t.wraps(Axis::x) && X > 2 ? 2 : 1);
  const double cy = ctx.link_rate[1] * (t.wraps(Axis::y) && Y > 2 ? 2 : 1);
  const double a = (1 / cy - 1 / (Y * cx)) / ((1 - 1 / Y) / cx + (1 - 1 / X) / cy);
  return std::clamp(a, 0.0, 1.0);
}

}  // namespace

Schedule build_torus2d(bool both, const Request& r, const Context& ctx) {
  Schedule s;
  const Grid g = grid_of(ctx);
  const int X = ctx.topology.x_dim(), p = ctx.nranks();
  const auto divisor = static_cast<std::uint32_t>(p);
  if (r.collective == Collective::allreduce) {
    if (!both) {
      allreduce_2d(s, g, true, {0, r.count}, 0, r.average, divisor, 0);
    } else {
      const auto x_first = static_cast<std::uint64_t>(
          std::llround(x_first_share(ctx) * static_cast<double>(r.count)));
      allreduce_2d(s, g, true, {0, x_first}, 0, r.average, divisor, 0);
      allreduce_2d(s, g, false, {x_first, r.count - x_first}, 4, r.average, divisor, 0);
    }
    return s;
  }
  // Global blocks; Y-blocks are runs of X consecutive global blocks.
  const Blocks global = even_blocks(0, r.count, p);
  Blocks ys(ctx.topology.y_dim()), xs(X);
  for (int y = 0; y < ctx.topology.y_dim(); ++y) {
    ys[y].offset = global[y * X].offset;
    for (int x = 0; x < X; ++x) ys[y].count += global[y * X + x].count;
  }
  const int my_y = g.column.position;
  for (int x = 0; x < X; ++x) xs[x] = global[my_y * X + x];
  const Block own = global[ctx.rank];
  std::uint32_t phase = 0;
  if (r.collective == Collective::reduce_scatter) {
    const Buf acc = r.in_place ? Buf::output : Buf::scratch;
    if (!r.in_place) s.scratch_count = r.count;
    const Chunk result = r.in_place ? chunk(Buf::output, own) : Chunk{Buf::output, 0, own.count};
    phase = append_reduce_scatter(s, g.column_links, g.column, ys, 0, Buf::input, acc,
                                  chunk(acc, ys[my_y]), phase);
    phase = append_reduce_scatter(s, g.row_links, g.row, xs, 2, acc, acc, result, phase);
    append_average(s, r.average, result, divisor, phase);
  } else {
    const Chunk own_src = r.in_place ? chunk(Buf::output, own) : Chunk{Buf::input, 0, own.count};
    phase = append_allgather(s, g.row_links, g.row, xs, 2, own_src, Buf::output, phase);
    append_allgather(s, g.column_links, g.column, ys, 0, chunk(Buf::output, ys[my_y]), Buf::output,
                     phase);
  }
  return s;
}

}  // namespace toroid::schedule
