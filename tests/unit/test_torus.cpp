// Torus: shapes of 1 to 6 dimensions, their text forms, rank order, links (twisted ones
// included) and the distance bound over them.
#include <algorithm>
#include <catch2/catch.hpp>
#include <numeric>
#include <set>

#include "model/sim_limit.hpp"
#include "toroid/error.hpp"
#include "toroid/torus.hpp"

using namespace toroid;

namespace {

// Every link direction of every chip, checked against its reverse: the link graph of `t`.
// Returns the number of link directions.
int check_links(const Torus& t) {
  int directions = 0;
  for (int r = 0; r < t.chips(); ++r) {
    std::set<int> seen;
    int out = 0;
    for (int d = 0; d < t.dimensions(); ++d)
      for (int dir : {1, -1}) {
        const auto n = t.neighbour(r, d, dir);
        if (!n) continue;
        INFO(t.to_string() << " chip " << r << " dimension " << d << " direction " << dir);
        CHECK(t.neighbour(*n, d, -dir) == r);  // the link's other direction comes back
        CHECK(t.adjacent(r, *n));
        CHECK(t.adjacent(*n, r));
        if (seen.insert(*n).second) ++out;
      }
    INFO(t.to_string() << " chip " << r);
    CHECK(out == t.ports(r));  // distinct neighbours, one per link direction
    directions += out;
  }
  return directions;
}

int diameter(const Torus& t) {
  int most = 0;
  for (int r = 0; r < t.chips(); ++r) {
    const std::vector<int> h = t.hops_from(r);
    REQUIRE(*std::min_element(h.begin(), h.end()) == 0);  // connected: every chip reached
    most = std::max(most, *std::max_element(h.begin(), h.end()));
  }
  return most;
}

}  // namespace

TEST_CASE("torus: text forms, any number of dimensions", "[topology]") {
  const Torus pod = Torus::parse("16x16x16");
  CHECK(pod.dimensions() == 3);
  CHECK(pod.chips() == 4096);
  CHECK(pod.wraps(0));
  CHECK(pod.wraps(2));
  CHECK(!pod.twisted());
  CHECK(pod.to_string() == "16x16x16");
  const Torus multipod = Torus::parse("128x32:wrap=y");
  CHECK(!multipod.wraps(0));
  CHECK(multipod.wraps(1));
  CHECK(multipod.to_string() == "128x32:wrap=y");
  CHECK(Torus::parse("4x4x8:wrap=xyz").to_string() == "4x4x8");
  CHECK(Torus::parse("4x4x8:twist").to_string() == "4x4x8:twist");
  CHECK(Torus::parse("4x4x8:wrap=xyz,twist").twisted());
  CHECK(Torus::parse("8x4x4:twist").twisted());  // the long dimension first
  CHECK(Torus::parse("4x8x8:twist").twisted());  // k x 2k x 2k
  CHECK(Torus::parse("2x3x2x2x2x3:wrap=none").to_string() == "2x3x2x2x2x3:wrap=none");
  CHECK(Torus::parse("7").chips() == 7);
  for (const char* text :
       {"4x4x8", "128x32:wrap=y", "2x2x2:wrap=xz", "3x5:wrap=none", "4x8x8:twist"})
    CHECK(Torus::parse(Torus::parse(text).to_string()) == Torus::parse(text));
  // The 2D ones are Torus2D's.
  CHECK(Torus::parse("4x2:wrap=x").as_torus2d() == Torus2D::parse("4x2:wrap=x"));
  CHECK(Torus(Torus2D(8, 2, false, true)) == Torus::parse("8x2:wrap=y"));
  CHECK(!Torus::parse("2x2x2").as_torus2d());

  const auto refused = [](const char* text, const char* why) {
    INFO(text);
    CHECK_THROWS_WITH(
        Torus::parse(text),
        Catch::Contains(std::string("invalid topology '") + text) && Catch::Contains(why));
  };
  refused("4x", "Y dimension '' is not an integer");
  refused("4xax2", "Y dimension 'a' is not an integer");
  refused("4x0x2", "Y dimension must be at least 1");
  refused("2x2x2x2x2x2x2", "more than 6 dimensions");
  refused("4x4:wrap=z", "'z' in wrap= is not one of its dimensions (xy)");
  refused("4x4:wrap=xx", "'x' named twice");
  refused("4x4:wrap=", "wrap= names no dimension");
  refused("4x4:bend", "unknown option 'bend'");
  refused("4x4x4:twist", "cannot be twisted");
  refused("4x4x8:wrap=xy,twist", "cannot be twisted");
  refused("4x8:twist", "cannot be twisted");
  refused("4096x4096x4096", "more than 16M chips");
  CHECK_THROWS_AS(Torus({}), TopologyError);
  CHECK_THROWS_AS(Torus({4, 4}, {true}), TopologyError);
}

TEST_CASE("torus: the first dimension fastest, as Torus2D", "[topology]") {
  const Torus t = Torus::parse("4x2x3");
  CHECK(t.rank_of(std::vector<int>{1, 1, 2}) == 1 + 4 * (1 + 2 * 2));
  CHECK(t.coord_of(21) == std::vector<int>{1, 1, 2});
  for (int r = 0; r < t.chips(); ++r) CHECK(t.rank_of(t.coord_of(r)) == r);
  const Torus2D flat(4, 3);
  const Torus same(flat);
  for (int r = 0; r < flat.size(); ++r) {
    CHECK(same.coord_of(r) == std::vector<int>{flat.coord_of(r).x, flat.coord_of(r).y});
    for (int dir : {1, -1}) {
      CHECK(same.neighbour(r, 0, dir) == flat.neighbour(r, Axis::x, dir));
      CHECK(same.neighbour(r, 1, dir) == flat.neighbour(r, Axis::y, dir));
    }
  }
  CHECK_THROWS_AS(t.coord_of(24), InvalidArgument);
  CHECK_THROWS_AS(t.rank_of(std::vector<int>{4, 0, 0}), InvalidArgument);
  CHECK_THROWS_AS(t.rank_of(std::vector<int>{0, 0}), InvalidArgument);
}

TEST_CASE("torus: the sub-tori along axes (rows, planes, ...) and their members' order",
          "[topology][axes]") {
  const Torus t = Torus::parse("4x2x3:wrap=xz");
  // The xz-plane through chip (1, 1, 2): x fastest, then z; its sizes and rings are x's and z's.
  const int r = t.rank_of(std::vector<int>{1, 1, 2});
  const Axes xz{Axis::x, Axis::z};
  CHECK(t.along(xz) == Torus({4, 3}, {true, true}));
  CHECK(t.along(Axis::y) == Torus({2}, {false}));
  CHECK(t.along(Axes{Axis::x, Axis::y, Axis::z}) == t);
  CHECK(t.along(Axis::w) == Torus({1}));  // an axis beyond the shape has one chip
  const std::vector<int> plane = t.group_along(r, xz);
  REQUIRE(plane.size() == 12);
  for (int i = 0; i < 12; ++i)
    CHECK(t.coord_of(plane[static_cast<std::size_t>(i)]) == std::vector<int>{i % 4, 1, i / 4});
  CHECK(t.position_along(r, xz) == 1 + 4 * 2);
  CHECK(t.group_along(r, Axis::y) == std::vector<int>{t.rank_of(std::vector<int>{1, 0, 2}), r});
  CHECK(t.position_along(r, Axis::y) == 1);
  for (int q = 0; q < t.chips(); ++q)
    for (Axes a : {Axes(Axis::x), Axes(Axis::z), xz, Axes{Axis::y, Axis::z}}) {
      const std::vector<int> g = t.group_along(q, a);
      CHECK(g[static_cast<std::size_t>(t.position_along(q, a))] == q);
    }
  // A twisted short dimension is a line of the sub-torus: its wraparound leads elsewhere.
  const Torus twisted = Torus::parse("4x4x8:twist");
  CHECK(twisted.along(Axis::x) == Torus({4}, {false}));
  CHECK(twisted.along(Axis::z) == Torus({8}, {true}));
  // Names: letters in any order, each once; Torus2D's z has one chip.
  CHECK(Axes::parse("zx") == xz);
  CHECK(xz.to_string() == "xz");
  CHECK_THROWS_WITH(Axes::parse("xq"), Catch::Contains("axes 'xq': 'q' is not an axis"));
  CHECK_THROWS_WITH(Axes::parse("xzx"), Catch::Contains("axes 'xzx': 'x' appears twice"));
  CHECK_THROWS_AS(Axes::parse(""), InvalidArgument);
  const Torus2D flat(4, 3);
  CHECK(flat.dim(Axis::z) == 1);
  CHECK_FALSE(flat.wraps(Axis::z));
  CHECK(flat.line_through(5, Axis::z) == std::vector<int>{5});
  CHECK_FALSE(flat.neighbour(5, Axis::z, 1).has_value());
}

TEST_CASE("torus: link graphs of tori, meshes and mixed shapes", "[topology]") {
  // 2·D link directions a chip on a torus; a mesh loses one at every face it touches.
  CHECK(check_links(Torus::parse("4x4x4")) == 64 * 6);
  CHECK(diameter(Torus::parse("4x4x4")) == 6);
  CHECK(check_links(Torus::parse("4x4x4:wrap=none")) == 3 * 2 * 3 * 16);
  CHECK(diameter(Torus::parse("4x4x4:wrap=none")) == 9);
  CHECK(check_links(Torus::parse("3x4x5:wrap=xz")) == 60 * 4 + 2 * 2 * 15 + 1 * 2 * 15);
  CHECK(Torus::parse("3x3x3").ports(13) == 6);
  CHECK(Torus::parse("3x3x3:wrap=none").ports(0) == 3);   // a corner
  CHECK(Torus::parse("3x3x3:wrap=none").ports(13) == 6);  // the middle
  CHECK(Torus::parse("2x2x2").ports(0) == 3);             // a dimension of two: its one link
  CHECK(Torus::parse("2x1x5").ports(0) == 3);             // and a dimension of one has none
  for (const char* shape : {"2x2x2", "2x3x4:wrap=y", "4x4x4:wrap=none", "3x2x2x2", "2x2x2x2x2x2"})
    check_links(Torus::parse(shape));
}

TEST_CASE("torus: twisted tori (TPU v4's k x k x 2k and k x 2k x 2k)", "[topology]") {
  const Torus plain = Torus::parse("4x4x8"), twisted = Torus::parse("4x4x8:twist");
  // The same 768 link directions, six a chip; only the short dimensions' wraparounds move.
  CHECK(check_links(twisted) == 128 * 6);
  CHECK(twisted.neighbour(twisted.rank_of(std::vector<int>{3, 1, 2}), 0, 1) ==
        twisted.rank_of(std::vector<int>{0, 1, 6}));
  CHECK(twisted.neighbour(twisted.rank_of(std::vector<int>{1, 0, 6}), 1, -1) ==
        twisted.rank_of(std::vector<int>{1, 3, 2}));
  CHECK(twisted.neighbour(twisted.rank_of(std::vector<int>{1, 1, 7}), 2, 1) ==
        twisted.rank_of(std::vector<int>{1, 1, 0}));  // the long dimension wraps plainly
  // Shorter paths: the diameter falls from 2 + 2 + 4 hops to 6, and the mean distance with it.
  CHECK(diameter(plain) == 8);
  CHECK(diameter(twisted) == 6);
  const auto mean = [](const Torus& t) {
    const std::vector<int> h = t.hops_from(0);
    return std::accumulate(h.begin(), h.end(), 0.0) / t.chips();
  };
  CHECK(mean(twisted) < mean(plain));
  // Every chip sees the same distances (a Cayley graph): one chip's profile is every chip's.
  std::vector<int> first = twisted.hops_from(0);
  std::sort(first.begin(), first.end());
  for (int r : {1, 5, 17, 77, 127}) {
    std::vector<int> h = twisted.hops_from(r);
    std::sort(h.begin(), h.end());
    CHECK(h == first);
  }
  // k x 2k x 2k: the short dimension's wraparound lands half way round both long ones.
  const Torus prism = Torus::parse("4x8x8:twist");
  CHECK(check_links(prism) == 256 * 6);
  CHECK(prism.neighbour(prism.rank_of(std::vector<int>{3, 1, 2}), 0, 1) ==
        prism.rank_of(std::vector<int>{0, 5, 6}));
  CHECK(diameter(prism) < diameter(Torus::parse("4x8x8")));
  // A twisted short dimension of 2 has two links a chip (its wraparound leads to another row),
  // where a plain one has its single link: 2x2x4 twisted, six a chip; plain, four.
  CHECK(check_links(Torus::parse("2x2x4:twist")) == 16 * 6);
  CHECK(check_links(Torus::parse("2x2x4")) == 16 * 4);
}

TEST_CASE("torus: the distance bound over any number of dimensions", "[topology][simulator]") {
  // A 4x4x4 torus of 50 GB/s links and 1 us hops: every chip has six ports and is 6 hops from
  // its farthest; the all-reduce bound is the same from the closed form and from the shape.
  const Torus cube = Torus::parse("4x4x4");
  std::vector<model::DimensionLinks> dims;
  for (int d = 0; d < cube.dimensions(); ++d)
    dims.push_back({cube.size(d), cube.wraps(d), 1e-6, 50e9});
  const double mib = 1 << 20;
  CHECK(model::distance_bound(dims, Collective::allreduce, mib) ==
        Approx(6e-6 + mib / (cube.ports(0) * 50e9)));
  // On a mesh the corner bounds it: 3 ports, 9 hops to the opposite corner.
  for (auto& d : dims) d.wraps = false;
  CHECK(model::distance_bound(dims, Collective::allreduce, mib) == Approx(9e-6 + mib / (3 * 50e9)));
  // Reduce-scatter: farthest blocks first, never less than the nearest hop plus all blocks.
  const double rs = model::distance_bound(dims, Collective::reduce_scatter, mib);
  CHECK(rs >= 1e-6 + 63.0 / 64 * mib / (3 * 50e9));
  CHECK(rs <= 9e-6 + 63.0 / 64 * mib / (3 * 50e9));
}

TEST_CASE("torus: the limit of 3D shapes, twisted and not", "[topology][simulator]") {
  // A TPU v4 pod's shape, 16x16x16 with 50 GB/s per link direction (the hop latency taken as
  // 1 us, as for the v3 presets): 24,576 link directions, 8 + 8 + 8 hops, six ports a chip.
  const Torus pod = Torus::parse("16x16x16");
  const model::TorusLinks v4{{50e9, 50e9, 50e9}, {1e-6, 1e-6, 1e-6}, 300e9};
  const double gib = 1u << 30;
  const model::SimLimit a = model::limit_of(pod, v4, Collective::allreduce, 1u << 30);
  CHECK(a.bandwidth_s == Approx(2.0 * 4095 * gib / (24576 * 50e9)));
  CHECK(a.latency_s == Approx(24e-6));
  CHECK(a.port_s == Approx(gib / (6 * 50e9)));
  CHECK(a.distance_s == Approx(24e-6 + gib / (6 * 50e9)));
  CHECK(a.limit_s() == a.bandwidth_s);
  // The 2D form and the N-D one agree on a 2D shape.
  model::SimModel m;
  m.topology = Torus2D(8, 4, false, true);
  m.link_bytes_per_s[0] = 80e9, m.link_bytes_per_s[1] = 40e9;
  m.hop_latency_s[0] = 1e-6, m.hop_latency_s[1] = 2e-6;
  for (Collective c : {Collective::allreduce, Collective::reduce_scatter, Collective::allgather,
                       Collective::broadcast}) {
    const model::SimLimit two = model::limit_of(m, c, 1u << 20);
    const model::SimLimit any = model::limit_of(Torus::parse("8x4:wrap=y"),
                                                {{80e9, 40e9}, {1e-6, 2e-6}, 300e9}, c, 1u << 20);
    CHECK(two.limit_s() == Approx(any.limit_s()));
    CHECK(two.distance_s == Approx(any.distance_s));
  }
  // Twisting 4x4x8 keeps its links (the bandwidth bound) and shortens its paths: the floor
  // from 8 hops to 6, and the small all-reduce's distance bound with it.
  const Torus plain = Torus::parse("4x4x8"), twisted = Torus::parse("4x4x8:twist");
  for (Collective c : {Collective::allreduce, Collective::reduce_scatter, Collective::allgather}) {
    const model::SimLimit p = model::limit_of(plain, v4, c, 1024),
                          t = model::limit_of(twisted, v4, c, 1024);
    INFO(toroid::to_string(c));
    CHECK(p.bandwidth_s == Approx(t.bandwidth_s));
    CHECK(p.latency_s == Approx(8e-6));
    CHECK(t.latency_s == Approx(6e-6));
    CHECK(t.distance_s < p.distance_s);
    CHECK(t.distance_s >= t.latency_s);
  }
}
