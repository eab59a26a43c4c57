// All-to-all: direct and one phase per dimension (torus2d) checked by the in-process verifier on
// real data over 1D-6D shapes, tori, meshes and twisted ones, along axes too; the messages a
// rank sends; the simulator's bound.
#include <catch2/catch.hpp>

#include "model/sim_limit.hpp"
#include "model/simulator.hpp"
#include "model/verifier.hpp"
#include "schedule_check.hpp"

using namespace toroid;
using schedule::Collective;
using testing::check;
using testing::Shape;

TEST_CASE("all-to-all: every block reaches its rank, direct and a dimension at a time",
          "[alltoall]") {
  for (const char* shape : {"1", "2", "5", "4x2", "3x3:wrap=none", "4x3:wrap=x", "2x2x2",
                            "3x2x4:wrap=xz", "2x2x4:twist", "2x3x2x2", "2x2x2x2x2x2"}) {
    const Torus t = Torus::parse(shape);
    const Shape s{t, {}};
    const auto p = static_cast<std::uint64_t>(t.chips());
    for (Algorithm a : {Algorithm::direct, Algorithm::torus2d, Algorithm::torus2d_both})
      for (std::uint64_t n : {std::uint64_t{0}, p, 7 * p, 2 * p})
        for (DataType type : {DataType::i64, DataType::f16}) {
          INFO(shape << " " << to_string(a) << " n=" << n << " " << to_string(type));
          REQUIRE(check(a, Collective::alltoall, s, n, false, type) == "");
        }
  }
}

TEST_CASE("all-to-all along axes: each sub-torus exchanges among its own members", "[alltoall]") {
  const Torus t = Torus::parse("4x3x2:wrap=xz");
  const Shape s{t, {}};
  for (Axes axes : {Axes(Axis::x), Axes(Axis::z), Axes{Axis::x, Axis::y}, Axes{Axis::y, Axis::z}})
    for (Algorithm a : {Algorithm::direct, Algorithm::torus2d, Algorithm::torus2d_both}) {
      const auto k = static_cast<std::uint64_t>(t.along(axes).chips());
      model::Traffic traffic;
      INFO(axes.to_string() << " " << to_string(a));
      REQUIRE(check(a, Collective::alltoall, s, 5 * k, false, DataType::i64, ReduceOp::sum,
                    &traffic, 0, axes) == "");
      for (auto [from, to] : traffic.links)
        REQUIRE(t.group_along(from, axes) == t.group_along(to, axes));
    }
}

TEST_CASE("all-to-all: a dimension at a time sends sum(k_d - 1) aggregated messages",
          "[alltoall]") {
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

TEST_CASE("all-to-all: bad requests say why", "[alltoall]") {
  const schedule::Context ctx{0, Torus2D(2, 2), {}};
  CHECK_THROWS_WITH(
      schedule::build(Algorithm::ring, {Collective::alltoall, 8, false, false, {}}, ctx),
      Catch::Contains("algorithm ring cannot run alltoall on topology 2x2: all-to-all runs on "
                      "direct, torus2d, torus2d_both, mpi or auto"));
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

TEST_CASE("sim: all-to-all against its bound, direct and a dimension at a time",
          "[alltoall][simulator]") {
  // Neither beats the bound (every block's hops over all links, a chip's ports, the distance);
  // on 8x8 at 64 blocks of 4 KiB the bound is the links'.
  model::SimModel m;
  m.topology = Torus(std::vector<int>{8, 8});
  m.link_bytes_per_s.fill(10e9);
  m.hop_latency_s.fill(1e-6);
  for (std::uint64_t bytes : {std::uint64_t{64 * 64}, std::uint64_t{64 * 4096}})
    for (Algorithm a : {Algorithm::direct, Algorithm::torus2d, Algorithm::torus2d_both}) {
      schedule::Spec r;
      r.collective = Collective::alltoall;
      r.count = bytes / 4;
      const model::SimResult res = model::simulate_collective(m, a, r, DataType::f32);
      REQUIRE(res.error == "");
      const model::SimLimit limit = model::limit_of(m, Collective::alltoall, bytes);
      INFO(to_string(a) << " " << bytes << " B: " << res.time_s * 1e6 << " us, limit "
                        << limit.limit_s() * 1e6 << " us");
      CHECK(res.time_s >= limit.limit_s() * (1 - 1e-9));
      // 8x8 torus: a block crosses 4 hops on average (2 a dimension), over 256 link directions.
      CHECK(limit.bandwidth_s == Approx(bytes / 64.0 * 64 * 64 * 4 / (256 * 10e9)));
    }
}
