#include "schedule/dependencies.hpp"

#include <algorithm>
#include <array>
#include <iterator>
#include <map>
#include <stdexcept>

#include "schedule/chunk_range.hpp"

namespace toroid::schedule {
namespace {

// Per buffer, a partition of [0, inf) into pieces with their last writer and readers since.
struct Piece {
  std::uint64_t end;
  std::int64_t writer = -1;
  std::vector<std::uint32_t> readers;
};

class Space {
 public:
  Space() { pieces_.emplace(0, Piece{UINT64_MAX, -1, {}}); }
  // Calls f(piece) for every piece covering [lo, hi), split so none sticks out.
  template <class F>
  void each(std::uint64_t lo, std::uint64_t hi, F&& f) {
    split(lo);
    split(hi);
    for (auto it = pieces_.find(lo); it != pieces_.end() && it->first < hi; ++it) f(it->second);
  }

 private:
  void split(std::uint64_t at) {
    auto it = std::prev(pieces_.upper_bound(at));
    if (it->first == at) return;
    Piece tail = it->second;
    it->second.end = at;
    pieces_.emplace(at, std::move(tail));
  }
  std::map<std::uint64_t, Piece> pieces_;
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

}  // namespace

void derive_dependencies(Schedule& s) {
  const bool ip = s.in_place;
  std::array<Space, 3> spaces;
  s.deps.clear();
  std::vector<std::pair<std::uint32_t, unsigned>> found;  // (earlier step, conflicts)
  for (std::size_t j = 0; j < s.steps.size(); ++j) {
    Step& st = s.steps[j];
    const ChunkRange r = read_range(st, ip, s.pieces.data()),
                     w = write_range(st, ip, s.pieces.data());
    found.clear();
    auto note = [&](std::int64_t i, unsigned what) {
      if (i < 0 || static_cast<std::size_t>(i) == j ||
          s.steps[static_cast<std::size_t>(i)].phase == st.phase)
        return;
      found.emplace_back(static_cast<std::uint32_t>(i), what);
    };
    each_piece(spaces[r.space], r, [&](Piece& p) { note(p.writer, raw); });
    each_piece(spaces[w.space], w, [&](Piece& p) {
      note(p.writer, waw);
      for (std::uint32_t q : p.readers) note(q, war);
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
      if (what == raw && in_order_reader && in_order_writer && contains(ew, r) &&
          !overlaps(w, ew)) {
        d.wait = Wait::follow;
        d.offset = r.lo - ew.lo;
      }
      s.deps.push_back(d);
    }
    st.dep_count = static_cast<std::uint32_t>(s.deps.size()) - st.dep_begin;
    // Record this step: its reads join the readers, its writes replace writer and readers.
    each_piece(spaces[r.space], r,
               [&](Piece& p) { p.readers.push_back(static_cast<std::uint32_t>(j)); });
    each_piece(spaces[w.space], w, [&](Piece& p) {
      p.writer = static_cast<std::int64_t>(j);
      p.readers.clear();
    });
  }
}

}  // namespace toroid::schedule
