// `auto`: the cost model's choices for given link parameters, the override rules, the tuning file.
#include <catch2/catch.hpp>

#include "model/selector.hpp"
#include "schedule/build.hpp"
#include "toroid/error.hpp"

using namespace toroid;
using model::LinkClass;
using model::LinkParams;
using model::Selector;
using model::SelectorInputs;

namespace {

SelectorInputs inputs(Torus t, std::vector<int> nodes = {}) {
  SelectorInputs in;
  in.topology = t;
  in.node_of_rank = std::move(nodes);
  return in;
}

}  // namespace

TEST_CASE("selector: few rounds for small messages, bandwidth algorithms for large ones",
          "[auto]") {
  for (const Torus2D& t : {Torus2D(2, 1), Torus2D(2, 2), Torus2D(4, 2), Torus2D(8, 1)}) {
    Selector s(inputs(t));
    INFO(t.to_string() << ": " << s.describe(Collective::allreduce));
    CHECK(s.choose(Collective::allreduce, 8) == Algorithm::recursive_doubling);
    const Algorithm big = s.choose(Collective::allreduce, 64u << 20);
    CHECK(big != Algorithm::recursive_doubling);
    // The choice is the least predicted time of the class's middle size.
    const model::Choice& c = s.choice(Collective::allreduce, Selector::size_class(64u << 20));
    REQUIRE(c.modeled);
    for (auto [a, time] : c.predicted)
      CHECK(time >= *s.predict(Collective::allreduce, big,
                               Selector::class_middle(Selector::size_class(64u << 20))));
  }
}

TEST_CASE("selector: two ranks all-reduce by one exchange below 128 KiB, the model above",
          "[auto]") {
  Selector s(inputs(Torus2D(2, 1)));
  CHECK(s.choice(Collective::allreduce, Selector::size_class(200u << 10)).modeled);
  for (std::uint64_t bytes :
       {std::uint64_t{8}, std::uint64_t{16} << 10, std::uint64_t{100} << 10}) {
    INFO(bytes);
    CHECK(s.choose(Collective::allreduce, bytes) == Algorithm::recursive_doubling);
    CHECK(s.choice(Collective::allreduce, Selector::size_class(bytes)).exchange);
  }
  CHECK(s.choice(Collective::allreduce, Selector::size_class(4u << 20)).modeled);
  CHECK_FALSE(s.choice(Collective::allgather, Selector::size_class(16u << 10)).exchange);
  CHECK_FALSE(Selector(inputs(Torus2D(4, 1))).choice(Collective::allreduce, 10).exchange);
}

TEST_CASE("selector: two ranks on one node never run bidir_ring, its two lanes to the one peer",
          "[auto]") {
  Selector s(inputs(Torus2D(2, 1)));
  for (Collective c : {Collective::allreduce, Collective::reduce_scatter, Collective::allgather})
    for (int k = 0; k <= Selector::size_class(64u << 20); ++k) {
      INFO(to_string(c) << " class " << k);
      const model::Choice& ch = s.choice(c, k);
      CHECK(ch.algorithm != Algorithm::bidir_ring);
      for (auto [a, time] : ch.predicted) {
        CHECK(a != Algorithm::bidir_ring);  // nor the torus algorithms, bidir_ring on 2 ranks
        CHECK(a != Algorithm::torus2d);
        CHECK(a != Algorithm::torus2d_both);
      }
    }
  // The 8-128 KiB reduce-scatter, where the model had put it first: ring.
  CHECK(s.choose(Collective::reduce_scatter, 8u << 10) == Algorithm::ring);
  CHECK(s.choose(Collective::reduce_scatter, 100u << 10) == Algorithm::ring);
  // Two ranks on two nodes, and more ranks on one, still price it.
  CHECK(model::bidir_ring_candidate(2, false));
  CHECK(model::bidir_ring_candidate(4, true));
  bool priced = false;
  Selector four(inputs(Torus2D(4, 1)));  // named: choice() returns a reference into it
  for (auto [a, time] : four.choice(Collective::allreduce, 24).predicted)
    priced |= a == Algorithm::bidir_ring;
  CHECK(priced);
}

TEST_CASE("selector: on one node two flows a rank are priced as the rank's memory carries them",
          "[auto]") {
  // bidir_ring sends to both neighbours at once; on shared memory the sender writes slots the
  // receiver reads later, so neither port waits for the other. Measured on 16 cores, 4 ranks,
  // 8 MiB: bidir_ring 2.90 ms, ring 2.89 ms; the model once said 1.9x.
  for (const Torus2D& t : {Torus2D(4, 1), Torus2D(8, 1), Torus2D(2, 2)}) {
    Selector s(inputs(t));
    for (std::uint64_t bytes : {std::uint64_t{1} << 20, std::uint64_t{8} << 20}) {
      const double ring = *s.predict(Collective::allreduce, Algorithm::ring, bytes);
      const double both = *s.predict(Collective::allreduce, Algorithm::bidir_ring, bytes);
      INFO(t.to_string() << " " << bytes << ": ring " << ring << " bidir_ring " << both);
      CHECK(both < 1.15 * ring);
    }
  }
}

TEST_CASE(
    "selector: a slow network between nodes makes a node-aware algorithm win at 2 nodes x 4 "
    "ranks") {
  // On an 8x1 shape the rings cross between the nodes with the whole vector; hierarchical
  // crosses with a quarter of it.
  SelectorInputs in = inputs(Torus2D(8, 1), {0, 0, 0, 0, 1, 1, 1, 1});
  in.tuning[LinkClass::network] = LinkParams{50e-6, 0.1e9};  // 100 MB/s, 50 us
  Selector s(in);
  INFO(s.describe(Collective::allreduce));
  CHECK(s.choose(Collective::allreduce, 4u << 20) == Algorithm::hierarchical);
  // The same shape on one node never picks hierarchical for large vectors.
  Selector one(inputs(Torus2D(8, 1)));
  CHECK(one.choose(Collective::allreduce, 4u << 20) != Algorithm::hierarchical);
  // On 4x2 with a node per row, torus2d's X rings stay inside the nodes and only a quarter of
  // the vector crosses, as with hierarchical: either of the two is right, a plain ring is not.
  SelectorInputs rows = inputs(Torus2D(4, 2), {0, 0, 0, 0, 1, 1, 1, 1});
  rows.tuning[LinkClass::network] = LinkParams{50e-6, 0.1e9};
  Selector r(rows);
  const Algorithm a = r.choose(Collective::allreduce, 4u << 20);
  CHECK((a == Algorithm::hierarchical || a == Algorithm::torus2d || a == Algorithm::torus2d_both));
}

TEST_CASE("selector: the latency of a link moves the crossover to larger sizes", "[auto]") {
  SelectorInputs fast = inputs(Torus2D(4, 1)), slow = inputs(Torus2D(4, 1));
  slow.tuning[LinkClass::shm] = LinkParams{200e-6, 5e9};
  Selector f(fast), s(slow);
  // Find the first class where each leaves recursive doubling.
  auto leave = [](Selector& sel) {
    for (int k = 1; k < 40; ++k)
      if (sel.choice(Collective::allreduce, k).algorithm != Algorithm::recursive_doubling) return k;
    return 40;
  };
  CHECK(leave(s) > leave(f));
}

TEST_CASE("selector: every collective gets an algorithm that implements it", "[auto]") {
  Selector s(inputs(Torus2D(2, 2)));
  for (Collective c : {Collective::allreduce, Collective::reduce_scatter, Collective::allgather,
                       Collective::broadcast})
    for (std::uint64_t b : {0ull, 8ull, 4096ull, 1ull << 20, 1ull << 26}) {
      INFO(to_string(c) << " " << b);
      CHECK(implements(s.choose(c, b), c));
    }
}

TEST_CASE("selector: the description agrees with the choice of every class", "[auto]") {
  Selector s(inputs(Torus2D(2, 2)));
  const std::string text = s.describe(Collective::allreduce);
  INFO(text);
  for (int k = 0; k <= 31; ++k)
    CHECK(text.find(std::string(to_string(s.choice(Collective::allreduce, k).algorithm))) !=
          std::string::npos);
}

TEST_CASE("selector: rules come first, sizes they do not cover are the model's", "[auto]") {
  SelectorInputs in = inputs(Torus2D(2, 2));
  in.rules = model::parse_algorithm_rules("allreduce:0-64K=ring,1M-inf=mpi");
  Selector s(in);
  CHECK(s.choose(Collective::allreduce, 8) == Algorithm::ring);
  CHECK(s.choose(Collective::allreduce, 64 * 1024 - 1) == Algorithm::ring);
  CHECK(s.choose(Collective::allreduce, 8u << 20) == Algorithm::mpi);
  CHECK(s.choice(Collective::allreduce, Selector::size_class(256 * 1024)).rule == nullptr);
  CHECK(s.choice(Collective::allreduce, Selector::size_class(256 * 1024)).modeled);
  CHECK(s.choose(Collective::allgather, 8) != Algorithm::mpi);
}

TEST_CASE("selector: a tuning without a link class the communicator uses is refused", "[auto]") {
  SelectorInputs in = inputs(Torus2D(2, 2), {0, 0, 1, 1});
  in.tuning[LinkClass::network].reset();
  in.tuning.source = "one-node.txt";
  CHECK_THROWS_WITH(Selector(in), Catch::Contains("one-node.txt has no network link parameters"));
  in.node_of_rank = {0, 0, 0, 0};
  CHECK_NOTHROW(Selector(in));
}

TEST_CASE("selector: too many ranks to simulate: the fixed rule, said so", "[auto]") {
  Selector s(inputs(Torus2D(32, 16)));
  const model::Choice& c = s.choice(Collective::allreduce, Selector::size_class(8u << 20));
  CHECK_FALSE(c.modeled);
  CHECK(c.algorithm == model::fixed_rule(Collective::allreduce,
                                         Selector::class_middle(Selector::size_class(8u << 20)),
                                         Torus2D(32, 16)));
}

TEST_CASE("selector: size classes", "[auto]") {
  CHECK(Selector::size_class(0) == 0);
  CHECK(Selector::size_class(1) == 1);
  CHECK(Selector::size_class(4096) == 13);
  CHECK(Selector::class_low(13) == 4096);
  CHECK(Selector::class_middle(13) == 6144);
  CHECK(Selector::size_class(8191) == 13);
}

TEST_CASE("algorithm rules: parsed, and each bad part named", "[auto]") {
  const auto r = model::parse_algorithm_rules(
      "allreduce:0-64K=recursive_doubling,64K-inf=ring;allgather:0-1M=bidir_ring");
  REQUIRE(r.size() == 3);
  CHECK(r[0].high == 65536);
  CHECK(r[1].high == UINT64_MAX);
  CHECK(r[2].collective == Collective::allgather);
  CHECK(model::find_rule(r, Collective::allreduce, 65535)->algorithm ==
        Algorithm::recursive_doubling);
  CHECK(model::find_rule(r, Collective::allreduce, 65536)->algorithm == Algorithm::ring);
  CHECK(model::find_rule(r, Collective::allgather, 1u << 20) == nullptr);
  using Catch::Contains;
  CHECK_THROWS_WITH(model::parse_algorithm_rules("allreduse:0-inf=ring"),
                    Contains("unknown collective 'allreduse'"));
  CHECK_THROWS_WITH(model::parse_algorithm_rules("allreduce:0-inf=rong"),
                    Contains("'allreduce:0-inf=rong'"));
  CHECK_THROWS_WITH(model::parse_algorithm_rules("allreduce:64K=ring"),
                    Contains("not 'low-high=algorithm'"));
  CHECK_THROWS_WITH(model::parse_algorithm_rules("allreduce:64K-1K=ring"),
                    Contains("the range is empty"));
  CHECK_THROWS_WITH(model::parse_algorithm_rules("allreduce:0-1x=ring"), Contains("high end"));
  CHECK_THROWS_WITH(model::parse_algorithm_rules("allgather:0-inf=rabenseifner"),
                    Contains("rabenseifner does not implement allgather"));
  CHECK_THROWS_WITH(model::parse_algorithm_rules("allreduce:0-1M=ring,512K-inf=ring"),
                    Contains("overlaps 'allreduce:0-1M=ring'"));
  CHECK_THROWS_WITH(model::parse_algorithm_rules("allreduce:0-inf=auto"),
                    Contains("a rule names a fixed algorithm"));
  CHECK_THROWS_WITH(model::parse_algorithm_rules(";"), Contains("has no rules"));
  CHECK(model::is_rule_list("allreduce:0-inf=ring"));
  CHECK_FALSE(model::is_rule_list("ring"));
}

TEST_CASE("tuning file: read back what is written; malformed lines named", "[auto]") {
  model::Tuning t = model::default_tuning();
  t[LinkClass::network].reset();
  const model::Tuning back =
      model::parse_tuning(model::format_tuning(t, "measured here\nsecond line"), "f.txt");
  CHECK_FALSE(back[LinkClass::network]);
  REQUIRE(back[LinkClass::shm]);
  CHECK(back[LinkClass::shm]->alpha_s == Approx(t[LinkClass::shm]->alpha_s).epsilon(1e-3));
  CHECK(back[LinkClass::shm]->bytes_per_s == Approx(t[LinkClass::shm]->bytes_per_s).epsilon(1e-3));
  CHECK(back.reduce_bytes_per_s == Approx(t.reduce_bytes_per_s).epsilon(1e-3));
  CHECK(back.source == "f.txt");
  using Catch::Contains;
  CHECK_THROWS_WITH(model::parse_tuning("", "f"), Contains("f:0: empty"));
  CHECK_THROWS_WITH(model::parse_tuning("hello\n", "f"),
                    Contains("f:1: 'hello' is not the header"));
  CHECK_THROWS_WITH(model::parse_tuning("toroid-tuning 1\nshm.alpha_us 3\n", "f"),
                    Contains("f:2: 'shm.alpha_us 3' is not 'key = value'"));
  CHECK_THROWS_WITH(model::parse_tuning("toroid-tuning 1\nshm.alpha_us = x\n", "f"),
                    Contains("f:2: shm.alpha_us: 'x' is not a number"));
  CHECK_THROWS_WITH(model::parse_tuning("toroid-tuning 1\nnet.gbps = 1\n", "f"),
                    Contains("unknown key 'net.gbps'"));
  CHECK_THROWS_WITH(model::parse_tuning("toroid-tuning 1\nshm.gbps = 0\nreduce.gbps = 1\n", "f"),
                    Contains("shm.gbps must be positive"));
  CHECK_THROWS_WITH(model::parse_tuning("toroid-tuning 1\nshm.gbps = 3\nreduce.gbps = 1\n", "f"),
                    Contains("shm.gbps without shm.alpha_us"));
  CHECK_THROWS_WITH(model::parse_tuning("toroid-tuning 1\nshm.gbps = 3\nshm.alpha_us = 1\n", "f"),
                    Contains("no reduce.gbps"));
}

TEST_CASE("selector: the observer hears of each class once, at its first call, not from describe",
          "[auto]") {
  Selector s(inputs(Torus2D(2, 2)));
  int heard = 0;
  s.set_observer([&](Collective, int, const model::Choice&) { ++heard; });
  s.describe(Collective::allreduce);
  CHECK(heard == 0);
  s.choose(Collective::allreduce, 100);
  s.choose(Collective::allreduce, 120);  // same class
  CHECK(heard == 1);
  s.choose(Collective::allreduce, 300);
  s.choose(Collective::allgather, 100);
  CHECK(heard == 3);
}

TEST_CASE("selector: network.links = torus prices hosts wired as the torus per link and hop",
          "[auto]") {
  model::Tuning t = model::parse_tuning(
      "toroid-tuning 1\nnetwork.alpha_us = 100\nnetwork.gbps = 0.025\n"
      "network.links = torus\nreduce.gbps = 5\n",
      "torus.txt");
  CHECK(t.network_torus);
  CHECK(model::parse_tuning(model::format_tuning(t, ""), "again").network_torus);
  SelectorInputs in = inputs(Torus2D(4, 2), {0, 1, 2, 3, 4, 5, 6, 7});
  in.tuning = t;
  Selector torus(in);
  // Several links per host: what moves the vector over several at once (both ways round, or
  // both dimensions) beats the one-way ring, where one port per host (a switch) would
  // serialize them.
  const Algorithm big = torus.choose(Collective::allreduce, 2u << 20);
  CHECK((big == Algorithm::torus2d || big == Algorithm::torus2d_both || big == Algorithm::swing ||
         big == Algorithm::bidir_ring));
  CHECK(*torus.predict(Collective::allreduce, big, 2u << 20) <
        *torus.predict(Collective::allreduce, Algorithm::ring, 2u << 20) * 0.6);
  // What the communicator builds its schedules for (model::schedule_context): the torus's
  // link rate and hop latency, so torus2d_both weighs its parts' steps as auto priced them; a
  // switch (endpoint links) has no hops.
  const schedule::Context on_torus = model::schedule_context(torus.model(), in.node_of_rank);
  CHECK(on_torus.hop_seconds[0] == Approx(100e-6));
  CHECK(on_torus.link_rate[1] == Approx(0.025e9));
  CHECK(on_torus.reduce_rate == Approx(5e9));
  // A 3D torus of hosts: the third dimension's links and hops are the tuned ones too.
  SelectorInputs cube = inputs(Torus::parse("2x2x2"), {0, 1, 2, 3, 4, 5, 6, 7});
  cube.tuning = t;
  const schedule::Context on_cube =
      model::schedule_context(Selector(cube).model(), cube.node_of_rank);
  CHECK(on_cube.link_rate[2] == Approx(0.025e9));
  CHECK(on_cube.hop_seconds[2] == Approx(100e-6));
  // 2x2x3 hosts, rings of 3 last: the communicator's context makes torus2d's small all-reduce
  // flood its last row (ranges under 0.5 hop x 25 MB/s / 4 B = 312 f32 elements; its buffers
  // in scratch past the vector), as the 12-rank engine test (bench_flood_np12) runs it;
  // 1 MiB's ranges are larger and reduce-scatter.
  SelectorInputs ring3 = inputs(Torus::parse("2x2x3"), {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  ring3.tuning = t;
  const schedule::Context on_ring3 =
      model::schedule_context(Selector(ring3).model(), ring3.node_of_rank);
  const auto scratch = [&](std::uint64_t count) {
    schedule::Spec sp{Collective::allreduce, count, false, false, {}};
    sp.elem_bytes = 4;
    schedule::Context ctx = on_ring3;
    ctx.rank = 5;
    return schedule::build(Algorithm::torus2d, sp, ctx).scratch_count;
  };
  CHECK(scratch(120) > 120);
  CHECK(scratch(1u << 18) <= (1u << 18));
  in.tuning.network_torus = false;
  Selector sw(in);
  CHECK(model::schedule_context(sw.model(), in.node_of_rank).hop_seconds[1] == 0.0);
  CHECK(*sw.predict(Collective::allreduce, Algorithm::torus2d_both, 2u << 20) >
        *torus.predict(Collective::allreduce, Algorithm::torus2d_both, 2u << 20));
  CHECK_THROWS_WITH(model::parse_tuning("toroid-tuning 1\nnetwork.links = ring\n", "f"),
                    Catch::Contains("network.links: 'ring' is not switch or torus"));
}

TEST_CASE(
    "selector: three dimensions take torus2d between the latency and both-dimension sizes, "
    "but a twisted torus, whose short rows are lines",
    "[auto]") {
  using model::fixed_rule;
  const Torus slice = Torus::parse("4x4x8"), twisted = Torus::parse("4x4x8:twist");
  CHECK(fixed_rule(Collective::allreduce, 32u << 10, slice) == Algorithm::swing_latency);
  CHECK(fixed_rule(Collective::allreduce, 32u << 10, twisted) == Algorithm::swing_latency);
  CHECK(fixed_rule(Collective::allreduce, 64u << 10, slice) == Algorithm::torus2d);
  CHECK(fixed_rule(Collective::allreduce, 64u << 10, twisted) == Algorithm::torus2d_both);
  CHECK(fixed_rule(Collective::allreduce, 1u << 20, slice) == Algorithm::torus2d_both);
}

TEST_CASE(
    "selector: above 64 ranks a 2D shape takes swing_latency below the torus2d_both crossover",
    "[auto]") {
  using model::fixed_rule;
  const Torus2D pod(32, 32), multipod(128, 32, false, true);
  // Two rings: torus2d_both's rings take about p/2 steps a pass, so it beats Swing from 64 KiB.
  CHECK(fixed_rule(Collective::allreduce, 1024, pod) == Algorithm::swing_latency);
  CHECK(fixed_rule(Collective::allreduce, 32u << 10, pod) == Algorithm::swing_latency);
  CHECK(fixed_rule(Collective::allreduce, 64u << 10, pod) == Algorithm::torus2d_both);
  CHECK(fixed_rule(Collective::allreduce, 8u << 20, pod) == Algorithm::torus2d_both);
  // A line dimension: Swing's XOR peers load it, and torus2d_both's shorter part takes the
  // whole vector at small sizes, so torus2d_both takes over from swing_latency at 8 KiB.
  CHECK(fixed_rule(Collective::allreduce, 4u << 10, multipod) == Algorithm::swing_latency);
  CHECK(fixed_rule(Collective::allreduce, 8u << 10, multipod) == Algorithm::torus2d_both);
  CHECK(fixed_rule(Collective::allreduce, 1u << 20, multipod) == Algorithm::torus2d_both);
  // 1D: unchanged. Small reduce-scatters take swing_latency (an all-reduce keeping one block),
  // and small all-gathers its recursive doubling.
  CHECK(fixed_rule(Collective::allreduce, 1024, Torus2D(128, 1)) == Algorithm::recursive_doubling);
  CHECK(fixed_rule(Collective::reduce_scatter, 2u << 10, pod) == Algorithm::swing_latency);
  CHECK(fixed_rule(Collective::reduce_scatter, 4u << 10, pod) == Algorithm::torus2d_both);
  CHECK(fixed_rule(Collective::reduce_scatter, 4u << 10, multipod) == Algorithm::swing_latency);
  CHECK(fixed_rule(Collective::reduce_scatter, 8u << 10, multipod) == Algorithm::torus2d);
  CHECK(fixed_rule(Collective::allgather, 2u << 10, pod) == Algorithm::swing_latency);
  CHECK(fixed_rule(Collective::allgather, 4u << 10, pod) == Algorithm::torus2d_both);
  CHECK(fixed_rule(Collective::allgather, 8u << 10, multipod) == Algorithm::swing_latency);
  CHECK(fixed_rule(Collective::allgather, 16u << 10, multipod) == Algorithm::torus2d);
  // Reduce-scatters and all-gathers use both dimensions at once: on a torus at every size
  // past swing_latency (rows half way round each way), with a line from 16 MiB (reduce-scatter)
  // and 32 MiB (all-gather).
  CHECK(fixed_rule(Collective::reduce_scatter, 1u << 20, pod) == Algorithm::torus2d_both);
  CHECK(fixed_rule(Collective::reduce_scatter, 16u << 20, pod) == Algorithm::torus2d_both);
  CHECK(fixed_rule(Collective::allgather, 16u << 20, pod) == Algorithm::torus2d_both);
  CHECK(fixed_rule(Collective::reduce_scatter, 8u << 20, multipod) == Algorithm::torus2d);
  CHECK(fixed_rule(Collective::reduce_scatter, 16u << 20, multipod) == Algorithm::torus2d_both);
  CHECK(fixed_rule(Collective::allgather, 16u << 20, multipod) == Algorithm::torus2d);
  CHECK(fixed_rule(Collective::allgather, 32u << 20, multipod) == Algorithm::torus2d_both);
  CHECK(fixed_rule(Collective::allgather, 1u << 30, Torus2D(128, 1)) == Algorithm::bidir_ring);
}

TEST_CASE("tuning file: measured choices per layout, read back, applied to that layout only",
          "[auto]") {
  using Catch::Contains;
  const std::string layout = "2 ranks, 2x1, 1 node(s), shm";
  const std::string text =
      "toroid-tuning 1\nshm.alpha_us = 0.4\nshm.gbps = 8\nmpi.alpha_us = 1\nmpi.gbps = 6\n"
      "reduce.gbps = 7\n"
      "choose " +
      layout +
      " = allreduce:0-48=mpi,48-4K=recursive_doubling,4K-64M=ring\n"
      "choose " +
      layout +
      " = broadcast:0-64M=mpi\n"
      "choose 4 ranks, 4x1, 1 node(s), shm = allreduce:0-64M=bidir_ring\n";
  const model::Tuning t = model::parse_tuning(text, "t.txt");
  REQUIRE(t.choices.size() == 2);
  REQUIRE(t.choices_for(layout));
  CHECK(t.choices_for(layout)->size() == 4);  // two lines of one layout join
  CHECK_FALSE(t.choices_for("3 ranks, 3x1, 1 node(s), shm"));
  // Written back as read: one line per layout and collective, ranges in order.
  const model::Tuning back = model::parse_tuning(model::format_tuning(t, ""), "again");
  REQUIRE(back.choices.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(back.choices[i].layout == t.choices[i].layout);
    REQUIRE(back.choices[i].rules.size() == t.choices[i].rules.size());
    for (const model::AlgorithmRule& r : t.choices[i].rules) {
      const model::AlgorithmRule* b = model::find_rule(back.choices[i].rules, r.collective, r.low);
      REQUIRE(b);
      CHECK((b->low == r.low && b->high == r.high && b->algorithm == r.algorithm));
    }
  }

  // A communicator of that layout follows them (stock included); TOROID_ALGO's rules still come
  // first; sizes above the measured ones are the model's.
  SelectorInputs in = inputs(Torus2D(2, 1));
  in.tuning = t;
  Selector s(in);
  CHECK(s.layout() == layout);
  CHECK(s.choose(Collective::allreduce, 16) == Algorithm::mpi);
  CHECK(s.choose(Collective::allreduce, 1024) == Algorithm::recursive_doubling);
  CHECK(s.choose(Collective::allreduce, 1u << 20) == Algorithm::ring);
  CHECK(s.choose(Collective::broadcast, 1u << 20) == Algorithm::mpi);
  const model::Choice& c = s.choice(Collective::allreduce, Selector::size_class(16));
  CHECK(c.measured);
  CHECK_FALSE(c.modeled);
  CHECK(s.choice(Collective::allreduce, Selector::size_class(1u << 30)).modeled);
  CHECK(s.choice(Collective::allgather, Selector::size_class(1024)).modeled);  // none measured
  in.rules = model::parse_algorithm_rules("allreduce:0-1K=swing_latency");
  Selector ruled(in);
  CHECK(ruled.choose(Collective::allreduce, 16) == Algorithm::swing_latency);
  CHECK_FALSE(ruled.choice(Collective::allreduce, Selector::size_class(16)).measured);
  // Another layout (4 ranks; the same 2 ranks over MPI; emulated nodes) does not.
  SelectorInputs four = inputs(Torus2D(4, 1));
  four.tuning = t;
  Selector f(four);
  CHECK(f.layout() == "4 ranks, 4x1, 1 node(s), shm");
  CHECK(f.choose(Collective::allreduce, 16) == Algorithm::bidir_ring);
  SelectorInputs over_mpi = inputs(Torus2D(2, 1));
  over_mpi.tuning = t;
  over_mpi.shm_inside_node = false;
  Selector m(over_mpi);
  CHECK(m.layout() == "2 ranks, 2x1, 1 node(s), mpi");
  CHECK_FALSE(m.choice(Collective::allreduce, Selector::size_class(16)).measured);
  SelectorInputs emulated = inputs(Torus2D(2, 1), {0, 1});
  emulated.link_node_of_rank = {0, 0};
  emulated.tuning = t;
  CHECK(Selector(emulated).layout() == "2 ranks, 2x1, 1 node(s), shm, 2 emulated nodes");

  // Malformed lines are named, with the layout.
  const std::string head = "toroid-tuning 1\nreduce.gbps = 7\n";
  CHECK_THROWS_WITH(model::parse_tuning(head + "choose 2 ranks allreduce:0-1K=ring\n", "f"),
                    Contains("f:3: 'choose 2 ranks allreduce:0-1K=ring' is not 'choose <layout> "
                             "= <rules>'"));
  CHECK_THROWS_WITH(model::parse_tuning(head + "choose  = allreduce:0-1K=ring\n", "f"),
                    Contains("names no layout"));
  CHECK_THROWS_WITH(model::parse_tuning(head + "choose L = allreduce:0-1K=warp\n", "f"),
                    Contains("f:3: choose L: 'allreduce:0-1K=warp'"));
  CHECK_THROWS_WITH(model::parse_tuning(head + "choose L = allreduce:0-1K=ring\n"
                                               "choose L = allreduce:512-2K=mpi\n",
                                        "f"),
                    Contains("f:4: choose L: 'allreduce:512-2K=mpi' overlaps 'allreduce:0-1K=ring' "
                             "of an earlier line"));
}
