#include "schedule/dependencies.hpp"

#include <algorithm>
#include <array>
#include <iterator>
#include <stdexcept>

#include "schedule/chunk_range.hpp"

namespace toroid::schedule {
namespace {

// Per buffer, the elements cut at every offset where some step's range (or run) begins or
// ends, so each range is a run of whole pieces; per piece its last writer and its readers since.
// The cuts are known before the first step is recorded, so the pieces are a flat array found by
// binary search (an interval map split lazily cost a tree node per cut and most of the time).
class Space {
 public:
  void cut(std::uint64_t at) {
    // Neighbouring steps often touch the same range (a receive, then the send of what it got).
    if (cuts_.size() < 4 || std::find(cuts_.end() - 4, cuts_.end(), at) == cuts_.end())
      cuts_.push_back(at);
  }
  // After the last cut(): one piece between each two neighbouring cuts.
  void seal() {
    sort_radix(cuts_);
    cuts_.erase(std::unique(cuts_.begin(), cuts_.end()), cuts_.end());
    const std::size_t n = cuts_.empty() ? 0 : cuts_.size() - 1;
    writer_.assign(n, -1);
    readers_.assign(n, kNone);
  }
  // Calls f(writer, readers) for every piece of [lo, hi), both cuts.
  template <class F>
  void each(std::uint64_t lo, std::uint64_t hi, F&& f) {
    for (std::size_t i = lower_bound(lo); i + 1 < cuts_.size() && cuts_[i] < hi; ++i)
      f(Piece{*this, i});
  }

  // One piece, as each() hands it out.
  struct Piece {
    Space& space;
    std::size_t i;
    std::int64_t writer() const { return space.writer_[i]; }
    template <class F>
    void each_reader(F&& f) const {
      for (std::uint32_t k = space.readers_[i]; k != kNone; k = space.links_[k].next)
        f(space.links_[k].step);
    }
    void add_reader(std::uint32_t step) const {
      space.links_.push_back({step, space.readers_[i]});
      space.readers_[i] = static_cast<std::uint32_t>(space.links_.size() - 1);
    }
    void set_writer(std::uint32_t step) const {
      space.writer_[i] = step;
      space.readers_[i] = kNone;
    }
  };

 private:
  // The first cut >= v, without a branch per level (the searches' mispredictions were a third
  // of the time at 4096 ranks).
  std::size_t lower_bound(std::uint64_t v) const {
    const std::uint64_t* base = cuts_.data();
    std::size_t n = cuts_.size();
    if (n == 0) return 0;
    while (n > 1) {
      const std::size_t half = n / 2;
      base = base[half] < v ? base + half : base;
      n -= half;
    }
    return static_cast<std::size_t>(base - cuts_.data()) + (*base < v ? 1 : 0);
  }
  // LSD radix sort, 11 bits a pass and only as many passes as the largest value needs: a
  // comparison sort of every rank's cuts was a tenth of a 4096-rank simulation.
  static void sort_radix(std::vector<std::uint64_t>& v) {
    std::uint64_t top = 0;
    for (std::uint64_t x : v) top |= x;
    std::vector<std::uint64_t> tmp(v.size());
    for (unsigned shift = 0; shift < 64 && (top >> shift) != 0; shift += 11) {
      std::array<std::size_t, 2049> at{};
      for (std::uint64_t x : v) ++at[((x >> shift) & 2047) + 1];
      for (std::size_t d = 1; d < at.size(); ++d) at[d] += at[d - 1];
      for (std::uint64_t x : v) tmp[at[(x >> shift) & 2047]++] = x;
      v.swap(tmp);
    }
  }

  static constexpr std::uint32_t kNone = UINT32_MAX;
  struct Link {
    std::uint32_t step, next;
  };
  std::vector<std::uint64_t> cuts_;
  std::vector<std::int64_t> writer_;    // per piece, -1: none yet
  std::vector<std::uint32_t> readers_;  // per piece, the first of its reader list in links_
  std::vector<Link> links_;             // reader lists (a piece's written over is dropped)
};

enum Conflict : unsigned { raw = 1, war = 2, waw = 4 };

// Calls f(piece) for every piece of `space` under the range (each run of a gathered one).
template <class F>
void each_piece(Space& space, const ChunkRange& r, F&& f) {
  if (r.empty()) return;
  if (!r.gathered()) return space.each(r.lo, r.hi, f);
  for (std::uint32_t k = 0; k < r.nruns; ++k)
    space.each(r.runs[k].offset, r.runs[k].offset + r.runs[k].count, f);
}

void cut_at(std::array<Space, 3>& spaces, const ChunkRange& r) {
  if (r.empty()) return;
  Space& sp = spaces[static_cast<std::size_t>(r.space)];
  if (!r.gathered()) {
    sp.cut(r.lo);
    sp.cut(r.hi);
    return;
  }
  for (std::uint32_t k = 0; k < r.nruns; ++k) {
    sp.cut(r.runs[k].offset);
    sp.cut(r.runs[k].offset + r.runs[k].count);
  }
}

}  // namespace

void derive_dependencies(Schedule& s) {
  const bool ip = s.in_place;
  std::array<Space, 3> spaces;
  for (const Step& st : s.steps) {
    cut_at(spaces, read_range(st, ip, s.pieces.data()));
    cut_at(spaces, write_range(st, ip, s.pieces.data()));
  }
  for (Space& sp : spaces) sp.seal();
  s.deps.clear();
  std::vector<std::pair<std::uint32_t, unsigned>> found;  // (earlier step, conflicts)
  // Per step: the receive it accumulates over in place, following it (accumulates_in_place),
  // or kNoStep. Its bytes are that receive's, reduced once more: whoever conflicts with it
  // conflicts with that receive too, and depends on both (so that every conflict is ordered by
  // a dependency of its own, as the verifier checks).
  constexpr std::uint32_t kNoStep = UINT32_MAX;
  std::vector<std::uint32_t> over(s.steps.size(), kNoStep);
  for (std::size_t j = 0; j < s.steps.size(); ++j) {
    Step& st = s.steps[j];
    const ChunkRange r = read_range(st, ip, s.pieces.data()),
                     w = write_range(st, ip, s.pieces.data());
    found.clear();
    auto note = [&](std::int64_t i, unsigned what) {
      for (; i >= 0 && static_cast<std::uint32_t>(i) != kNoStep;
           i = over[static_cast<std::size_t>(i)]) {
        if (static_cast<std::size_t>(i) == j ||
            s.steps[static_cast<std::size_t>(i)].phase == st.phase)
          return;
        found.emplace_back(static_cast<std::uint32_t>(i), what);
      }
    };
    each_piece(spaces[r.space], r, [&](const Space::Piece& p) { note(p.writer(), raw); });
    each_piece(spaces[w.space], w, [&](const Space::Piece& p) {
      note(p.writer(), waw);
      p.each_reader([&](std::uint32_t q) { note(q, war); });
    });
    std::sort(found.begin(), found.end());
    st.dep_begin = static_cast<std::uint32_t>(s.deps.size());
    for (std::size_t k = 0; k < found.size();) {
      const std::uint32_t i = found[k].first;
      unsigned what = 0;
      for (; k < found.size() && found[k].first == i; ++k) what |= found[k].second;
      const Step& earlier = s.steps[i];
      const ChunkRange ew = write_range(earlier, ip, s.pieces.data());
      const bool in_order_reader = st.kind == Kind::send || st.kind == Kind::recv_reduce;
      const bool in_order_writer = earlier.kind == Kind::recv || earlier.kind == Kind::recv_reduce;
      Dep d{i, Wait::done, 0};
      std::uint64_t at = 0;
      if ((what & raw) && in_order_reader && in_order_writer && position_in(ew, r, at) &&
          (what == raw ? !overlaps(w, ew) : accumulates_in_place(st, r, w))) {
        d.wait = Wait::follow;
        d.offset = at;
        if (what != raw) over[j] = i;
      }
      s.deps.push_back(d);
    }
    st.dep_count = static_cast<std::uint32_t>(s.deps.size()) - st.dep_begin;
    // Record this step: its reads join the readers, its writes replace writer and readers.
    each_piece(spaces[r.space], r,
               [&](const Space::Piece& p) { p.add_reader(static_cast<std::uint32_t>(j)); });
    each_piece(spaces[w.space], w,
               [&](const Space::Piece& p) { p.set_writer(static_cast<std::uint32_t>(j)); });
  }
}

}  // namespace toroid::schedule
