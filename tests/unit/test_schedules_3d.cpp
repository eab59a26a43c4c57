// The torus algorithms on shapes of three dimensions and more: every 3D shape up to 4x4x4
// (every dimension a ring or a line), twisted ones, and 4 to 6 dimensions, checked by the
// in-process verifier on real data and for neighbour-only traffic over the shape's links.
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <set>
#include <tuple>
#include <vector>

#include "catch_extras.hpp"
#include "model/verifier.hpp"
#include "schedule/dependencies.hpp"
#include "schedule/torus_dims.hpp"
#include "schedule_check.hpp"
#include "toroid/error.hpp"

using namespace toroid;
using schedule::Collective;
using testing::check;
using testing::Shape;

namespace {

// Checks the algorithm's collective on `t` (in place and not, counts around the rank count:
// some blocks empty, odd ones) and that every message crosses one link of the shape.
void check_on(const Torus& t, Algorithm a, Collective c) {
  const Shape s{t, {}};
  const auto p = static_cast<std::uint64_t>(t.chips());
  for (std::uint64_t n : {p - 1, 3 * p + 5})
    for (bool in_place : {false, true}) {
      INFO(t.to_string() << " " << to_string(a) << " " << to_string(c) << " n=" << n
                         << (in_place ? " in place" : ""));
      model::Traffic traffic;
      const int root = c == Collective::broadcast ? t.chips() - 1 - t.chips() / 3 : 0;
      REQUIRE(check(a, c, s, n, in_place, DataType::i64, ReduceOp::sum, &traffic, root) == "");
      for (auto [from, to] : traffic.links) {
        INFO(from << " -> " << to);
        REQUIRE(t.adjacent(from, to));
      }
    }
}

// Every 3D shape with sides in [2, max_side] (and at least one side of min_side or more), each
// dimension wrapped or not: both torus algorithms, every collective they serve.
void check_3d_shapes(int min_side, int max_side) {
  for (int x = 2; x <= max_side; ++x)
    for (int y = 2; y <= max_side; ++y)
      for (int z = 2; z <= max_side; ++z) {
        if (std::max({x, y, z}) < min_side) continue;
        for (int wraps = 0; wraps < 8; ++wraps) {
          const Torus t({x, y, z}, {(wraps & 1) != 0, (wraps & 2) != 0, (wraps & 4) != 0});
          for (Collective c : {Collective::allreduce, Collective::reduce_scatter,
                               Collective::allgather, Collective::broadcast})
            check_on(t, Algorithm::torus2d, c);
          for (Collective c :
               {Collective::allreduce, Collective::reduce_scatter, Collective::allgather})
            check_on(t, Algorithm::torus2d_both, c);
        }
      }
}

// The verifier on a pipelined all-reduce of n i32 elements on `t`, every rank: `rows` gives a
// rank's rows (from its context), in `pieces` pieces `lag` apart; "" when right and
// neighbours only.
template <class Rows>
std::string check_pipelined(const Torus& t, std::uint64_t n, Rows rows, int pieces, int lag,
                            const schedule::RingFlood& flood = {}) {
  model::CheckSpec spec{Collective::allreduce, t.chips(),     n, false,
                        DataType::i32,         ReduceOp::sum, 0, {}};
  model::Traffic traffic;
  std::string e = model::check_collective(
      spec,
      [&](int r) {
        const schedule::Context ctx{r, t, {}};
        schedule::Schedule s;
        append_allreduce_rows_pipelined(s, rows(ctx), {0, n}, 0, false,
                                        static_cast<std::uint32_t>(t.chips()), pieces, lag, true,
                                        flood);
        s.rank = r;
        s.nranks = t.chips();
        schedule::order_by_phase(s);
        schedule::derive_dependencies(s);
        return s;
      },
      &traffic);
  for (auto [from, to] : traffic.links)
    if (e.empty() && !t.adjacent(from, to)) e = fmt::format("{} -> {}: not neighbours", from, to);
  return e;
}

}  // namespace

// Sides of 2 and 3 give every case of the builder (even and odd rings, lines of both parities,
// a dimension of each kind first); sides of 4 the same code on up to 64 chips, 40 s under the
// sanitizers, so those run with the [scale] cases (the Release tree).
TEST_CASE("torus2d runs dimension by dimension on every 3D shape up to 3x3x3, neighbours only",
          "[schedules][3d]") {
  check_3d_shapes(2, 3);
}

TEST_CASE("torus2d runs dimension by dimension on every 3D shape up to 4x4x4 with a side of 4",
          "[schedules][3d][scale]") {
  check_3d_shapes(4, 4);
}

TEST_CASE("the torus algorithms run on twisted tori over the twisted links, and on 4-6 dimensions",
          "[schedules][3d]") {
  for (const char* shape :
       {"2x2x4:twist", "2x4x4:twist", "4x2x2:twist", "3x3x6:twist", "2x2x2x2", "2x3x2x2:wrap=xz",
        "2x2x2x2x2", "2x2x2x2x2x2:wrap=none", "3x1x4", "1x1x5:wrap=none", "1x1x1"}) {
    const Torus t = Torus::parse(shape);
    for (Collective c : {Collective::allreduce, Collective::reduce_scatter, Collective::allgather,
                         Collective::broadcast})
      check_on(t, Algorithm::torus2d, c);
    for (Collective c : {Collective::allreduce, Collective::reduce_scatter, Collective::allgather})
      check_on(t, Algorithm::torus2d_both, c);
  }
}

TEST_CASE("torus2d on a 2D shape and on the same shape with a third dimension of 1 agree",
          "[schedules][3d]") {
  // The N-dimensional builder skips dimensions of one: 4x3x1 runs 4x3's schedule.
  for (Algorithm a : {Algorithm::torus2d})
    for (Collective c : {Collective::allreduce, Collective::reduce_scatter, Collective::allgather,
                         Collective::broadcast})
      for (int r = 0; r < 12; ++r) {
        const schedule::Spec spec{c, 101, false, false, {}, 5};
        const schedule::Schedule two =
            schedule::build(a, spec, {r, Torus2D(4, 3, true, false), {}});
        const schedule::Schedule three =
            schedule::build(a, spec, {r, Torus({4, 3, 1}, {true, false, true}), {}});
        REQUIRE(two.steps.size() == three.steps.size());
        for (std::size_t i = 0; i < two.steps.size(); ++i) {
          CHECK(two.steps[i].peer == three.steps[i].peer);
          CHECK(two.steps[i].phase == three.steps[i].phase);
        }
      }
}

TEST_CASE("every-dimension-busy all-reduce in pipelined pieces, from 4Mi elements",
          "[schedules][3d][scale]") {
  // From 4Mi elements each part runs as two pieces (torus_dims.cpp): its steps' phases
  // interleave with the other piece's; the verifier runs it on real data, both placements.
  const Torus t = Torus::parse("2x2x2:wrap=xz");
  const Shape s{t, {}};
  const std::uint64_t n = (std::uint64_t{4} << 20) + 5;
  for (bool in_place : {false, true}) {
    INFO((in_place ? "in place" : "out of place"));
    REQUIRE(check(Algorithm::torus2d_both, Collective::allreduce, s, n, in_place, DataType::i32) ==
            "");
  }
  // Twice the steps of one piece on a rank, each part's tags only.
  const auto steps = [&](std::uint64_t count) {
    return schedule::build(Algorithm::torus2d_both,
                           {Collective::allreduce, count, false, false, {}}, {0, t, {}})
        .steps.size();
  };
  CHECK(steps(n) > steps(n - 10) * 3 / 2);
}

TEST_CASE("eight pipelined pieces: no two transfers share a channel in one phase, and they add up",
          "[schedules][3d]") {
  // From 16Mi elements each part runs as eight pieces, lag 4 (torus_dims.cpp). Where the first
  // row's all-gather outlasts a stride (4x4x8, 8x2x2), piece k's last gathers meet piece k+5's
  // first scatters in one phase unless every piece has a phase offset of its own.
  for (const char* shape : {"4x4x8", "8x2x2", "16x16x24"}) {
    INFO(shape);
    const Torus t = Torus::parse(shape);
    const schedule::Schedule s = schedule::build(
        Algorithm::torus2d_both, {Collective::allreduce, std::uint64_t{16} << 20, false, false, {}},
        {0, t, {}});
    std::set<std::tuple<int, int, int, std::uint32_t>> channels;
    for (const schedule::Step& st : s.steps)
      if (!schedule::is_local(st.kind))
        REQUIRE(channels.insert({static_cast<int>(st.kind), st.peer, st.tag, st.phase}).second);
  }
  // The same eight pieces (and the three, lag 3, of short rows from 4Mi elements, and the
  // deeper pipelines of a reducer-bound call) on a count the verifier can run: every rank, real
  // data.
  for (auto [shape, pieces, lag] :
       {std::tuple{"8x2x2", 8, 4}, std::tuple{"8x2x2", 3, 3}, std::tuple{"8x2x2", 4, 4},
        std::tuple{"4x2x3:wrap=xz", 3, 3}, std::tuple{"4x2x3:wrap=xz", 16, 6}}) {
    INFO(shape << " " << pieces << " pieces lag " << lag);
    const Torus t = Torus::parse(shape);
    const std::uint64_t n = static_cast<std::uint64_t>(t.chips()) * 3 * 32 + 7;
    CHECK(check_pipelined(t, n, schedule::rows_of, pieces, lag) == "");
  }
  // Each part of a twisted torus's all-reduce in 4 pieces lag 4 (its ring of 8 through the
  // twisted links, then lines inside its sheet), every rank, real data, neighbours only.
  const Torus twisted = Torus::parse("2x2x4:twist");
  const std::uint64_t n = static_cast<std::uint64_t>(twisted.chips()) * 3 * 32 + 7;
  for (std::size_t part = 0; part < 3; ++part) {
    INFO("2x2x4:twist part " << part);
    const auto rows = [&](const schedule::Context& ctx) {
      return schedule::allreduce_part_rows(ctx)[part];
    };
    CHECK(check_pipelined(twisted, n, rows, 4, 4) == "");
  }
}

namespace {

// torus2d_both's all-reduce of `count` f32 elements on `shape` with the model's links (`link_rate`
// bytes/s and 1 us a hop along every dimension; 0: no model) and reducer: rank 0's sends on one
// channel of part 0's first row, the same number in every pipelined piece.
// Rank r's context on `t` with the model's links known (`link_rate` bytes/s and 1 us a hop along
// every dimension, the reducer at `reduce_rate`), as the simulator gives them.
schedule::Context model_context(int r, const Torus& t, double link_rate, double reduce_rate = 0) {
  schedule::Context ctx{r, t, {}};
  ctx.link_rate.fill(link_rate);
  ctx.hop_seconds.fill(1e-6);
  ctx.reduce_rate = reduce_rate;
  return ctx;
}

int first_channel_sends(const char* shape, std::uint64_t count, double link_rate,
                        double reduce_rate = 0) {
  const Torus t = Torus::parse(shape);
  schedule::Context ctx{0, t, {}};
  schedule::Spec spec{Collective::allreduce, count, false, false, {}};
  if (link_rate > 0) {
    ctx = model_context(0, t, link_rate, reduce_rate);
    spec.elem_bytes = 4;
  }
  const schedule::Schedule s = schedule::build(Algorithm::torus2d_both, spec, ctx);
  int n = 0;
  for (const schedule::Step& st : s.steps)
    n += st.kind == schedule::Kind::send && st.peer == 1 && st.tag == 0;
  return n;
}

}  // namespace

TEST_CASE("the every-dimension-busy all-reduce takes three or four pieces where the rows are short",
          "[schedules][3d]") {
  // From 4Mi elements, with the model's rates and hops known (the simulator's): 4 pieces where
  // the link time is at least 6 times the hops of one pass (4x4x8: 56 us against 8), 3 where 3
  // times (8x8x16: 56 against 16), else 2, as without the model (16x16x16: 56 against 24).
  const std::uint64_t n = std::uint64_t{4} << 20;
  CHECK(first_channel_sends("4x4x8", n, 50e9) == first_channel_sends("4x4x8", n, 0) * 2);
  CHECK(first_channel_sends("8x8x16", n, 50e9) * 2 == first_channel_sends("8x8x16", n, 0) * 3);
  CHECK(first_channel_sends("16x16x16", n, 50e9) == first_channel_sends("16x16x16", n, 0));
}

TEST_CASE("on a twisted torus the every-dimension-busy parts start on rings through the twist",
          "[schedules][3d]") {
  // 4x4x8 twisted: a part first along x runs the ring of 8 that (3, y, z) closes through its
  // twisted link to (0, y, z + 4); chip (3, 0, 0) = rank 3 sends over it to rank 64. The
  // reduce-scatter and all-gather too; on 4x8x8 (two long dimensions) the all-reduce only
  // (torus_dims.cpp: there a long ring after the twisted one would not hold ascending ranks).
  const auto sends_to = [](const char* shape, Collective c, int rank, int peer) {
    const schedule::Schedule s = schedule::build(
        Algorithm::torus2d_both, {c, 1u << 16, false, false, {}}, {rank, Torus::parse(shape), {}});
    return std::any_of(s.steps.begin(), s.steps.end(), [&](const schedule::Step& st) {
      return st.kind == schedule::Kind::send && st.peer == peer;
    });
  };
  const Torus t = Torus::parse("4x4x8:twist");
  REQUIRE(t.neighbour(3, 0, 1) == 64);
  REQUIRE(t.neighbour(12, 1, 1) == 64);  // (0, 3, 0) +y -> (0, 0, 4)
  for (Collective c : {Collective::allreduce, Collective::reduce_scatter, Collective::allgather}) {
    INFO(to_string(c));
    CHECK(sends_to("4x4x8:twist", c, 3, 64));
    CHECK(sends_to("4x4x8:twist", c, 12, 64));
    CHECK_FALSE(sends_to("4x4x8", c, 3, 64));  // not neighbours there
  }
  const Torus wide = Torus::parse("4x8x8:twist");  // (3, y, z) +x -> (0, y + 4, z + 4)
  const int over = *wide.neighbour(3, 0, 1);
  CHECK(sends_to("4x8x8:twist", Collective::allreduce, 3, over));
  CHECK_FALSE(sends_to("4x8x8:twist", Collective::reduce_scatter, 3, over));
}

TEST_CASE("the every-dimension-busy all-reduce pipelines deeper where the reducer is the bound",
          "[schedules][3d]") {
  // From 16Mi elements: 8 pieces, or, where the model says reduction bounds the call (300 GB/s
  // of reduction against 6 links of 100 GB/s, as tpu-v5p), about 6·sqrt(link time / hops)
  // pieces: 4x4x8 at 64 MiB, 112 us of links against 8 us of hops, 22 pieces.
  const std::uint64_t n = std::uint64_t{16} << 20;
  const int eight = first_channel_sends("4x4x8", n, 0);
  CHECK(first_channel_sends("4x4x8", n, 100e9, 300e9) == eight * 22 / 8);
  CHECK(first_channel_sends("4x4x8", n, 100e9, 1e12) == eight);  // the links are the bound
}

TEST_CASE("a small last row floods round its ring: every rank's total, neighbours only",
          "[schedules][3d]") {
  // ring_flood.hpp: where the model knows the links and the last row's range crosses a link in
  // under half a hop (here 50 GB/s, 1 us: ranges under 6250 f32 elements), build() floods it
  // round the ring instead of reduce-scattering and all-gathering it. Every rank, real data,
  // rings of 3, 4, 5 and 8 after rings and lines, through the twisted links too, and on two
  // dimensions (torus2d_both's).
  for (const char* shape :
       {"3x3x4", "4x4x4", "2x3x5:wrap=xz", "4x2x8", "5x3x3:wrap=yz", "2x2x4:twist", "6x4", "5x3"})
    for (Algorithm a : {Algorithm::torus2d, Algorithm::torus2d_both}) {
      const Torus t = Torus::parse(shape);
      const std::uint64_t n = static_cast<std::uint64_t>(t.chips()) * 7 + 3;
      INFO(shape << " " << to_string(a));
      model::CheckSpec spec{Collective::allreduce, t.chips(),     n, false,
                            DataType::i32,         ReduceOp::sum, 0, {}};
      model::Traffic traffic;
      const std::string e = model::check_collective(
          spec,
          [&](int r) {
            schedule::Spec sp{Collective::allreduce, n, false, false, {}};
            sp.elem_bytes = 4;
            schedule::Schedule s = schedule::build(a, sp, model_context(r, t, 50e9));
            s.rank = r;
            s.nranks = t.chips();
            return s;
          },
          &traffic);
      CHECK(e == "");
      for (auto [from, to] : traffic.links) REQUIRE(t.adjacent(from, to));
    }
  // The flood's buffers lie in scratch past the vector: there with the model at 1 MiB on
  // 16x16x16, not without it, nor in pipelined pieces (64 MiB), where flooding lost.
  // `link_rate` 0: without the model (no element size, no hops).
  const auto scratch = [&](Algorithm a, const char* shape, std::uint64_t count, double link_rate) {
    const Torus t = Torus::parse(shape);
    schedule::Spec sp{Collective::allreduce, count, false, false, {}};
    sp.elem_bytes = link_rate > 0 ? 4 : 0;
    return schedule::build(
               a, sp, link_rate > 0 ? model_context(0, t, link_rate) : schedule::Context{0, t, {}})
        .scratch_count;
  };
  CHECK(scratch(Algorithm::torus2d_both, "16x16x16", 1u << 18, 50e9) > (1u << 18));
  CHECK(scratch(Algorithm::torus2d_both, "16x16x16", 1u << 18, 0) <= (1u << 18));
  CHECK(scratch(Algorithm::torus2d_both, "16x16x16", 1u << 24, 50e9) <= (1u << 24));
  // On two dimensions torus2d_both floods as well, torus2d not (its plain form's closed forms).
  CHECK(scratch(Algorithm::torus2d_both, "32x32", 1u << 18, 80e9) > (1u << 18));
  CHECK(scratch(Algorithm::torus2d, "32x32", 1u << 18, 80e9) <= (1u << 18));
  for (const char* shape : {"6x4", "5x3"}) {  // the verifier's 2D shapes above flood too
    INFO(shape);
    const std::uint64_t n = static_cast<std::uint64_t>(Torus::parse(shape).chips()) * 7 + 3;
    CHECK(scratch(Algorithm::torus2d_both, shape, n, 50e9) > n);
  }
  // In pipelined pieces the flood's last messages keep the channel's order: 8 pieces lag 4 on
  // last rings of 8, 3 and 4 (forced here; build() floods one piece only).
  for (const char* shape : {"2x2x8", "2x4x3", "4x4x4"}) {
    const Torus t = Torus::parse(shape);
    const std::uint64_t n = static_cast<std::uint64_t>(t.chips()) * 3 * 32 + 7;
    INFO(shape << " flooded in 8 pieces");
    CHECK(check_pipelined(t, n, schedule::rows_of, 8, 4, schedule::RingFlood{n, n}) == "");
  }
}

TEST_CASE("every-dimension-busy reduce-scatter and all-gather in pipelined pieces",
          "[schedules][3d]") {
  // From 4Mi elements each part runs as 2, 4 or 8 pieces (torus_dims.cpp, busy_rsag_pieces);
  // here the pieces at counts the verifier can run: every rank, real data, neighbours only (the
  // verifier also refuses two transfers of one channel in one phase). Uneven counts (the block
  // rule's longer blocks first), a mesh dimension, a ring of 2 and a twisted torus (its parts
  // first along x or y on rings through the twist); under the sanitizers the smaller shapes,
  // which hold every kind of row.
  const std::vector<const char*> shapes =
      toroid_test::kSanitized
          ? std::vector<const char*>{"2x2x2:wrap=xz", "4x2x3:wrap=yz", "2x2x4:twist"}
          : std::vector<const char*>{"2x2x2:wrap=xz", "3x4x2", "4x2x3:wrap=yz", "4x4x4",
                                     "2x2x4:twist"};
  for (const char* shape : shapes) {
    const Torus t = Torus::parse(shape);
    const std::vector<std::uint64_t> counts = {static_cast<std::uint64_t>(t.chips()) * 3 * 8 + 7,
                                               static_cast<std::uint64_t>(t.chips()) * 50 + 1};
    for (int pieces : {2, 3, 8})
      for (Collective c : {Collective::reduce_scatter, Collective::allgather})
        for (std::uint64_t n : counts)
          for (bool in_place : {false, true}) {
            INFO(shape << " pieces " << pieces << " " << to_string(c) << " n=" << n
                       << (in_place ? " in place" : ""));
            const auto built = [&](int r) {
              const schedule::Context ctx{r, t, {}};
              schedule::Schedule s = schedule::build_busy_rows({c, n, in_place, false, {}}, ctx,
                                                               schedule::rows_of(ctx), pieces);
              s.rank = r;
              s.nranks = t.chips();
              schedule::order_by_phase(s);
              s.in_place = in_place && c != Collective::allgather;  // as build() says
              schedule::derive_dependencies(s);
              return s;
            };
            model::CheckSpec spec{c, t.chips(), n, in_place, DataType::i32, ReduceOp::sum, 0, {}};
            model::Traffic traffic;
            REQUIRE(model::check_collective(spec, built, &traffic) == "");
            for (auto [from, to] : traffic.links) REQUIRE(t.adjacent(from, to));
          }
  }
  // build() takes pieces from 4Mi elements: more steps than one piece's.
  const Torus t = Torus::parse("4x4x4");
  const auto steps = [&](std::uint64_t count) {
    return schedule::build(Algorithm::torus2d_both,
                           {Collective::reduce_scatter, count, false, false, {}}, {0, t, {}})
        .steps.size();
  };
  CHECK(steps(std::uint64_t{4} << 20) > steps((std::uint64_t{4} << 20) - 64) * 3 / 2);
}

TEST_CASE("every-dimension-busy shares balance the dimensions' link time", "[schedules][3d]") {
  // On a cube the three parts (x first, y first, z first) each carry a third: every rank
  // sends the same bytes along each dimension. Counted over one rank's sends by dimension.
  const Torus t(std::vector<int>{4, 4, 4});
  const std::uint64_t n = 64 * 3 * 1000;
  const schedule::Schedule s = schedule::build(
      Algorithm::torus2d_both, {Collective::allreduce, n, false, false, {}}, {0, t, {}});
  std::uint64_t along[3] = {0, 0, 0};
  const std::vector<int> me = t.coord_of(0);
  for (const schedule::Step& st : s.steps) {
    if (st.kind != schedule::Kind::send) continue;
    const std::vector<int> c = t.coord_of(st.peer);
    for (int d = 0; d < 3; ++d)
      if (c[static_cast<std::size_t>(d)] != me[static_cast<std::size_t>(d)])
        along[d] += st.src.count;
  }
  CHECK(along[0] == along[1]);
  CHECK(along[1] == along[2]);
  // torus2d's x-first order moves most along x.
  const schedule::Schedule plain =
      schedule::build(Algorithm::torus2d, {Collective::allreduce, n, false, false, {}}, {0, t, {}});
  std::uint64_t x = 0, z = 0;
  for (const schedule::Step& st : plain.steps)
    if (st.kind == schedule::Kind::send) {
      const std::vector<int> c = t.coord_of(st.peer);
      x += c[0] != me[0] ? st.src.count : 0;
      z += c[2] != me[2] ? st.src.count : 0;
    }
  CHECK(x > 10 * z);
}

TEST_CASE("the 2D-only algorithms refuse shapes of more dimensions, saying so", "[schedules][3d]") {
  const schedule::Context ctx{0, Torus(std::vector<int>{2, 2, 2}), {}};
  for (Collective c : {Collective::reduce_scatter, Collective::allgather})
    CHECK_THROWS_WITH(
        schedule::build(Algorithm::swing_latency, {c, 100, false, false, {}}, ctx),
        Catch::Contains("algorithm swing_latency cannot run " + std::string(to_string(c)) +
                        " on topology 2x2x2: swing_latency's reduce-scatter and all-gather run on "
                        "2D shapes so far"));
}

TEST_CASE("Swing's bandwidth form all-reduces on any number of dimensions, 2·D parts at once",
          "[schedules][3d]") {
  // Powers of two, folded sizes, lines, twisted, 4D-6D: the verifier on real data, summed and
  // averaged; the peers are Swing's on the virtual grid, so not neighbours (not checked).
  for (const char* shape : {"2x2x2", "4x4x4", "4x2x8", "3x2x2", "3x5x2:wrap=y", "6x3x3", "2x2x2x2",
                            "2x3x2x2x1x2", "4x4x8:twist", "1x4x4", "4x4x4:wrap=none"}) {
    const Torus t = Torus::parse(shape);
    const testing::Shape s{t, {}};
    const std::uint64_t p = static_cast<std::uint64_t>(t.chips());
    // Under the sanitizers empty blocks and one uneven size: p + 3 takes 7p + 5's paths.
    const std::vector<std::uint64_t> counts = toroid_test::kSanitized
                                                  ? std::vector<std::uint64_t>{1, 7 * p + 5}
                                                  : std::vector<std::uint64_t>{1, p + 3, 7 * p + 5};
    for (std::uint64_t n : counts)
      for (bool in_place : {false, true}) {
        INFO(shape << " n=" << n << (in_place ? " in place" : ""));
        REQUIRE(check(Algorithm::swing, Collective::allreduce, s, n, in_place) == "");
        REQUIRE(check(Algorithm::swing, Collective::allreduce, s, n, in_place, DataType::f32,
                      ReduceOp::avg) == "");
      }
  }
  // 4x4x4: six parts (two a dimension), each of 6 moves; every step of a part sends on one
  // dimension, and at each move the six parts together use every dimension both ways.
  const schedule::Schedule one =
      schedule::build(Algorithm::swing, {Collective::allreduce, 6 * 64 * 4, false, false, {}},
                      {0, Torus::parse("4x4x4"), {}});
  std::set<int> tags;
  for (const schedule::Step& st : one.steps) tags.insert(st.tag);
  CHECK(tags.size() == 6);
}

TEST_CASE("swing_latency all-reduces on any number of dimensions, combing or folding the rest",
          "[schedules][3d]") {
  // Powers of two; rings of 3, 5, 6, 7, 9 (two combs), 12 (Swing on 4, a comb of 3); an 11
  // (a factor above 7) and lines of 3 and 5, which fold; twisted: the verifier on real data;
  // the peers are not neighbours (not checked).
  for (const char* shape :
       {"2x2x2",        "4x4x4",        "4x2x8",        "3x2x2",       "3x5x2:wrap=y",
        "3x5x2:wrap=x", "6x3x3",        "7x2x3",        "9x2x2",       "12x2x1",
        "11x2x2",       "2x2x2x2",      "2x3x2x2x1x2",  "4x4x8:twist", "2x2x4:twist",
        "4x8x8:twist",  "8x8x16:twist", "6x6x12:twist", "3x3x6:twist", "1x4x4"}) {
    const Torus t = Torus::parse(shape);
    const testing::Shape s{t, {}};
    const std::uint64_t p = static_cast<std::uint64_t>(t.chips());
    for (std::uint64_t n : {std::uint64_t{1}, p + 3})
      for (bool in_place : {false, true}) {
        INFO(shape << " n=" << n << (in_place ? " in place" : ""));
        REQUIRE(check(Algorithm::swing_latency, Collective::allreduce, s, n, in_place) == "");
        REQUIRE(check(Algorithm::swing_latency, Collective::allreduce, s, n, in_place,
                      DataType::f32, ReduceOp::avg) == "");
      }
  }
  // 4x4x4: 6 moves (2 a dimension), every rank in them.
  const auto count = [](const char* shape, schedule::Kind k, int rank = 0) {
    const schedule::Schedule one =
        schedule::build(Algorithm::swing_latency, {Collective::allreduce, 64, false, false, {}},
                        {rank, Torus::parse(shape), {}});
    return std::count_if(one.steps.begin(), one.steps.end(),
                         [&](const schedule::Step& st) { return st.kind == k; });
  };
  CHECK(count("4x4x4", schedule::Kind::send) == 6);
  // 5x2x12: x a comb of 5 (4 peers), y one Swing step, z Swing on 4 then a comb of 3 (2 peers):
  // 4 + 1 + 2 + 2 sends; each comb lands every peer's vector, copies the lowest member's and
  // adds the others in coordinate order: a local reduce per peer (4 + 2).
  CHECK(count("5x2x12", schedule::Kind::send) == 9);
  CHECK(count("5x2x12", schedule::Kind::reduce) == 4 + 2);
  // A ring of 8 or more may end with a comb of 8 where the hops it saves outweigh the load it
  // adds: with the links known (the simulator's model) and a small vector. 4x4x8's z over
  // 50 GB/s links of 1 us: at 1 KiB of f32 one comb of 7 peers; at 64 KiB, or with the links
  // unknown, Swing's 3 moves (x and y: Swing's 2 moves each).
  const auto sends = [](std::uint64_t count, bool links_known) {
    schedule::Context ctx{0, Torus::parse("4x4x8"), {}};
    if (links_known) {
      ctx.link_rate.fill(50e9);
      ctx.hop_seconds.fill(1e-6);
    }
    schedule::Spec spec{Collective::allreduce, count, false, false, {}};
    spec.elem_bytes = 4;
    const schedule::Schedule one = schedule::build(Algorithm::swing_latency, spec, ctx);
    return std::count_if(one.steps.begin(), one.steps.end(),
                         [](const schedule::Step& st) { return st.kind == schedule::Kind::send; });
  };
  CHECK(sends(256, true) == 2 + 2 + 7);
  CHECK(sends(16384, true) == 2 + 2 + 3);
  CHECK(sends(256, false) == 2 + 2 + 3);
  // The same x as a line folds (rank 4, x = 4, takes no fold): Swing on 4 there, no comb.
  CHECK(count("5x2x12:wrap=yz", schedule::Kind::send, 4) == 2 + 1 + 2 + 2);
  CHECK(count("5x2x12:wrap=yz", schedule::Kind::reduce, 4) == 2);
}

TEST_CASE(
    "every algorithm runs along any set of axes, each sub-torus on its own, neighbours only "
    "where the algorithm is",
    "[schedules][3d][axes]") {
  // Rows, columns, planes and the whole shape of 3D tori, meshes, mixed and twisted ones: every
  // sub-torus must end with its own members' result (the verifier's groups), blocks in its
  // order. The torus algorithms, and the rings along one axis (the line's links), only talk to
  // neighbours; the others are the algorithm on the sub-torus as on a communicator of its shape.
  const std::vector<Axes> every = {Axis::x,
                                   Axis::y,
                                   Axis::z,
                                   {Axis::x, Axis::y},
                                   {Axis::x, Axis::z},
                                   {Axis::y, Axis::z},
                                   {Axis::x, Axis::y, Axis::z}};
  for (const char* shape : {"3x2x2", "4x3x2:wrap=xz", "2x3x4:wrap=none", "2x2x4:twist", "3x3x3"}) {
    const Torus t = Torus::parse(shape);
    const Shape s{t, {}};
    for (const Axes axes : every) {
      const Torus sub = t.along(axes);
      int lines = 0;
      for (int d = 0; d < t.dimensions(); ++d) lines += axes.has(d) && t.size(d) > 1;
      for (Algorithm a : all_algorithms)
        for (Collective c : {Collective::allreduce, Collective::reduce_scatter,
                             Collective::allgather, Collective::broadcast}) {
          if (!has_schedule(a) || !implements(a, c)) continue;
          const bool refused =
              a == Algorithm::swing_latency && sub.dimensions() > 2 && c != Collective::allreduce;
          const bool neighbours = a == Algorithm::torus2d || a == Algorithm::torus2d_both ||
                                  ((a == Algorithm::ring || a == Algorithm::bidir_ring) &&
                                   c != Collective::broadcast && lines == 1);
          const auto k = static_cast<std::uint64_t>(sub.chips());
          for (std::uint64_t n : {k - 1, 3 * k + 5})
            for (bool in_place : {false, true}) {
              INFO(shape << " along " << axes.to_string() << " " << to_string(a) << " "
                         << to_string(c) << " n=" << n << (in_place ? " in place" : ""));
              const int root = c == Collective::broadcast ? sub.chips() - 1 : 0;
              model::Traffic traffic;
              if (refused) {
                REQUIRE_THROWS_WITH(
                    check(a, c, s, n, in_place, DataType::i64, ReduceOp::sum, &traffic, root, axes),
                    Catch::Contains("along " + axes.to_string() + " of " + t.to_string() +
                                    " (sub-tori " + sub.to_string() + "): algorithm " +
                                    std::string(to_string(a)) + " cannot run"));
                continue;
              }
              REQUIRE(check(a, c, s, n, in_place, DataType::i64, ReduceOp::sum, &traffic, root,
                            axes) == "");
              for (auto [from, to] : traffic.links) {
                INFO(from << " -> " << to);
                REQUIRE(t.group_along(from, axes) == t.group_along(to, axes));  // no group crossed
                if (neighbours) REQUIRE(t.adjacent(from, to));
              }
            }
        }
    }
  }
}

TEST_CASE("a collective along axes is the algorithm on the sub-torus, its peers renamed",
          "[schedules][3d][axes]") {
  // 4x2x2 along x and z: each xz-plane runs 4x2's schedule (plane member x + 4z is chip
  // x + 4y + 8z); the share between dimensions follows the chosen dimensions' link rates.
  const Torus t(std::vector<int>{4, 2, 2});
  schedule::Context whole{0, t, {}};
  whole.link_rate = {1, 5, 2, 1, 1, 1};
  for (int r = 0; r < t.chips(); ++r) {
    whole.rank = r;
    const schedule::Spec spec{Collective::allreduce, 1000, false, false, Axes{Axis::x, Axis::z}};
    const schedule::Schedule along = schedule::build(Algorithm::torus2d_both, spec, whole);
    schedule::Context plane{
        t.position_along(r, {Axis::x, Axis::z}), Torus(std::vector<int>{4, 2}), {}};
    plane.link_rate = {1, 2, 1, 1, 1, 1};
    const schedule::Schedule own = schedule::build(
        Algorithm::torus2d_both, {Collective::allreduce, 1000, false, false, {}}, plane);
    const std::vector<int> members = t.group_along(r, {Axis::x, Axis::z});
    REQUIRE(along.rank == r);
    REQUIRE(along.nranks == 16);
    REQUIRE(along.steps.size() == own.steps.size());
    for (std::size_t i = 0; i < own.steps.size(); ++i) {
      REQUIRE(along.steps[i].kind == own.steps[i].kind);
      REQUIRE(along.steps[i].src.offset == own.steps[i].src.offset);
      REQUIRE(along.steps[i].src.count == own.steps[i].src.count);
      REQUIRE(along.steps[i].peer ==
              (own.steps[i].peer < 0 ? -1 : members[static_cast<std::size_t>(own.steps[i].peer)]));
    }
  }
}

// What lets a progress thread below MPI_THREAD_MULTIPLE (which makes no MPI call) run a
// communicator on one node (api::steps_over_mpi): on shapes of up to four dimensions every
// schedule's steps keep to tags (lanes) 0-7, the shared-memory links' eight (ShmLinks::kLanes),
// so none goes over MPI. Every algorithm and collective, torus and mesh, twisted, small and
// large counts (the pipelined forms), every rank. Five and six dimensions may use more (Swing
// and torus2d_both's 2·D parts): there the rule sends the thread's calls to MPI.
TEST_CASE("on up to four dimensions every schedule keeps to the shared-memory links' lanes",
          "[schedules][3d]") {
  constexpr int kLanes = 8;  // exec::ShmLinks::kLanes (checked in test_shm_links.cpp)
  std::vector<Torus> shapes;
  for (const std::vector<int>& sizes : std::vector<std::vector<int>>{{2},
                                                                     {3},
                                                                     {8},
                                                                     {2, 2},
                                                                     {4, 3},
                                                                     {4, 4},
                                                                     {2, 2, 2},
                                                                     {3, 2, 2},
                                                                     {4, 4, 4},
                                                                     {2, 2, 2, 2},
                                                                     {3, 2, 2, 2}}) {
    shapes.emplace_back(sizes);
    shapes.emplace_back(sizes, std::vector<bool>(sizes.size(), false));
  }
  shapes.emplace_back(std::vector<int>{2, 2, 4}, std::vector<bool>{}, true);
  int built = 0;
  // Under the sanitizers a short vector and one long enough for pieces: 100003 is cut as 7 is.
  const std::vector<std::uint64_t> counts =
      toroid_test::kSanitized ? std::vector<std::uint64_t>{7, std::uint64_t{1} << 23}
                              : std::vector<std::uint64_t>{7, 100003, std::uint64_t{1} << 23};
  for (const Torus& t : shapes)
    for (Algorithm a : all_algorithms)
      for (Collective c : {Collective::allreduce, Collective::reduce_scatter, Collective::allgather,
                           Collective::broadcast, Collective::alltoall})
        for (std::uint64_t n : counts)
          for (int r = 0; r < t.chips(); ++r) {
            const schedule::Context ctx{r, t, {}};
            schedule::Schedule s;
            try {
              s = schedule::build(a, {c, n, false, false, {}}, ctx);
            } catch (const Error&) {
              break;  // this algorithm does not run this collective on this shape
            }
            ++built;
            for (const schedule::Step& st : s.steps) {
              INFO(t.to_string() << " " << to_string(a) << " " << to_string(c) << " n=" << n
                                 << " rank " << r);
              REQUIRE(st.tag < kLanes);
            }
          }
  CHECK(built > 7000 * static_cast<int>(counts.size()));
}

TEST_CASE("swing_latency's all-reduce leaves every rank the same bits, combs and twists included",
          "[schedules][3d]") {
  // Float sums depend on their grouping: every rank must sum in the same one, or replicas
  // drift apart in the last bits. Inputs of mixed magnitudes, so that groupings differ.
  const auto run = [](const Torus& t, bool links_known) {
    const int p = t.chips();
    const std::uint64_t n = 37;
    std::vector<schedule::Schedule> schedules;
    std::vector<model::RankMemory> mem(static_cast<std::size_t>(p));
    for (int r = 0; r < p; ++r) {
      schedule::Context ctx{r, t, {}};
      if (links_known) {  // the simulator's model: combs of 8 at small sizes
        ctx.link_rate.fill(50e9);
        ctx.hop_seconds.fill(1e-6);
      }
      schedule::Spec spec{Collective::allreduce, n, false, false, {}};
      spec.elem_bytes = 4;
      schedules.push_back(schedule::build(Algorithm::swing_latency, spec, ctx));
      auto& m = mem[static_cast<std::size_t>(r)];
      m.input.resize(n * 4);
      m.output.assign(n * 4, std::byte{0});
      for (std::uint64_t i = 0; i < n; ++i) {
        const float v =
            static_cast<float>((r * 7919 + i * 104729) % 1000) * ((r + i) % 3 == 0   ? 1e-7f
                                                                  : (r + i) % 3 == 1 ? 1.0f
                                                                                     : 1e5f);
        std::memcpy(m.input.data() + i * 4, &v, 4);
      }
    }
    REQUIRE(model::execute_in_process(schedules, mem, DataType::f32, ReduceOp::sum) == "");
    int differ = 0;
    for (int r = 1; r < p; ++r)
      differ += mem[static_cast<std::size_t>(r)].output != mem[0].output ? 1 : 0;
    return differ;
  };
  for (const char* shape : {"3x2x2", "6x3x3", "12x2x1", "9x2x2", "5x2x12", "3x5x2:wrap=y", "8x2x2",
                            "16x2x2", "24x2x1", "4x4x8:twist", "2x2x4:twist", "4x8x8:twist",
                            "6x6x12:twist", "3x3x6:twist", "6x3", "3x1", "5x4"})
    for (bool links_known : {false, true}) {
      INFO(shape << (links_known ? " links known" : ""));
      CHECK(run(Torus::parse(shape), links_known) == 0);
    }
}
