// Who talks to whom in the Swing algorithms, and where each rank's block lies.
//
// Swing (De Sensi, Bonato, Saam, Hoefler, NSDI 2024) short-cuts a ring: at relative step j of
// a dimension of k coordinates (k a power of two), coordinate c talks to
//
//   c + ρ(j) (c even),  c − ρ(j) (c odd)  (mod k),   ρ(j) = Σ_{i=0..j} (−2)^i = 1, −1, 3, −5, 11, …
//
// so the distance grows as about 2^(j+1)/3 while the data halves, and every step crosses the
// ring's wraparound links as often as its inner ones. *Mirrored*, the signs flip (the same
// pattern seen from the other direction). A dimension without wraparound (a mesh line) has no
// short cut to take: there, step j pairs c with c XOR 2^j (distance doubling), whose every
// message stays on the line.
//
//   k = 8, steps j = 0, 1, 2 (ρ = 1, −1, 3):
//     j=0   0-1  2-3  4-5  6-7
//     j=1   0-7  2-1  4-3  6-5          (7 is 0's wraparound neighbour)
//     j=2   0-3  2-5  4-7  6-1
//
// On a 2D grid the *moves* alternate between the dimensions, starting with `first`; a
// dimension whose steps are used up drops out. Move s changes one coordinate as above.
//
// The *class* of rank r at level s, T(r, s), is the set of ranks r reaches through moves
// s, s+1, …: r and its move-s peer share T(·, s) and split it into their two level-(s+1)
// classes (what each keeps in a reduce-scatter halving the data). The classes of one level
// partition the ranks (checked as the pattern is built; it holds for these peers when k is a
// power of two), so ordering the ranks depth-first by class makes every class a contiguous,
// aligned range of *positions*: rank r's block sits at position(r) of the vector cut into
// p blocks, and the blocks exchanged at every step are one contiguous range. This is how a
// Swing reduce-scatter is a recursive halving with a different rank numbering.
#pragma once

#include <bit>
#include <cstdint>
#include <vector>

#include "toroid/topology.hpp"

namespace toroid::schedule {

// The fold of one dimension of size k (swing.cpp's block comment), seen from one coordinate:
// with k2 the largest power of two <= k and rem = k - k2, coordinates c < 2·rem pair up (c even
// with c+1), the even one handing its vector to c+1 and sitting out; virtual coordinate n is
// real n < rem ? 2n+1 : n + rem.
struct DimensionFold {
  int k2 = 1, rem = 0;
  explicit DimensionFold(int k)
      : k2(static_cast<int>(std::bit_floor(static_cast<unsigned>(k)))), rem(k - k2) {}
  // No fold: all k coordinates stay in (swing_latency's combed rings, swing_dims.cpp).
  static DimensionFold whole(int k) {
    DimensionFold f(k);
    f.k2 = k;
    f.rem = 0;
    return f;
  }
  bool sends(int c) const { return c < 2 * rem && c % 2 == 0; }     // hands over, sits out
  bool receives(int c) const { return c < 2 * rem && c % 2 == 1; }  // takes a neighbour's
  int virtual_of(int c) const { return c < 2 * rem ? c / 2 : c - rem; }
  int real_of(int n) const { return n < rem ? 2 * n + 1 : n + rem; }
};

// One dimension of power-of-two size: its peers per relative step and its depth-first order.
class SwingDimension {
 public:
  SwingDimension() = default;
  // k a power of two >= 1; `short_cut`: Swing's peers (a ring), else XOR (a line).
  SwingDimension(int k, bool short_cut, bool mirrored);

  int size() const { return k_; }
  int steps() const { return steps_; }
  int peer(int c, int j) const;
  int position(int c) const { return position_[static_cast<std::size_t>(c)]; }

 private:
  int k_ = 1, steps_ = 0;
  bool short_cut_ = false, mirrored_ = false;
  std::vector<int> position_;
};

// A power-of-two grid of any number of dimensions (the virtual grid after folding) and its
// moves: round robin over the dimensions from `first`, a dimension whose steps are used up
// dropping out. Coordinates are per dimension, the first dimension first.
class SwingPattern {
 public:
  struct Move {
    int dimension = 0;
    int step = 0;  // relative step along that dimension
  };

  // sizes[d]: a power of two >= 1; short_cut[d]: Swing's peers (a ring), else XOR (a line).
  SwingPattern(const std::vector<int>& sizes, const std::vector<bool>& short_cut, int first,
               bool mirrored);
  SwingPattern(int kx, int ky, bool short_cut_x, bool short_cut_y, Axis first, bool mirrored)
      : SwingPattern({kx, ky}, {short_cut_x, short_cut_y}, first == Axis::x ? 0 : 1, mirrored) {}

  int size() const { return size_; }
  const std::vector<Move>& moves() const { return moves_; }
  // Virtual coordinates -> the peer's virtual coordinates at move s.
  std::vector<int> peer(std::vector<int> c, int s) const;
  Coord peer(Coord c, int s) const;
  // Where the block of the rank at c lies, 0..size()-1; bit (moves - 1 - s) is the half it
  // keeps at move s.
  std::uint32_t position(const std::vector<int>& c) const;
  std::uint32_t position(Coord c) const { return position(std::vector<int>{c.x, c.y}); }

 private:
  std::vector<SwingDimension> dims_;
  std::vector<Move> moves_;
  int size_ = 1;
};

// ρ(j) = Σ_{i=0..j} (−2)^i.
std::int64_t swing_rho(int j);

}  // namespace toroid::schedule
