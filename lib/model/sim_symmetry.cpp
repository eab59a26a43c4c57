#include "model/sim_symmetry.hpp"

#include <algorithm>

namespace toroid::model::sim {
namespace {

// `chip` moved by `by`, modulo the dimensions.
int moved(const Torus2D& t, int chip, Coord by) {
  const Coord c = t.coord_of(chip);
  const int X = t.x_dim(), Y = t.y_dim();
  return t.rank_of({((c.x + by.x) % X + X) % X, ((c.y + by.y) % Y + Y) % Y});
}

Coord difference(const Torus2D& t, int to, int from) {
  const Coord a = t.coord_of(to), b = t.coord_of(from);
  return {a.x - b.x, a.y - b.y};
}

// Ranks checked beyond the representatives' neighbours: spread over the torus, the same ones
// in every run.
constexpr int kSampled = 32;

}  // namespace

RankClasses::RankClasses(const Torus2D& t, int step_x, int step_y) : t_(t), step_{step_x, step_y} {
  period_[0] = step_x > 0 ? step_x : t.x_dim();
  period_[1] = step_y > 0 ? step_y : t.y_dim();
}

std::uint32_t RankClasses::class_of(int chip) const {
  const Coord c = t_.coord_of(chip);
  return static_cast<std::uint32_t>(c.x % period_[0] + period_[0] * (c.y % period_[1]));
}

int RankClasses::representative(std::uint32_t cls) const {
  const int c = static_cast<int>(cls);
  return t_.rank_of({c % period_[0], c / period_[0]});
}

int RankClasses::seen_from_representative(int chip, int other) const {
  const Coord by = difference(t_, representative(class_of(chip)), chip);
  return moved(t_, other, by);
}

std::vector<std::uint32_t> RankClasses::link_representatives() const {
  std::vector<std::uint32_t> out(static_cast<std::size_t>(t_.size()) * 4);
  for (int chip = 0; chip < t_.size(); ++chip)
    for (int d = 0; d < 4; ++d)
      out[static_cast<std::size_t>(chip * 4 + d)] =
          static_cast<std::uint32_t>(representative(class_of(chip)) * 4 + d);
  return out;
}

bool moved_copy(const Torus2D& t, const Programs& a, int rep, const Programs& b, int q) {
  if (a.ops.size() != b.ops.size() || a.deps.size() != b.deps.size() ||
      a.phase_numbers != b.phase_numbers)
    return false;
  const Coord by = difference(t, q, rep);
  for (std::size_t k = 0; k < a.ops.size(); ++k) {
    const Instr &x = a.ops[k], &y = b.ops[k];
    if (!alike_bytes(x.bytes, y.bytes) || x.kind != y.kind || x.tag != y.tag ||
        x.flags != y.flags || x.follows != y.follows || x.dep_count != y.dep_count ||
        x.dep_begin != y.dep_begin)
      return false;
    if (x.peer < 0 ? y.peer != x.peer : y.peer != moved(t, x.peer, by)) return false;
  }
  return a.deps == b.deps;
}

std::optional<RankClasses> find_symmetry(const Torus2D& t,
                                         const std::function<const Programs&(int)>& program) {
  // Steps an axis may take: 1 and 2 where it wraps and is longer than the step, and 0.
  const auto steps = [&](Axis a) {
    std::vector<int> s{0};
    for (int k : {1, 2})
      if (t.wraps(a) && t.dim(a) > k && t.dim(a) % k == 0) s.push_back(k);
    return s;
  };
  std::vector<RankClasses> candidates;
  for (int sx : steps(Axis::x))
    for (int sy : steps(Axis::y))
      if (sx > 0 || sy > 0) candidates.emplace_back(t, sx, sy);
  std::stable_sort(
      candidates.begin(), candidates.end(),
      [](const RankClasses& a, const RankClasses& b) { return a.classes() < b.classes(); });
  const auto holds = [&](const RankClasses& c, int q) {
    const int rep = c.representative(c.class_of(q));
    return rep == q || moved_copy(t, program(rep), rep, program(q), q);
  };
  for (const RankClasses& c : candidates) {
    bool ok = true;
    for (int k = 0; k < c.classes() && ok; ++k) {
      const int rep = c.representative(static_cast<std::uint32_t>(k));
      for (const Axis a : {Axis::x, Axis::y})
        if (ok && c.step(a) > 0)
          ok = holds(c, moved(t, rep, a == Axis::x ? Coord{c.step(a), 0} : Coord{0, c.step(a)}));
    }
    // A sample spread over the torus (a stride prime to most sizes), the last chip included.
    for (int k = 1; k <= kSampled && ok; ++k)
      ok = holds(c, static_cast<int>((static_cast<std::int64_t>(k) * 7919) % t.size()));
    if (ok) ok = holds(c, t.size() - 1);
    if (ok) return c;
  }
  return std::nullopt;
}

}  // namespace toroid::model::sim
