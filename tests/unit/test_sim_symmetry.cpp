// The simulator's classes of ranks (model/sim_symmetry.hpp): which chips a representative stands
// for, that a rank whose schedule differs breaks a class, and that a classed run gives the full
// run's answer on every shape, collective and algorithm.
#include <catch2/catch.hpp>
#include <numeric>

#include "model/sim_symmetry.hpp"
#include "model/simulator.hpp"
#include "schedule/dependencies.hpp"

using namespace toroid;
using model::SimModel;
using model::SimResult;
using model::sim::RankClasses;

namespace {

SimModel torus_model(Torus2D t) {
  SimModel m;
  m.topology = t;
  m.link_bytes_per_s[0] = m.link_bytes_per_s[1] = 80e9;
  m.hop_latency_s[0] = m.hop_latency_s[1] = 1e-6;
  m.reduce_bytes_per_s = 300e9;
  return m;
}

// A ring along X: every rank sends `bytes(r)` to r+1 and receives `bytes(r-1)` from r-1.
model::sim::Programs ring_program(const Torus2D& t, int r, std::uint64_t (*bytes)(int)) {
  using schedule::Buf;
  using schedule::Kind;
  const int p = t.size(), next = (r + 1) % p, prev = (r + p - 1) % p;
  schedule::Schedule s;
  s.rank = r;
  s.nranks = p;
  s.steps.push_back({Kind::send, next, 0, 0, {Buf::input, 0, bytes(r)}, {}});
  s.steps.push_back({Kind::recv, prev, 0, 0, {}, {Buf::output, 0, bytes(prev)}});
  schedule::derive_dependencies(s);
  model::sim::Programs out;
  model::sim::append(out, s, 1);
  return out;
}

}  // namespace

TEST_CASE("sim symmetry: a class's chips, its representative and its links", "[simulator]") {
  const Torus2D column_ring(8, 4, false, true);
  const RankClasses columns(column_ring, 0, 1);  // one class per column, row 0 represents it
  CHECK(columns.classes() == 8);
  CHECK(columns.members() == 4);
  const int chip = column_ring.rank_of({3, 2});
  CHECK(columns.class_of(chip) == 3);
  CHECK(columns.representative(3) == 3);
  // (5, 2) as (3, 0) sees it from (3, 2)'s place: moved back two rows.
  CHECK(columns.seen_from_representative(chip, column_ring.rank_of({5, 2})) == 5);
  CHECK(columns.seen_from_representative(chip, column_ring.rank_of({5, 1})) ==
        column_ring.rank_of({5, 3}));
  const auto links = columns.link_representatives();
  CHECK(links.size() == 32u * 4);
  CHECK(links[static_cast<std::size_t>(chip * 4 + 2)] == 3 * 4 + 2);

  const Torus2D square(4, 4);
  CHECK(RankClasses(square, 1, 1).classes() == 1);
  const RankClasses pairs(square, 2, 2);
  CHECK(pairs.classes() == 4);
  CHECK(pairs.class_of(square.rank_of({3, 1})) == 3);
  CHECK(pairs.representative(3) == square.rank_of({1, 1}));
}

TEST_CASE("sim symmetry: moved copies make a class, one rank that differs breaks it",
          "[simulator]") {
  const Torus2D t(4, 1, true, false);
  const auto find = [&](std::uint64_t (*bytes)(int)) {
    std::vector<model::sim::Programs> built;
    for (int r = 0; r < t.size(); ++r) built.push_back(ring_program(t, r, bytes));
    return model::sim::find_symmetry(t, [&](int r) -> const model::sim::Programs& {
      return built[static_cast<std::size_t>(r)];
    });
  };
  const auto same = find([](int) -> std::uint64_t { return 4096; });
  REQUIRE(same);
  CHECK(same->classes() == 1);
  // An element longer here and there: still moved copies (model::sim::alike_bytes).
  const auto uneven = find([](int r) -> std::uint64_t { return r == 2 ? 4100 : 4096; });
  REQUIRE(uneven);
  CHECK(uneven->classes() == 1);
  // Rank 2 sends twice as much: no class holds it and the others.
  CHECK_FALSE(find([](int r) -> std::uint64_t { return r == 2 ? 8192 : 4096; }));
  CHECK(model::sim::alike_bytes(4096, 4096 + 64));
  CHECK_FALSE(model::sim::alike_bytes(4096, 4096 + 65));
  CHECK(model::sim::alike_bytes(1 << 20, (1 << 20) + 1024));
  CHECK_FALSE(model::sim::alike_bytes(1 << 20, (1 << 20) + 1100));
}

TEST_CASE("sim symmetry: a classed run gives the full run's answer", "[simulator]") {
  // Ties between ranks of one instant are ordered by queueing in the full run and alike in the
  // classed one, which moves a first segment's estimated landing: within 2% on every row here
  // (the largest, 1.9%: 6x4 torus2d_both's all-reduce of 16 MiB in pipelined pieces; before
  // 2D ran the N-dimensional parts, 0.9%: 4x2 rabenseifner 16 MiB; docs/simulator.md "Speed").
  const Torus2D shapes[] = {Torus2D(8, 4, false, true),
                            Torus2D(4, 4),
                            Torus2D(6, 4),
                            Torus2D(5, 3),
                            Torus2D(8, 2, true, false),
                            Torus2D(4, 2),
                            Torus2D(8, 4, false, false)};
  int classed = 0;
  for (const Torus2D& t : shapes)
    for (Collective c : {Collective::allreduce, Collective::reduce_scatter, Collective::allgather})
      for (Algorithm a : all_algorithms) {
        if (!has_schedule(a) || !implements(a, c)) continue;
        for (std::uint64_t count : {std::uint64_t{1} << 18, std::uint64_t{1} << 22}) {
          INFO(t.to_string() << " " << to_string(c) << " " << to_string(a) << " " << count);
          SimModel m = torus_model(t);
          schedule::Spec r;
          r.collective = c;
          r.count = count;
          m.symmetric = false;
          const SimResult full = model::simulate_collective(m, a, r, DataType::f32);
          m.symmetric = true;
          const SimResult sym = model::simulate_collective(m, a, r, DataType::f32);
          REQUIRE(full.error == "");
          REQUIRE(sym.error == "");
          CHECK(full.simulated_ranks == t.size());
          CHECK(sym.time_s == Approx(full.time_s).epsilon(0.02));
          CHECK(sym.transfers == full.transfers);
          CHECK(sym.max_hops == full.max_hops);
          const auto sum = [](const std::vector<std::uint64_t>& v) {
            return static_cast<double>(std::accumulate(v.begin(), v.end(), std::uint64_t{0}));
          };
          CHECK(sum(sym.link_bytes) == Approx(sum(full.link_bytes)).epsilon(0.001));
          CHECK(sum(sym.chip_sent_bytes) == Approx(sum(full.chip_sent_bytes)).epsilon(0.001));
          if (sym.simulated_ranks < t.size()) ++classed;
          if (!t.wraps(Axis::x) && !t.wraps(Axis::y)) CHECK(sym.simulated_ranks == t.size());
          if (a == Algorithm::ring && t.wraps(Axis::y))  // rank order: every row alike
            CHECK(sym.simulated_ranks == t.x_dim());
        }
      }
  CHECK(classed > 100);  // the classed path ran, not the full one under another name
}

TEST_CASE("sim symmetry: a root breaks the classes; a timeline runs every rank", "[simulator]") {
  SimModel m = torus_model(Torus2D(4, 4));
  schedule::Spec r;
  r.collective = Collective::broadcast;
  r.count = 1 << 16;
  const SimResult b = model::simulate_collective(m, Algorithm::ring, r, DataType::f32);
  REQUIRE(b.error == "");
  CHECK(b.simulated_ranks == 16);
  r.collective = Collective::allreduce;
  std::vector<model::RankTimeline> timeline;
  const SimResult t =
      model::simulate_collective(m, Algorithm::torus2d, r, DataType::f32, {}, &timeline);
  CHECK(t.simulated_ranks == 16);
  CHECK(timeline.size() == 16u);
  CHECK(model::simulate_collective(m, Algorithm::torus2d, r, DataType::f32).simulated_ranks < 16);
}

TEST_CASE("sim symmetry: the multipod's ring runs one row", "[simulator][scale]") {
  // 4096 chips, 16,380 steps each: one row of 128 stands for the 32 rows (about 1.5 s here,
  // against 25-50 s for every chip; docs/simulator.md "Speed").
  const SimModel m = torus_model(Torus2D(128, 32, false, true));
  schedule::Spec r;
  r.count = std::uint64_t{1} << 18;  // 1 MiB of f32
  const SimResult res = model::simulate_collective(m, Algorithm::ring, r, DataType::f32);
  REQUIRE(res.error == "");
  CHECK(res.simulated_ranks == 128);
  const std::uint64_t N = 4096, M = r.count * 4;
  CHECK(res.transfers == N * 2 * (N - 1));
  const std::uint64_t total =
      std::accumulate(res.chip_sent_bytes.begin(), res.chip_sent_bytes.end(), std::uint64_t{0});
  CHECK(total == 2 * (N - 1) * M);
}
