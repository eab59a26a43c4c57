#include "schedule/later_use.hpp"

#include "schedule/chunk_range.hpp"

namespace toroid::schedule {
namespace {

// A chunk's whole extent, a gathered one's runs aside: the engine decided by these spans when
// it scanned by address at every bind, and the answers stay the same.
ChunkRange hull(ChunkRange r) {
  r.runs = nullptr;
  r.nruns = 0;
  return r;
}

// The later use of what step g writes, `reader` (a relay, or none: steps.size()) aside.
LaterUse later_use_of(const Schedule& s, std::size_t g, std::size_t reader) {
  const bool ip = s.in_place;
  const Block* pieces = s.pieces.data();
  const ChunkRange w = hull(write_range(s.steps[g], ip, pieces));
  for (std::size_t j = g + 1; j < s.steps.size(); ++j) {
    const Step& st = s.steps[j];
    if (j == reader || st.phase == s.steps[g].phase) continue;
    if (overlaps(hull(read_range(st, ip, pieces)), w)) return LaterUse::read;
    if (!w.empty() && !st.dst.gathered() && contains(write_range(st, ip, pieces), w))
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
