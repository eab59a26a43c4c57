// Every algorithm's schedules, checked by the in-process verifier on real data: matching sends
// and receives under rendezvous semantics, no phase hazards, and the exact reference result.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <set>

#include "core/element.hpp"
#include "schedule/dependencies.hpp"
#include "schedule/later_use.hpp"
#include "schedule_check.hpp"
#include "toroid/block.hpp"

using namespace toroid;
using schedule::Collective;
using testing::check;
using testing::Shape;

namespace {

const Collective kAllCollectives[] = {Collective::allreduce, Collective::reduce_scatter,
                                      Collective::allgather};

Shape shape(int x, int y, bool wx = true, bool wy = true) { return {Torus2D(x, y, wx, wy), {}}; }

}  // namespace

namespace {
void check_ring_counts(int from, int to) {
  for (Collective c : kAllCollectives)
    for (int p = from; p <= to; ++p)
      for (std::uint64_t n : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t(p - 1),
                              std::uint64_t(p), std::uint64_t(p + 1), std::uint64_t{1000}})
        for (bool in_place : {false, true}) {
          INFO(toroid::to_string(c) << " p=" << p << " n=" << n << " in_place=" << in_place);
          REQUIRE(check(Algorithm::ring, c, shape(p, 1), n, in_place) == "");
        }
}
}  // namespace

TEST_CASE("ring collectives are right for p = 1..16 and awkward counts", "[schedules]") {
  check_ring_counts(1, 16);
}

// The same code at more ranks: 20 s under the sanitizers, so with the [scale] cases.
TEST_CASE("ring collectives are right for p = 17..64 and awkward counts", "[schedules][scale]") {
  check_ring_counts(17, 64);
}

TEST_CASE("every algorithm on every shape up to 8x8, torus and mesh", "[schedules][scale]") {
  // Every algorithm with a schedule, from the library's list (a new one is tested here at once;
  // `implements` says which collectives each runs).
  const auto& algos = scheduled_algorithms;
  for (int x = 1; x <= 8; ++x)
    for (int y = 1; y <= 8; ++y)
      for (int wrap = 0; wrap < 4; ++wrap) {
        const Shape s = shape(x, y, wrap & 1, wrap & 2);
        const int p = x * y;
        for (Algorithm a : algos)
          for (Collective c : kAllCollectives) {
            if (!implements(a, c)) continue;
            // Only the torus algorithms look at wraparound; the others run once per shape.
            const bool follows_shape = a == Algorithm::torus2d || a == Algorithm::torus2d_both ||
                                       a == Algorithm::swing || a == Algorithm::swing_latency;
            if (!follows_shape && wrap != 3) continue;
            for (std::uint64_t n : {std::uint64_t{0}, std::uint64_t(p - 1),
                                    std::uint64_t(4 * p + 3), std::uint64_t{97}})
              for (bool in_place : {false, true}) {
                INFO(to_string(a) << " " << toroid::to_string(c) << " on " << s.topology.to_string()
                                  << " n=" << n << " in_place=" << in_place);
                REQUIRE(check(a, c, s, n, in_place) == "");
              }
          }
      }
}

TEST_CASE("every algorithm for every type and op (avg included)", "[schedules]") {
  const auto& algos = scheduled_algorithms;
  for (DataType t :
       {DataType::f32, DataType::f64, DataType::f16, DataType::bf16, DataType::i32, DataType::i64})
    for (ReduceOp op :
         {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max, ReduceOp::avg}) {
      if (op == ReduceOp::avg && !is_floating(t)) continue;
      for (Algorithm a : algos)
        for (Collective c : {Collective::allreduce, Collective::reduce_scatter}) {
          if (!implements(a, c)) continue;
          for (const Shape& s : {shape(3, 2), shape(2, 3, false, true), shape(5, 1)}) {
            INFO(to_string(a) << " " << toroid::to_string(c) << " " << to_string(t) << " "
                              << to_string(op) << " on " << s.topology.to_string());
            REQUIRE(check(a, c, s, 37, false, t, op) == "");
            REQUIRE(check(a, c, s, 37, true, t, op) == "");
          }
        }
    }
}

TEST_CASE("torus algorithms on 2x3, 3x5, 16x16 and 128x32 talk only to torus neighbours",
          "[schedules][scale]") {
  for (const Shape& s : {shape(2, 3), shape(3, 5), shape(3, 5, false, false), shape(16, 16),
                         shape(16, 16, true, false), shape(128, 32, false, true)}) {
    const bool big = s.topology.chips() > 1000;
    for (Algorithm a : {Algorithm::torus2d, Algorithm::torus2d_both})
      for (Collective c : kAllCollectives) {
        if (!implements(a, c)) continue;
        for (std::uint64_t n :
             big ? std::vector<std::uint64_t>{1, 300} : std::vector<std::uint64_t>{7, 1000}) {
          INFO(to_string(a) << " " << toroid::to_string(c) << " on " << s.topology.to_string()
                            << " n=" << n);
          model::Traffic t;
          REQUIRE(check(a, c, s, n, false, DataType::i64, ReduceOp::sum, &t) == "");
          for (auto [from, to] : t.links) {
            INFO("link " << from << " -> " << to);
            REQUIRE(s.topology.adjacent(from, to));
          }
        }
      }
  }
}

TEST_CASE("torus2d moves 2(N-1)/N of the vector per chip in about X+Y steps", "[schedules]") {
  const Shape s = shape(4, 3);
  const std::uint64_t n = 4 * 3 * 40;
  model::Traffic t;
  REQUIRE(check(Algorithm::torus2d, Collective::allreduce, s, n, false, DataType::f32,
                ReduceOp::sum, &t) == "");
  CHECK(t.bytes == 12 * 2 * 11 * (n / 12) * 4);
  schedule::Context ctx{5, s.topology, {}};
  const auto sched =
      schedule::build(Algorithm::torus2d, {Collective::allreduce, n, false, false, {}}, ctx);
  // Each ring's blocks travel half way round each way (bidir_ring.hpp): 4/2 steps a way along X
  // twice; along Y (3, odd) one step and the second chain's deferred last reduction, then one.
  CHECK(sched.phase_count() == 2 * 2 + (1 + 1) + 1);
}

TEST_CASE("ring moves the bandwidth-optimal number of bytes, only to ring neighbours",
          "[schedules]") {
  const int p = 6;
  const std::uint64_t n = 600;
  model::Traffic t;
  REQUIRE(check(Algorithm::ring, Collective::allreduce, shape(p, 1), n, false, DataType::f32,
                ReduceOp::sum, &t) == "");
  CHECK(t.bytes == std::uint64_t(p) * 2 * (p - 1) * (n / p) * 4);
  CHECK(t.messages == std::uint64_t(p) * 2 * (p - 1));
  for (auto [from, to] : t.links) CHECK(to == (from + 1) % p);
}

TEST_CASE("ring all-reduce at 4096 ranks, small counts", "[schedules][scale]") {
  for (std::uint64_t n : {std::uint64_t{1}, std::uint64_t{100}, std::uint64_t{600}}) {
    INFO("n=" << n);
    REQUIRE(check(Algorithm::ring, Collective::allreduce, shape(4096, 1), n, false) == "");
  }
  REQUIRE(check(Algorithm::ring, Collective::reduce_scatter, shape(4096, 1), 300, true,
                DataType::f32, ReduceOp::max) == "");
  REQUIRE(check(Algorithm::ring, Collective::allgather, shape(4096, 1), 300, false,
                DataType::i32) == "");
}

TEST_CASE("latency algorithms on any rank count, including non-powers of two", "[schedules]") {
  for (int p = 1; p <= 33; ++p)
    for (Algorithm a : {Algorithm::recursive_doubling, Algorithm::rabenseifner})
      for (std::uint64_t n :
           {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t(p), std::uint64_t{257}})
        for (bool ip : {false, true}) {
          INFO(to_string(a) << " p=" << p << " n=" << n << " in_place=" << ip);
          REQUIRE(check(a, Collective::allreduce, shape(p, 1), n, ip) == "");
          REQUIRE(check(a, Collective::allreduce, shape(p, 1), n, ip, DataType::f32,
                        ReduceOp::avg) == "");
        }
}

TEST_CASE("hierarchical all-reduce on equal and unequal nodes", "[schedules]") {
  const std::vector<std::vector<int>> layouts = {{0, 0, 1, 1},       {0, 0, 0, 1, 1},
                                                 {0, 1, 1, 1, 2, 2}, {0, 0, 0, 0, 0, 0, 1},
                                                 {0, 1, 2, 3},       {0, 0, 1, 1, 1, 2, 2, 2}};
  for (const auto& nodes : layouts) {
    const Shape s{Torus2D(static_cast<int>(nodes.size()), 1), nodes};
    for (std::uint64_t n : {std::uint64_t{0}, std::uint64_t{2}, std::uint64_t{101}})
      for (bool ip : {false, true}) {
        INFO("nodes of " << nodes.size() << " ranks, n=" << n << " in_place=" << ip);
        REQUIRE(check(Algorithm::hierarchical, Collective::allreduce, s, n, ip) == "");
        REQUIRE(check(Algorithm::hierarchical, Collective::allreduce, s, n, ip, DataType::bf16,
                      ReduceOp::avg) == "");
      }
  }
}

TEST_CASE("a mesh line reduce-scatter uses both directions and no wraparound link", "[schedules]") {
  const Shape s = shape(6, 1, false, false);
  model::Traffic t;
  REQUIRE(check(Algorithm::torus2d, Collective::reduce_scatter, s, 600, false, DataType::i64,
                ReduceOp::sum, &t) == "");
  CHECK(t.links.count({0, 1}) == 1);
  CHECK(t.links.count({1, 0}) == 1);
  CHECK(t.links.count({5, 0}) == 0);
  CHECK(t.links.count({0, 5}) == 0);
  // Busiest link direction carries (p-1)/p of the vector, as a one-directional ring would.
  CHECK(t.bytes == 2 * (600 / 6) * 8 * (1 + 2 + 3 + 4 + 5));
}

namespace {

// 7x3 with X a line: torus2d_both's all-reduce of n elements checked exact (sum, and avg in
// place), and every rank's schedule.
std::vector<schedule::Schedule> checked_on_7x3_line(std::uint64_t n) {
  const Shape s = shape(7, 3, false, true);
  REQUIRE(check(Algorithm::torus2d_both, Collective::allreduce, s, n, false) == "");
  REQUIRE(check(Algorithm::torus2d_both, Collective::allreduce, s, n, true, DataType::f32,
                ReduceOp::avg) == "");
  std::vector<schedule::Schedule> all;
  for (int r = 0; r < s.topology.chips(); ++r)
    all.push_back(schedule::build(Algorithm::torus2d_both,
                                  {Collective::allreduce, n, false, false, {}},
                                  {r, s.topology, {}}));
  return all;
}

}  // namespace

TEST_CASE("torus2d_both all-reduces on a line to its middle and back, in one pipeline",
          "[schedules]") {
  // 7x3 with X a line: the Y-first part's middle phase runs along X (its tags 4 and 5, to peers
  // along X; its Y ring's have peers along Y). Each rank
  // has at most 4 steps there (receive and add, send on; receive the total, send it on), the
  // middle member (x = 3) adds from both sides; a reduce-scatter and an all-gather along the
  // line took 2 * 6 steps and more.
  const Torus2D t(7, 3, false, true);
  const auto scheds = checked_on_7x3_line(7 * 3 * 10 + 5);
  for (int r = 0; r < t.size(); ++r) {
    const schedule::Schedule& sched = scheds[r];
    int on_line = 0, adds = 0;
    for (const schedule::Step& st : sched.steps)
      if ((st.tag == 4 || st.tag == 5) && st.peer >= 0 &&
          t.coord_of(st.peer).y == t.coord_of(r).y) {
        ++on_line;
        adds += st.kind == schedule::Kind::recv_reduce;
        const int x = t.coord_of(r).x, px = t.coord_of(st.peer).x;
        CHECK(std::abs(x - px) == 1);  // neighbours on the line only
      }
    INFO("rank " << r);
    CHECK(on_line >= 2);
    CHECK(on_line <= 4);
    CHECK(adds == (t.coord_of(r).x == 3 ? 2 : t.coord_of(r).x % 6 ? 1 : 0));
  }
}

TEST_CASE("torus2d_both cuts a part whose middle is a line into pieces, scatters first",
          "[schedules]") {
  // 7x3 with X a line: the Y-first part (a ring of 3, then the line's pipeline) holds about
  // 0.85 of the vector, 3 pieces of at least 32Ki elements a member. Every piece's
  // reduce-scatter along Y comes before any all-gather (the line's latency hides under the later
  // pieces' scatters), and each piece runs the line's pipeline: 2-4 steps a piece on tags 4, 5
  // to peers along X.
  const Torus2D t(7, 3, false, true);
  const auto scheds = checked_on_7x3_line(7 * 3 * 20000 + 5);
  for (int r = 0; r < t.size(); ++r) {
    int on_line = 0;
    std::uint32_t last_scatter = 0, first_gather = ~0u;
    for (const schedule::Step& st : scheds[static_cast<std::size_t>(r)].steps) {
      if ((st.tag != 4 && st.tag != 5) || st.peer < 0) continue;
      if (t.coord_of(st.peer).y == t.coord_of(r).y) {
        ++on_line;
      } else {
        if (st.kind == schedule::Kind::recv_reduce) last_scatter = std::max(last_scatter, st.phase);
        if (st.kind == schedule::Kind::recv) first_gather = std::min(first_gather, st.phase);
      }
    }
    CHECK(on_line >= 3 * 2);
    CHECK(on_line <= 3 * 4);
    CHECK(last_scatter < first_gather);
  }
}

namespace {

// The distinct phases in which one schedule sends on either of two tags (one part's rows, each
// a bidirectional ring's two lanes).
std::size_t phases_on(const schedule::Schedule& sched, int tag) {
  std::set<std::uint32_t> phases;
  for (const schedule::Step& st : sched.steps)
    if (st.kind == schedule::Kind::send && (st.tag == tag || st.tag == tag + 1))
      phases.insert(st.phase);
  return phases.size();
}

}  // namespace

TEST_CASE("torus2d_both on a 2D torus: every row's blocks go half way round each way",
          "[schedules]") {
  // 8x8, one piece: each part (tags 0-1 X-first, 2-3 Y-first) reduce-scatters or all-gathers
  // along its first row over the whole ring's blocks and along its second on one of them, each
  // going half way round each way: at most X/2 = 4 phases of sends a row, 8 a part, where
  // blocks that went all the way round would take 7 a row. (Where a row's blocks differ by more
  // than an element, as an odd count's parts can, they go as opposite rings: dimension.hpp.)
  const Shape s = shape(8, 8, true, true);
  const std::uint64_t n = 64 * 100 + 7;
  for (Collective c : {Collective::reduce_scatter, Collective::allgather}) {
    INFO(toroid::to_string(c));
    REQUIRE(check(Algorithm::torus2d_both, c, s, n, false) == "");
    REQUIRE(check(Algorithm::torus2d_both, c, s, n, true) == "");
    if (c == Collective::reduce_scatter)
      REQUIRE(check(Algorithm::torus2d_both, c, s, n, true, DataType::f32, ReduceOp::avg) == "");
    for (int r = 0; r < s.topology.chips(); ++r) {
      const schedule::Schedule sched = schedule::build(
          Algorithm::torus2d_both, {c, 64 * 100, false, false, {}}, {r, s.topology, {}});
      INFO("rank " << r);
      CHECK(phases_on(sched, 0) == 8);
      CHECK(phases_on(sched, 2) == 8);
    }
  }
  // The all-gather receives every block straight into its places in the output (each part's
  // blocks are runs there): no copies but the own block's (from the input, out of place, one
  // piece per part), no scratch, and a relay forwards a gathered receive as it lands.
  for (bool ip : {false, true})
    for (int r : {0, 1, 9}) {
      INFO("rank " << r << (ip ? " in place" : ""));
      const schedule::Schedule sched = schedule::build(
          Algorithm::torus2d_both, {Collective::allgather, n, ip, false, {}}, {r, s.topology, {}});
      int copies = 0, gathered_receives = 0, followed = 0;
      for (std::size_t i = 0; i < sched.steps.size(); ++i) {
        const schedule::Step& st = sched.steps[i];
        copies += st.kind == schedule::Kind::copy;
        if (st.kind != schedule::Kind::recv || !st.dst.gathered()) continue;
        ++gathered_receives;
        for (std::size_t j = i + 1; j < sched.steps.size(); ++j) {
          const schedule::Step& next = sched.steps[j];
          for (std::uint32_t k = 0; k < next.dep_count; ++k) {
            const schedule::Dep& d = sched.deps[next.dep_begin + k];
            followed += d.step == i && d.wait == schedule::Wait::follow;
          }
        }
      }
      CHECK(copies == (ip ? 0 : 2));
      CHECK(sched.scratch_count == 0);
      CHECK(gathered_receives > 0);
      CHECK(followed > 0);
    }
}

TEST_CASE("axis collectives reduce every row (column) independently", "[schedules]") {
  const Torus2D topo(4, 3, true, false);
  for (Axis axis : {Axis::x, Axis::y})
    for (Collective c : kAllCollectives)
      for (Algorithm a : {Algorithm::ring, Algorithm::bidir_ring}) {
        const int p = topo.size(), len = topo.dim(axis);
        const std::uint64_t n = 23;
        std::vector<model::RankMemory> mem(p);
        std::vector<schedule::Schedule> scheds;
        auto input = [](int r, std::uint64_t i) { return static_cast<std::int64_t>(r * 100 + i); };
        for (int r = 0; r < p; ++r) {
          const Coord at = topo.coord_of(r);
          const Block own = block_of(n, len, axis == Axis::x ? at.x : at.y);
          const std::uint64_t in_n = c == Collective::allgather ? own.count : n;
          mem[r].input.resize(in_n * 8);
          for (std::uint64_t i = 0; i < in_n; ++i) {
            const std::int64_t v = input(r, c == Collective::allgather ? own.offset + i : i);
            std::memcpy(mem[r].input.data() + i * 8, &v, 8);
          }
          mem[r].output.assign((c == Collective::reduce_scatter ? own.count : n) * 8, std::byte{0});
          scheds.push_back(schedule::build(a, {c, n, false, false, axis}, {r, topo, {}}));
        }
        model::Traffic t;
        REQUIRE(model::execute_in_process(scheds, mem, DataType::i64, ReduceOp::sum, &t) == "");
        for (int r = 0; r < p; ++r) {
          const std::vector<int> line = topo.line_through(r, axis);
          const Coord at = topo.coord_of(r);
          const Block own = block_of(n, len, axis == Axis::x ? at.x : at.y);
          for (std::uint64_t i = 0; i < mem[r].output.size() / 8; ++i) {
            const std::uint64_t g = c == Collective::reduce_scatter ? own.offset + i : i;
            std::int64_t want = 0;
            if (c == Collective::allgather) {
              int owner = 0;
              while (block_of(n, len, owner).offset + block_of(n, len, owner).count <= g) ++owner;
              want = input(line[owner], g);
            } else {
              for (int q : line) want += input(q, g);
            }
            std::int64_t got;
            std::memcpy(&got, mem[r].output.data() + i * 8, 8);
            INFO("axis " << (axis == Axis::x ? "x" : "y") << " " << toroid::to_string(c) << " "
                         << to_string(a) << " rank " << r << " element " << g);
            REQUIRE(got == want);
          }
        }
        for (auto [from, to] : t.links) REQUIRE(topo.adjacent(from, to));
      }
}

TEST_CASE("an algorithm that cannot run a request says why", "[schedules]") {
  const schedule::Context ctx{0, Torus2D(2, 2), {}};
  CHECK_THROWS_WITH(
      schedule::build(Algorithm::rabenseifner, {Collective::allgather, 8, false, false, {}}, ctx),
      Catch::Contains("algorithm rabenseifner cannot run allgather on topology 2x2: it only "
                      "implements allreduce"));
  CHECK_THROWS_WITH(
      schedule::build(Algorithm::swing, {Collective::reduce_scatter, 8, false, false, {}}, ctx),
      Catch::Contains("algorithm swing cannot run reduce_scatter on topology 2x2: it only "
                      "implements allreduce"));
  CHECK_THROWS_WITH(
      schedule::build(Algorithm::swing_latency, {Collective::broadcast, 8, false, false, {}}, ctx),
      Catch::Contains("broadcast runs on ring, torus2d, recursive_doubling, mpi or auto"));
  CHECK_THROWS_WITH(
      schedule::build(Algorithm::swing_latency,
                      {Collective::allgather, 8, false, false, Axes{Axis::x, Axis::y, Axis::z}},
                      {0, Torus(std::vector<int>{2, 2, 2, 2}), {}}),
      Catch::Contains("along xyz of 2x2x2x2 (sub-tori 2x2x2): algorithm swing_latency cannot run "
                      "allgather on topology 2x2x2: swing_latency's reduce-scatter and all-gather "
                      "run on 2D shapes"));
}

TEST_CASE("broadcast from every root, every shape up to 6x6, torus and mesh", "[schedules]") {
  for (int x = 1; x <= 6; ++x)
    for (int y = 1; y <= 6; ++y)
      for (int wrap = 0; wrap < 4; ++wrap) {
        const Shape s = shape(x, y, wrap & 1, wrap & 2);
        const int p = x * y;
        for (Algorithm a : {Algorithm::ring, Algorithm::torus2d, Algorithm::recursive_doubling}) {
          if (a != Algorithm::torus2d && wrap != 3) continue;  // only torus2d looks at wraparound
          for (int root = 0; root < p; ++root)
            for (std::uint64_t n : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{97}}) {
              model::Traffic t;
              INFO(to_string(a) << " broadcast on " << s.topology.to_string() << " root " << root
                                << " n=" << n);
              REQUIRE(check(a, Collective::broadcast, s, n, false, DataType::i64, ReduceOp::sum, &t,
                            root) == "");
              // Every rank but the root receives the vector exactly once.
              if (n > 0) CHECK(t.bytes == static_cast<std::uint64_t>(p - 1) * n * 8);
              if (a == Algorithm::torus2d && n > 0)
                for (auto [from, to] : t.links) REQUIRE(s.topology.adjacent(from, to));
            }
        }
      }
}

TEST_CASE("broadcast refuses what it cannot run", "[schedules]") {
  schedule::Context ctx{0, Torus2D(4, 1), {}};
  CHECK_THROWS_WITH(
      schedule::build(Algorithm::rabenseifner,
                      {Collective::broadcast, 8, false, false, std::nullopt, 0}, ctx),
      Catch::Contains("broadcast runs on ring, torus2d, recursive_doubling, mpi or auto"));
  CHECK_THROWS_WITH(schedule::build(Algorithm::ring,
                                    {Collective::broadcast, 8, false, false, std::nullopt, 4}, ctx),
                    Catch::Contains("root is outside"));
}

TEST_CASE("torus2d_both pipelines its parts in pieces when a dimension is a line",
          "[schedules][scale]") {  // vectors of millions of elements: 19 s under the sanitizers
  // A line's reduce-scatter loads one end's links and its all-gather the other's, so with a line
  // the all-reduce cuts each part into pieces whose gathers overlap the next pieces' scatters.
  // 4 * line * 64Ki elements give 3 pieces, 6 * line * 64Ki + 7 give 4 or 5 (pieces_for).
  for (const Shape& s : {shape(3, 2, false, true), shape(2, 3, true, false),
                         shape(4, 3, false, false), shape(5, 2, false, true)}) {
    const Torus2D t = *s.topology.as_torus2d();
    const int line = t.wraps(Axis::x) ? t.y_dim() : t.x_dim();
    schedule::Context ctx{0, s.topology, {}};
    // The part that starts on the line (tags 0-3 when X is the line, else 4-7); the other one's
    // middle is the line's pipeline, which cuts pieces of its own (the next case).
    const int tags = t.wraps(Axis::x) ? 4 : 0;
    auto phases = [&](const schedule::Schedule& sched) {
      std::uint32_t n = 0;
      for (const schedule::Step& st : sched.steps)
        if (st.tag >= tags && st.tag < tags + 4) n = std::max(n, st.phase + 1);
      return n;
    };
    std::uint32_t fewer = phases(schedule::build(
        Algorithm::torus2d_both, {Collective::allreduce, 1000, false, false, {}}, ctx));
    for (std::uint64_t n : {std::uint64_t(4 * line) << 16, (std::uint64_t(6 * line) << 16) + 7}) {
      const auto one = schedule::build(Algorithm::torus2d_both,
                                       {Collective::allreduce, n, false, false, {}}, ctx);
      INFO(s.topology.to_string() << " n=" << n);
      CHECK(phases(one) > fewer);  // the pieces follow each other: 1, then 3, then 4 or 5
      fewer = phases(one);
      for (bool in_place : {false, true}) {
        INFO("in_place=" << in_place);
        REQUIRE(check(Algorithm::torus2d_both, Collective::allreduce, s, n, in_place,
                      DataType::f32) == "");
      }
    }
  }
}

TEST_CASE("later uses: what becomes of a receive's bytes, and of a relayed receive's",
          "[schedules]") {
  using schedule::Buf;
  using schedule::Kind;
  using schedule::LaterUse;
  // Rank 0: phase 0 reduces into acc, phase 1 forwards acc segment by segment (a relay), then
  // `after` (phase 2 on) decides what the relay leaves of acc.
  const auto uses = [](Buf acc, bool in_place, std::vector<schedule::Step> after) {
    schedule::Schedule s;
    s.nranks = 2;
    s.in_place = in_place;
    s.steps.push_back({Kind::recv_reduce, 1, 0, 0, {acc, 0, 8}, {acc, 0, 8}});
    s.steps.push_back({Kind::send, 1, 0, 1, {acc, 0, 8}, {}});
    for (schedule::Step& st : after) s.steps.push_back(st);
    schedule::derive_dependencies(s);
    REQUIRE(s.steps[1].dep_count == 1);  // the relay: one follow at offset 0
    schedule::set_later_uses(s);
    REQUIRE(s.later_use.size() == s.steps.size());
    CHECK(s.later_use[0] == LaterUse::read);  // the relay reads it
    return s.later_use;
  };
  // Overwritten whole before anyone else reads it: dead (a ring's partial sums).
  auto u = uses(Buf::output, false,
                {{Kind::recv, 1, 0, 2, {}, {Buf::output, 0, 8}},
                 {Kind::send, 1, 0, 3, {Buf::output, 0, 4}, {}}});
  CHECK(u[1] == LaterUse::dead);
  CHECK(u[2] == LaterUse::read);   // the last send reads what the receive wrote
  CHECK(u[3] == LaterUse::final);  // it relays that receive: nothing else reads it after
  // A send that forwards nothing segment by segment is not asked.
  schedule::Schedule plain;
  plain.nranks = 2;
  plain.steps.push_back({Kind::send, 1, 0, 0, {Buf::input, 0, 8}, {}});
  schedule::derive_dependencies(plain);
  schedule::set_later_uses(plain);
  CHECK(plain.later_use == std::vector<LaterUse>{LaterUse::not_asked});
  // Read again later (a copy out of it): read. Partly overwritten first: still read.
  u = uses(Buf::output, false,
           {{Kind::recv, 1, 0, 2, {}, {Buf::output, 0, 4}},
            {Kind::copy, -1, 0, 3, {Buf::output, 2, 6}, {Buf::scratch, 0, 6}}});
  CHECK(u[1] == LaterUse::read);
  CHECK(u[2] == LaterUse::read);
  // Nothing after it: output is final, scratch dead.
  CHECK(uses(Buf::output, false, {})[1] == LaterUse::final);
  CHECK(uses(Buf::scratch, false, {})[1] == LaterUse::dead);
  // In place the input is the output: a later send of the input reads the final receive.
  const std::vector<schedule::Step> reads_input = {{Kind::recv, 1, 0, 2, {}, {Buf::output, 8, 8}},
                                                   {Kind::send, 1, 0, 3, {Buf::input, 8, 8}, {}}};
  CHECK(uses(Buf::output, true, reads_input)[2] == LaterUse::read);
  CHECK(uses(Buf::output, false, reads_input)[2] == LaterUse::final);
}
