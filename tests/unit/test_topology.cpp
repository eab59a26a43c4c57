#include <catch2/catch.hpp>

#include "toroid/error.hpp"
#include "toroid/topology.hpp"

using namespace toroid;

TEST_CASE("parse shapes and wraparound options", "[topology]") {
  const Torus2D t = Torus2D::parse("4x2");
  CHECK(t.x_dim() == 4);
  CHECK(t.y_dim() == 2);
  CHECK(t.wraps(Axis::x));
  CHECK(t.wraps(Axis::y));
  CHECK(t.to_string() == "4x2");
  const Torus2D m = Torus2D::parse("8x2:wrap=x");
  CHECK(m.wraps(Axis::x));
  CHECK_FALSE(m.wraps(Axis::y));
  CHECK(m.to_string() == "8x2:wrap=x");
  CHECK(Torus2D::parse("3x3:wrap=none").to_string() == "3x3:wrap=none");
  CHECK(Torus2D::parse("5x1:wrap=y").to_string() == "5x1:wrap=y");
}

TEST_CASE("bad topology text gets a TopologyError with the text", "[topology]") {
  CHECK_THROWS_WITH(Torus2D::parse("4x"), Catch::Contains("invalid topology '4x'"));
  CHECK_THROWS_WITH(Torus2D::parse("x4"), Catch::Contains("invalid topology 'x4'"));
  CHECK_THROWS_WITH(Torus2D::parse("0x4"), Catch::Contains("X dimension must be at least 1"));
  CHECK_THROWS_WITH(Torus2D::parse("4x-2"), Catch::Contains("Y dimension must be at least 1"));
  CHECK_THROWS_WITH(Torus2D::parse("four"), Catch::Contains("missing 'x'"));
  CHECK_THROWS_WITH(Torus2D::parse("4x4:wrap=z"), Catch::Contains("unknown option 'wrap=z'"));
  CHECK_THROWS_AS(Torus2D::parse("4x4x4"), TopologyError);
  CHECK_THROWS_WITH(
      Torus2D::parse("16x16x16"),
      Catch::Contains("3 dimensions: a Torus2D has two (toroid::Torus::parse takes 1 to 6"));
  CHECK_THROWS_AS(Torus2D(0, 3), TopologyError);
  CHECK_THROWS_WITH(Torus2D(3, 3).require_size(8),
                    "topology 3x3 needs 9 ranks, communicator has 8");
}

TEST_CASE("rank and coordinate are row-major with x fastest", "[topology]") {
  const Torus2D t(4, 3);
  CHECK(t.coord_of(0) == Coord{0, 0});
  CHECK(t.coord_of(5) == Coord{1, 1});
  CHECK(t.coord_of(11) == Coord{3, 2});
  for (int r = 0; r < t.size(); ++r) CHECK(t.rank_of(t.coord_of(r)) == r);
  CHECK_THROWS_AS(t.coord_of(12), TopologyError);
  CHECK_THROWS_AS(t.rank_of({4, 0}), TopologyError);
}

TEST_CASE("neighbours wrap on torus dimensions and stop at mesh edges", "[topology]") {
  const Torus2D torus(4, 3);
  CHECK(torus.neighbour(0, Axis::x, -1) == 3);
  CHECK(torus.neighbour(3, Axis::x, +1) == 0);
  CHECK(torus.neighbour(0, Axis::y, -1) == 8);
  CHECK(torus.neighbour(5, Axis::y, +1) == 9);
  const Torus2D mesh(4, 3, false, false);
  CHECK_FALSE(mesh.neighbour(0, Axis::x, -1).has_value());
  CHECK_FALSE(mesh.neighbour(11, Axis::y, +1).has_value());
  CHECK(mesh.neighbour(1, Axis::x, -1) == 0);
  CHECK(torus.adjacent(0, 3));
  CHECK_FALSE(mesh.adjacent(0, 3));
  CHECK_FALSE(torus.adjacent(0, 5));
}

TEST_CASE("rows and columns", "[topology]") {
  const Torus2D t(4, 3);
  CHECK(t.line_through(6, Axis::x) == std::vector<int>{4, 5, 6, 7});
  CHECK(t.line_through(6, Axis::y) == std::vector<int>{2, 6, 10});
}

TEST_CASE("most square factorization", "[topology]") {
  CHECK(Torus2D::most_square(16).to_string() == "4x4");
  CHECK(Torus2D::most_square(8).to_string() == "4x2");
  CHECK(Torus2D::most_square(6).to_string() == "3x2");
  CHECK(Torus2D::most_square(7).to_string() == "7x1");
  CHECK(Torus2D::most_square(1).to_string() == "1x1");
  CHECK(Torus2D::most_square(4096).to_string() == "64x64");
}
