// torus2d_both's all-reduce on X x Y where a dimension is a line (no wraparound) of more than 2:
// its parts are cut into pieces by the line's pipeline and shared by its latency, which the
// N-dimensional form (torus_dims.cpp) does not do; every other 2D collective runs that form
// (build.cpp, two_d_line_allreduce). The terms and the 2D all-reduce it builds on:
//
// X x Y (each dimension a bidirectional ring, or a line without wraparound). Terms: a *row* is
// the X ranks sharing y, a *column* the Y ranks sharing x; a rank's *shard* is its 1/X share of
// the vector after the row phase.
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
// into k pieces (pieces_for: 1 to 24, from the vector's size) that follow each other on the same
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
#include <algorithm>
#include <cmath>

#include "schedule/build.hpp"
#include "schedule/dimension.hpp"
#include "schedule/group.hpp"
#include "schedule/torus_dims.hpp"
#include "toroid/error.hpp"

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
// line, by b = the half vector a part holds over line x 64Ki elements (a piece's line block):
// 1 below b = 2, else min(1.5·b, 3·sqrt(b), max(4, 2 + R/2) beside a ring of R, 24 on a mesh of
// two lines), rounded. More pieces balance the line's two ends better (a pipelined line
// carries 2k/(k+2) of a ring's rate) but each adds its steps' hops and segments. toroid-sim,
// f32, 56 KiB segments, of the limit at 256 MiB / 1 GiB with the earlier rule (2, 3, 4 pieces
// from b = 2, 16, 32) and this one (2026-12-08): 128x32 (the multipod) 0.746 / 0.806 and
// 0.856 / 0.920 (12 pieces at 1 GiB; 8 0.907, 16 0.899); 64x16 0.762 / 0.854 and 0.890 /
// 0.925; 32x8 0.842 / 0.882 and 0.894 / 0.927; 32x4 0.898 / 0.918 and 0.907 / 0.918; 16x8
// 0.883 / 0.884 and 0.884 / 0.899; 8x8 mesh 0.759 / 0.761 and 0.945 / 0.949; 4x2:wrap=y
// unchanged (0.902 / 0.903; it gains to 12 pieces, 0.924 / 0.927, which longer lines beside
// short rings lose: 32x4 1 GiB 0.881 with 8). It lost on 16x8 at 16 MiB (142 -> 157 us: 3
// pieces, where 128x32 at 128 MiB, also b = 2, gains with 3: 1151 -> 1086 us).
constexpr std::uint64_t kLineBlock = std::uint64_t{1} << 16;
int pieces_for(const Torus2D& t, std::uint64_t count) {
  const int X = t.x_dim(), Y = t.y_dim();
  const bool x_line = long_line(t, Axis::x), y_line = long_line(t, Axis::y);
  const int line = x_line ? X : y_line ? Y : 0;
  if (line == 0 || X < 2 || Y < 2) return 1;
  const double b = static_cast<double>(count) / 2 / (static_cast<double>(line) * kLineBlock);
  if (b < 2) return 1;
  const int ring = x_line ? Y : X;  // the other dimension
  const double most = x_line && y_line ? 24.0 : std::max(4.0, 2 + ring / 2.0);
  return static_cast<int>(std::lround(std::min({1.5 * b, 3 * std::sqrt(b), most})));
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
// `bytes`: the vector's, for the latency term (0, without an element size: none).
double x_first_share(const Context& ctx, const Torus2D& t, int pieces, double bytes) {
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

}  // namespace

Schedule build_torus2d_both(const Spec& r, const Context& ctx) {
  if (r.collective != Collective::allreduce)
    throw InvalidArgument("torus2d_both's 2D form runs the all-reduce only");
  Schedule s;
  const Torus2D t = ctx.grid("torus2d_both's 2D form");
  const RowAndColumn g = row_and_column_of(ctx, t);
  const auto divisor = static_cast<std::uint32_t>(ctx.nranks());
  const int k = pieces_for(t, r.count);
  const auto x_first = static_cast<std::uint64_t>(
      std::llround(x_first_share(ctx, t, k, static_cast<double>(r.count) * r.elem_bytes) *
                   static_cast<double>(r.count)));
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
                             middle == Links::line ? 2 : 1);
    }
  };
  run(true, {0, x_first}, 0);
  run(false, {x_first, r.count - x_first}, 4);
  return s;
}

}  // namespace toroid::schedule
