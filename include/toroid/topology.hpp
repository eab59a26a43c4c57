// Torus2D: the X x Y grid of chips that the ranks of a communicator play.
//
// Rank <-> coordinate is row-major with x fastest:  rank = y * X + x.
//
//        x=0   x=1   x=2   x=3
//   y=0   r0 -- r1 -- r2 -- r3 --(wrap to r0 when X wraps)
//         |     |     |     |
//   y=1   r4 -- r5 -- r6 -- r7 --
//         |
//    (wrap to y=0 when Y wraps)
//
// A "row" is the X ranks sharing one y; a "column" is the Y ranks sharing one x.
// Each dimension is either a torus ring (wraparound link) or a mesh line (no wraparound).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "toroid/export.hpp"

TOROID_API_BEGIN
namespace toroid {

struct Coord {
  int x = 0;
  int y = 0;
  friend bool operator==(const Coord&, const Coord&) = default;
};

// A dimension of the torus by its name: x the first (fastest in rank order), y the second, then
// z w v u (toroid::Torus has up to six). Torus2D knows x and y; a later axis has one chip there.
enum class Axis { x, y, z, w, v, u };

class Torus2D {
 public:
  // Throws TopologyError for dims < 1.
  Torus2D(int x, int y, bool wrap_x = true, bool wrap_y = true);

  // Text forms: "4x4" (torus in both), "8x2:wrap=x" (only X wraps), ":wrap=y", ":wrap=none"
  // (full mesh), ":wrap=xy" (the default). "auto" is not a shape and is resolved by
  // Communicator from the node structure. Throws TopologyError with the text on bad input.
  static Torus2D parse(std::string_view text);
  // The most square X x Y = n with X >= Y (n x 1 when n is prime).
  static Torus2D most_square(int n);

  int x_dim() const noexcept { return x_; }
  int y_dim() const noexcept { return y_; }
  int size() const noexcept { return x_ * y_; }
  bool wraps(Axis a) const noexcept {
    return a == Axis::x ? wrap_x_ : a == Axis::y ? wrap_y_ : false;
  }
  int dim(Axis a) const noexcept { return a == Axis::x ? x_ : a == Axis::y ? y_ : 1; }

  Coord coord_of(int rank) const;
  int rank_of(Coord c) const;
  // Neighbour one step along axis a in direction +1/-1; nullopt past a mesh edge (and along z
  // and later axes, of one chip).
  std::optional<int> neighbour(int rank, Axis a, int direction) const;
  // True when a and b are one link apart (including wraparound links where they exist).
  bool adjacent(int a, int b) const;
  // Ranks of the row (Axis::x) or column (Axis::y) through `rank`, in increasing coordinate
  // ({rank} along z and later axes).
  std::vector<int> line_through(int rank, Axis a) const;

  // "4x2" with ":wrap=..." appended when not a full torus.
  std::string to_string() const;
  // Throws TopologyError "topology 3x3 needs 9 ranks, communicator has 8" when sizes differ.
  void require_size(int communicator_size) const;

  friend bool operator==(const Torus2D&, const Torus2D&) = default;

 private:
  int x_, y_;
  bool wrap_x_, wrap_y_;
};

}  // namespace toroid
TOROID_API_END
