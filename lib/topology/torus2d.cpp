// Torus2D geometry: coordinates, neighbours, rows and columns.
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

#include "toroid/error.hpp"
#include "toroid/topology.hpp"

namespace toroid {

Torus2D::Torus2D(int x, int y, bool wrap_x, bool wrap_y)
    : x_(x), y_(y), wrap_x_(wrap_x), wrap_y_(wrap_y) {
  if (x < 1 || y < 1)
    throw TopologyError(fmt::format("topology {}x{}: both dimensions must be at least 1", x, y));
}

Torus2D Torus2D::most_square(int n) {
  if (n < 1) throw TopologyError(fmt::format("cannot shape a topology for {} ranks", n));
  int y = static_cast<int>(std::sqrt(static_cast<double>(n)));
  while (y > 1 && n % y != 0) --y;
  return Torus2D(n / y, y);
}

Coord Torus2D::coord_of(int rank) const {
  if (rank < 0 || rank >= size())
    throw TopologyError(fmt::format("rank {} is outside topology {}", rank, to_string()));
  return {rank % x_, rank / x_};
}

int Torus2D::rank_of(Coord c) const {
  if (c.x < 0 || c.x >= x_ || c.y < 0 || c.y >= y_)
    throw TopologyError(
        fmt::format("coordinate ({},{}) is outside topology {}", c.x, c.y, to_string()));
  return c.y * x_ + c.x;
}

std::optional<int> Torus2D::neighbour(int rank, Axis a, int direction) const {
  Coord c = coord_of(rank);
  if (a != Axis::x && a != Axis::y) return std::nullopt;  // one chip along a later axis
  int& v = a == Axis::x ? c.x : c.y;
  const int n = dim(a);
  v += direction;
  if (v < 0 || v >= n) {
    if (!wraps(a)) return std::nullopt;
    v = (v % n + n) % n;
  }
  return rank_of(c);
}

bool Torus2D::adjacent(int a, int b) const {
  for (Axis axis : {Axis::x, Axis::y})
    for (int d : {-1, 1})
      if (neighbour(a, axis, d) == b) return true;
  return false;
}

std::vector<int> Torus2D::line_through(int rank, Axis a) const {
  const Coord c = coord_of(rank);
  if (a != Axis::x && a != Axis::y) return {rank};
  std::vector<int> line;
  for (int i = 0; i < dim(a); ++i)
    line.push_back(a == Axis::x ? rank_of({i, c.y}) : rank_of({c.x, i}));
  return line;
}

std::string Torus2D::to_string() const {
  std::string s = fmt::format("{}x{}", x_, y_);
  if (!wrap_x_ || !wrap_y_) s += wrap_x_ ? ":wrap=x" : wrap_y_ ? ":wrap=y" : ":wrap=none";
  return s;
}

void Torus2D::require_size(int communicator_size) const {
  if (size() != communicator_size)
    throw TopologyError(fmt::format("topology {} needs {} ranks, communicator has {}", to_string(),
                                    size(), communicator_size));
}

}  // namespace toroid
