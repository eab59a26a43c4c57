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
//   Per chip: 2(X-1)/X·n + 2(Y-1)/(XY)·n = 2(N-1)/N·n elements sent. A ring's blocks go half
//   way round each way (bidir_ring.hpp), so a ring of k takes about k steps for both passes and
//   a 2D all-reduce on two rings about X + Y; a line's chains take 2(k-1).
//
// When the second dimension is a line of more than 2, phase 2 is the line's all-reduce
// (line.hpp): the partials flow to the line's middle and the total back out, one pipeline of
// about Y hops instead of 2(Y-1) steps, each link direction carrying the shard once, as the
// line's reduce-scatter and all-gather do together. The partials pass in scratch while the
// total lands in the output, so neither waits for the other.
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
// That balances link time. Where the two parts take different numbers of steps (a line of
// length k first takes 2(k-1) of them, in the middle about k; a ring about k either way), the
// one with more also waits longer; with each part's time taken as its steps' latency L plus
// its share of the balanced link time T (so moving a share d from one part to the other moves
// d*T/a and d*T/(1-a)), the finishes are equal at
//
//     a' = a - a (1-a) (Lx - Ly) / T          (clamped to [0, 1])
//
// when the hop latency is known (Context::hop_seconds; the simulator's and `auto`'s model). On
// the 128x32 multipod Lx - Ly = 126 hops: 1 MiB goes all Y-first, 16 MiB 0.12 X-first, 1 GiB
// 0.36 as before; a torus of two rings is unchanged (Lx = Ly).
//
// Pipelined pieces (torus2d_both all-reduce with a line dimension of more than 2): a line's
// reduce-scatter loads the links leaving one end ((p-1)/p of the data on m0 -> m1) and its
// all-gather those leaving the other, so in turn each half of the line idles. Each part is cut
// into k pieces (k = 2 to 4, from the vector's size) that follow each other on the same
// channels; piece i's all-gather is placed beside piece i+d's reduce-scatter (d = 1, or 2 when
// the middle phase runs on the line, so that middle has a piece's time to finish):
//
//     X links   | RS 0 | RS 1 + AG 0 | RS 2 + AG 1 | RS 3 + AG 2 | AG 3 |      (d = 1)
//               m0 -> m1 busy with RS, m(p-2) -> m(p-1) with AG, the middle with both
//
// so k pieces take about k + 2 piece-times where one unpipelined pass takes 2k, and the line
// carries 2k/(k+2) of its link rate each way (the share formula's c). Piece i's phase f is
// numbered f * (d+1) + i mod (d+1): the scatter and the gather that share a channel are
// ordered as they run, never in one phase.
//
// A part whose middle phase is a line's pipeline (the Y-first part on 128x32) is cut another
// way: its ring phases carry the bandwidth, the line's ~p hops the latency, and with one pass
// the rings idle while the line runs. Cut into m pieces (m = 1 to 8, a piece's shard along the
// line at least 32Ki elements), every piece's reduce-scatter goes first, back to back, and each
// all-gather as its middle returns (lag d = m):
//
//     Y links   | RS 0 | RS 1 | ... | RS m-1 | AG 0 | AG 1 | ... | AG m-1 |
//     X line           | middle 0 ...............|
//                             | middle 1 ...............|
//
// so the line's latency hides under the later pieces' reduce-scatters (128x32, 64 MiB: 863 ->
// 663 us; 32x8 with X a line, 16 MiB: 227 -> 168 us).
//
// reduce-scatter (torus2d) with the global block rule (rank r = y*X + x ends with block r):
// first along Y with Y-block y = global blocks [y*X, y*X + X) (contiguous), then along X inside
// it, where member x's piece is global block y*X + x. all-gather is the reverse (X, then Y).
//
// reduce-scatter / all-gather (torus2d_both): the columns split in two. Unspread (see below),
// the blocks of columns [0, split) go Y-first as above (rows' first parts: contiguous); those
// of columns [split, X) go X-first: along X over whole columns, then along Y inside the own
// column. A column's blocks lie Y apart in the vector (X = 4, split = 2, Y = 3):
//
//     vector   [ 0  1 |2  3 ][ 4  5 |6  7 ][ 8  9 |10 11]    rows y = 0, 1, 2
//              Y-first part    X-first part: column 2 = blocks 2, 6, 10; column 3 = 3, 7, 11
//
// so the X-first part reads its input as gathered chunks (step.hpp: the column's runs, read
// in place) and keeps its partial sums in scratch column by column ([2 6 10][3 7 11]), where
// each column is contiguous; the all-gather receives a column's blocks straight into their
// places in the output (a gathered receive) and forwards them from there. Both parts run at
// once (tags 0-3, 4-7); the X-first share of X (at least one column each) is what the share
// above gives, so the two dimensions' links carry it.
//
// In each part's row phase only the columns of that part own a block. Where the rows are rings
// the X-first columns are spread evenly along them (every other one on a square torus,
// Bresenham's rule otherwise), so the owners lie evenly round each row and its blocks go half
// way round each way (about X/2 steps, dimension.hpp); as the last columns they bunch, and
// only whole rings load the links alike (X-1 steps):
//
//     spread   x:  0  1  2  3  4  5  6  7          last columns   0  1  2  3  4  5  6  7
//     part:        Y  X  Y  X  Y  X  Y  X                         Y  Y  Y  Y  X  X  X  X
//
// Spread, the Y-first part's row parts are no longer contiguous, so it too reads gathered
// chunks and accumulates in scratch, row by row, with the X-first columns after it (32x32,
// 1 GiB reduce-scatter: 4.61 -> 3.73 ms; 16 MiB 117 -> 77 us; under the FIFO reducer). The
// all-gather receives its row parts into their runs of the output, as it does the columns:
// no copies, so it always spreads.
#include <algorithm>
#include <cmath>

#include "schedule/build.hpp"
#include "schedule/dimension.hpp"
#include "schedule/group.hpp"
#include "schedule/line.hpp"
#include "schedule/torus_dims.hpp"

namespace toroid::schedule {
namespace {

// My row (members ordered by x) and my column (ordered by y), as the N-dimensional builder's
// rows (torus_dims.hpp); either may be of one member.
struct RowAndColumn {
  Row x, y;
};

RowAndColumn row_and_column_of(const Context& ctx, const Torus2D& t) {
  return {{0, group_of(t.line_through(ctx.rank, Axis::x), ctx.rank), links_of(t.wraps(Axis::x))},
          {1, group_of(t.line_through(ctx.rank, Axis::y), ctx.rank), links_of(t.wraps(Axis::y))}};
}

// One part of torus2d_both cut into `chunks` pipelined pieces (the block comment above).
void allreduce_2d_pipelined(Schedule& s, const RowAndColumn& g, bool x_first, Block region, int tag,
                            bool average, std::uint32_t divisor, int chunks, int lag) {
  const Row rows[2] = {x_first ? g.x : g.y, x_first ? g.y : g.x};
  append_allreduce_rows_pipelined(s, rows, region, tag, average, divisor, chunks, lag);
}

// How many pipelined pieces torus2d_both's all-reduce cuts each part into: 1 on a torus; with a
// line, by the half vector a part holds against line x 64Ki elements (a piece's line block):
// 2 from 2x, 3 from 16x, 4 from 32x. The thresholds are toroid-sim's (links shared by
// processor sharing, docs/simulator.md), pieces 2/3/4 in ms: 128x32 at 512 MiB (8 blocks)
// 4.76/5.13/5.39, at 1 GiB (16) 9.05/8.86/9.19; 64x16 at 1 GiB (32) 8.88/8.38/8.53; 16x8 at
// 128 MiB (16) 1.23/1.20/1.20, at 512 MiB (64) 4.60/4.28/4.15; 32x8 at 512 MiB (32)
// 4.90/4.57/4.33 (X a line, Y a ring each time). More pieces mean shorter line blocks, each
// step's hop and segment a larger part of it. Short lines gain from more pieces sooner: the
// emulated 4x2 cluster's model at 16 MiB (8 blocks) takes 2.80/2.46/2.48 s.
constexpr std::uint64_t kLineBlock = std::uint64_t{1} << 16;
int pieces_for(const Torus2D& t, std::uint64_t count) {
  const int X = t.x_dim(), Y = t.y_dim();
  const int line = !t.wraps(Axis::x) && X > 2 ? X : !t.wraps(Axis::y) && Y > 2 ? Y : 0;
  if (line == 0 || X < 2 || Y < 2) return 1;
  const std::uint64_t blocks = count / 2 / (static_cast<std::uint64_t>(line) * kLineBlock);
  return blocks >= 32 ? 4 : blocks >= 16 ? 3 : blocks >= 2 ? 2 : 1;
}

// Pieces of a part whose middle phase is a line's pipeline (the block comment above): one per
// 32Ki elements of a member's shard along the line, 1 to 8. 128x32 in f32: 1 to 16 MiB,
// 8 from 64 MiB (toroid-sim: 64 MiB 1/4/8/16 pieces 863/769/663/727 us; 32x8 and 16x8 with X a
// line gain most with 8 at 16 MiB, 64x16 with 4; at 16 MiB on 128x32 one piece of 56 KiB a member
// made 8 pieces 11% slower).
constexpr std::uint64_t kMiddleShard = std::uint64_t{1} << 15;
int middle_pieces(std::uint64_t part_count, int first_dim) {
  const std::uint64_t m = part_count / static_cast<std::uint64_t>(first_dim) / kMiddleShard;
  return static_cast<int>(std::clamp<std::uint64_t>(m, 1, 8));
}

// Steps of one dimension in a 2D all-reduce: first (reduce-scatter and all-gather: a ring's
// blocks go half way round each way, about p steps in all; a line's chains 2(p-1)) or in the
// middle (a line's all-reduce is one pipeline of about its length).
double first_steps(bool wraps, int size) { return wraps ? size : 2.0 * (size - 1); }
double middle_steps(bool wraps, int size) {
  return line_pipeline(links_of(wraps), size) ? size : first_steps(wraps, size);
}

// The X-first share of torus2d_both (the block comment above); 1/2 when a dimension is 1 long.
// `bytes`: the vector's, for the latency term (0: none).
double x_first_share(const Context& ctx, const Torus2D& t, int pieces, double bytes = 0) {
  const double X = t.x_dim(), Y = t.y_dim();
  if (X < 2 || Y < 2) return 0.5;
  const bool wx = t.wraps(Axis::x), wy = t.wraps(Axis::y);
  const double cx = ctx.link_rate[0] * carries(wx, t.x_dim(), pieces);
  const double cy = ctx.link_rate[1] * carries(wy, t.y_dim(), pieces);
  double a = (1 / cy - 1 / (Y * cx)) / ((1 - 1 / Y) / cx + (1 - 1 / X) / cy);
  if (bytes > 0 && ctx.knows_hops()) {
    const double hx = ctx.hop_seconds[0], hy = ctx.hop_seconds[1];
    const double link_time = 2 * (a + (1 - a) / Y) * bytes / cx;
    const double lx = hx * first_steps(wx, t.x_dim()) + hy * middle_steps(wy, t.y_dim());
    const double ly = hy * first_steps(wy, t.y_dim()) + hx * middle_steps(wx, t.x_dim());
    a -= a * (1 - a) * (lx - ly) / link_time;
  }
  return std::clamp(a, 0.0, 1.0);
}

// Reduce-scatter / all-gather on X x Y with the global block rule, in the both form's terms
// (the block comment above). The layouts place the parts' blocks in scratch, where the
// reduce-scatter accumulates; the all-gather uses them only as maps to the output's runs.
struct BlockLayout {
  std::vector<char> x_first;  // per x: column x goes X-first
  bool any_x_first = false;
  Blocks global;      // block r = y*X + x: rank r's
  Gather rows;        // spread: the Y-first part's layout in scratch, row by row (none: in place)
  Blocks row_part;    // per y: the row's Y-first blocks, contiguous (in `rows`' layout if spread)
  Blocks row_blocks;  // per x: my row's block x if column x goes Y-first, else empty
  Gather columns;     // the X-first part's layout in scratch: column by column, y ascending
  Blocks column;      // per x: column x's region in that layout (empty for a Y-first column)
  Blocks in_column;   // per y: block (my x, y) in that layout
  std::uint64_t scratch_end = 0;  // where the scratch layouts end
};

// `spread`: the X-first columns spread evenly along the row (every other one on a square
// torus) instead of the last ones, the Y-first part then gathered into scratch at 0 (its row
// parts are no longer contiguous in the vector) and the X-first columns after it; else the
// Y-first part stays at its offsets and the columns start at `base`.
BlockLayout layout_of(const Spec& r, const Context& ctx, const Torus2D& t, const RowAndColumn& g,
                      bool spread, std::uint64_t base) {
  const int X = t.x_dim(), Y = t.y_dim();
  BlockLayout l;
  l.global = even_blocks(0, r.count, t.size());
  l.x_first.assign(X, 0);
  if (X > 1 && Y > 1) {
    const int n = std::clamp(static_cast<int>(std::lround(x_first_share(ctx, t, 1) * X)), 1, X - 1);
    for (int x = 0; x < X; ++x) l.x_first[x] = spread ? (x + 1) * n / X > x * n / X : x >= X - n;
    l.any_x_first = true;
  }
  const int my_x = g.x.group.position, my_y = g.y.group.position;
  std::uint64_t at = spread ? 0 : base;
  l.row_part.resize(Y);
  l.row_blocks.assign(X, Block{0, 0});
  for (int y = 0; y < Y; ++y) {
    l.row_part[y].offset = spread ? at : l.global[y * X].offset;
    for (int x = 0; x < X; ++x) {
      if (l.x_first[x]) continue;
      const Block& b = l.global[y * X + x];
      const Block placed{spread ? at : b.offset, b.count};
      if (spread) l.rows.runs.push_back({at, b.count, b.offset}), at += b.count;
      l.row_part[y].count += b.count;
      if (y == my_y) l.row_blocks[x] = placed;
    }
  }
  // An empty block sits where its row part ends, out of every other block's way.
  for (int x = 0; x < X; ++x)
    if (l.x_first[x]) l.row_blocks[x].offset = l.row_part[my_y].offset + l.row_part[my_y].count;
  if (!spread) at = base;
  l.column.assign(X, Block{at, 0});
  l.in_column.assign(Y, Block{at, 0});
  for (int x = 0; x < X; ++x) {
    if (!l.x_first[x]) continue;
    l.column[x].offset = at;
    for (int y = 0; y < Y; ++y) {
      const Block& b = l.global[y * X + x];
      if (x == my_x) l.in_column[y] = {at, b.count};
      l.columns.runs.push_back({at, b.count, b.offset});
      at += b.count;
    }
    l.column[x].count = at - l.column[x].offset;
  }
  l.scratch_end = at;
  return l;
}

}  // namespace

Schedule build_torus2d_both(const Spec& r, const Context& ctx) {
  Schedule s;
  const Torus2D t = ctx.grid("torus2d_both's 2D form");
  const RowAndColumn g = row_and_column_of(ctx, t);
  const int p = ctx.nranks();
  const auto divisor = static_cast<std::uint32_t>(p);
  if (r.collective == Collective::allreduce) {
    const int k = pieces_for(t, r.count);
    const auto x_first = static_cast<std::uint64_t>(
        std::llround(x_first_share(ctx, t, k, static_cast<double>(r.count) * r.elem_bytes) *
                     static_cast<double>(r.count)));
    const bool x_line = !t.wraps(Axis::x), y_line = !t.wraps(Axis::y);
    // Each part: a ring first and a line's pipeline in the middle cuts pieces for the middle;
    // else the line-first pieces (lag 2 when the middle is a line), which keep both ends of a
    // first line busy (on a mesh of two lines, 8x8 at 64 MiB, the middle's pieces lost 8%).
    auto run = [&](bool first_x, Block part, int tag) {
      const Links first = first_x ? g.x.links : g.y.links;
      const Links middle = first_x ? g.y.links : g.x.links;
      const int middle_size = first_x ? t.y_dim() : t.x_dim();
      if (first != Links::line && line_pipeline(middle, middle_size)) {
        const int m = middle_pieces(part.count, first_x ? t.x_dim() : t.y_dim());
        allreduce_2d_pipelined(s, g, first_x, part, tag, r.average, divisor, m, m);
      } else {
        allreduce_2d_pipelined(s, g, first_x, part, tag, r.average, divisor, k,
                               (first_x ? y_line : x_line) ? 2 : 1);
      }
    };
    run(true, {0, x_first}, 0);
    run(false, {x_first, r.count - x_first}, 4);
    return s;
  }
  const int my_x = g.x.group.position;
  if (r.collective == Collective::reduce_scatter) {
    // Both parts' rows have owners in some columns only. Along a ring those spread evenly,
    // so the rows' blocks go half way round each way (dimension.hpp) in about X/2 steps, where
    // the last columns as owners would load the links near them and go all the way round.
    const bool spread = g.x.links == Links::bidir_ring;
    // Unspread, in place the row part accumulates in the output; else in scratch at the same
    // offsets, with the column layout after it. Spread, both parts accumulate in scratch.
    const Buf acc = r.in_place && !spread ? Buf::output : Buf::scratch;
    const BlockLayout l = layout_of(r, ctx, t, g, spread, r.in_place ? 0 : r.count);
    const Block own = l.global[ctx.rank];
    const Chunk result = r.in_place ? chunk(Buf::output, own) : Chunk{Buf::output, 0, own.count};
    const bool x_first = l.x_first[my_x] != 0;
    s.scratch_count = l.scratch_end;
    const int my_y = g.y.group.position;
    // Unspread, the Y-first part's columns go all the way round like the X-first part's rows
    // (whose owners are only some members, dimension.hpp): half-way chains in one part beside
    // full rings in the other, on one reducer, cost up to 9% where it bounds (16x16, 256 MiB:
    // 1183 against 1270 us).
    const Links first = l.any_x_first && !spread && g.y.links == Links::bidir_ring
                            ? Links::opposite_rings
                            : g.y.links;
    const Source input = spread ? Source(Buf::input, l.rows) : Source(Buf::input);
    std::uint32_t end = append_reduce_scatter(s, first, g.y.group, l.row_part, 0, input, acc,
                                              chunk(acc, l.row_part[my_y]), 0);
    end = append_reduce_scatter(s, g.x.links, g.x.group, l.row_blocks, 2, acc, acc,
                                x_first ? Chunk{Buf::output, own.offset, 0} : result, end);
    if (l.any_x_first) {
      std::uint32_t ph =
          append_reduce_scatter(s, g.x.links, g.x.group, l.column, 4, Source(Buf::input, l.columns),
                                Buf::scratch, chunk(Buf::scratch, l.column[my_x]), 0);
      ph = append_reduce_scatter(s, g.y.links, g.y.group, l.in_column, 6, Buf::scratch,
                                 Buf::scratch, x_first ? result : Chunk{Buf::output, 0, 0}, ph);
      end = std::max(end, ph);
    }
    append_average(s, r.average, result, divisor, end);
    return s;
  }
  // All-gather: the reverse, every block received straight into its places in the output (the
  // layouts' runs), forwarded from there as it lands.
  const bool spread = g.x.links == Links::bidir_ring;
  const BlockLayout l = layout_of(r, ctx, t, g, spread, 0);
  const Block own = l.global[ctx.rank];
  const Chunk own_src = r.in_place ? chunk(Buf::output, own) : Chunk{Buf::input, 0, own.count};
  const bool x_first = l.x_first[my_x] != 0;
  const Chunk none{Buf::output, own.offset, 0};
  const int my_y = g.y.group.position;
  const Source rows = spread ? Source(Buf::output, l.rows) : Source(Buf::output);
  const std::uint32_t end =
      append_allgather(s, g.x.links, g.x.group, l.row_blocks, 2, x_first ? none : own_src, rows, 0);
  append_allgather(s, g.y.links, g.y.group, l.row_part, 0, rows.chunk(s, l.row_part[my_y]), rows,
                   end);
  if (l.any_x_first) {
    const Source columns(Buf::output, l.columns);
    const std::uint32_t ph = append_allgather(s, g.y.links, g.y.group, l.in_column, 6,
                                              x_first ? own_src : none, columns, 0);
    append_allgather(s, g.x.links, g.x.group, l.column, 4, columns.chunk(s, l.column[my_x]),
                     columns, ph);
  }
  return s;
}

}  // namespace toroid::schedule
