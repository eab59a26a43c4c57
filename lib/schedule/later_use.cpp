#include "schedule/later_use.hpp"

#include "schedule/chunk_range.hpp"

namespace toroid::schedule {
namespace {

// A chunk's whole span in its buffer (in place, input and output are one space).
struct Span {
  int space = 0;
  std::uint64_t lo = 0, hi = 0;
  bool empty() const { return lo >= hi; }
  bool overlaps(const Span& o) const {
    return !empty() && !o.empty() && space == o.space && lo < o.hi && o.lo < hi;
  }
  bool within(const Span& o) const {
    return !empty() && space == o.space && o.lo <= lo && hi <= o.hi;
  }
};

Span span_of(const Chunk* c, bool in_place) {
  if (!c) return {};
  const ChunkRange r = range_of(*c, in_place, nullptr);
  return {r.space, r.lo, r.hi};
}

// The later use of what step g writes, `reader` (a relay, or none: steps.size()) aside.
LaterUse later_use_of(const Schedule& s, std::size_t g, std::size_t reader) {
  const Span w = span_of(written_chunk(s.steps[g]), s.in_place);
  for (std::size_t j = g + 1; j < s.steps.size(); ++j) {
    const Step& st = s.steps[j];
    if (j == reader || st.phase == s.steps[g].phase) continue;
    if (span_of(read_chunk(st), s.in_place).overlaps(w)) return LaterUse::read;
    if (!st.dst.gathered() && w.within(span_of(written_chunk(st), s.in_place)))
      return LaterUse::dead;
  }
  return s.steps[g].dst.buf == Buf::scratch ? LaterUse::dead : LaterUse::final;
}

}  // namespace

void set_later_uses(Schedule& s) {
  s.later_use.assign(s.steps.size(), LaterUse::not_asked);
  for (std::size_t i = 0; i < s.steps.size(); ++i) {
    const Step& st = s.steps[i];
    if (st.kind == Kind::recv || st.kind == Kind::recv_reduce) {
      s.later_use[i] = later_use_of(s, i, s.steps.size());
    } else if (st.kind == Kind::send && st.dep_count == 1) {
      const Dep& d = s.deps[st.dep_begin];
      if (d.wait == Wait::follow && d.offset == 0) s.later_use[i] = later_use_of(s, d.step, i);
    }
  }
}

}  // namespace toroid::schedule
