#include "model/sim_symmetry.hpp"

#include <algorithm>

#include "model/simulator.hpp"

namespace toroid::model::sim {
namespace {

// `chip` moved by `by`, modulo the dimensions.
int moved(const Torus& t, int chip, const std::vector<int>& by) {
  std::vector<int> c = t.coord_of(chip);
  for (std::size_t d = 0; d < c.size(); ++d) {
    const int k = t.size(static_cast<int>(d));
    c[d] = ((c[d] + by[d]) % k + k) % k;
  }
  return t.rank_of(c);
}

std::vector<int> difference(const Torus& t, int to, int from) {
  std::vector<int> a = t.coord_of(to);
  const std::vector<int> b = t.coord_of(from);
  for (std::size_t d = 0; d < a.size(); ++d) a[d] -= b[d];
  return a;
}

// Ranks checked beyond the representatives' neighbours: spread over the torus, the same ones
// in every run.
constexpr int kSampled = 32;

}  // namespace

RankClasses::RankClasses(const Torus& t, std::vector<int> steps)
    : t_(t), step_(std::move(steps)), period_(step_.size()) {
  step_.resize(static_cast<std::size_t>(t.dimensions()), 0);
  period_.resize(step_.size());
  for (std::size_t d = 0; d < step_.size(); ++d) {
    period_[d] = step_[d] > 0 ? step_[d] : t.size(static_cast<int>(d));
    classes_ *= period_[d];
  }
}

std::uint32_t RankClasses::class_of(int chip) const {
  const std::vector<int> c = t_.coord_of(chip);
  std::uint32_t cls = 0;
  for (std::size_t d = c.size(); d-- > 0;)
    cls = cls * static_cast<std::uint32_t>(period_[d]) +
          static_cast<std::uint32_t>(c[d] % period_[d]);
  return cls;
}

int RankClasses::representative(std::uint32_t cls) const {
  std::vector<int> c(period_.size());
  for (std::size_t d = 0; d < c.size(); ++d) {
    c[d] = static_cast<int>(cls % static_cast<std::uint32_t>(period_[d]));
    cls /= static_cast<std::uint32_t>(period_[d]);
  }
  return t_.rank_of(c);
}

int RankClasses::seen_from_representative(int chip, int other) const {
  return moved(t_, other, difference(t_, representative(class_of(chip)), chip));
}

std::vector<std::uint32_t> RankClasses::link_representatives() const {
  const int per = directions_per_chip(t_);
  std::vector<std::uint32_t> out(static_cast<std::size_t>(t_.chips()) *
                                 static_cast<std::size_t>(per));
  for (int chip = 0; chip < t_.chips(); ++chip)
    for (int d = 0; d < per; ++d)
      out[static_cast<std::size_t>(chip * per + d)] =
          static_cast<std::uint32_t>(representative(class_of(chip)) * per + d);
  return out;
}

bool moved_copy(const Torus& t, const Programs& a, int rep, const Programs& b, int q) {
  if (a.ops.size() != b.ops.size() || a.deps.size() != b.deps.size() ||
      a.phase_numbers != b.phase_numbers)
    return false;
  const std::vector<int> by = difference(t, q, rep);
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

std::optional<RankClasses> find_symmetry(const Torus& t,
                                         const std::function<const Programs&(int)>& program) {
  // Steps a dimension may take: 1, 2 and 3 where it closes into a ring longer than the step, and
  // 0 (3: an all-reduce's spread blocks repeat every p/gcd(count, p) members, on v5p's 6144
  // chips every 3, 6 or 24 at small counts: a z step of 768 ranks, three planes).
  const int dims = t.dimensions();
  std::vector<std::vector<int>> options(static_cast<std::size_t>(dims));
  for (int d = 0; d < dims; ++d) {
    options[static_cast<std::size_t>(d)] = {0};
    for (int k : {1, 2, 3})
      if (t.ring_along(d) && t.size(d) > k && t.size(d) % k == 0)
        options[static_cast<std::size_t>(d)].push_back(k);
  }
  std::vector<RankClasses> candidates;
  std::vector<int> pick(static_cast<std::size_t>(dims), 0);
  for (;;) {  // every combination of the dimensions' options
    std::vector<int> steps(static_cast<std::size_t>(dims));
    bool any = false;
    for (std::size_t d = 0; d < steps.size(); ++d) {
      steps[d] = options[d][static_cast<std::size_t>(pick[d])];
      any = any || steps[d] > 0;
    }
    if (any) candidates.emplace_back(t, steps);
    std::size_t d = 0;
    while (d < pick.size() && ++pick[d] == static_cast<int>(options[d].size())) pick[d++] = 0;
    if (d == pick.size()) break;
  }
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
      for (int d = 0; d < dims && ok; ++d)
        if (c.step(d) > 0) {
          std::vector<int> by(static_cast<std::size_t>(dims), 0);
          by[static_cast<std::size_t>(d)] = c.step(d);
          ok = holds(c, moved(t, rep, by));
        }
    }
    // A sample spread over the torus (a stride prime to most sizes), the last chip included.
    for (int k = 1; k <= kSampled && ok; ++k)
      ok = holds(c, static_cast<int>((static_cast<std::int64_t>(k) * 7919) % t.chips()));
    if (ok) ok = holds(c, t.chips() - 1);
    if (ok) return c;
  }
  return std::nullopt;
}

}  // namespace toroid::model::sim
