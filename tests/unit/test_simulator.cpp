// The imulator against closed-form costs: contention-free rings and rows, the 2D torus'
// latency teps and bytes per chip, per-link byte counts, a mesh dimension against a torus one,
// and the 4096-chip pod.
#include <algorithm>
#include <catch2/catch.hpp>
#include <numeric>
#include <vector>

#include "catch_extras.hpp"
#include "model/sim_limit.hpp"
#include "model/simulator.hpp"
#include "schedule/dependencies.hpp"
#include "toroid/error.hpp"

using namespace toroid;
using model::link_id;
using model::LinkDir;
using model::SimModel;
using model::SimResult;
using model::simulate_collective;

namespace {

SimModel make_model(const Torus& t, double bw, double lat, double reduce,
                    std::uint64_t segment = 256 * 1024) {
  SimModel m;
  m.topology = t;
  m.link_bytes_per_s.fill(bw);
  m.hop_latency_s.fill(lat);
  m.reduce_bytes_per_s = reduce;
  m.segment_bytes = segment;
  return m;
}

SimResult allreduce(const SimModel& m, Algorithm a, std::uint64_t count,
                    DataType type = DataType::f32) {
  schedule::Spec r;
  r.collective = Collective::allreduce;
  r.count = count;
  SimResult res = simulate_collective(m, a, r, type);
  REQUIRE(res.error == "");
  return res;
}

// A ring step of B bytes: latency, bandwidth, and the last segment's reduction where it reduces.
double step_time(const SimModel& m, double bytes, bool reduce) {
  const double seg = std::min<double>(bytes, static_cast<double>(m.segment_bytes));
  return m.hop_latency_s[0] + bytes / m.link_bytes_per_s[0] +
         (reduce ? seg / m.reduce_bytes_per_s : 0.0);
}

}  // namespace

TEST_CASE("sim: one ring matches the closed-form latency/bandwidth cost", "[simulator]") {
  const int p = 8;
  const SimModel m = make_model(Torus2D(p, 1), 10e9, 2e-6, 40e9);
  for (std::uint64_t count : {std::uint64_t{p * 16}, std::uint64_t{p} << 22}) {
    INFO("count " << count);
    const SimResult r = allreduce(m, Algorithm::ring, count);
    const double block = static_cast<double>(count) * 4 / p;
    // reduce-scatter: p-1 steps that reduce; all-gather: p-1 steps that only copy in.
    const double expected =
        (p - 1) * step_time(m, block, true) + (p - 1) * step_time(m, block, false);
    CHECK(r.time_s == Approx(expected).epsilon(0.01));
    CHECK(r.rank0_phases.size() == 2 * (p - 1));
    CHECK(r.max_hops == 1);
  }
}

TEST_CASE("sim: one row (bidirectional ring of torus2d on Xx1) matches the closed form",
          "[simulator]") {
  const int p = 16;
  // The reducer is fast enough for both directions' streams at once.
  const SimModel m = make_model(Torus2D(p, 1), 25e9, 1.5e-6, 200e9);
  for (std::uint64_t count : {std::uint64_t{2 * p}, std::uint64_t{p} << 22}) {
    INFO("count " << count);
    const SimResult r = allreduce(m, Algorithm::torus2d, count);
    // Every block travels half way round each way (bidir_ring.hpp): p/2 steps a way, each a
    // block (two halves on their chains) but the last, which carries the antipode's half.
    const double block = static_cast<double>(count) * 4 / p;
    auto pass = [&](bool reduce) {
      return (p / 2 - 1) * step_time(m, block, reduce) + step_time(m, block / 2, reduce);
    };
    const double expected = pass(true) + pass(false);
    CHECK(r.time_s == Approx(expected).epsilon(0.01));
    CHECK(r.algbw_gbps == Approx(static_cast<double>(count) * 4 / expected / 1e9).epsilon(0.01));
    CHECK(r.busbw_gbps == Approx(r.algbw_gbps * 2.0 * (p - 1) / p).epsilon(1e-9));
  }
}

TEST_CASE(
    "sim: torus2d on XxY takes X+Y latency steps (X, Y even) and sends 2(N-1)/N of the vector per "
    "chip") {
  for (auto [X, Y] : {std::pair{8, 4}, std::pair{4, 4}, std::pair{16, 2}}) {
    INFO(X << "x" << Y);
    const int N = X * Y;
    const double lat = 1e-6;
    // Latency-bound: links and reducer so fast that only hops count.
    const SimResult tiny =
        allreduce(make_model(Torus2D(X, Y), 1e18, lat, 1e18), Algorithm::torus2d, 2 * N);
    // Each ring's reduce-scatter and all-gather take p/2 steps (blocks go half way each way).
    const int steps = X + Y;
    CHECK(tiny.time_s == Approx(steps * lat).epsilon(0.01));
    CHECK(tiny.rank0_phases.size() == static_cast<std::size_t>(steps));

    const std::uint64_t count = static_cast<std::uint64_t>(N) * 2 * 1024;  // every half-block equal
    const SimResult r =
        allreduce(make_model(Torus2D(X, Y), 80e9, lat, 300e9), Algorithm::torus2d, count);
    const std::uint64_t M = count * 4;
    for (int c = 0; c < N; ++c) REQUIRE(r.chip_sent_bytes[c] == 2 * (N - 1) * M / N);
  }
}

TEST_CASE("sim: per-link byte counts equal the theoretical counts", "[simulator]") {
  SECTION("torus2d on an 8x4 torus") {
    const int X = 8, Y = 4;
    const std::uint64_t count = X * Y * 2 * 512, M = count * 4;
    const SimResult r =
        allreduce(make_model(Torus2D(X, Y), 80e9, 1e-6, 300e9), Algorithm::torus2d, count);
    for (int c = 0; c < X * Y; ++c) {
      INFO("chip " << c);
      // Row phases: (X-1)/X of the vector each way; column phases: (Y-1)/Y of a 1/X shard.
      CHECK(r.link_bytes[link_id(c, LinkDir::plus_x)] == (X - 1) * M / X);
      CHECK(r.link_bytes[link_id(c, LinkDir::minus_x)] == (X - 1) * M / X);
      CHECK(r.link_bytes[link_id(c, LinkDir::plus_y)] == (Y - 1) * M / X / Y);
      CHECK(r.link_bytes[link_id(c, LinkDir::minus_y)] == (Y - 1) * M / X / Y);
    }
  }
  SECTION("ring in rank order on a 4x4 torus: +x links, and +y only where rows are crossed") {
    const int X = 4, Y = 4, N = 16;
    const std::uint64_t count = N * 1024, M = count * 4, per_link = 2 * (N - 1) * M / N;
    const SimResult r =
        allreduce(make_model(Torus2D(X, Y), 80e9, 1e-6, 300e9), Algorithm::ring, count);
    for (int c = 0; c < N; ++c) {
      INFO("chip " << c);
      CHECK(r.link_bytes[link_id(c, LinkDir::plus_x)] == per_link);
      CHECK(r.link_bytes[link_id(c, LinkDir::minus_x)] == 0);
      CHECK(r.link_bytes[link_id(c, LinkDir::plus_y)] == (c % X == 0 ? per_link : 0));
      CHECK(r.link_bytes[link_id(c, LinkDir::minus_y)] == 0);
    }
    CHECK(r.max_hops == 2);
    const std::uint64_t total =
        std::accumulate(r.chip_sent_bytes.begin(), r.chip_sent_bytes.end(), std::uint64_t{0});
    CHECK(total == N * per_link);
  }
}

TEST_CASE("sim: routes are dimension order, the short way round a ring, straight along a mesh",
          "[simulator]") {
  const Torus2D torus(8, 4), mesh(8, 4, false, false);
  CHECK(model::route(torus, 0, 7) == std::vector<int>{link_id(0, LinkDir::minus_x)});
  CHECK(model::route(torus, 0, 4) ==
        std::vector<int>{link_id(0, LinkDir::plus_x), link_id(1, LinkDir::plus_x),
                         link_id(2, LinkDir::plus_x), link_id(3, LinkDir::plus_x)});
  CHECK(model::route(mesh, 0, 7).size() == 7);
  // (7,3) -> (0,0) on the mesh: 7 hops -x along row 3, then 3 hops -y along column 0.
  const auto p = model::route(mesh, 31, 0);
  REQUIRE(p.size() == 10);
  CHECK(p.front() == link_id(31, LinkDir::minus_x));
  CHECK(p[7] == link_id(24, LinkDir::minus_y));
  CHECK(p.back() == link_id(8, LinkDir::minus_y));
}

TEST_CASE("sim: a twisted torus's routes are shortest paths through its twisted links",
          "[simulator]") {
  // Every route follows links (each hop leaves the chip the last one reached, to a neighbour)
  // and is as short as the chips' distance, which the twisted wraparounds shorten.
  for (const char* shape : {"4x4x8:twist", "2x2x4:twist", "4x8x8:twist", "3x3x6:twist"}) {
    const Torus t = Torus::parse(shape);
    const int dirs = model::directions_per_chip(t);
    for (int a = 0; a < t.chips(); ++a) {
      const std::vector<int> hops = t.hops_from(a);
      for (int b = 0; b < t.chips(); ++b) {
        INFO(shape << " " << a << " -> " << b);
        const std::vector<int> path = model::route(t, a, b);
        REQUIRE(static_cast<int>(path.size()) == hops[static_cast<std::size_t>(b)]);
        int at = a;
        for (const int link : path) {
          REQUIRE(link / dirs == at);
          const int d = link % dirs / 2, dir = link % 2 == 0 ? +1 : -1;
          at = *t.neighbour(at, d, dir);
        }
        REQUIRE(at == b);
      }
    }
  }
  // 4x4x8 twisted: (0,0,0) -> (3,0,4) is one hop -x through the wraparound, which lands 4
  // further along z; the plain route took 1 + 4.
  const Torus t = Torus::parse("4x4x8:twist");
  CHECK(model::route(t, 0, t.rank_of(std::vector<int>{3, 0, 4})) ==
        std::vector<int>{model::link_id(t, 0, 0, -1)});
}

TEST_CASE("sim: a mesh dimension costs about twice the bidirectional ring when bandwidth-bound",
          "[simulator]") {
  const int p = 16;
  const std::uint64_t count = std::uint64_t{64} << 20;  // 256 MiB of f32
  const SimModel ring_model = make_model(Torus2D(p, 1), 80e9, 1e-6, 1e15);
  const SimModel line_model = make_model(Torus2D(p, 1, false, false), 80e9, 1e-6, 1e15);
  schedule::Spec gather;
  gather.collective = Collective::allgather;
  gather.count = count;
  // All-gather: the line's busiest link direction carries (p-1)/p of the vector, a
  // bidirectional ring's (p-1)/(2p), in the same p-1 steps.
  const SimResult ring_ag =
      simulate_collective(ring_model, Algorithm::torus2d, gather, DataType::f32);
  const SimResult line_ag =
      simulate_collective(line_model, Algorithm::torus2d, gather, DataType::f32);
  REQUIRE(ring_ag.error == "");
  REQUIRE(line_ag.error == "");
  CHECK(line_ag.time_s / ring_ag.time_s == Approx(2.0).epsilon(0.02));
  // All-reduce: the same 2x for both halves, plus the line reduce-scatter's one extra phase
  // (the second chain's last block), which must not ripple down the line (it once did: a
  // sender waited for its neighbour's next phase, ~(3p-4)/(p-1) = 2.9x).
  const SimResult ring = allreduce(ring_model, Algorithm::torus2d, count);
  const SimResult line = allreduce(line_model, Algorithm::torus2d, count);
  INFO("ring " << ring.time_s << " s, line " << line.time_s << " s");
  CHECK(line.time_s / ring.time_s > 1.9);
  CHECK(line.time_s / ring.time_s < 2.0 * p / (p - 1) + 0.02);
}

TEST_CASE("sim: ring in rank order pays for the long wrap jumps of a mesh", "[simulator]") {
  const std::uint64_t count = 8 * 4 * 4;  // latency-bound
  const SimModel torus = make_model(Torus2D(8, 4), 80e9, 1e-6, 300e9);
  const SimModel mesh = make_model(Torus2D(8, 4, false, false), 80e9, 1e-6, 300e9);
  const SimResult t = allreduce(torus, Algorithm::ring, count),
                  m = allreduce(mesh, Algorithm::ring, count);
  CHECK(t.max_hops == 2);
  CHECK(m.max_hops == 10);
  // Every block's chain of forwards crosses the 8-hop row jumps and the 10-hop wrap on the mesh
  // (1 and 2 hops on the torus): 1.7x here. (Before a channel's next transfer could follow
  // the last one as soon as it was issued, each sender also waited for its own long jump to
  // land: 3x and more.)
  CHECK(m.time_s > 1.5 * t.time_s);
}

TEST_CASE("sim: a slow reducer bounds the reduce-scatter", "[simulator]") {
  const int p = 4;
  const std::uint64_t count = std::uint64_t{p} << 20;            // 1 MiB of f32 per block
  const SimModel m = make_model(Torus2D(p, 1), 80e9, 0.0, 8e9);  // reduction 10x slower than links
  const SimResult r = allreduce(m, Algorithm::ring, count);
  const double block = static_cast<double>(count) * 4 / p;
  const double seg = static_cast<double>(m.segment_bytes);
  // The reduce-scatter's p−1 steps are the reducer's; of the all-gather's, the first streams
  // behind the last reduction (it follows it), the other p−2 take a block's time each.
  const double expected = (p - 1) * (seg / 80e9 + block / 8e9) + (p - 2) * block / 80e9;
  CHECK(r.time_s == Approx(expected).epsilon(0.01));
}

TEST_CASE(
    "sim: simulating built schedules equals simulate_collective; deadlock and size mismatch are "
    "reported") {
  SimModel m = make_model(Torus2D(4, 2), 80e9, 1e-6, 300e9);
  m.symmetric = false;  // every rank, as simulate() runs them (test_sim_symmetry.cpp: classes)
  schedule::Spec req;
  req.count = 4096;
  req.elem_bytes = 4;  // as simulate_collective builds them: with the model's context
  std::vector<schedule::Schedule> all;
  for (int r = 0; r < 8; ++r) {
    schedule::Context ctx = model::schedule_context(m, {});
    ctx.rank = r;
    all.push_back(schedule::build(Algorithm::torus2d_both, req, ctx));
  }
  const SimResult a = model::simulate(m, all, 4);
  const SimResult b = simulate_collective(m, Algorithm::torus2d_both, req, DataType::f32);
  REQUIRE(a.error == "");
  CHECK(a.time_s == b.time_s);
  CHECK(a.link_bytes == b.link_bytes);

  using schedule::Kind;
  const SimModel two = make_model(Torus2D(2, 1), 80e9, 1e-6, 300e9);
  std::vector<schedule::Schedule> s(2);
  for (int r = 0; r < 2; ++r) {
    s[r].rank = r;
    s[r].nranks = 2;
    s[r].steps.push_back({Kind::recv, 1 - r, 0, 0, {}, {schedule::Buf::output, 0, 8}});
  }
  CHECK_THAT(model::simulate(two, s, 4).error, Catch::Contains("deadlock"));
  s[1].steps[0] = {Kind::send, 0, 0, 0, {schedule::Buf::input, 0, 4}, {}};
  CHECK_THAT(model::simulate(two, s, 4).error, Catch::Contains("size mismatch"));
}

TEST_CASE("sim: a channel's next transfer follows the last one once that is issued",
          "[simulator]") {
  // Two 8 MB sends on one channel, 10 us of hop latency: the second leaves as soon as the first
  // has (the engine over MPI starts it once the first has posted every segment), so the pair
  // takes 2·B/bw + latency, not 2·(B/bw + latency). On shared-memory endpoints a channel's
  // next step waits for the last one's end (the engine's rule there), which that model keeps.
  using schedule::Kind;
  const SimModel m = make_model(Torus2D(2, 1), 80e9, 10e-6, 300e9);
  const std::uint64_t n = 2u << 20;  // f32: 8 MiB
  std::vector<schedule::Schedule> s(2);
  for (int r = 0; r < 2; ++r) {
    s[r].rank = r;
    s[r].nranks = 2;
    for (std::uint32_t k = 0; k < 2; ++k)
      if (r == 0)
        s[r].steps.push_back({Kind::send, 1, 0, k, {schedule::Buf::input, k * n, n}, {}});
      else
        s[r].steps.push_back({Kind::recv, 0, 0, k, {}, {schedule::Buf::output, k * n, n}});
    schedule::derive_dependencies(s[r]);
  }
  const SimResult res = model::simulate(m, s, 4);
  REQUIRE(res.error == "");
  const double one = 4.0 * static_cast<double>(n) / 80e9;
  CHECK(res.time_s == Approx(2 * one + 10e-6).epsilon(0.001));
}

TEST_CASE("sim: schedules built on several threads simulate as when built in one part",
          "[simulator][scale]") {
  // From 512 ranks simulate_collective builds on every core, each thread's ranks in a part of
  // their own that the engine reads in place; simulate() takes one part.
  SimModel m = make_model(Torus2D(32, 16), 80e9, 1e-6, 300e9);
  m.symmetric = false;
  schedule::Spec req;
  req.count = 1 << 20;
  std::vector<schedule::Schedule> all;
  for (int r = 0; r < m.topology.chips(); ++r)
    all.push_back(schedule::build(Algorithm::torus2d_both, req, {r, m.topology, {}}));
  const SimResult one = model::simulate(m, all, 4);
  const SimResult parts = simulate_collective(m, Algorithm::torus2d_both, req, DataType::f32);
  REQUIRE(one.error == "");
  REQUIRE(parts.error == "");
  CHECK(one.time_s == parts.time_s);
  CHECK(one.transfers == parts.transfers);
  CHECK(one.link_bytes == parts.link_bytes);
  CHECK(one.link_busy_s == parts.link_busy_s);
}

TEST_CASE("sim: a timeline holds every rank's steps and changes nothing else", "[simulator]") {
  SimModel m = make_model(Torus2D(2, 2), 80e9, 1e-6, 300e9);
  m.symmetric = false;  // a timeline runs every rank
  schedule::Spec req;
  req.count = 1 << 18;
  std::vector<model::RankTimeline> timeline;
  const SimResult plain = simulate_collective(m, Algorithm::torus2d_both, req, DataType::f32);
  const SimResult traced =
      simulate_collective(m, Algorithm::torus2d_both, req, DataType::f32, {}, &timeline);
  REQUIRE(traced.error == "");
  CHECK(traced.time_s == plain.time_s);
  REQUIRE(traced.rank0_phases.size() == plain.rank0_phases.size());
  for (std::size_t i = 0; i < plain.rank0_phases.size(); ++i) {
    CHECK(traced.rank0_phases[i].phase == plain.rank0_phases[i].phase);
    CHECK(traced.rank0_phases[i].end_s == plain.rank0_phases[i].end_s);
  }
  REQUIRE(timeline.size() == 4);
  std::uint64_t steps = 0;
  double last_end = 0;
  for (int r = 0; r < 4; ++r) {
    const model::RankTimeline& t = timeline[static_cast<std::size_t>(r)];
    const schedule::Schedule s = schedule::build(Algorithm::torus2d_both, req, {r, m.topology, {}});
    CHECK(t.rank == r);
    REQUIRE(t.steps.size() == s.steps.size());
    for (std::size_t j = 0; j < s.steps.size(); ++j) {
      CHECK(t.steps[j].step == j);
      CHECK(t.steps[j].phase == s.steps[j].phase);
      CHECK(t.steps[j].peer == (schedule::is_local(s.steps[j].kind) ? -1 : s.steps[j].peer));
      CHECK(t.steps[j].start_us <= t.steps[j].end_us);
    }
    REQUIRE(t.calls.size() == 1);
    last_end = std::max(last_end, t.calls[0].end_us);
    steps += t.steps.size();
  }
  CHECK(last_end == Approx(traced.time_s * 1e6).epsilon(1e-9));  // the call ends with the last rank
  CHECK(steps == 2 * traced.transfers);
}

TEST_CASE("sim: a 128x32 torus2d all-reduce of 1 GiB completes", "[simulator][scale]") {
  SimModel m = make_model(Torus2D(128, 32, false, true), 80e9, 1e-6, 300e9);
  const std::uint64_t count = std::uint64_t{1} << 28, M = count * 4, N = 4096;
  const SimResult r = allreduce(m, Algorithm::torus2d, count);
  CHECK(r.time_s > 0);
  const std::uint64_t total =
      std::accumulate(r.chip_sent_bytes.begin(), r.chip_sent_bytes.end(), std::uint64_t{0});
  CHECK(total == 2 * (N - 1) * M);
  CHECK(r.max_hops == 1);  // torus neighbours only
}

TEST_CASE("sim: phases are not barriers, and a chain pipelines behind its receives",
          "[simulator]") {
  // Each rank receives in phase 0 and sends unrelated data in phase 1: as a dataflow both
  // transfers run at once (phase by phase, both ranks would wait in phase 0 for ever).
  using schedule::Kind;
  const SimModel two = make_model(Torus2D(2, 1), 10e9, 2e-6, 40e9);
  std::vector<schedule::Schedule> s(2);
  for (int r = 0; r < 2; ++r) {
    s[r].rank = r;
    s[r].nranks = 2;
    s[r].steps.push_back({Kind::recv, 1 - r, 0, 0, {}, {schedule::Buf::output, 0, 1024}});
    s[r].steps.push_back({Kind::send, 1 - r, 0, 1, {schedule::Buf::input, 0, 1024}, {}});
    schedule::derive_dependencies(s[r]);
  }
  const SimResult both = model::simulate(two, s, 4);
  REQUIRE(both.error == "");
  CHECK(both.time_s == Approx(step_time(two, 4096, false)).epsilon(0.01));

  // Broadcast down a ring of 8 from rank 0: the longer chain has 4 hops, and each forward
  // starts on its receive's first segment: 4 latencies + 3 segments + B/bw, not 4 * B/bw.
  const SimModel m = make_model(Torus2D(8, 1), 10e9, 2e-6, 40e9);
  schedule::Spec r;
  r.collective = Collective::broadcast;
  r.count = std::uint64_t{16} << 20;  // 64 MiB of f32
  const SimResult b = simulate_collective(m, Algorithm::ring, r, DataType::f32);
  REQUIRE(b.error == "");
  const double bytes = static_cast<double>(r.count) * 4, seg = static_cast<double>(m.segment_bytes);
  CHECK(b.time_s == Approx(4 * 2e-6 + 3 * seg / 10e9 + bytes / 10e9).epsilon(0.01));
}

TEST_CASE(
    "sim: the limit is the bandwidth bound, the diameter's latency, the reducer or the fewest "
    "ports",
    "[simulator]") {
  const SimModel pod = make_model(Torus2D(32, 32), 80e9, 1e-6, 300e9);
  const SimModel multipod = make_model(Torus2D(128, 32, false, true), 80e9, 1e-6, 300e9);
  CHECK(model::link_directions(pod.topology, 0) == 2048);
  CHECK(model::link_directions(multipod.topology, 0) == 2 * 127 * 32);
  CHECK(model::link_directions(multipod.topology, 1) == 2 * 32 * 128);
  CHECK(model::link_directions(Torus2D(2, 3), 0) == 2 * 3);  // one link between two chips
  CHECK(model::link_directions(Torus2D(1, 3), 0) == 0);
  const std::uint64_t mib16 = 16u << 20;
  // 2(p-1) n / (link directions x bandwidth): 105 us on the pod, the same on the multipod's
  // 16,320 link directions for 4096 chips.
  const model::SimLimit a = model::limit_of(pod, Collective::allreduce, mib16);
  CHECK(a.bandwidth_s == Approx(2.0 * 1023 * mib16 / (4096 * 80e9)));
  CHECK(a.bandwidth_s * 1e6 == Approx(104.7).epsilon(0.001));
  CHECK(a.latency_s == Approx(32e-6));  // 16 + 16 hops
  const model::SimLimit b = model::limit_of(multipod, Collective::allreduce, mib16);
  CHECK(b.bandwidth_s == Approx(2.0 * 4095 * mib16 / (16320 * 80e9)));
  CHECK(b.latency_s == Approx(143e-6));  // 127 along the line + 16 round the ring
  // The floor alone is not reachable: the corner's data still leaves through 3 ports first.
  CHECK(b.limit_s() == b.distance_s);
  CHECK(b.distance_s > b.latency_s + b.port_s * 0.99);
  // Reduce-scatter and all-gather: half the all-reduce's crossings, the same diameter.
  for (Collective c : {Collective::reduce_scatter, Collective::allgather}) {
    CHECK(model::limit_of(pod, c, mib16).bandwidth_s == Approx(a.bandwidth_s / 2));
    CHECK(model::limit_of(pod, c, mib16).latency_s == Approx(a.latency_s));
  }
  // The reduction bound: (p-1)/p of the vector through each chip's reducer, for the collectives
  // that reduce; an all-reduce's last sum then crosses the radius (16 + 16 hops of 1 us on the
  // pod). On the pod it is under the all-reduce's bandwidth bound and over the
  // reduce-scatter's (four 80 GB/s links feed a 300 GB/s reducer).
  CHECK(a.reduction_s == Approx(1023.0 / 1024 * mib16 / 300e9 + 32e-6));
  CHECK(a.limit_s() == a.bandwidth_s);
  const model::SimLimit rs = model::limit_of(pod, Collective::reduce_scatter, mib16);
  CHECK(rs.reduction_s == Approx(1023.0 / 1024 * mib16 / 300e9));
  CHECK(rs.limit_s() == rs.reduction_s);
  // Where the reducer binds the all-reduce (100 GB/s links, six a chip, as v5p's), the radius
  // counts: 16x16x24 has 8 + 8 + 12 hops from any chip to the farthest; a line's radius is
  // from its middle (8x5 as lines: 4 + 2).
  SimModel v5p = pod;
  v5p.topology = Torus::parse("16x16x24");
  v5p.link_bytes_per_s.fill(100e9);
  const model::SimLimit v = model::limit_of(v5p, Collective::allreduce, mib16);
  CHECK(v.reduction_s == Approx(6143.0 / 6144 * mib16 / 300e9 + 28e-6));
  CHECK(v.limit_s() == v.reduction_s);
  SimModel lines = pod;
  lines.topology = Torus2D(8, 5, false, false);
  CHECK(model::limit_of(lines, Collective::allreduce, mib16).reduction_s ==
        Approx(39.0 / 40 * mib16 / 300e9 + 6e-6));
  CHECK(model::limit_of(pod, Collective::allgather, mib16).reduction_s == 0);
  CHECK(model::limit_of(pod, Collective::broadcast, mib16).reduction_s == 0);
  // Slower Y links lower the capacity; one chip has no limit.
  SimModel slow_y = pod;
  slow_y.link_bytes_per_s[1] = 40e9;
  CHECK(model::limit_of(slow_y, Collective::allreduce, mib16).bandwidth_s ==
        Approx(2.0 * 1023 * mib16 / (2048 * 80e9 + 2048 * 40e9)));
  CHECK(model::limit_of(make_model(Torus2D(1, 1), 80e9, 1e-6, 300e9), Collective::allreduce, mib16)
            .limit_s() == 0);
  // The port bound: on a torus every chip has four link directions and it meets the bandwidth
  // bound (the all-gather's exactly); the multipod's line ends have three, so the chips there
  // bound the all-gather, reduce-scatter and broadcast 4/3 above the bandwidth bound's
  // 16,320 / 4096 ports a chip.
  CHECK(model::fewest_ports(pod.topology, 0) == 2);
  CHECK(model::fewest_ports(multipod.topology, 0) == 1);
  CHECK(model::fewest_ports(multipod.topology, 1) == 2);
  CHECK(model::fewest_ports(Torus2D(2, 3), 0) == 1);  // one link, wraparound or not
  CHECK(model::fewest_ports(Torus2D(1, 3), 0) == 0);
  const model::SimLimit ag_pod = model::limit_of(pod, Collective::allgather, mib16);
  CHECK(ag_pod.port_s == Approx(1023.0 / 1024 * mib16 / (4 * 80e9)));
  CHECK(ag_pod.port_s == Approx(ag_pod.bandwidth_s));
  CHECK(a.port_s == Approx(mib16 / (4 * 80e9)));  // one value of every element, under the bound
  CHECK(a.port_s < a.bandwidth_s);
  for (Collective c : {Collective::reduce_scatter, Collective::allgather}) {
    const model::SimLimit l = model::limit_of(multipod, c, 1u << 30);
    CHECK(l.port_s == Approx(4095.0 / 4096 * (1u << 30) / (3 * 80e9)));
    CHECK(l.port_s / l.bandwidth_s == Approx(16320.0 / 4096 / 3));
    CHECK(std::max({l.bandwidth_s, l.latency_s, l.reduction_s, l.port_s}) == l.port_s);
    CHECK(l.limit_s() == l.distance_s);  // the ports' time and a last block's few hops
  }
  CHECK(model::limit_of(multipod, Collective::broadcast, mib16).port_s ==
        Approx(mib16 / (3 * 80e9)));
  CHECK(model::limit_of(multipod, Collective::allreduce, 1u << 30).limit_s() ==
        model::limit_of(multipod, Collective::allreduce, 1u << 30).bandwidth_s);
  // No schedule beats it: every algorithm on a small torus stays at or under the limit.
  const SimModel small = make_model(Torus2D(4, 4), 10e9, 1e-6, 300e9);
  for (Algorithm al : {Algorithm::torus2d_both, Algorithm::swing, Algorithm::swing_latency,
                       Algorithm::rabenseifner})
    for (std::uint64_t count : {256u, 1u << 20}) {
      const SimResult r = allreduce(small, al, count);
      INFO(to_string(al) << " " << count);
      CHECK(model::limit_of(small, Collective::allreduce, count * 4).limit_s() <= r.time_s);
    }
  // Nor where the port bound binds: with X a line of 8 the end chips have three ports.
  const SimModel line = make_model(Torus2D(8, 4, false, true), 10e9, 1e-6, 3000e9);
  for (Collective c : {Collective::reduce_scatter, Collective::allgather})
    for (Algorithm al : {Algorithm::torus2d, Algorithm::torus2d_both}) {
      schedule::Spec r;
      r.collective = c;
      r.count = 1u << 22;
      const SimResult res = simulate_collective(line, al, r, DataType::f32);
      REQUIRE(res.error == "");
      const model::SimLimit l = model::limit_of(line, c, r.count * 4);
      INFO(toroid::to_string(c) << " " << to_string(al) << ": " << res.time_s << " s, ports "
                                << l.port_s << " s");
      CHECK(std::max({l.bandwidth_s, l.latency_s, l.reduction_s, l.port_s}) == l.port_s);
      CHECK(l.limit_s() <= res.time_s);
    }
}

TEST_CASE("sim: the distance bound: a chip's ports and how far its data must still go",
          "[simulator]") {
  const SimModel pod = make_model(Torus2D(32, 32), 80e9, 1e-6, 300e9);
  const SimModel multipod = make_model(Torus2D(128, 32, false, true), 80e9, 1e-6, 300e9);
  const double mib16 = 16u << 20;
  // The multipod's corner: 3 ports, 127 + 16 hops from the opposite corner.
  const model::SimLimit a = model::limit_of(multipod, Collective::allreduce, 16u << 20);
  CHECK(a.distance_s == Approx(mib16 / (3 * 80e9) + 143e-6));
  CHECK(a.distance_s * 1e6 == Approx(212.9).epsilon(0.001));
  CHECK(a.limit_s() == a.distance_s);
  // On the pod every chip is alike: 16 + 16 hops and four ports.
  CHECK(model::limit_of(pod, Collective::allreduce, 16u << 20).distance_s ==
        Approx(mib16 / (4 * 80e9) + 32e-6));
  // Reduce-scatter and all-gather: the farthest blocks first, so only the block sent last pays
  // the ports' whole time; at 1 KiB the distance dominates, at 1 GiB the ports.
  for (Collective c : {Collective::reduce_scatter, Collective::allgather}) {
    const double small = model::limit_of(multipod, c, 1024).distance_s;
    CHECK(small >= 143e-6);
    CHECK(small < 143e-6 + 1024.0 / (3 * 80e9) + 2e-6);
    const model::SimLimit big = model::limit_of(multipod, c, 1u << 30);
    CHECK(big.distance_s >= big.port_s);
    CHECK(big.distance_s < big.port_s + 143e-6);
  }
  // Jackson's rule by hand on a line of 4 (1 us hops, 1 byte/s ports at the ends, 2 inside):
  // chip 0 sends blocks of 1 byte to 3, 2, 1 hops: max(1 + 3, 2 + 2, 3 + 1) = 4 s;
  // chip 1 (2 ports): blocks to 2, 1, 1 hops: max(0.5 + 2, 1 + 1, 1.5 + 1) = 2.5 s.
  const std::vector<model::DimensionLinks> line4{{4, false, 1.0, 1.0}};
  CHECK(model::distance_bound(line4, Collective::reduce_scatter, 4.0) == Approx(4.0));
  CHECK(model::distance_bound(line4, Collective::allreduce, 4.0) == Approx(3 + 4.0));
  CHECK(model::distance_bound(line4, Collective::broadcast, 4.0) == Approx(2 + 4.0 / 2));
  CHECK(model::distance_bound({{1, true, 1e-6, 80e9}}, Collective::allreduce, 1e6) == 0);
  // Any number of dimensions: a 4x4x4 torus, six ports, 2 + 2 + 2 hops.
  const std::vector<model::DimensionLinks> cube(3, {4, true, 1e-6, 50e9});
  CHECK(model::distance_bound(cube, Collective::allreduce, mib16) ==
        Approx(mib16 / (6 * 50e9) + 6e-6));
}

TEST_CASE("sim: no algorithm beats the limit, every collective, shape and size", "[simulator]") {
  // Torus, mesh and mixed, even and odd, square and not; sizes from the latency floor's side to
  // the ports' side; a slow reducer and a fast one.
  // Three dimensions and more too: a cube as a torus and a mesh, mixed, twisted, 4D.
  const Torus shapes[] = {Torus2D(4, 4),
                          Torus2D(4, 4, false, false),
                          Torus2D(8, 2, false, true),
                          Torus2D(3, 5),
                          Torus2D(6, 3, true, false),
                          Torus2D(5, 1, false, false),
                          Torus2D(2, 2, false, false),
                          Torus::parse("4x4x4"),
                          Torus::parse("4x4x4:wrap=none"),
                          Torus::parse("2x3x4:wrap=xz"),
                          Torus::parse("2x2x4:twist"),
                          Torus::parse("2x2x2x3")};
  std::uint64_t rows = 0, rows_3d = 0;
  // Under the sanitizers one reducer: its speed changes the model's numbers, not the code run.
  const std::vector<double> reducers =
      toroid_test::kSanitized ? std::vector<double>{20e9} : std::vector<double>{20e9, 3000e9};
  for (const Torus& t : shapes)
    for (double reduce : reducers) {
      const SimModel m = make_model(t, 10e9, 1e-6, reduce, 64 * 1024);
      for (Algorithm al : all_algorithms) {
        if (al == Algorithm::automatic || al == Algorithm::mpi) continue;
        for (Collective c : {Collective::allreduce, Collective::reduce_scatter,
                             Collective::allgather, Collective::broadcast}) {
          if (!implements(al, c)) continue;
          for (std::uint64_t count : {1u, 7u, 1000u, 65537u, 1u << 20}) {
            schedule::Spec r;
            r.collective = c;
            r.count = count;
            SimResult res;
            try {
              res = simulate_collective(m, al, r, DataType::f32);
            } catch (const toroid::InvalidArgument&) {
              continue;  // a shape the algorithm does not take (swing on three dimensions)
            }
            REQUIRE(res.error == "");
            const model::SimLimit l = model::limit_of(m, c, count * 4);
            INFO(t.to_string() << " " << to_string(al) << " " << toroid::to_string(c) << " "
                               << count << ": " << res.time_s << " s against bandwidth "
                               << l.bandwidth_s << ", floor " << l.latency_s << ", reduce "
                               << l.reduction_s << ", ports " << l.port_s << ", distance "
                               << l.distance_s);
            CHECK(l.limit_s() <= res.time_s * (1 + 1e-9));
            ++rows;
            rows_3d += t.dimensions() > 2;
          }
        }
      }
    }
  CHECK(rows > 250 * reducers.size());
  CHECK(rows_3d > 150 * reducers.size());
}

TEST_CASE("sim: torus2d_both's reduce-scatter and all-gather use both dimensions at once",
          "[simulator]") {
  // 16x16 torus, 64 MiB: torus2d goes one dimension at a time, the both form runs one part of
  // every block X-first and one Y-first at once. With a reducer fast enough not to bound it, torus2d stays
  // under half the limit (0.46 when written) and the both form well above (0.71).
  const SimModel m = make_model(Torus2D(16, 16), 80e9, 1e-6, 3000e9);
  for (Collective c : {Collective::reduce_scatter, Collective::allgather}) {
    schedule::Spec r;
    r.collective = c;
    r.count = 16u << 20;
    const SimResult one = simulate_collective(m, Algorithm::torus2d, r, DataType::f32);
    const SimResult both = simulate_collective(m, Algorithm::torus2d_both, r, DataType::f32);
    REQUIRE(one.error == "");
    REQUIRE(both.error == "");
    const double limit = model::limit_of(m, c, r.count * 4).limit_s();
    INFO(toroid::to_string(c) << ": torus2d " << one.time_s << " s, torus2d_both " << both.time_s
                              << " s, limit " << limit << " s");
    CHECK(limit / one.time_s < 0.5);
    CHECK(limit / both.time_s > 0.65);
  }
}

TEST_CASE("sim: a collective along axes costs what its sub-torus alone costs, on its own links",
          "[simulator][axes]") {
  // 4x2x2 along x and z: the two xz-planes run at once on links no other plane uses, so the
  // time is the 4x2 shape's with x's and z's links, and no y link carries a byte.
  SimModel whole = make_model(Torus(std::vector<int>{4, 2, 2}), 50e9, 1e-6, 300e9);
  whole.link_bytes_per_s = {50e9, 10e9, 25e9, 1, 1, 1};
  SimModel plane = make_model(Torus(std::vector<int>{4, 2}), 50e9, 1e-6, 300e9);
  plane.link_bytes_per_s = {50e9, 25e9, 1, 1, 1, 1};
  for (Algorithm a : {Algorithm::torus2d, Algorithm::torus2d_both, Algorithm::bidir_ring})
    for (Collective c : {Collective::allreduce, Collective::reduce_scatter}) {
      schedule::Spec r;
      r.collective = c;
      r.count = 1u << 20;
      const SimResult alone = simulate_collective(plane, a, r, DataType::f32);
      r.axes = Axes{Axis::x, Axis::z};
      const SimResult along = simulate_collective(whole, a, r, DataType::f32);
      REQUIRE(alone.error == "");
      REQUIRE(along.error == "");
      INFO(to_string(a) << " " << toroid::to_string(c));
      CHECK(along.time_s == Approx(alone.time_s).epsilon(1e-9));
      CHECK(along.busbw_gbps == Approx(alone.busbw_gbps).epsilon(1e-9));
      for (int chip = 0; chip < 16; ++chip)
        for (int dir : {1, -1})
          CHECK(along.link_bytes[static_cast<std::size_t>(link_id(whole.topology, chip, 1, dir))] ==
                0);
    }
}

TEST_CASE("sim: torus2d_both's all-gather on 8x8 reaches 0.65 of the limit at 256 MiB",
          "[simulator]") {
  // Every block is received straight into its places in the output (a part's layout, gathered
  // receives) and forwarded from there, so no copy on the reducer trails the links. An earlier
  // 2D form copied columns out of scratch: whole columns left the last copies after the links
  // had finished (8x8, 256 MiB, 300 GB/s reducer: 0.61 of the limit), halves 0.67.
  const SimModel m = make_model(Torus2D(8, 8), 80e9, 1e-6, 300e9);
  schedule::Spec r;
  r.collective = Collective::allgather;
  r.count = 64u << 20;
  const SimResult both = simulate_collective(m, Algorithm::torus2d_both, r, DataType::f32);
  REQUIRE(both.error == "");
  const double limit = model::limit_of(m, Collective::allgather, r.count * 4).limit_s();
  INFO("torus2d_both " << both.time_s << " s, limit " << limit << " s");
  CHECK(limit / both.time_s > 0.65);
}

TEST_CASE("sim: a transfer that joins a busy link slows the one already on it", "[simulator]") {
  // Rank 0 sends a large block (400 µs alone) and, 200 µs later (after a local copy), a small
  // one (40 µs alone) over the same link direction. Shared, both move at half rate while both
  // are on it, so the link carries 440 µs of bytes in 440 µs: the large one ends at 440 µs, not
  // at the 400 µs it would take alone (then the link would have carried more than it can).
  using schedule::Buf;
  using schedule::Kind;
  const SimModel m = make_model(Torus2D(2, 1), 10e9, 1e-6, 40e9);
  const std::uint32_t large = 1'000'000, small = 100'000, delay = 2'000'000;  // f32 elements
  const auto run = [&](bool with_small) {
    std::vector<schedule::Schedule> s(2);
    for (int r = 0; r < 2; ++r) {
      s[r].rank = r;
      s[r].nranks = 2;
    }
    s[0].steps.push_back({Kind::send, 1, 0, 0, {Buf::input, 0, large}, {}});
    s[1].steps.push_back({Kind::recv, 0, 0, 0, {}, {Buf::output, 0, large}});
    if (with_small) {
      s[0].steps.push_back(
          {Kind::copy, -1, 0, 0, {Buf::input, 0, delay}, {Buf::scratch, 0, delay}});
      s[0].steps.push_back({Kind::send, 1, 1, 1, {Buf::scratch, 0, small}, {}});
      s[1].steps.push_back({Kind::recv, 0, 1, 0, {}, {Buf::output, large, small}});
    }
    for (auto& sched : s) schedule::derive_dependencies(sched);
    const SimResult r = model::simulate(m, s, 4);
    REQUIRE(r.error == "");
    return r;
  };
  CHECK(run(false).time_s == Approx(400e-6 + 1e-6).epsilon(1e-9));
  const SimResult both = run(true);
  CHECK(both.time_s == Approx(440e-6 + 1e-6).epsilon(1e-9));
  const int link = link_id(0, LinkDir::plus_x);
  CHECK(both.link_busy_s[link] == Approx(440e-6).epsilon(1e-9));
  CHECK(both.link_busy_s[link] <= both.time_s);
}

TEST_CASE("sim: reductions in flight share the chip's reducer", "[simulator]") {
  // Ring of 3: rank 1 sends a large block to rank 0 and rank 2 a small one, 200 us later (after
  // a local copy), over the other link; rank 0 adds both. The reducer (5 GB/s) needs 800 us for
  // the large one and 80 us for the small one. Shared like the engine's progress loop, which
  // reduces every transfer's segments as they land, the small one takes half the reducer from
  // 200 us and is done at 360 us; taken in turn (the model until 2026-12-05: each reduction
  // reserved whole when its transfer began) it waited for the large one's, to 880 us. The
  // reducer's work is the same either way: the call ends at 880 us.
  using schedule::Buf;
  using schedule::Kind;
  const SimModel m = make_model(Torus2D(3, 1), 10e9, 1e-6, 5e9);
  const std::uint32_t large = 1'000'000, small = 100'000, delay = 250'000;  // f32 elements
  std::vector<schedule::Schedule> s(3);
  for (int r = 0; r < 3; ++r) {
    s[r].rank = r;
    s[r].nranks = 3;
  }
  s[0].steps.push_back(
      {Kind::recv_reduce, 1, 0, 0, {Buf::output, 0, large}, {Buf::output, 0, large}});
  s[0].steps.push_back(
      {Kind::recv_reduce, 2, 0, 1, {Buf::output, large, small}, {Buf::output, large, small}});
  s[1].steps.push_back({Kind::send, 0, 0, 0, {Buf::input, 0, large}, {}});
  s[2].steps.push_back({Kind::copy, -1, 0, 0, {Buf::input, 0, delay}, {Buf::scratch, 0, delay}});
  s[2].steps.push_back({Kind::send, 0, 0, 1, {Buf::scratch, 0, small}, {}});
  for (auto& sched : s) schedule::derive_dependencies(sched);
  const SimResult r = model::simulate(m, s, 4);
  REQUIRE(r.error == "");
  REQUIRE(r.rank0_phases.size() == 2);
  CHECK(r.rank0_phases[1].end_s == Approx(360e-6).epsilon(0.01));
  CHECK(r.rank0_phases[0].end_s == Approx(880e-6).epsilon(0.01));
  CHECK(r.time_s == Approx(880e-6).epsilon(0.01));
}

TEST_CASE("sim: torus2d_both weighs its parts' steps against their link time", "[simulator]") {
  // 32x8 with X a line: the X-first part takes 2*31 + 2*7 steps, the Y-first part 2*7 + 32 (its
  // middle on the line is one pipeline). At 64 KiB link time is small against those 30 hops'
  // difference, so with the hop latency known the whole vector goes Y-first; shared by link
  // rates alone (a context without hop latency, as before) 0.28 of it goes X-first.
  const SimModel m = make_model(Torus2D(32, 8, false, true), 80e9, 1e-6, 300e9, 57344);
  schedule::Spec req;
  req.count = 16384;
  std::vector<schedule::Schedule> by_rates;
  for (int r = 0; r < m.topology.chips(); ++r) {
    schedule::Context ctx{r, m.topology, {}};
    ctx.link_rate[0] = ctx.link_rate[1] = 80e9;
    by_rates.push_back(schedule::build(Algorithm::torus2d_both, req, ctx));
  }
  const SimResult rates = model::simulate(m, by_rates, 4);
  const SimResult weighed = allreduce(m, Algorithm::torus2d_both, req.count);
  REQUIRE(rates.error == "");
  CHECK(weighed.time_s < 0.8 * rates.time_s);
  schedule::Context ctx = model::schedule_context(m, {});
  req.elem_bytes = 4;
  for (int r : {0, 17, 255}) {
    ctx.rank = r;
    const schedule::Schedule s = schedule::build(Algorithm::torus2d_both, req, ctx);
    CHECK(std::none_of(s.steps.begin(), s.steps.end(),
                       [](const schedule::Step& st) { return st.peer >= 0 && st.tag < 4; }));
    // 1 GiB is bandwidth-bound: the shares by link rates, within a few elements.
    schedule::Spec big = req;
    big.count = std::uint64_t{1} << 28;
    schedule::Context rates_only{r, m.topology, {}};
    rates_only.link_rate[0] = rates_only.link_rate[1] = 80e9;
    const auto xfirst = [](const schedule::Schedule& x) {
      std::uint64_t n = 0;
      for (const schedule::Step& st : x.steps)
        if (st.kind == schedule::Kind::send && st.tag < 4) n += st.src.count;
      return static_cast<double>(n);
    };
    const double a = xfirst(schedule::build(Algorithm::torus2d_both, big, ctx));
    const double b = xfirst(schedule::build(Algorithm::torus2d_both, big, rates_only));
    CHECK(a > 0.9 * b);
    CHECK(a <= b);
  }
}
