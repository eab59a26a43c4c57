#include "schedule/swing_pattern.hpp"

#include <algorithm>
#include <bit>
#include <numeric>
#include <stdexcept>
#include <string>

namespace toroid::schedule {

std::int64_t swing_rho(int j) {
  std::int64_t rho = 0, term = 1;
  for (int i = 0; i <= j; ++i, term *= -2) rho += term;
  return rho;
}

SwingDimension::SwingDimension(int k, bool short_cut, bool mirrored)
    : k_(k), short_cut_(short_cut), mirrored_(mirrored) {
  if (k < 1 || !std::has_single_bit(static_cast<unsigned>(k)))
    throw std::logic_error("SwingDimension: size " + std::to_string(k) + " is not a power of two");
  steps_ = std::countr_zero(static_cast<unsigned>(k));
  const auto K = static_cast<std::size_t>(k);
  // label[l][c]: the smallest coordinate of c's class at level l (reached through steps l..).
  std::vector<std::vector<int>> label(static_cast<std::size_t>(steps_) + 1, std::vector<int>(K));
  std::iota(label.back().begin(), label.back().end(), 0);
  std::vector<int> partner(K);
  for (int l = steps_ - 1; l >= 0; --l) {
    const auto& below = label[static_cast<std::size_t>(l) + 1];
    std::fill(partner.begin(), partner.end(), -1);
    for (int c = 0; c < k; ++c) {
      const int mine = below[c], theirs = below[static_cast<std::size_t>(peer(c, l))];
      int& p = partner[static_cast<std::size_t>(mine)];
      if (mine == theirs || (p >= 0 && p != theirs))
        throw std::logic_error("Swing peers do not split classes at step " + std::to_string(l) +
                               " of size " + std::to_string(k));
      p = theirs;
    }
    for (int c = 0; c < k; ++c) {
      const int mine = below[c], theirs = partner[static_cast<std::size_t>(mine)];
      if (partner[static_cast<std::size_t>(theirs)] != mine)
        throw std::logic_error("Swing peers are not paired at step " + std::to_string(l));
      label[static_cast<std::size_t>(l)][c] = std::min(mine, theirs);
    }
  }
  // Depth first: by class at level 1, then 2, ...; siblings by their smallest coordinate.
  std::vector<int> order(K);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    for (int l = 1; l <= steps_; ++l) {
      const auto& at = label[static_cast<std::size_t>(l)];
      if (at[a] != at[b]) return at[a] < at[b];
    }
    return false;
  });
  position_.resize(K);
  for (int i = 0; i < k; ++i) position_[static_cast<std::size_t>(order[i])] = i;
}

int SwingDimension::peer(int c, int j) const {
  if (!short_cut_) return c ^ (1 << j);
  const std::int64_t sign = ((c % 2 == 0) != mirrored_) ? 1 : -1;
  const std::int64_t q = (c + sign * swing_rho(j)) % k_;
  return static_cast<int>(q < 0 ? q + k_ : q);
}

SwingPattern::SwingPattern(int kx, int ky, bool short_cut_x, bool short_cut_y, Axis first,
                           bool mirrored)
    : dims_{SwingDimension(kx, short_cut_x, mirrored), SwingDimension(ky, short_cut_y, mirrored)} {
  int done[2] = {0, 0};
  int d = first == Axis::x ? 0 : 1;
  while (done[0] < dims_[0].steps() || done[1] < dims_[1].steps()) {
    if (done[d] < dims_[d].steps()) {
      moves_.push_back({d == 0 ? Axis::x : Axis::y, done[d]});
      ++done[d];
    }
    d = 1 - d;
  }
}

Coord SwingPattern::peer(Coord c, int s) const {
  const Move& m = moves_[static_cast<std::size_t>(s)];
  if (m.axis == Axis::x)
    c.x = dims_[0].peer(c.x, m.step);
  else
    c.y = dims_[1].peer(c.y, m.step);
  return c;
}

std::uint32_t SwingPattern::position(Coord c) const {
  std::uint32_t pos = 0;
  for (const Move& m : moves_) {
    const SwingDimension& d = dims_[m.axis == Axis::x ? 0 : 1];
    const int along = m.axis == Axis::x ? c.x : c.y;
    pos = (pos << 1) |
          ((static_cast<std::uint32_t>(d.position(along)) >> (d.steps() - 1 - m.step)) & 1U);
  }
  return pos;
}

}  // namespace toroid::schedule
