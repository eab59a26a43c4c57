// Torus: the grid of chips of any dimension (1 to 6) that a communicator's ranks play, each
// dimension a ring (wraparound links) or a line (mesh), optionally twisted as TPU v4's k×k×2k
// and k×2k×2k slices are.
//
// Rank <-> coordinate: the first dimension fastest, rank = c0 + s0·(c1 + s1·(c2 + ...)); a 2D
// Torus numbers its chips as Torus2D does (x fastest). Dimensions are named x y z w v u in
// text ("wrap=xz").
//
//          z=0 plane            z=1 plane          4x2x2: chip (x, y, z) is rank x + 4y + 8z;
//   y=0   r0 - r1 - r2 - r3    r8 - r9 -r10 -r11   +x/-x within a row, +y/-y between rows,
//   y=1   r4 - r5 - r6 - r7   r12 -r13 -r14 -r15   +z/-z between the planes
//
// Twisted (TPU v4; Cámara et al., "Twisted Torus Topologies for Enhanced Interconnection
// Networks", 2010): every dimension wraps, the sizes are k and 2k, and a wraparound link along a
// short dimension (size k) lands k further along every long one (size 2k):
//
//   4x4x8 twisted: (3, y, z) +x -> (0, y, z + 4 mod 8); (x, 3, z) +y -> (x, 0, z + 4 mod 8);
//                  z wraps plainly. The diameter drops from 2 + 2 + 4 = 8 hops to 6.
//
// Each chip keeps its 2·D link directions (one of them per direction; on a dimension of 2 the
// two directions are the one link's, as in Torus2D); only where the wraparound links land moves.
#pragma once

#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "toroid/export.hpp"
#include "toroid/topology.hpp"

TOROID_API_BEGIN
namespace toroid {

// Link directions out of coordinate x of one dimension of `size` chips: none on a dimension of
// one, one between two chips or at a line's end, two round a ring of three or more or inside a
// line.
int ports_along(int size, bool wraps, int x) noexcept;

// A set of the torus's dimensions. A collective along them runs in every sub-torus they span at
// once, one per setting of the other coordinates, each on its own:
//
//   4x2x2 (x fastest), Axes{Axis::x, Axis::z}: the two xz-planes, y = 0 (o) and y = 1 (*)
//        z=0   o o o o    z=1   o o o o     each plane a 4x2 torus of 8 chips: block i of a
//              * * * *          * * * *     reduce-scatter goes to its chip at x + 4z = i
//
// Axis::x alone is the rows, {x, y} the xy-planes, every axis the whole torus. An axis beyond a
// shape's dimensions has one chip there. Implicit from one Axis, so `Axis::x` names the rows.
class Axes {
 public:
  constexpr Axes(Axis a) noexcept : bits_(bit(a)) {}  // NOLINT(google-explicit-constructor)
  constexpr Axes(std::initializer_list<Axis> axes) noexcept {
    for (Axis a : axes) bits_ |= bit(a);
  }
  // "x", "xz", "zyx" (letters of x y z w v u, each at most once); throws InvalidArgument naming
  // the text and what is wrong.
  static Axes parse(std::string_view text);
  // Whether dimension d (0 for x) is one of them.
  constexpr bool has(int d) const noexcept { return d >= 0 && d < 6 && ((bits_ >> d) & 1u) != 0; }
  constexpr bool empty() const noexcept { return bits_ == 0; }
  constexpr unsigned bits() const noexcept { return bits_; }  // bit d: dimension d
  std::string to_string() const;                              // "xz", in dimension order
  friend constexpr bool operator==(Axes, Axes) = default;

 private:
  static constexpr unsigned bit(Axis a) noexcept { return 1u << static_cast<unsigned>(a); }
  unsigned bits_ = 0;
};

class Torus {
 public:
  static constexpr int kMaxDimensions = 6;

  // Throws TopologyError for no dimensions or more than six, a size under 1, more than 16M
  // chips, `wraps` of another length than `sizes` (empty: every dimension wraps), or a twist on
  // a shape that has none (not 3D k×k×2k or k×2k×2k in some order, every dimension wrapping).
  explicit Torus(std::vector<int> sizes, std::vector<bool> wraps = {}, bool twisted = false);
  // A 2D torus as a Torus: the same chips, numbers and links (implicit: a Torus2D is one).
  Torus(const Torus2D& t);  // NOLINT(google-explicit-constructor)

  // Text forms: "16x16x16" (every dimension wraps), "128x32:wrap=y" (only the named ones),
  // ":wrap=none" (a mesh), ":twist" (twisted; every dimension wraps), "4x4x8:wrap=xyz,twist".
  // Throws TopologyError naming the text and what is wrong.
  static Torus parse(std::string_view text);

  int dimensions() const noexcept { return static_cast<int>(sizes_.size()); }
  int size(int d) const { return sizes_.at(static_cast<std::size_t>(d)); }
  bool wraps(int d) const { return wraps_.at(static_cast<std::size_t>(d)); }
  bool twisted() const noexcept { return twisted_; }
  int chips() const noexcept { return chips_; }

  std::vector<int> coord_of(int rank) const;
  int rank_of(std::span<const int> coord) const;
  // The chip one link away along dimension d in direction +1 / -1 (a twisted wraparound
  // included); nullopt past a mesh edge or along a dimension of one.
  std::optional<int> neighbour(int rank, int d, int direction) const;
  // Whether a and b are one link apart.
  bool adjacent(int a, int b) const;
  // The chips that differ from `rank` only along dimension d, by increasing coordinate there
  // (`rank`'s row along d; on a twisted torus its short dimensions' rows do not close into
  // rings: their wraparound links lead to another row).
  std::vector<int> line_through(int rank, int d) const;
  // Whether the row along d closes into a ring of links: it wraps and is not a twisted short one.
  bool ring_along(int d) const;
  // The sub-torus along `axes` (Axes: a row, a plane, ...) as a shape of its own: the chosen
  // dimensions' sizes in dimension order, each a ring where ring_along() (a twisted short
  // dimension is a line there), no twist. Axes beyond the dimensions add nothing; none within
  // them is one chip.
  Torus along(Axes axes) const;
  // The chips of `rank`'s sub-torus along `axes`, in that sub-torus's rank order (the first
  // chosen dimension fastest), and where `rank` is among them.
  std::vector<int> group_along(int rank, Axes axes) const;
  int position_along(int rank, Axes axes) const;
  // Hops from `rank` to every chip (the shortest paths over the links; rank order).
  std::vector<int> hops_from(int rank) const;
  // Link directions out of `rank`: 2 per ring of three or more (and per twisted short
  // dimension of two, whose wraparound leads to another row), 1 at a line's end or on a plain
  // dimension of two, 0 on a dimension of one.
  int ports(int rank) const;
  // The same along dimension d only.
  int ports(int rank, int d) const;

  // The 2D torus it is, where it has two dimensions (or one: N x 1) and no twist.
  std::optional<Torus2D> as_torus2d() const;
  // "4x4x8", with ":wrap=..." when some dimension does not wrap and ":twist" when twisted.
  std::string to_string() const;
  // Throws TopologyError "topology 4x4x8 needs 128 ranks, communicator has 8" when sizes differ.
  void require_size(int communicator_size) const;

  friend bool operator==(const Torus&, const Torus&) = default;

 private:
  std::vector<int> sizes_;
  std::vector<bool> wraps_;
  bool twisted_ = false;
  int chips_ = 1;
};

}  // namespace toroid
TOROID_API_END
