// Collectives on a torus of any number of dimensions (1 to 6), one dimension after another.
// Terms: a chip's *row along d* is the chips that differ from it only in coordinate d (a ring
// where that dimension wraps, a line where it does not or where a twist leads its wraparound
// elsewhere); the dimensions of size 1 have no row and are skipped.
//
// all-reduce (torus2d, any number of dimensions), every row along a dimension at once:
//
//     reduce-scatter along x:  n          -> n/X    (each chip keeps its x-th shard)
//     reduce-scatter along y:  n/X        -> n/XY
//     all-reduce along z:      n/XY          (a line of more than 2: one pipeline, line.hpp)
//     all-gather along y, then x, back to n
//
//         z
//         |  y          the shard shrinks by each dimension's size on the way in, so a chip
//         | /           sends 2(N-1)/N·n elements in all, as a ring would, but over ~ΣX_d
//         +---- x       steps instead of N, on the 2·D links of every chip in turn
//
// reduce-scatter / all-gather (torus2d) with the global block rule (rank r = x + X·(y + Y·z)
// ends with block r): first along the last dimension, whose member z gets the blocks of plane z
// (contiguous: ranks [z·XY, (z+1)·XY)), then along the one before inside it, ... down to single
// blocks along x. All-gather is the reverse (x first).
//
// Every dimension busy (torus2d_both on two dimensions and more; on two, its all-reduce with a
// line of more than 2 runs torus2d.cpp's form instead): D parts of the vector, part
// i going dimension by dimension in the order i, i+1, ..., i-1 (so each dimension is some part's
// first, where the data is largest). Part i moves its share a_i along dimension d in full when d
// comes first, 1/X_first of it when second, and so on; the shares make every dimension's link
// time equal (one linear system: Σ_i a_i·f_id / c_d the same for every d, Σ a_i = 1, with c_d what
// a direction of dimension d carries: twice its link rate on a ring of more than 2, whose
// halves go both ways, once on a line). On 16x16x16 each part gets a third; for two dimensions
// this is torus2d.cpp's share, which its all-reduce with a line refines by the parts' steps.
//
//     16x16x16:  part 0  x -> y -> z      x links: 1/3 + 1/3·1/256 + 1/3·1/16 of n
//                part 1  y -> z -> x      (likewise y and z): every link busy from the start
//                part 2  z -> x -> y
//
// From 4Mi elements each part runs as pipelined pieces (append_allreduce_rows_pipelined): two,
// three or four on short rows, from 16Mi eight (four where the link time is under 10 times the
// hops), more where the reducer is the bound (busy_allreduce_pipeline below).
//
// Every dimension busy, reduce-scatter and all-gather: every rank's block is cut into D parts by
// the same kind of shares; part i goes along dimension i first, then along the others from the
// last down. Each part has a layout in scratch that numbers the ranks with its first dimension
// slowest (BusyPart), so what a member holds at every step is one range of it; the
// reduce-scatter reads the input through the layout's map (gathered chunks), accumulates in
// scratch and leaves part i of my block in place; the all-gather receives straight into the
// output through the map. Taking the later dimensions from the last down keeps each range's
// ranks in rank order, so every gathered chunk's runs ascend in the vector, as a chunk's must.
// That fixes each part's later rows, which collide on three dimensions (x, z, y and
// y, z, x both cross z second, while x idles), so from 4Mi elements each part runs as pipelined
// pieces (busy_rsag_pieces), the later ones crossing their first row meanwhile.
//
//     2x2x2, part 0 (x, then z, then y):  layout order x slowest, y fastest:
//        ranks 0 2 4 6 | 1 3 5 7      member x = 0 holds [0 2 4 6], x = 1 holds [1 3 5 7]
//        (part 0 of each rank's block, in that order: ascending within each half)
#include "schedule/torus_dims.hpp"

#include <algorithm>
#include <cmath>

#include "schedule/group.hpp"
#include "schedule/line.hpp"
#include "schedule/ring_flood.hpp"

namespace toroid::schedule {

std::vector<Row> rows_of(const Context& ctx) {
  const Torus& t = ctx.topology;
  std::vector<Row> rows;
  for (int d = 0; d < t.dimensions(); ++d)
    if (t.size(d) > 1 || (d == t.dimensions() - 1 && rows.empty()))
      rows.push_back(
          {d, group_of(t.line_through(ctx.rank, d), ctx.rank), links_of(t.ring_along(d))});
  return rows;
}

namespace {

bool line_pipeline(const Row& row) { return line_pipeline(row.links, row.group.size()); }

// rows[level..] all-reduce `region`, whose partials this rank holds in `held` (the input at
// the first level, else where the row before put its shard).
std::uint32_t allreduce_from(Schedule& s, std::span<const Row> rows, std::size_t level,
                             Block region, Buf held, int tag, bool average, std::uint32_t divisor,
                             std::uint32_t phase, std::uint32_t gather_from,
                             std::uint32_t* before_gather, bool relative, const RingFlood& flood) {
  const Row& row = rows[level];
  const Blocks blocks = even_blocks(region.offset, region.count, row.group.size());
  const Block mine = blocks[static_cast<std::size_t>(row.group.position)];
  if (level + 1 == rows.size()) {
    if (level > 0 && row.links != Links::line && row.group.size() > 2 &&
        region.count < flood.below) {  // a small range: flooded round the ring (ring_flood.hpp)
      phase = append_ring_flood_allreduce(s, row.group, tag, chunk(held, region),
                                          std::max(s.scratch_count, flood.scratch_at), phase);
      phase = append_average(s, average, chunk(Buf::output, region), divisor, phase);
    } else if (level > 0 && line_pipeline(row)) {  // the partials arrived in scratch (below)
      phase = append_line_allreduce(s, row.group, tag, chunk(Buf::scratch, region),
                                    chunk(Buf::output, region), phase);
      phase = append_average(s, average, chunk(Buf::output, region), divisor, phase);
    } else {
      phase = append_reduce_scatter(s, row.links, row.group, blocks, tag, held, Buf::output,
                                    chunk(Buf::output, mine), phase);
      phase = append_average(s, average, chunk(Buf::output, mine), divisor, phase);
      if (before_gather) *before_gather = phase;
      return append_allgather(s, row.links, row.group, blocks, tag, chunk(Buf::output, mine),
                              Buf::output, std::max(phase, gather_from));
    }
    if (before_gather) *before_gather = phase;
    return std::max(phase, gather_from);
  }
  // A line's pipeline passes the partials while the total lands: they go in scratch, at the
  // output's offsets, so neither waits for the other.
  const bool to_scratch = level + 2 == rows.size() && line_pipeline(rows[level + 1]);
  if (to_scratch) s.scratch_count = std::max(s.scratch_count, mine.offset + mine.count);
  // Halves relative to my place in the next row, whose blocks lie evenly in each of these.
  const Group& next = rows[level + 1].group;
  const HalfCut cut = relative && rows[level + 1].links != Links::line
                          ? HalfCut{even_sub_blocks(blocks, next.size()), next.position}
                          : HalfCut{};
  phase = append_reduce_scatter(s, row.links, row.group, blocks, tag, held, Buf::output,
                                chunk(to_scratch ? Buf::scratch : Buf::output, mine), phase, cut);
  phase = allreduce_from(s, rows, level + 1, mine, Buf::output, tag, average, divisor, phase, 0,
                         nullptr, relative, flood);
  if (before_gather) *before_gather = phase;
  return append_allgather(s, row.links, row.group, blocks, tag, chunk(Buf::output, mine),
                          Buf::output, std::max(phase, gather_from), cut);
}

// Per part, the rows it goes through in turn.
using Orders = std::vector<std::vector<Row>>;

// The all-reduce's: part i in the order i, i+1, ..., i-1.
Orders rotations(const std::vector<Row>& rows) {
  const std::size_t m = rows.size();
  Orders o(m);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t k = 0; k < m; ++k) o[i].push_back(rows[(i + k) % m]);
  return o;
}

// The reduce-scatter's and all-gather's: part i along row i first, then the others from the
// last dimension down, so that what a member holds after the first row is its ranks in rank
// order (ascending in the vector: a gathered chunk's runs must be).
Orders first_then_descending(const std::vector<Row>& rows) {
  const std::size_t m = rows.size();
  Orders o(m);
  for (std::size_t i = 0; i < m; ++i) {
    o[i].push_back(rows[i]);
    for (std::size_t k = m; k-- > 0;)
      if (k != i) o[i].push_back(rows[k]);
  }
  return o;
}

// A twisted torus (torus.hpp) leaves its short dimensions' rows as lines, k chips whose
// wraparound links lead to another row. Followed round twice, those links close a ring of 2k
// chips over two *sheets* (a sheet: the chips whose first long coordinate lies in [0, k), or in
// [k, 2k)); a part that starts along a short dimension takes that ring. Its member v then holds
// block v, v = its short coordinate + k·sheet, so the rows after it must keep both: the other
// short dimensions' lines do, the long dimensions' rings too, but for the first long one, whose
// row leaves the sheet half way: the part takes it as the line of k inside my sheet.
//
//   4x4x8 twisted, x first (sheets z < 4 and z >= 4):
//     x: (0..3, y, z) then (0..3, y, z + 4), a ring of 8 through the twisted links
//     y: the line (x, 0..3, z)            z: the line (x, y, 0..3 + 4·sheet)
//
// A part first along a long dimension (z) keeps the plain rows: the ring of 8, then lines of 4.
// The first row moves the most; with this every part's first row is a ring.
// On a twisted torus every dimension wraps, and the long ones (2k) are those whose rows close
// into rings (Torus::ring_along); the short ones' do not.
bool twisted_short(const Torus& t, int d) { return t.twisted() && !t.ring_along(d); }

// How many of a twisted torus's dimensions are long (0 where it is not twisted), and the first.
int long_dimensions(const Torus& t) {
  int n = 0;
  for (int d = 0; d < t.dimensions(); ++d) n += t.twisted() && t.ring_along(d);
  return n;
}
int first_long_dimension(const Torus& t) {
  for (int d = 0; d < t.dimensions(); ++d)
    if (t.ring_along(d)) return d;
  return -1;
}

// `coord` holds in coordinate d a position along the twisted ring through the chip with
// coordinate 0 there, in sheet 0: that ring's member there, reached by the twisted links.
void walk_twisted_ring(const Torus& t, int d, std::vector<int>& coord) {
  const int k = t.size(d), position = coord[static_cast<std::size_t>(d)];
  coord[static_cast<std::size_t>(d)] = position % k;
  for (int e = 0; e < t.dimensions(); ++e)  // every wraparound passed lands k along the long ones
    if (t.ring_along(e))
      coord[static_cast<std::size_t>(e)] =
          (coord[static_cast<std::size_t>(e)] + position / k * k) % (2 * k);
}

// My ring of 2k along twisted short dimension d, from the member with coordinate 0 there in
// sheet 0.
Row twisted_ring(const Context& ctx, int d) {
  const Torus& t = ctx.topology;
  const int k = t.size(d);
  std::vector<int> start = t.coord_of(ctx.rank);
  start[static_cast<std::size_t>(d)] =
      start[static_cast<std::size_t>(first_long_dimension(t))] >= k ? k : 0;
  walk_twisted_ring(t, d, start);  // from my sheet: k steps lead back to sheet 0
  std::vector<int> members;
  for (int v = 0; v < 2 * k; ++v) {
    std::vector<int> at = start;
    at[static_cast<std::size_t>(d)] = v;
    walk_twisted_ring(t, d, at);
    members.push_back(t.rank_of(at));
  }
  return {d, group_of(std::move(members), ctx.rank), Links::bidir_ring};
}

// My line of k along the first long dimension, inside my sheet.
Row sheet_line(const Context& ctx, int d) {
  const Torus& t = ctx.topology;
  const int k = t.size(d) / 2;
  std::vector<int> members = t.line_through(ctx.rank, d);
  const int sheet = t.coord_of(ctx.rank)[static_cast<std::size_t>(d)] / k;
  members.erase(members.begin(), members.begin() + sheet * k);
  members.resize(static_cast<std::size_t>(k));
  return {d, group_of(std::move(members), ctx.rank), Links::line};
}

// `orders` with each part that starts along a twisted short dimension on its ring (above).
Orders twisted_rings(const Context& ctx, Orders orders) {
  const Torus& t = ctx.topology;
  const int first_long = first_long_dimension(t);
  for (std::vector<Row>& order : orders) {
    if (!twisted_short(t, order.front().dimension)) continue;
    order.front() = twisted_ring(ctx, order.front().dimension);
    for (Row& row : order)
      if (row.dimension == first_long) row = sheet_line(ctx, row.dimension);
  }
  return orders;
}

// The every-dimension-busy shares (the block comment): part i runs the rows in `orders[i]`; its
// share is a[i]. Solves Σ_i a_i·f_id/c_d = T for every row d and Σ a_i = 1 by
// Gaussian elimination; a negative share (a dimension so slow no part should start there) is
// dropped and the rest renormalized.
//
// `exact_loads`: f_id also counts the (k_d − 1)/k_d of what reaches a row of k_d that crosses
// its links (a chip keeps its own block), so the rows' link loads are equal, not only their
// rates. That is right where the parts run as a steady flow, in many pieces (the all-reduce's
// 8, and its 3 on short rows; the reduce-scatter's and all-gather's from 6); in fewer the
// order in time matters more than the totals, and rates alone did better. toroid-sim, f32,
// of the limit with rates alone / exact loads (2026-12-07): all-reduce in 8 pieces, 4x4x8
// (tpu-v4) 64 MiB 0.90 / 0.985, 1 GiB 0.905 / 0.988; 4x4x8 twisted 1 GiB 0.62 / 0.67; 4x4x16
// 1 GiB 0.87 / 0.92; 2x4x8 0.86 / 0.97; tpu-v5p 64 MiB 0.735 / 0.70, 1 GiB 0.786 / 0.778;
// reduce-scatter and all-gather at 1 GiB: 4x4x8 0.90 / 0.94 and 0.90 / 0.95, 8x8x16 0.95 /
// 0.97 and 0.95 / 0.97, 2x4x8 0.85 / 0.93 and 0.85 / 0.77; in 2 or 4 pieces (16 and 64 MiB)
// exact loads lost 2-10% on most shapes (4x4x8 reduce-scatter 16 MiB 0.79 / 0.73). A cube
// has the same shares either way.
std::vector<double> busy_shares(const Context& ctx, const std::vector<Row>& rows,
                                const Orders& orders, bool exact_loads) {
  const std::size_t m = rows.size();
  // Unknowns a_0..a_{m-1}, T; rows of the system: m link-time equalities (one per dimension,
  // rows[d]'s), then Σ a = 1.
  std::vector<std::vector<double>> eq(m + 1, std::vector<double>(m + 2, 0.0));
  const auto equation = [&](int dimension) {
    std::size_t d = 0;
    while (rows[d].dimension != dimension) ++d;
    return d;
  };
  for (std::size_t i = 0; i < m; ++i) {
    double fraction = 1;  // of part i's share still moving when it reaches each row
    for (const Row& row : orders[i]) {
      const double c = ctx.link_rate[static_cast<std::size_t>(row.dimension)] *
                       carries(row.links != Links::line, row.group.size());
      const double k_d = row.group.size();
      eq[equation(row.dimension)][i] += fraction / c * (exact_loads ? (k_d - 1) / k_d : 1.0);
      fraction /= k_d;
    }
  }
  for (std::size_t d = 0; d < m; ++d) eq[d][m] = -1;
  for (std::size_t i = 0; i < m; ++i) eq[m][i] = 1;
  eq[m][m + 1] = 1;
  const std::size_t n = m + 1;
  for (std::size_t col = 0; col < n; ++col) {
    std::size_t pivot = col;
    for (std::size_t r = col + 1; r < n; ++r)
      if (std::abs(eq[r][col]) > std::abs(eq[pivot][col])) pivot = r;
    std::swap(eq[col], eq[pivot]);
    if (std::abs(eq[col][col]) < 1e-300)
      return std::vector<double>(m, 1.0 / static_cast<double>(m));
    for (std::size_t r = 0; r < n; ++r) {
      if (r == col) continue;
      const double f = eq[r][col] / eq[col][col];
      for (std::size_t c = col; c <= n; ++c) eq[r][c] -= f * eq[col][c];
    }
  }
  std::vector<double> a(m);
  double sum = 0;
  for (std::size_t i = 0; i < m; ++i) sum += a[i] = std::max(0.0, eq[i][n] / eq[i][i]);
  for (double& v : a) v = sum > 0 ? v / sum : 1.0 / static_cast<double>(m);
  return a;
}

// From this many elements (16 MiB of f32) each part of the every-dimension-busy all-reduce runs
// in two pieces, the second starting half way through the first one's reduce-scatters (lag 2:
// torus2d.cpp's "Pipelined pieces"), so that one piece's all-gathers fill the links the other's
// reduce-scatters leave idle near their ends. toroid-sim, all-reduce of f32, of the limit with
// one piece / two (lag 2): 4x4x8 at 50 GB/s 1 MiB 0.49 / 0.42, 16 MiB 0.80 / 0.87, 1 GiB
// 0.86 / 0.91; 8x8x8 16 MiB 0.81 / 0.86, 1 GiB 0.93 / 0.98; 16x16x16 (tpu-v4-pod) 1 MiB 0.50 /
// 0.38, 4 MiB 0.49 / 0.46, 16 MiB 0.76 / 0.83. Three pieces (lag 3) did better on 4x4x8 (16 MiB
// 0.90) and worse on 16x16x16 (0.75); lag 1 worse everywhere.
constexpr std::uint64_t kBusyPiecesFrom = std::uint64_t{4} << 20;
// From this many (64 MiB of f32), eight pieces, lag 4: where the reducer is the bound (tpu-v5p:
// 100 GB/s links, 300 GB/s of reduction), a reduce-scatter is reducer-bound and the all-gather
// after it has nothing to reduce, so only pieces in both at once keep both busy. toroid-sim,
// all-reduce of f32, time with two pieces (lag 2) / eight (lag 4), 2026-12-07: v5p 64 MiB
// 349 / 304 us, 256 MiB 1342 / 1144 us, 1 GiB 5.35 / 4.55 ms; v4 pod and 4x4x8 within 0.2%
// from 64 MiB (their links are the bound); at 16 MiB eight lost everywhere (pod 126 / 169 us).
// Three pieces lag 3 and four lag 2 or 3 did worse on v5p; eight lag 3 better at 1 GiB
// (4.44 ms) and worse at 64 MiB (321 us, and the pod's 464 against 456).
constexpr std::uint64_t kBusyManyPiecesFrom = std::uint64_t{16} << 20;
// From this many (1 GiB of f32), eight pieces for the reduce-scatter and all-gather
// (busy_rsag_pieces below).
constexpr std::uint64_t kBusyEightPiecesFrom = std::uint64_t{256} << 20;

// The global blocks that each member of my row along `dimension` holds, as one block: those of
// the chips whose coordinates along the later dimensions are mine and along this one the
// member's, any along the earlier ones (contiguous: the first dimension runs fastest).
Blocks row_blocks(const Torus& t, const Blocks& global, int dimension, const std::vector<int>& me) {
  std::size_t stride = 1, later = 0, weight = 1;
  for (int d = 0; d < t.dimensions(); ++d) {
    if (d == dimension) stride = weight;
    if (d > dimension) later += static_cast<std::size_t>(me[static_cast<std::size_t>(d)]) * weight;
    weight *= static_cast<std::size_t>(t.size(d));
  }
  Blocks b;
  for (std::size_t v = 0; v < static_cast<std::size_t>(t.size(dimension)); ++v) {
    const Block& lo = global[later + v * stride];
    const Block& hi = global[later + (v + 1) * stride - 1];
    b.push_back({lo.offset, hi.offset + hi.count - lo.offset});
  }
  return b;
}

Blocks row_blocks(const Context& ctx, const Blocks& global, int dimension) {
  return row_blocks(ctx.topology, global, dimension, ctx.topology.coord_of(ctx.rank));
}

// Where a ring along `row` cuts its blocks in halves: relative to my place in `next`, the row
// that takes each of its blocks on (HalfCut, group.hpp; in an all-gather the row gathered
// before it), unless that is a line (the middle).
// Member v's block holds the blocks of `next` as a chip with my coordinates but v along `row`
// sees them.
HalfCut row_cut(const Context& ctx, const Blocks& global, const Row& row, const Row& next) {
  if (next.links == Links::line) return {};
  HalfCut cut{{}, next.group.position};
  std::vector<int> at = ctx.topology.coord_of(ctx.rank);
  for (int v = 0; v < row.group.size(); ++v) {
    at[static_cast<std::size_t>(row.dimension)] = v;
    cut.sub.push_back(row_blocks(ctx.topology, global, next.dimension, at));
  }
  return cut;
}

Schedule reduce_scatter_rows(const Spec& r, const Context& ctx, const std::vector<Row>& rows) {
  Schedule s;
  const Blocks global = even_blocks(0, r.count, ctx.nranks());
  const Block own = global[static_cast<std::size_t>(ctx.rank)];
  const Chunk result = r.in_place ? chunk(Buf::output, own) : Chunk{Buf::output, 0, own.count};
  // In place the partials accumulate in the output; else in scratch at the same offsets.
  const Buf acc = r.in_place ? Buf::output : Buf::scratch;
  if (!r.in_place) s.scratch_count = r.count;
  Buf from = Buf::input;
  std::uint32_t phase = 0;
  for (std::size_t k = rows.size(); k-- > 0;) {
    const Row& row = rows[k];
    const Blocks b = row_blocks(ctx, global, row.dimension);
    const Chunk kept =
        k == 0 ? result : chunk(acc, b[static_cast<std::size_t>(row.group.position)]);
    phase = append_reduce_scatter(s, row.links, row.group, b, 0, from, acc, kept, phase);
    from = acc;
  }
  append_average(s, r.average, result, static_cast<std::uint32_t>(ctx.nranks()), phase);
  return s;
}

Schedule allgather_rows(const Spec& r, const Context& ctx, const std::vector<Row>& rows) {
  Schedule s;
  const Blocks global = even_blocks(0, r.count, ctx.nranks());
  const Block own = global[static_cast<std::size_t>(ctx.rank)];
  std::uint32_t phase = 0;
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const Row& row = rows[k];
    const Blocks b = row_blocks(ctx, global, row.dimension);
    const Chunk held = k > 0 ? chunk(Buf::output, b[static_cast<std::size_t>(row.group.position)])
                       : r.in_place ? chunk(Buf::output, own)
                                    : Chunk{Buf::input, 0, own.count};
    const HalfCut cut = k > 0 ? row_cut(ctx, global, row, rows[k - 1]) : HalfCut{};
    phase = append_allgather(s, row.links, row.group, b, 0, held, Buf::output, phase, cut);
  }
  return s;
}

// Every-dimension-busy reduce-scatter and all-gather (the block comment): part i of every
// rank's block, cut by the shares, goes through the rows in its order (first_then_descending). Its
// layout numbers the ranks with the first row of that order slowest and the last fastest, so
// that what a member of the k-th row holds (the ranks with my coordinates along the rows before,
// its own along this one, any after) is one range of it; the layout lies in scratch at `base`,
// each rank's part of its block after the previous rank's, and `map` leads from there to the
// part's places in the vector.
struct BusyPart {
  std::vector<Row> order;         // the rows in this part's order
  Gather map;                     // layout offset -> vector offset
  std::vector<std::uint64_t> at;  // per layout index (and one past the end): its offset
  std::vector<std::size_t>
      weight;            // per row of `order`: the layout indices one step along it spans
  std::size_t mine = 0;  // my layout index
  Block own;             // my part of my block, in the vector
};

// Part i's piece [lo, hi) of every block (fractions of it; `last`: to the block's end).
BusyPart busy_part(const Context& ctx, const std::vector<Row>& order, const Blocks& global,
                   double lo_fraction, double hi_fraction, bool last, std::uint64_t base) {
  const Torus& t = ctx.topology;
  const std::size_t m = order.size();
  BusyPart part;
  part.order = order;
  part.weight.assign(m, 1);
  for (std::size_t k = m - 1; k-- > 0;)
    part.weight[k] = part.weight[k + 1] * static_cast<std::size_t>(part.order[k + 1].group.size());
  // Cut every block where the shortest one is cut (the block rule's longer blocks come first
  // and are one element longer), so that every piece but the last is as long in every block:
  // a transfer of many blocks then carries the same bytes on every chip (cut by each block's
  // own length, a piece of 8x8x12's 16 MiB all-gather carried 32 elements more on some chips,
  // and the simulator ran every chip: model/sim_symmetry.hpp).
  const double shortest = static_cast<double>(global.back().count);
  const auto piece = [&](const Block& b) {
    const auto cut = [&](double f) {
      return std::min(b.count, static_cast<std::uint64_t>(std::llround(f * shortest)));
    };
    const std::uint64_t lo = cut(lo_fraction), hi = last ? b.count : cut(hi_fraction);
    return Block{b.offset + lo, hi - lo};
  };
  const std::size_t p = static_cast<std::size_t>(t.chips());
  // On a twisted ring first (twisted_rings), a position along it is a walk from sheet 0.
  const bool twisted = part.order[0].group.size() > t.size(part.order[0].dimension);
  part.at.resize(p + 1);
  std::vector<int> coord(static_cast<std::size_t>(t.dimensions()), 0);
  std::uint64_t at = base;
  for (std::size_t v = 0; v < p; ++v) {
    std::size_t rest = v;
    for (std::size_t k = m; k-- > 0;) {  // the last row of the order runs fastest
      const auto size = static_cast<std::size_t>(part.order[k].group.size());
      coord[static_cast<std::size_t>(part.order[k].dimension)] = static_cast<int>(rest % size);
      rest /= size;
    }
    if (twisted) walk_twisted_ring(t, part.order[0].dimension, coord);
    const int q = t.rank_of(coord);
    const Block b = piece(global[static_cast<std::size_t>(q)]);
    part.at[v] = at;
    if (b.count > 0) part.map.runs.push_back({at, b.count, b.offset});
    at += b.count;
    if (q == ctx.rank) {
      part.mine = v;
      part.own = b;
    }
  }
  part.at[p] = at;
  return part;
}

// The layout ranges the members of the k-th row of `part` hold (the block comment above).
Blocks busy_blocks(const BusyPart& part, std::size_t k) {
  const Row& row = part.order[k];
  const std::size_t span = part.weight[k];
  // The start of my range along the rows up to k: my layout index with the coordinates along
  // rows k.. zeroed, i.e. rounded down to whole steps of row k's predecessor.
  const std::size_t outer = k == 0 ? 0 : part.mine / part.weight[k - 1] * part.weight[k - 1];
  Blocks b;
  for (std::size_t u = 0; u < static_cast<std::size_t>(row.group.size()); ++u) {
    const std::size_t first = outer + u * span;
    b.push_back({part.at[first], part.at[first + span] - part.at[first]});
  }
  return b;
}

// Where the k-th row of `part` cuts its blocks in halves: relative to my place in the row
// after it, whose ranges lie inside each of its ranges (HalfCut, group.hpp).
HalfCut busy_cut(const BusyPart& part, std::size_t k) {
  if (k + 1 == part.order.size() || part.order[k + 1].links == Links::line) return {};
  const Group& next = part.order[k + 1].group;
  HalfCut cut{{}, next.position};
  const std::size_t span = part.weight[k], step = part.weight[k + 1];
  const std::size_t outer = k == 0 ? 0 : part.mine / part.weight[k - 1] * part.weight[k - 1];
  for (std::size_t u = 0; u < static_cast<std::size_t>(part.order[k].group.size()); ++u) {
    Blocks sub;
    for (std::size_t w = 0; w < static_cast<std::size_t>(next.size()); ++w) {
      const std::size_t first = outer + u * span + w * step;
      sub.push_back({part.at[first], part.at[first + step] - part.at[first]});
    }
    cut.sub.push_back(std::move(sub));
  }
  return cut;
}

// The vector's link time over a chip's links at once against the hops of one pass through the
// rows (a ring of k: k/2 each way; a line: k - 1): pipelined pieces each add the hops to the
// critical path, so how many pay depends on this. 0 where the rates and hops are not known
// (Spec::elem_bytes, Context::hop_seconds: the simulator's and auto's model knows them).
// What a chip's links carry at once over all its rows (link_rate's unit per second).
double links_at_once(const Context& ctx, const std::vector<Row>& rows) {
  double rate = 0;
  for (const Row& row : rows)
    rate += ctx.link_rate[static_cast<std::size_t>(row.dimension)] *
            carries(row.links != Links::line, row.group.size());
  return rate;
}

double link_time_over_hops(const Spec& r, const Context& ctx, const std::vector<Row>& rows) {
  if (r.elem_bytes == 0 || !ctx.knows_hops()) return 0;
  double hops = 0;
  for (const Row& row : rows)
    hops += ctx.hop_seconds[static_cast<std::size_t>(row.dimension)] *
            (row.links != Links::line && row.group.size() > 2 ? row.group.size() / 2
                                                              : row.group.size() - 1);
  return hops > 0 ? static_cast<double>(r.count) * r.elem_bytes / links_at_once(ctx, rows) / hops
                  : 0;
}

// Whether the chip's reducer, not its links, bounds the all-reduce: every chip reduces
// (p - 1)/p of the vector once, while its links carry twice that over all its rows at once.
// Known only with the model (Context::reduce_rate). tpu-v5p: 300 GB/s of reduction against
// 600 GB/s of links, the two bounds equal; the v4 presets' 50 GB/s links are the bound there.
bool reducer_bound(const Spec& r, const Context& ctx, const std::vector<Row>& rows) {
  if (ctx.reduce_rate <= 0 || r.elem_bytes == 0 || !ctx.knows_hops()) return false;
  return links_at_once(ctx, rows) >= 2 * ctx.reduce_rate;
}

// The every-dimension-busy all-reduce's pieces, their lag and whether the shares weigh exact
// loads (busy_shares): 8 pieces lag 4 from 16Mi elements (kBusyManyPiecesFrom; 4 where the
// link time is under 10 times the hops, below); from 4Mi, 4
// pieces lag 4 where the link time is at least 6 times the hops, 3 lag 3 where 3 times (short
// rows: 4x4x8, the twisted slice, 8x8x16), else 2 lag 2 (the pod's rings of 16 at 16 MiB, v5p). toroid-sim, f32, of the
// limit with 2 pieces lag 2 rates alone / 3 lag 3 exact loads (2026-12-07), 16 MiB: tpu-v4
// (4x4x8) 0.867 / 0.937, twisted 0.60 / 0.65, 8x8x16 0.79 / 0.83, 4x4x16 0.78 / 0.78, 2x4x8
// 0.82 / 0.89, tpu-v4-pod 0.886 / 0.80 (ratio 2.3), tpu-v5p 0.50 / 0.45 (ratio 1); the pod at
// 24 MiB (ratio 3.5) 0.938 / 0.958, 32 MiB 0.954 / 0.975; 3 pieces with rates alone sat
// between (4x4x8 0.896). Where the ratio is 6 or more (4x4x8 7, 2x4x8 9.6, the twisted slice
// 8.4, 4x8x8 twisted 6.1), 4 pieces lag 4 (2026-12-08, against 3 lag 3): 4x4x8 0.937 -> 0.957,
// twisted 0.871 -> 0.904, 2x4x8 0.888 -> 0.928, 4x8x8 twisted 0.790 -> 0.794; they lost where
// it is lower (8x8x16, ratio 3.5: 0.831 -> 0.757); 5 lag 4 or 5 did worse on 4x4x8 (0.91).
// From 16Mi elements, 8 pieces lag 4, but 4 where the ratio is under 10 (2026-12-08, 64 MiB:
// tpu-v3-pod, ratio 6.5, 449.0 -> 429.3 us, 0.933 -> 0.976; tpu-v4-pod, 9.3, 456.5 -> 448.3;
// where it is higher 8 stay ahead: tpu-v4, 28, 450.5 against 454.8 with 4; the v3 pod at
// 128 MiB, 13, 848 against 857).
struct BusyPipeline {
  int pieces = 1, lag = 2;
  bool exact_loads = false;
};
BusyPipeline busy_allreduce_pipeline(const Spec& r, const Context& ctx,
                                     const std::vector<Row>& rows) {
  if (r.count >= kBusyManyPiecesFrom && reducer_bound(r, ctx, rows)) {
    // A pipeline's depth grows with the square root of its link time over its latency: about
    // 6·sqrt(ratio) pieces, 8 to 64, lag 5 (4 below 20 pieces). tpu-v5p (ratio 4 / 16 / 64 at
    // 64 MiB / 256 MiB / 1 GiB), of the limit with 8 pieces lag 4 against this rule
    // (2026-12-07): 0.70 / 0.78 / 0.778 against 0.713 (12, lag 4) / 0.88 (24) / 0.938 (48);
    // tried beside them: 1 GiB 16 lag 4 0.853, 32 lag 6 0.911, 64 lag 8 0.936, 64 lag 12
    // 0.905; 256 MiB 16 lag 6 0.835, 32 lag 6 0.874; 64 MiB 16 lag 6 0.72, 24 lag 6 0.63.
    // Lag 5 where it was 6 (2026-12-08, of the limit with the all-reduce's radius, lag 4 / 5 /
    // 6): 192 MiB 0.857 / 0.922 / 0.897, 256 MiB 0.869 / 0.928 / 0.909, 512 MiB 0.899 / 0.945
    // / 0.930, 1 GiB 0.911 / 0.958 / 0.946 (64 pieces lag 5 0.970); 16x16x16 and 8x8x16 at
    // v5p's rates 1.5% better at 256 MiB and 1 GiB; at 128 MiB (17 pieces) 0.849 / 0.839 /
    // 0.836, at 96 MiB (15) 0.827 / 0.813 / 0.831. 64 MiB stays 0.80 with 6 to 14 pieces, lag
    // 3 to 6: its hops, not the depth.
    const int pieces = std::clamp(
        static_cast<int>(std::lround(6 * std::sqrt(link_time_over_hops(r, ctx, rows)))), 8, 64);
    return {pieces, pieces < 20 ? 4 : 5, true};
  }
  if (r.count < kBusyPiecesFrom) return {1, 2, false};
  const double ratio = link_time_over_hops(r, ctx, rows);
  if (r.count >= kBusyManyPiecesFrom) return {ratio > 0 && ratio < 10 ? 4 : 8, 4, true};
  if (ratio >= 6) return {4, 4, true};
  if (ratio >= 3) return {3, 3, true};
  return {2, 2, false};
}

// Where the all-reduce's last row floods its range round the ring (ring_flood.hpp) instead of
// reduce-scattering and all-gathering it: where the range crosses a link of that row in less
// than half a hop's latency, with the model's links known, and in one piece. Flooding takes about
// k/2 hops instead of k and carries the range k/2 times each way instead of once. toroid-sim,
// f32, torus2d_both's all-reduce, of the limit without / with (2026-12-08): tpu-v4-pod
// 256 KiB 0.50 / 0.585, 1 MiB 0.51 / 0.58, 4 MiB 0.53 / 0.58, 8 MiB 0.62 / 0.65; tpu-v5p
// 0.50 / 0.57 from 256 KiB to 4 MiB; tpu-v4 (4x4x8, rings of 4 and 8) within 1% but 256 KiB
// 0.50 / 0.53, 2 MiB 29.6 -> 29.3 us. Flooding ranges up to a hop's worth lost there (2 MiB
// 29.6 -> 34.4 us), up to 2 hops' more (4 MiB 0.63 -> 0.49); a quarter of a hop gained no
// more anywhere; in
// pipelined pieces it lost from 16 MiB, where the links are the bound (v5p 1 GiB 0.94 ->
// 0.885, the pod 64 MiB 0.98 -> 0.97).
// `fewest_rows`: torus2d floods on three dimensions and more, so that on two it stays the plain
// dimension-by-dimension form whose closed forms the simulator's tests count; torus2d_both on
// two as well (2026-12-08, tpu-v3-pod, 32x32: 64 KiB 64.3 -> 49.7 us, 256 KiB 65.4 -> 51.8,
// 1 MiB 69.5 -> 60.3, the fastest of any algorithm at those sizes; nothing slower).
RingFlood ring_flood(const Spec& r, const Context& ctx, std::span<const Row> order, int pieces,
                     std::size_t fewest_rows) {
  if (order.size() < fewest_rows || pieces > 1 || r.elem_bytes == 0 || !ctx.knows_hops()) return {};
  const auto d = static_cast<std::size_t>(order.back().dimension);
  return {static_cast<std::uint64_t>(0.5 * ctx.hop_seconds[d] * ctx.link_rate[d] /
                                     static_cast<double>(r.elem_bytes)),
          r.count};
}

// How many pipelined pieces each part of the every-dimension-busy reduce-scatter and all-gather
// runs as. One piece at a time, the rows' link loads collide: the ascending layouts (the block
// comment) fix the order after a part's first row, so on three dimensions two parts take the
// same row second and a third row idles meanwhile (16x16x16's reduce-scatter: z, z, y; its x
// idle). With pieces, a part's later pieces still cross its first row while the earlier ones
// are in the colliding rows; but each piece adds its rows' hops to the critical path. So where
// the model knows the hops (link_time_over_hops above, ratio r), about r / 2.5 pieces, at least
// 2 where r >= 2 and at most 12, with exact loads (busy_shares) from 6; without it (a
// communicator's model of endpoint links, as on one node) 2 from 4Mi elements, 4 from 16Mi, 8
// from 256Mi. A communicator whose tuning describes a torus of nodes (network_torus) knows its
// hops and follows the model's rule. toroid-sim, f32, of the limit,
// reduce-scatter and all-gather (2026-12-07):
//   - pieces 1 / 2 / 4 / 8 by count: tpu-v4-pod 1 GiB 0.90 / 0.95 / 0.97 / 0.98 and
//     0.88 / 0.94 / 0.97 / 0.99; 16 MiB 0.76 / 0.77 / 0.59 / 0.49 and 0.80 / 0.80 / 0.70 / 0.51.
//   - at 16 MiB (r: pod 2.3, 4x4x8 7, v5p 1): 4x4x8 with 2 / 3 / 4 pieces 0.79 / 0.84 / 0.73
//     and 0.77 / 0.84 / 0.83; v5p with 1 / 2 0.67 / 0.67 and 0.61 / 0.48.
//   - at 64 MiB (r: pod 9.3, 4x4x8 28, v5p 4): 4x4x8 4 pieces 0.89 / 0.90, 8 exact 0.915 /
//     0.92, 11 exact 0.93 / 0.94; the pod 4 pieces 0.92 / 0.93, 8 0.90 / 0.93; v5p 2 pieces
//     0.85 (all-gather) against 4's 0.83.
//   - at 1 GiB: 4x4x8 8 pieces exact 0.94 / 0.95, 12 0.957 / 0.975, 16 0.967 / 0.989; the pod
//     12 0.987 / 0.990. 16 pieces took v5p's rows from 2-4 s of simulation to 40-64 s for under
//     1%, hence 12.
//   - the rule against the count rule on other shapes, 64 MiB and 1 GiB: 4x4x16 0.82 -> 0.88
//     and 0.93 -> 0.96, 8x8x16 1 GiB 0.97 -> 0.98-0.99, 2x4x8 reduce-scatter 0.81 -> 0.91; lost
//     8x8x8 64 MiB 0.905 -> 0.88 and 0.947 -> 0.93, 2x4x8 all-gather 64 MiB 0.84 -> 0.81.
constexpr int kMostBusyPieces = 12;
int busy_rsag_pieces(const Spec& r, const Context& ctx, const std::vector<Row>& rows) {
  if (r.count < kBusyPiecesFrom) return 1;
  if (const double ratio = link_time_over_hops(r, ctx, rows); ratio > 0)
    return std::max(ratio >= 2 ? 2 : 1,
                    std::clamp(static_cast<int>(std::lround(ratio / 2.5)), 1, kMostBusyPieces));
  if (r.count >= kBusyEightPiecesFrom) return 8;
  return r.count >= kBusyManyPiecesFrom ? 4 : 2;
}
// From this many pieces the reduce-scatter's and all-gather's shares weigh exact loads.
constexpr int kExactLoadsFromPieces = 6;

// Every piece of every part of the reduce-scatter's or all-gather's, part by part, their
// layouts one after the other in scratch; `own`: my block of the vector.
std::vector<BusyPart> busy_parts(const Spec& r, const Context& ctx, const std::vector<Row>& rows,
                                 int pieces, Block& own) {
  const Blocks global = even_blocks(0, r.count, ctx.nranks());
  own = global[static_cast<std::size_t>(ctx.rank)];
  // Twisted rings where one dimension is long (k×k×2k): on k×2k×2k the long ring after a
  // twisted one holds the ranks of sheet 1 rotated by k (that ring's walk moved them), so its
  // ranges would not ascend in the vector.
  const Orders orders = long_dimensions(ctx.topology) == 1
                            ? twisted_rings(ctx, first_then_descending(rows))
                            : first_then_descending(rows);
  const std::vector<double> share = busy_shares(ctx, rows, orders, pieces >= kExactLoadsFromPieces);
  std::vector<BusyPart> parts;
  std::uint64_t base = 0;
  double before = 0;  // the shares of the parts before
  for (std::size_t i = 0; i < rows.size(); ++i) {
    for (int j = 0; j < pieces; ++j) {
      const double lo = before + share[i] * j / pieces, hi = before + share[i] * (j + 1) / pieces;
      const bool last = i + 1 == rows.size() && j + 1 == pieces;
      parts.push_back(busy_part(ctx, orders[i], global, lo, hi, last, base));
      base = parts.back().at.back();
    }
    before += share[i];
  }
  return parts;
}

// Where the pieces of one part start (the lag moved nothing measurable: 1 and 2 gave the same
// times on the pod and 4x4x8, 2026-12-07; the data decides when a piece's steps can go).
constexpr int kBusyRsagLag = 2;

// The pieces of one part start `stride` phases apart (a lag-th of one piece's phases), and
// piece j's phase f becomes f·m + j mod m, m = max(lag + 1, pieces): the pieces that share a
// channel in one phase (an all-reduce's gather and a scatter lag or more pieces later: more
// where the first row's all-gather outlasts a stride, as eight pieces' on 4x4x8) get distinct
// phases, in order. (m = lag + 1 where that is enough keeps the 2D forms' phases as they were.)
struct PieceClock {
  std::uint32_t stride = 0, m = 1;
  PieceClock(std::uint32_t phases, int pieces, int lag)
      : stride((phases + static_cast<std::uint32_t>(lag) - 1) / static_cast<std::uint32_t>(lag)),
        m(std::max(static_cast<std::uint32_t>(lag) + 1, static_cast<std::uint32_t>(pieces))) {}
  void place(Schedule& s, std::size_t first, int piece) const {
    const auto j = static_cast<std::uint32_t>(piece);
    for (std::size_t k = first; k < s.steps.size(); ++k)
      s.steps[k].phase = s.steps[k].phase * m + j % m;
  }
};

// One piece's reduce-scatter through its rows from `phase`; returns the next free phase. In
// pieces its rings cut their halves relative to the next row (HalfCut, group.hpp), which one
// piece at a time cost 4x4x8 9% (the next row's reads wait for a row's end) and in pieces
// costs within 1% either way (toroid-sim 2026-12-07, tpu-v4-pod and tpu-v4, 16 MiB to 1 GiB),
// while every chip's program is a moved copy of the others': the pod's 1 GiB row simulates
// one chip in 0.2 s instead of 4096 in 35 s.
std::uint32_t busy_reduce_scatter_piece(Schedule& s, const Spec& r, const BusyPart& part,
                                        const Block& own, int tag, std::uint32_t phase,
                                        bool relative) {
  const Chunk result = r.in_place
                           ? chunk(Buf::output, part.own)
                           : Chunk{Buf::output, part.own.offset - own.offset, part.own.count};
  for (std::size_t k = 0; k < part.order.size(); ++k) {
    const Blocks b = busy_blocks(part, k);
    const Block kept = b[static_cast<std::size_t>(part.order[k].group.position)];
    const Source from = k == 0 ? Source(Buf::input, part.map) : Source(Buf::scratch);
    phase = append_reduce_scatter(s, part.order[k].links, part.order[k].group, b, tag, from,
                                  Buf::scratch,
                                  k + 1 == part.order.size() ? result : chunk(Buf::scratch, kept),
                                  phase, relative ? busy_cut(part, k) : HalfCut{});
  }
  return phase;
}

// One piece's all-gather through its rows, the last first, from `phase` (halves relative to
// the row gathered before, always).
std::uint32_t busy_allgather_piece(Schedule& s, const Spec& r, const BusyPart& part,
                                   const Block& own, int tag, std::uint32_t phase,
                                   bool /*relative*/) {
  // Received straight into their places in the output, forwarded from there.
  const Source out(Buf::output, part.map);
  for (std::size_t k = part.order.size(); k-- > 0;) {
    const Blocks b = busy_blocks(part, k);
    const Block held = b[static_cast<std::size_t>(part.order[k].group.position)];
    const Chunk mine = k + 1 < part.order.size() ? out.chunk(s, held)
                       : r.in_place
                           ? chunk(Buf::output, part.own)
                           : Chunk{Buf::input, part.own.offset - own.offset, part.own.count};
    phase = append_allgather(s, part.order[k].links, part.order[k].group, b, tag, mine, out, phase,
                             busy_cut(part, k));
  }
  return phase;
}

// Part i (tag 2i) in `pieces` pipelined pieces, parts[i·pieces + j] being its piece j.
using PieceBuilder = std::uint32_t (*)(Schedule&, const Spec&, const BusyPart&, const Block&, int,
                                       std::uint32_t, bool relative);
std::uint32_t busy_pieces(Schedule& s, const Spec& r, const std::vector<BusyPart>& parts,
                          int pieces, const Block& own, PieceBuilder build) {
  const std::size_t nparts = parts.size() / static_cast<std::size_t>(pieces);
  Schedule dry;  // one piece's phases (every piece of every part crosses the same rows)
  const bool relative = pieces > 1;
  const PieceClock clock(build(dry, r, parts[0], own, 0, 0, relative), pieces, kBusyRsagLag);
  std::uint32_t end = 0;
  for (std::size_t i = 0; i < nparts; ++i)
    for (int j = 0; j < pieces; ++j) {
      const std::size_t first = s.steps.size();
      const std::uint32_t done = build(
          s, r, parts[i * static_cast<std::size_t>(pieces) + static_cast<std::size_t>(j)], own,
          2 * static_cast<int>(i), static_cast<std::uint32_t>(j) * clock.stride, relative);
      clock.place(s, first, j);
      end = std::max(end, done * clock.m);
    }
  return end;
}

}  // namespace

Schedule build_busy_rows(const Spec& r, const Context& ctx, const std::vector<Row>& rows,
                         int pieces) {
  Schedule s;
  Block own;
  const std::vector<BusyPart> parts = busy_parts(r, ctx, rows, pieces, own);
  if (r.collective == Collective::allgather) {
    busy_pieces(s, r, parts, pieces, own, busy_allgather_piece);
    return s;
  }
  s.scratch_count = parts.back().at.back();
  const std::uint32_t end = busy_pieces(s, r, parts, pieces, own, busy_reduce_scatter_piece);
  const Chunk whole = r.in_place ? chunk(Buf::output, own) : Chunk{Buf::output, 0, own.count};
  append_average(s, r.average, whole, static_cast<std::uint32_t>(ctx.nranks()), end);
  return s;
}

std::uint32_t append_allreduce_rows(Schedule& s, std::span<const Row> rows, Block region, int tag,
                                    bool average, std::uint32_t divisor, std::uint32_t phase,
                                    std::uint32_t gather_from, std::uint32_t* before_gather,
                                    bool relative_halves, const RingFlood& flood) {
  return allreduce_from(s, rows, 0, region, Buf::input, tag, average, divisor, phase, gather_from,
                        before_gather, relative_halves, flood);
}

void append_allreduce_rows_pipelined(Schedule& s, std::span<const Row> rows, Block region, int tag,
                                     bool average, std::uint32_t divisor, int chunks, int lag,
                                     bool relative_halves, const RingFlood& flood) {
  if (chunks <= 1) {
    append_allreduce_rows(s, rows, region, tag, average, divisor, 0, 0, nullptr, relative_halves,
                          flood);
    return;
  }
  std::uint32_t before = 0;  // the phases a piece spends before its last all-gather
  Schedule dry;
  append_allreduce_rows(dry, rows, region, tag, average, divisor, 0, 0, &before, relative_halves,
                        flood);
  const PieceClock clock(before, chunks, lag);
  const Blocks parts = even_blocks(region.offset, region.count, chunks);
  const auto d = static_cast<std::uint32_t>(lag);
  for (std::uint32_t k = 0; k < static_cast<std::uint32_t>(chunks); ++k) {
    const std::size_t first = s.steps.size();
    append_allreduce_rows(s, rows, parts[k], tag, average, divisor, k * clock.stride,
                          (k + d) * clock.stride, nullptr, relative_halves, flood);
    clock.place(s, first, static_cast<int>(k));
  }
}

std::vector<std::vector<Row>> allreduce_part_rows(const Context& ctx) {
  return twisted_rings(ctx, rotations(rows_of(ctx)));
}

Schedule build_torus_dims(bool busy, const Spec& r, const Context& ctx) {
  const std::vector<Row> rows = rows_of(ctx);
  const bool parts = busy && rows.size() > 1;
  if (r.collective == Collective::reduce_scatter || r.collective == Collective::allgather) {
    if (parts) return build_busy_rows(r, ctx, rows, busy_rsag_pieces(r, ctx, rows));
    return r.collective == Collective::reduce_scatter ? reduce_scatter_rows(r, ctx, rows)
                                                      : allgather_rows(r, ctx, rows);
  }
  Schedule s;
  const auto divisor = static_cast<std::uint32_t>(ctx.nranks());
  if (!busy || rows.size() < 2) {
    append_allreduce_rows(s, rows, {0, r.count}, 0, r.average, divisor, 0, 0, nullptr, false,
                          ring_flood(r, ctx, rows, 1, 3));
    return s;
  }
  // Part i: its share of the vector, the rows in the order i, i+1, ..., on tags 2i and 2i + 1.
  const BusyPipeline pipe = busy_allreduce_pipeline(r, ctx, rows);
  const Orders orders = allreduce_part_rows(ctx);
  const std::vector<double> share = busy_shares(ctx, rows, orders, pipe.exact_loads);
  double before = 0;
  std::uint64_t at = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    before += share[i];
    const std::uint64_t end = i + 1 == rows.size()
                                  ? r.count
                                  : std::min(r.count, static_cast<std::uint64_t>(std::llround(
                                                          before * static_cast<double>(r.count))));
    append_allreduce_rows_pipelined(s, orders[i], {at, end - at}, 2 * static_cast<int>(i),
                                    r.average, divisor, pipe.pieces, pipe.lag, true,
                                    ring_flood(r, ctx, orders[i], pipe.pieces, 2));
    at = end;
  }
  return s;
}

}  // namespace toroid::schedule
