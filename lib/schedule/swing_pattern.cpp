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

SwingPattern::SwingPattern(const std::vector<int>& sizes, const std::vector<bool>& short_cut,
                           int first, bool mirrored) {
  const int dims = static_cast<int>(sizes.size());
  for (int d = 0; d < dims; ++d) {
    dims_.emplace_back(sizes[static_cast<std::size_t>(d)], short_cut[static_cast<std::size_t>(d)],
                       mirrored);
    size_ *= sizes[static_cast<std::size_t>(d)];
  }
  std::vector<int> done(sizes.size(), 0);
  for (int d = first, left = 1; left > 0; d = (d + 1) % dims) {
    if (d == first) {  // a new round: is any step left?
      left = 0;
      for (int e = 0; e < dims; ++e)
        left += dims_[static_cast<std::size_t>(e)].steps() - done[static_cast<std::size_t>(e)];
      if (left == 0) break;
    }
    if (done[static_cast<std::size_t>(d)] < dims_[static_cast<std::size_t>(d)].steps())
      moves_.push_back({d, done[static_cast<std::size_t>(d)]++});
  }
}

std::vector<int> SwingPattern::peer(std::vector<int> c, int s) const {
  const Move& m = moves_[static_cast<std::size_t>(s)];
  const auto d = static_cast<std::size_t>(m.dimension);
  c[d] = dims_[d].peer(c[d], m.step);
  return c;
}

Coord SwingPattern::peer(Coord c, int s) const {
  const std::vector<int> q = peer(std::vector<int>{c.x, c.y}, s);
  return {q[0], q[1]};
}

std::uint32_t SwingPattern::position(const std::vector<int>& c) const {
  std::uint32_t pos = 0;
  for (const Move& m : moves_) {
    const auto d = static_cast<std::size_t>(m.dimension);
    const SwingDimension& dim = dims_[d];
    pos = (pos << 1) |
          ((static_cast<std::uint32_t>(dim.position(c[d])) >> (dim.steps() - 1 - m.step)) & 1U);
  }
  return pos;
}

}  // namespace toroid::schedule
