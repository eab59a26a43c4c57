// Translation symmetry: the simulator runs one rank of each class of ranks whose schedules are
// the same up to moving the torus under them, and lets it stand for the whole class.
//
// Terms:
//   translation  moving every chip by (dx, dy, ...), modulo the dimensions; only along a
//                dimension that closes into a ring (on a mesh line the edge chips see other
//                links than the middle ones; a twisted torus's short dimensions lead elsewhere)
//   step         the smallest translation kept along a dimension (1 or 2; 0: none along it)
//   class        the chips one translation by whole steps carries into each other; its
//                representative is the chip with x < step_x, y < step_y, ... (any coordinate
//                along a dimension without a step); class 0 holds chip 0
//   symmetric    every chip's schedule is its representative's moved by the translation that
//                carries the representative there: the same steps, tags and dependencies,
//                every peer moved too, and sizes alike (alike_bytes: equal, or within a few
//                elements where a vector cut into blocks leaves some an element longer)
//
//   8x4, wrap y, step (0, 1):  classes are the 8 columns, represented by row 0
//
//      y=0   R0 R1 R2 R3 R4 R5 R6 R7   <- simulated
//      y=1   .  .  .  .  .  .  .  .    <- each the representative of its column moved by (0, 1),
//      y=2   .  .  .  .  .  .  .  .       (0, 2), (0, 3): their links carry what the
//      y=3   .  .  .  .  .  .  .  .       representative's links carry, at the same times
//
// Why one rank stands for its class: every rank of a class posts the same steps at the same
// times, so a link of the class of link L carries, at every moment, moved copies of what L
// carries. The simulator keeps one link per class: a transfer of a representative joins the
// representative link of each link of its route (a route that crosses two links of one class
// joins that link twice, as the real link carries this transfer and a moved copy of it), and a
// receive from a peer meets the representative of the peer's class at the step that receives
// from the sender moved back by the peer's translation.
//
// Ties: the real run orders events of one instant by when they were queued, so two ranks of a
// class may see another's flow on a link first and estimate their first segment's landing a
// little apart; the classed run treats the ranks of a class alike. docs/simulator.md ("Speed")
// has the difference measured.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "model/sim_program.hpp"
#include "toroid/topology.hpp"
#include "toroid/torus.hpp"

namespace toroid::model::sim {

// Whether two steps' sizes count as the same for a moved copy: equal, or apart by at most
// 64 bytes or 1/1024 of the larger, whichever is more (a vector cut into blocks leaves some an
// element longer, and a step may carry several blocks); the classed run's times then stand
// within about that of the full run's (docs/simulator.md "Speed").
inline bool alike_bytes(std::uint64_t a, std::uint64_t b) {
  const std::uint64_t hi = a > b ? a : b, lo = a > b ? b : a;
  return hi - lo <= (hi / 1024 > 64 ? hi / 1024 : 64);
}

class RankClasses {
 public:
  // `steps`: per dimension, 1 or 2 along one that closes into a ring and whose length it
  // divides; 0 none.
  RankClasses(const Torus& t, std::vector<int> steps);
  RankClasses(const Torus2D& t, int step_x, int step_y) : RankClasses(Torus(t), {step_x, step_y}) {}

  int classes() const noexcept { return classes_; }
  int members() const noexcept { return t_.chips() / classes(); }
  int step(int dimension) const { return step_.at(static_cast<std::size_t>(dimension)); }
  int step(Axis a) const { return step(a == Axis::x ? 0 : 1); }
  std::uint32_t class_of(int chip) const;
  int representative(std::uint32_t cls) const;
  // Chip `chip` moved by the translation that carries its class's representative back to it,
  // reversed, applied to `other`: where `other` sits as seen from the representative.
  int seen_from_representative(int chip, int other) const;
  // Per link id (model::link_id), the representative link of its class.
  std::vector<std::uint32_t> link_representatives() const;

 private:
  Torus t_;
  std::vector<int> step_, period_;
  int classes_ = 1;
};

// Whether rank q's program (`b`'s only rank) is the representative's (`a`'s only rank, chip
// `rep`) moved by the translation that carries `rep` to q: the same ops and dependencies, each
// peer moved alike.
bool moved_copy(const Torus& t, const Programs& a, int rep, const Programs& b, int q);

// The coarsest translation symmetry of the ranks' programs that holds on the representatives'
// neighbours by one step and on a sample of other ranks, or nullopt (none kept: the simulator
// then runs every rank). `program(rank)` builds one rank's program (cached by the caller).
std::optional<RankClasses> find_symmetry(const Torus& t,
                                         const std::function<const Programs&(int)>& program);

}  // namespace toroid::model::sim
