#include "exec/shm_window.hpp"

#include <algorithm>

#include "exec/stuck.hpp"
#include "kernels/reduce.hpp"

namespace toroid::exec {
namespace {

using schedule::Kind;
using schedule::Step;

struct Range {
  const std::byte* begin = nullptr;
  const std::byte* end = nullptr;
  bool empty() const { return begin == end; }
  bool overlaps(const Range& o) const { return !empty() && !o.empty() && begin < o.end && o.begin < end; }
  bool operator==(const Range& o) const { return begin == o.begin && end == o.end; }
  bool within(const Range& o) const { return !empty() && o.begin <= begin && end <= o.end; }
};

std::size_t phase_end(const schedule::Schedule& s, std::size_t b) {
  std::size_t e = b;
  while (e < s.steps.size() && s.steps[e].phase == s.steps[b].phase) ++e;
  return e;
}

bool is_local(const Step& st) { return st.kind == Kind::copy || st.kind == Kind::scale; }

bool same_channel(const ShmTransfer& a, const ShmTransfer& b) {
  return a.sends() == b.sends() && a.channel.head == b.channel.head;
}

// What a step reads and writes, by address (in place, input and output are one buffer; a scale
// reads and writes its chunk).
Range step_reads(const Step& st, const BufferSet& buf) {
  const std::size_t es = buf.elem_size;
  switch (st.kind) {
    case Kind::send: case Kind::recv_reduce: case Kind::copy: {
      const std::byte* p = buf.readable(st.src);
      return {p, p + st.src.count * es};
    }
    case Kind::scale: {
      const std::byte* p = buf.readable(st.dst);
      return {p, p + st.dst.count * es};
    }
    case Kind::recv: return {};
  }
  return {};
}
Range step_writes(const Step& st, const BufferSet& buf) {
  if (st.kind == Kind::send) return {};
  const std::byte* p = buf.writable(st.dst);
  return {p, p + st.dst.count * buf.elem_size};
}

// What becomes of the bytes step g writes once step `reader` (a relay, or none) has read them:
// dead (no other later step reads them before one overwrites them all, or the schedule ends
// with them in scratch; a ring all-reduce's partial sums), read (something else reads them
// later), or final (output that nothing in the collective reads again).
enum class LaterUse { dead, read, final };
LaterUse later_use(const schedule::Schedule& s, std::size_t g, std::size_t reader, const BufferSet& buf) {
  const Range w = step_writes(s.steps[g], buf);
  for (std::size_t j = g + 1; j < s.steps.size(); ++j) {
    const Step& st = s.steps[j];
    if (j == reader || st.phase == s.steps[g].phase) continue;
    if (step_reads(st, buf).overlaps(w)) return LaterUse::read;
    if (w.within(step_writes(st, buf))) return LaterUse::dead;
  }
  return s.steps[g].dst.buf == schedule::Buf::scratch ? LaterUse::dead : LaterUse::final;
}

// Receives at least this large whose bytes are final write them with non-temporal stores.
constexpr std::size_t kStreamBytes = std::size_t{1} << 20;

}  // namespace

bool shm_only(const schedule::Schedule& s, std::size_t b, std::size_t e, const ShmLinks& links, bool first) {
  for (std::size_t i = b; i < e; ++i) {
    const Step& st = s.steps[i];
    if (is_local(st) ? !first : !links.carries(st.peer, st.tag)) return false;
  }
  return true;
}

std::size_t run_shm_window(const schedule::Schedule& s, std::size_t b, const BufferSet& buf,
                           const ExecParams& params, MPI_Comm comm, Workspace& ws) {
  const ShmLinks& links = *params.links;
  const kernels::ReduceFn reduce = kernels::reduce_fn(params.type, params.op);
  const kernels::ReduceCopyFn reduce_copy = kernels::reduce_copy_fn(params.type, params.op);
  const kernels::CopyFn copy_stream = kernels::copy_stream_fn();
  std::vector<ShmTransfer>& xfers = ws.shm;
  std::vector<detail::WindowDeps>& deps = ws.window;
  xfers.clear();
  deps.clear();

  // Gather the window's transfers with what each waits for.
  std::size_t e = b;
  for (bool first = true; e < s.steps.size(); first = false) {
    const std::size_t pe = phase_end(s, e);
    if (!shm_only(s, e, pe, links, first)) break;
    for (std::size_t i = e; i < pe; ++i) {
      const Step& st = s.steps[i];
      if (is_local(st)) continue;
      const ShmTransfer t = shm_transfer_for(st, links, buf);
      const Range t_reads = step_reads(st, buf), t_writes = step_writes(st, buf);
      detail::WindowDeps d;
      d.phase = st.phase;
      for (std::size_t j = 0; j < xfers.size(); ++j) {
        const ShmTransfer& o = xfers[j];
        if (deps[j].phase == st.phase) continue;  // same phase: hazard-free by construction
        const Range o_reads = step_reads(*o.step, buf), o_writes = step_writes(*o.step, buf);
        const bool reads_what_o_writes = t_reads.overlaps(o_writes);
        if (reads_what_o_writes && t_reads.within(o_writes) && d.gate < 0 && !t_writes.overlaps(o_writes)) {
          d.gate = static_cast<int>(j);
          d.gate_offset = static_cast<std::size_t>(t.from - o.into);
          if (t_reads == o_writes && t.sends() && deps[j].relay < 0 && t.channel.slot_bytes == o.channel.slot_bytes) {
            deps[j].relay = static_cast<int>(xfers.size());
            const LaterUse use = later_use(s, static_cast<std::size_t>(o.step - s.steps.data()),
                                           static_cast<std::size_t>(&st - s.steps.data()), buf);
            xfers[j].keep_dst = use != LaterUse::dead;
            xfers[j].store = use == LaterUse::final && o.bytes >= kStreamBytes ? copy_stream : nullptr;
          }
          continue;
        }
        if (reads_what_o_writes || t_writes.overlaps(o_reads) || t_writes.overlaps(o_writes) ||
            same_channel(t, o))
          d.blockers.push_back(static_cast<int>(j));
      }
      xfers.push_back(t);
      deps.push_back(std::move(d));
      if (st.kind == Kind::recv && t.bytes >= kStreamBytes &&
          later_use(s, i, s.steps.size(), buf) == LaterUse::final)
        xfers.back().store = copy_stream;
    }
    e = pe;
    if (first) {
      // The first phase's local steps run now, as in any phase (no hazard within a phase).
      for (std::size_t i = b; i < pe; ++i) run_local_step(s.steps[i], buf, params.type);
    }
  }

  // Move whatever may move; back off (spin, then yield the core) when nothing can.
  auto blocked_by = [&](const detail::WindowDeps& d) {
    for (int j : d.blockers)
      if (!xfers[static_cast<std::size_t>(j)].finished()) return true;
    return false;
  };
  Backoff backoff(params.timeout_s);
  std::size_t first_open = 0;
  for (;;) {
    bool moved = false;
    while (first_open < xfers.size() && xfers[first_open].finished()) ++first_open;
    if (first_open == xfers.size()) return e;
    for (std::size_t i = first_open; i < xfers.size(); ++i) {
      ShmTransfer& t = xfers[i];
      if (t.finished()) continue;
      const detail::WindowDeps& d = deps[i];
      if (blocked_by(d)) continue;
      std::size_t limit = t.bytes;
      if (d.gate >= 0) {  // the part of the gate's bytes that are final covers this much of t
        const std::size_t ready = xfers[static_cast<std::size_t>(d.gate)].done;
        limit = ready > d.gate_offset ? std::min(ready - d.gate_offset, t.bytes) : 0;
      }
      if (t.sends()) {
        moved |= t.push(limit);
      } else {
        ShmTransfer* relay = d.relay >= 0 && !blocked_by(deps[static_cast<std::size_t>(d.relay)])
                                 ? &xfers[static_cast<std::size_t>(d.relay)]
                                 : nullptr;
        moved |= t.pop(reduce, limit, relay, reduce_copy);
      }
    }
    if (moved) {
      backoff.moved();
    } else if (backoff.idle()) {
      int shown = 0;
      abort_stuck(params, comm, xfers[first_open].step->phase, describe_waiting(xfers, 8, shown));
    }
  }
}

}  // namespace toroid::exec
