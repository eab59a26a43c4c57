// All-to-all: direct, Bruck, hierarchical and one phase per dimension (torus2d) checked by the
// in-process verifier on real data over 1D-6D shapes, tori, meshes and twisted ones, along axes
// too; the messages a rank sends; the simulator's bound.
#include <bit>
#include <catch2/catch.hpp>
#include <map>
#include <set>

#include "model/sim_limit.hpp"
#include "model/simulator.hpp"
#include "model/verifier.hpp"
#include "schedule_check.hpp"

using namespace toroid;
using schedule::Collective;
using testing::check;
using testing::Shape;

TEST_CASE("all-to-all: every block reaches its rank, direct, Bruck and a dimension at a time",
          "[schedules][alltoall]") {
  for (const char* shape : {"1", "2", "3", "5", "7", "4x2", "3x3:wrap=none", "4x3:wrap=x", "2x2x2",
                            "3x2x4:wrap=xz", "2x2x4:twist", "2x3x2x2", "2x2x2x2x2x2"}) {
    const Torus t = Torus::parse(shape);
    const Shape s{t, {}};
    const auto p = static_cast<std::uint64_t>(t.chips());
    for (Algorithm a : {Algorithm::direct, Algorithm::bruck, Algorithm::torus2d,
                        Algorithm::torus2d_both, Algorithm::ring})
      for (std::uint64_t n : {std::uint64_t{0}, p, 7 * p, 2 * p})
        for (DataType type : {DataType::i64, DataType::f16}) {
          INFO(shape << " " << to_string(a) << " n=" << n << " " << to_string(type));
          REQUIRE(check(a, Collective::alltoall, s, n, false, type) == "");
        }
  }
}

TEST_CASE("all-to-all along axes: each sub-torus exchanges among its own members",
          "[schedules][alltoall]") {
  const Torus t = Torus::parse("4x3x2:wrap=xz");
  const Shape s{t, {}};
  for (Axes axes : {Axes(Axis::x), Axes(Axis::z), Axes{Axis::x, Axis::y}, Axes{Axis::y, Axis::z}})
    for (Algorithm a : {Algorithm::direct, Algorithm::bruck, Algorithm::torus2d,
                        Algorithm::torus2d_both, Algorithm::ring}) {
      const auto k = static_cast<std::uint64_t>(t.along(axes).chips());
      model::Traffic traffic;
      INFO(axes.to_string() << " " << to_string(a));
      REQUIRE(check(a, Collective::alltoall, s, 5 * k, false, DataType::i64, ReduceOp::sum,
                    &traffic, 0, axes) == "");
      for (auto [from, to] : traffic.links)
        REQUIRE(t.group_along(from, axes) == t.group_along(to, axes));
    }
}

TEST_CASE("all-to-all: ring relays every block chip to chip, neighbours only, on every shape",
          "[schedules][alltoall]") {
  // Tori, meshes and mixed ones of 1-3 dimensions, rows long enough to relay (a line of 3 and
  // more, a ring of 4 and more, even and odd), the twisted 2x2x4 (its short rows run as lines),
  // odd block sizes.
  for (const char* shape :
       {"6", "7:wrap=none", "5", "8", "6x4:wrap=none", "5x4:wrap=x", "4x5:wrap=x", "6x3", "4x4x4",
        "4x4x4:wrap=none", "4x3x4:wrap=xz", "3x4x5:wrap=y", "2x2x4:twist", "4x2x3:wrap=none"}) {
    const Torus t = Torus::parse(shape);
    const Shape s{t, {}};
    const auto p = static_cast<std::uint64_t>(t.chips());
    for (std::uint64_t n : {p, 3 * p, 5 * p}) {
      model::Traffic traffic;
      INFO(shape << " n=" << n);
      REQUIRE(check(Algorithm::ring, Collective::alltoall, s, n, false, DataType::i64,
                    ReduceOp::sum, &traffic) == "");
      for (auto [from, to] : traffic.links) REQUIRE(t.adjacent(from, to));
    }
  }
  // Along axes: each sub-torus on its own, neighbours only inside it.
  const Torus t = Torus::parse("5x4x3:wrap=xz");
  for (Axes axes : {Axes(Axis::x), Axes{Axis::x, Axis::y}, Axes{Axis::y, Axis::z}}) {
    model::Traffic traffic;
    INFO(axes.to_string());
    const auto k = static_cast<std::uint64_t>(t.along(axes).chips());
    REQUIRE(check(Algorithm::ring, Collective::alltoall, Shape{t, {}}, 3 * k, false, DataType::i64,
                  ReduceOp::sum, &traffic, 0, axes) == "");
    for (auto [from, to] : traffic.links) {
      REQUIRE(t.adjacent(from, to));
      REQUIRE(t.group_along(from, axes) == t.group_along(to, axes));
    }
  }
}

TEST_CASE("all-to-all: ring carries what the shortest paths carry, both ways alike on a ring",
          "[schedules][alltoall]") {
  // A ring of 8: every block travels its shorter way, the one opposite up from the even chips
  // and down from the odd ones, so each direction of every link carries 1+2+3+(4/2) = 8 blocks
  // (blocks of 3 elements of i64); a line of 6: link x -> x+1 carries (x+1)(5-x) blocks.
  for (auto [shape, per_link] :
       {std::pair{"8", std::uint64_t{0}}, std::pair{"6:wrap=none", std::uint64_t{1}}}) {
    const Torus t = Torus::parse(shape);
    const auto p = t.chips();
    const std::uint64_t n = static_cast<std::uint64_t>(p) * 3;
    std::map<std::pair<int, int>, std::uint64_t> carried;  // (from, to) -> elements
    for (int r = 0; r < p; ++r) {
      const schedule::Schedule one =
          schedule::build(Algorithm::ring, {Collective::alltoall, n, false, false, {}}, {r, t, {}});
      for (const schedule::Step& st : one.steps)
        if (st.kind == schedule::Kind::send) carried[{r, st.peer}] += st.src.count;
    }
    INFO(shape);
    for (auto [link, elements] : carried) {
      const auto [from, to] = link;
      if (per_link == 0) {
        CHECK(elements == 8 * 3);
      } else {
        const int x = std::min(from, to);
        CHECK(elements == static_cast<std::uint64_t>((x + 1) * (p - 1 - x)) * 3);
      }
    }
    CHECK(carried.size() == static_cast<std::size_t>(per_link == 0 ? 2 * p : 2 * (p - 1)));
  }
}

TEST_CASE("all-to-all: a dimension at a time sends sum(k_d - 1) aggregated messages",
          "[schedules][alltoall]") {
  // 8x4: direct sends 31 messages of one block, torus2d 7 + 3 of 4 and 8 blocks.
  const Torus t(std::vector<int>{8, 4});
  const std::uint64_t n = 32 * 3;
  for (auto [a, messages, blocks] :
       {std::tuple{Algorithm::direct, 31, 31}, std::tuple{Algorithm::torus2d, 10, 7 * 4 + 3 * 8}}) {
    const schedule::Schedule one =
        schedule::build(a, {Collective::alltoall, n, false, false, {}}, {5, t, {}});
    int sends = 0;
    std::uint64_t sent = 0;
    for (const schedule::Step& st : one.steps)
      if (st.kind == schedule::Kind::send) ++sends, sent += st.src.count;
    INFO(to_string(a));
    CHECK(sends == messages);
    CHECK(sent == static_cast<std::uint64_t>(blocks) * 3);
  }
}

TEST_CASE("all-to-all: Bruck sends ceil(log2 p) rounds of about p/2 blocks",
          "[schedules][alltoall]") {
  // Per round k: the slots with bit k set, split by copy into at most two messages to one peer.
  for (const int p : {2, 5, 8, 12, 32}) {
    const Torus t(std::vector<int>{p});
    const std::uint64_t n = static_cast<std::uint64_t>(p) * 3;
    for (int rank : {0, p - 1}) {
      const schedule::Schedule one = schedule::build(
          Algorithm::bruck, {Collective::alltoall, n, false, false, {}}, {rank, t, {}});
      std::set<int> peers;
      std::set<std::uint32_t> rounds;
      std::uint64_t sent = 0;
      for (const schedule::Step& st : one.steps)
        if (st.kind == schedule::Kind::send)
          peers.insert(st.peer), rounds.insert(st.phase), sent += st.src.count;
      int log = 0;
      while ((1 << log) < p) ++log;
      std::uint64_t blocks = 0;  // slots 1..p-1, once per set bit
      for (int i = 1; i < p; ++i) blocks += static_cast<std::uint64_t>(std::popcount(unsigned(i)));
      INFO("p = " << p << ", rank " << rank);
      CHECK(static_cast<int>(rounds.size()) == log);
      CHECK(static_cast<int>(peers.size()) == std::min(log, p - 1));
      CHECK(sent == blocks * 3);
    }
  }
}

TEST_CASE("all-to-all: hierarchical exchanges inside each node, then one message per node",
          "[schedules][alltoall]") {
  struct Case {
    const char* shape;
    std::vector<int> nodes;
  };
  for (const Case& c : {Case{"1", {}}, Case{"4", {}}, Case{"4x2", {0, 0, 0, 0, 1, 1, 1, 1}},
                        Case{"4x2", {0, 1, 0, 1, 0, 1, 0, 1}},  // interleaved
                        Case{"6", {2, 0, 1, 1, 0, 2}},          // nodes out of rank order
                        Case{"2x2x2", {0, 0, 1, 1, 2, 2, 3, 3}}, Case{"5", {0, 1, 2, 3, 4}}}) {
    const Torus t = Torus::parse(c.shape);
    const testing::Shape shape{t, c.nodes};
    const auto p = static_cast<std::uint64_t>(t.chips());
    for (std::uint64_t n : {std::uint64_t{0}, p, 3 * p})
      for (DataType type : {DataType::i64, DataType::f16}) {
        INFO(c.shape << " n=" << n << " " << to_string(type));
        REQUIRE(check(Algorithm::hierarchical, Collective::alltoall, shape, n, false, type) == "");
      }
    // L − 1 messages inside the node and N − 1 across, where direct sends p − 1.
    std::map<int, int> per_node;
    for (int x : c.nodes) ++per_node[x];
    const int nodes = c.nodes.empty() ? 1 : static_cast<int>(per_node.size());
    const int local = static_cast<int>(p) / nodes;
    const schedule::Schedule one =
        schedule::build(Algorithm::hierarchical, {Collective::alltoall, 2 * p, false, false, {}},
                        {static_cast<int>(p) - 1, t, c.nodes});
    int sends = 0;
    for (const schedule::Step& st : one.steps) sends += st.kind == schedule::Kind::send;
    INFO(c.shape);
    CHECK(sends == local - 1 + nodes - 1);
  }
  CHECK_THROWS_WITH(
      schedule::build(Algorithm::hierarchical, {Collective::alltoall, 6, false, false, {}},
                      {0, Torus::parse("3"), {0, 0, 1}}),
      Catch::Contains("its nodes hold 2 and 1 ranks"));
}

TEST_CASE("all-to-all: bad requests say why", "[schedules][alltoall]") {
  const schedule::Context ctx{0, Torus2D(2, 2), {}};
  CHECK_THROWS_WITH(
      schedule::build(Algorithm::swing, {Collective::alltoall, 8, false, false, {}}, ctx),
      Catch::Contains("algorithm swing cannot run alltoall on topology 2x2: all-to-all runs on "
                      "direct, bruck, ring, torus2d, torus2d_both, hierarchical, mpi or auto"));
  CHECK_THROWS_WITH(
      schedule::build(Algorithm::direct, {Collective::alltoall, 9, false, false, {}}, ctx),
      Catch::Contains("9 elements are not 4 equal blocks"));
  CHECK_THROWS_WITH(
      schedule::build(Algorithm::direct, {Collective::alltoall, 8, true, false, {}}, ctx),
      Catch::Contains("in place is not supported"));
  CHECK_THROWS_WITH(
      schedule::build(Algorithm::direct, {Collective::allreduce, 8, false, false, {}}, ctx),
      Catch::Contains("algorithm direct cannot run allreduce on topology 2x2: it only implements "
                      "alltoall"));
}

namespace {

// Every rank's alltoallv layout for count(i, j) elements from i to j, the receive blocks in
// reverse rank order with a gap of one; the schedules run in process on rank-tagged bytes.
std::string run_alltoallv(int p, std::uint64_t (*count)(int, int),
                          std::uint64_t (*expected)(int, int) = nullptr) {
  std::vector<schedule::VarBlocks> v(static_cast<std::size_t>(p));
  std::vector<model::RankMemory> mem(static_cast<std::size_t>(p));
  std::vector<schedule::Schedule> schedules;
  const auto at = [](int q) { return static_cast<std::size_t>(q); };
  for (int r = 0; r < p; ++r) {
    schedule::VarBlocks& b = v[at(r)];
    std::uint64_t in = 0, out = 0;
    for (int q = 0; q < p; ++q) {
      b.send_counts.push_back(count(r, q));
      b.send_offsets.push_back(in);
      in += count(r, q);
    }
    b.recv_counts.resize(at(p));
    b.recv_offsets.resize(at(p));
    for (int q = p - 1; q >= 0; --q) {
      b.recv_counts[at(q)] = expected ? expected(q, r) : count(q, r);
      b.recv_offsets[at(q)] = out;
      out += b.recv_counts[at(q)] + 1;
    }
    mem[at(r)].input.resize(in * 2);
    for (std::uint64_t e = 0; e < in; ++e) {  // element e of rank r: (r, e) in two bytes
      mem[at(r)].input[2 * e] = static_cast<std::byte>(r);
      mem[at(r)].input[2 * e + 1] = static_cast<std::byte>(e);
    }
    mem[at(r)].output.assign(out * 2, std::byte{0xee});
    const schedule::Context ctx{r, Torus(std::vector<int>{p}), {}};
    schedules.push_back(schedule::build_alltoallv(b, ctx));
  }
  if (std::string e = model::execute_in_process(schedules, mem, DataType::f16, ReduceOp::sum);
      !e.empty())
    return e;
  for (int r = 0; r < p; ++r)
    for (int q = 0; q < p; ++q)
      for (std::uint64_t k = 0; k < v[at(r)].recv_counts[at(q)]; ++k) {
        const std::size_t got = 2 * (v[at(r)].recv_offsets[at(q)] + k);
        const std::uint64_t sent = v[at(q)].send_offsets[at(r)] + k;
        if (mem[at(r)].output[got] != static_cast<std::byte>(q) ||
            mem[at(r)].output[got + 1] != static_cast<std::byte>(sent))
          return "rank " + std::to_string(r) + " block from " + std::to_string(q) + " element " +
                 std::to_string(k) + " is wrong";
      }
  return "";
}

std::uint64_t skewed(int i, int j) { return (i + 2 * j) % 3 == 0 ? 0 : (i * 7 + j) % 5 + 1; }
std::uint64_t one_more_to_last(int i, int j) { return skewed(i, j) + (i == 0 && j == 2 ? 1 : 0); }

}  // namespace

TEST_CASE("alltoallv: each rank's own block sizes, one message per peer, empty ones too",
          "[schedules][alltoall]") {
  for (int p : {1, 2, 3, 5, 8}) {
    INFO(p << " ranks");
    CHECK(run_alltoallv(p, skewed) == "");
    // Every schedule sends p - 1 messages, whatever its counts: none is left unmatched when the
    // counts of two ranks disagree (the engine then fails the receiver's call).
    std::vector<std::uint64_t> zeros(static_cast<std::size_t>(p), 0);
    const schedule::Schedule s = schedule::build_alltoallv({zeros, zeros, zeros, zeros},
                                                           {0, Torus(std::vector<int>{p}), {}});
    CHECK(s.exact_messages);
    CHECK(std::count_if(s.steps.begin(), s.steps.end(), [](const schedule::Step& st) {
            return st.kind == schedule::Kind::send;
          }) == p - 1);
  }
  // The in-process executor reports a disagreement as a size mismatch.
  CHECK_THAT(run_alltoallv(3, skewed, one_more_to_last), Catch::Contains("size"));
  const std::vector<std::uint64_t> two(3, 2), one_short(2, 2), self{1, 2, 2};
  const schedule::Context ctx{0, Torus(std::vector<int>{3}), {}};
  CHECK_THROWS_WITH(
      schedule::build_alltoallv({two, one_short, two, two}, ctx),
      "alltoallv on rank 0: its counts and offsets need one entry per rank (3), got 2");
  CHECK_THROWS_WITH(schedule::build_alltoallv({self, two, two, two}, ctx),
                    "alltoallv on rank 0: it sends 1 elements to itself but its receive count for "
                    "itself is 2");
}

TEST_CASE("sim: all-to-all against its bound, direct and a dimension at a time",
          "[alltoall][simulator]") {
  // Neither beats the bound (every block's hops over all links, a chip's ports, the distance);
  // on 8x8 at 64 blocks of 4 KiB the bound is the links'.
  model::SimModel m;
  m.topology = Torus(std::vector<int>{8, 8});
  m.link_bytes_per_s.fill(10e9);
  m.hop_latency_s.fill(1e-6);
  for (std::uint64_t bytes : {std::uint64_t{64 * 64}, std::uint64_t{64 * 4096}})
    for (Algorithm a : {Algorithm::direct, Algorithm::bruck, Algorithm::torus2d,
                        Algorithm::torus2d_both, Algorithm::hierarchical}) {
      schedule::Spec r;
      r.collective = Collective::alltoall;
      r.count = bytes / 4;
      std::vector<int> rows;  // hierarchical: a node per row
      for (int c = 0; c < 64; ++c) rows.push_back(c / 8);
      const model::SimResult res = model::simulate_collective(
          m, a, r, DataType::f32, a == Algorithm::hierarchical ? rows : std::vector<int>{});
      REQUIRE(res.error == "");
      const model::SimLimit limit = model::limit_of(m, Collective::alltoall, bytes);
      INFO(to_string(a) << " " << bytes << " B: " << res.time_s * 1e6 << " us, limit "
                        << limit.limit_s() * 1e6 << " us");
      CHECK(res.time_s >= limit.limit_s() * (1 - 1e-9));
      // 8x8 torus: a block crosses 4 hops on average (2 a dimension), over 256 link directions.
      CHECK(limit.bandwidth_s == Approx(bytes / 64.0 * 64 * 64 * 4 / (256 * 10e9)));
    }
  // 8x4 with X a line: the bisection across X binds (16 chips each side, a block to each of the
  // other side's, through the 4 rows' middle links), above the block-hops bound; no algorithm
  // beats it.
  m.topology = Torus::parse("8x4:wrap=y");
  const std::uint64_t bytes = 32 * 4096;
  const model::SimLimit limit = model::limit_of(m, Collective::alltoall, bytes);
  CHECK(limit.bandwidth_s == Approx(16.0 * 16 * 4096 / (4 * 10e9)));
  for (Algorithm a :
       {Algorithm::direct, Algorithm::bruck, Algorithm::torus2d, Algorithm::torus2d_both}) {
    schedule::Spec r;
    r.collective = Collective::alltoall;
    r.count = bytes / 4;
    const model::SimResult res = model::simulate_collective(m, a, r, DataType::f32);
    REQUIRE(res.error == "");
    INFO(to_string(a) << ": " << res.time_s * 1e6 << " us, limit " << limit.limit_s() * 1e6);
    CHECK(res.time_s >= limit.limit_s() * (1 - 1e-9));
  }
}
