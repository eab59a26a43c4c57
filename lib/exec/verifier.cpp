// In-process verifier (see verifier.hpp for the rules it enforces).
#include "exec/verifier.hpp"

#include <fmt/format.h>

#include <cstring>
#include <deque>

#include "core/element.hpp"
#include "exec/buffers.hpp"
#include "kernels/reduce.hpp"
#include "toroid/collectives.hpp"

namespace toroid::exec {
namespace {

using schedule::Buf;
using schedule::Chunk;
using schedule::Kind;
using schedule::Schedule;
using schedule::Step;

struct Interval {
  int space;  // 0: input/output (they alias when in place), 1: output, 2: scratch
  std::uint64_t lo, hi;
};

Interval interval(const Chunk& c, bool in_place) {
  int space = c.buf == Buf::scratch ? 2 : c.buf == Buf::output ? 1 : 0;
  if (in_place && space == 0) space = 1;
  return {space, c.offset, c.offset + c.count};
}

bool overlaps(const Interval& a, const Interval& b) {
  return a.space == b.space && a.lo < b.hi && b.lo < a.hi && a.lo < a.hi && b.lo < b.hi;
}

bool reads(const Step& s) { return s.kind == Kind::send || s.kind == Kind::recv_reduce || s.kind == Kind::copy; }
bool writes(const Step& s) { return s.kind != Kind::send; }

struct RankState {
  std::size_t begin = 0, end = 0;  // current phase group
  std::vector<bool> matched;       // per step
  bool finished = false;
};

class Runner {
 public:
  Runner(const std::vector<Schedule>& s, std::vector<RankMemory>& m, DataType t, ReduceOp op,
         Traffic* traffic)
      : sched_(s), mem_(m), type_(t), esize_(size_of(t)), reduce_(kernels::reduce_fn(t, op)),
        traffic_(traffic) {}

  std::string run() {
    const int p = static_cast<int>(sched_.size());
    state_.resize(p);
    scratch_.resize(p);
    for (int r = 0; r < p; ++r) {
      if (sched_[r].rank != r || sched_[r].nranks != p)
        return fmt::format("schedule {} says rank {} of {}", r, sched_[r].rank, sched_[r].nranks);
      scratch_[r].assign(sched_[r].scratch_count * esize_, std::byte{0});
      state_[r].matched.assign(sched_[r].steps.size(), false);
      if (auto e = check_steps(r); !e.empty()) return e;
    }
    for (int r = 0; r < p; ++r)
      if (auto e = enter_group(r, 0); !e.empty()) return e;
    while (!work_.empty()) {
      const int r = work_.front();
      work_.pop_front();
      if (auto e = progress(r); !e.empty()) return e;
    }
    std::string stuck;
    for (int r = 0; r < p; ++r) {
      if (state_[r].finished) continue;
      for (std::size_t i = state_[r].begin; i < state_[r].end; ++i)
        if (!state_[r].matched[i]) {
          stuck += fmt::format("\n  rank {} waits at {}", r, schedule::describe(sched_[r].steps[i]));
          break;
        }
    }
    return stuck.empty() ? "" : "deadlock:" + stuck;
  }

 private:
  BufferSet buffers(int r) {
    RankMemory& m = mem_[r];
    BufferSet b;
    b.output = m.output.data();
    b.input = m.in_place ? m.output.data() : m.input.data();
    b.scratch = scratch_[r].data();
    b.elem_size = esize_;
    return b;
  }

  std::uint64_t capacity(int r, Buf b) const {
    const RankMemory& m = mem_[r];
    const std::size_t bytes = b == Buf::scratch ? scratch_[r].size()
                              : b == Buf::output || m.in_place ? m.output.size()
                                                               : m.input.size();
    return bytes / esize_;
  }

  // Static checks: steps ordered by phase, chunks in bounds, peers valid, no hazard in a phase.
  std::string check_steps(int r) {
    const auto& steps = sched_[r].steps;
    const int p = static_cast<int>(sched_.size());
    const bool ip = mem_[r].in_place;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const Step& s = steps[i];
      if (i > 0 && s.phase < steps[i - 1].phase)
        return fmt::format("rank {}: steps out of phase order at {}", r, schedule::describe(s));
      const bool remote = s.kind == Kind::send || s.kind == Kind::recv || s.kind == Kind::recv_reduce;
      if (remote && (s.peer < 0 || s.peer >= p || s.peer == r))
        return fmt::format("rank {}: bad peer in {}", r, schedule::describe(s));
      if (s.kind == Kind::send || s.kind == Kind::recv_reduce || s.kind == Kind::copy)
        if (s.src.offset + s.src.count > capacity(r, s.src.buf))
          return fmt::format("rank {}: source out of bounds in {}", r, schedule::describe(s));
      if (writes(s) && s.dst.offset + s.dst.count > capacity(r, s.dst.buf))
        return fmt::format("rank {}: destination out of bounds in {}", r, schedule::describe(s));
      if (writes(s) && s.dst.buf == Buf::input && !ip)
        return fmt::format("rank {}: writes the input buffer in {}", r, schedule::describe(s));
      if ((s.kind == Kind::recv_reduce || s.kind == Kind::copy) && s.src.count != s.dst.count)
        return fmt::format("rank {}: source and destination sizes differ in {}", r, schedule::describe(s));
      for (std::size_t j = i + 1; j < steps.size() && steps[j].phase == s.phase; ++j) {
        const Step& t = steps[j];
        if (remote && s.kind == t.kind && s.peer == t.peer && s.tag == t.tag)
          return fmt::format("rank {}: two {} with peer {} tag {} in phase {}", r,
                             schedule::to_string(s.kind), s.peer, s.tag, s.phase);
        auto clash = [&](const Step& w, const Step& o) {
          if (!writes(w)) return false;
          const Interval wi = interval(w.dst, ip);
          return (writes(o) && overlaps(wi, interval(o.dst, ip))) ||
                 (reads(o) && overlaps(wi, interval(o.src, ip)));
        };
        if (clash(s, t) || clash(t, s))
          return fmt::format("rank {}: hazard in phase {} between '{}' and '{}'", r, s.phase,
                             schedule::describe(s), schedule::describe(t));
      }
    }
    return "";
  }

  std::string enter_group(int r, std::size_t begin) {
    RankState& st = state_[r];
    const auto& steps = sched_[r].steps;
    for (;;) {
      st.begin = begin;
      st.end = begin;
      if (begin >= steps.size()) {
        st.finished = true;
        return "";
      }
      while (st.end < steps.size() && steps[st.end].phase == steps[begin].phase) ++st.end;
      const BufferSet b = buffers(r);
      bool remote = false;
      for (std::size_t i = st.begin; i < st.end; ++i) {
        const Step& s = steps[i];
        if (s.kind == Kind::copy) {
          if (b.readable(s.src) != b.writable(s.dst))
            std::memmove(b.writable(s.dst), b.readable(s.src), s.dst.count * esize_);
          st.matched[i] = true;
        } else if (s.kind == Kind::scale) {
          kernels::divide(type_, b.writable(s.dst), s.dst.count, s.divisor);
          st.matched[i] = true;
        } else {
          remote = true;
          // A receiver that looked before this send existed must look again.
          if (s.kind == Kind::send) work_.push_back(s.peer);
        }
      }
      if (remote) {
        work_.push_back(r);
        return "";
      }
      begin = st.end;
    }
  }

  std::string progress(int r) {
    RankState& st = state_[r];
    if (st.finished) return "";
    const auto& steps = sched_[r].steps;
    for (std::size_t i = st.begin; i < st.end; ++i) {
      if (st.matched[i]) continue;
      const Step& s = steps[i];
      if (s.kind != Kind::recv && s.kind != Kind::recv_reduce) continue;
      RankState& ps = state_[s.peer];
      if (ps.finished) continue;
      const auto& psteps = sched_[s.peer].steps;
      for (std::size_t j = ps.begin; j < ps.end; ++j) {
        const Step& t = psteps[j];
        if (ps.matched[j] || t.kind != Kind::send || t.peer != r || t.tag != s.tag) continue;
        if (t.src.count != s.dst.count)
          return fmt::format("size mismatch: rank {} '{}' meets rank {} '{}'", s.peer,
                             schedule::describe(t), r, schedule::describe(s));
        deliver(s.peer, t, r, s);
        ps.matched[j] = true;
        st.matched[i] = true;
        if (group_done(s.peer)) work_.push_back(s.peer);
        break;
      }
    }
    if (group_done(r)) return enter_group(r, st.end);
    return "";
  }

  bool group_done(int r) const {
    const RankState& st = state_[r];
    if (st.finished) return false;
    for (std::size_t i = st.begin; i < st.end; ++i)
      if (!st.matched[i]) return false;
    return true;
  }

  void deliver(int from, const Step& send, int to, const Step& recv) {
    const BufferSet sb = buffers(from), rb = buffers(to);
    const std::size_t bytes = recv.dst.count * esize_;
    if (recv.kind == Kind::recv) {
      std::memcpy(rb.writable(recv.dst), sb.readable(send.src), bytes);
    } else {
      // Stage first: the sender's chunk may alias nothing of ours, but keep MPI semantics.
      staging_.assign(sb.readable(send.src), sb.readable(send.src) + bytes);
      reduce_(rb.writable(recv.dst), rb.readable(recv.src), staging_.data(), recv.dst.count);
    }
    if (traffic_) {
      traffic_->links.insert({from, to});
      ++traffic_->messages;
      traffic_->bytes += bytes;
    }
  }

  const std::vector<Schedule>& sched_;
  std::vector<RankMemory>& mem_;
  DataType type_;
  std::size_t esize_;
  kernels::ReduceFn reduce_;
  Traffic* traffic_;
  std::vector<RankState> state_;
  std::vector<std::vector<std::byte>> scratch_;
  std::deque<int> work_;
  std::vector<std::byte> staging_;
};

}  // namespace

std::string execute_in_process(const std::vector<Schedule>& schedules,
                               std::vector<RankMemory>& memory, DataType type, ReduceOp op,
                               Traffic* traffic) {
  if (schedules.size() != memory.size()) return "one memory per schedule needed";
  return Runner(schedules, memory, type, op, traffic).run();
}

std::string check_collective(const CheckSpec& spec,
                             const std::function<schedule::Schedule(int rank)>& build,
                             Traffic* traffic) {
  using schedule::Collective;
  const int p = spec.nranks;
  const std::size_t es = size_of(spec.type);
  const std::uint64_t n = spec.count;
  // Full-length inputs per rank (allgather uses only each rank's own block of them).
  std::vector<std::vector<std::byte>> full(p, std::vector<std::byte>(n * es));
  for (int r = 0; r < p; ++r)
    for (std::uint64_t i = 0; i < n; ++i) store_as(spec.type, full[r].data() + i * es, exact_input(spec.op, r, i));
  std::vector<std::byte> reference(n * es);
  if (spec.collective == Collective::allgather) {
    for (int r = 0; r < p; ++r) {
      const Block b = block_of(n, p, r);
      if (b.count > 0) std::memcpy(reference.data() + b.offset * es, full[r].data() + b.offset * es, b.count * es);
    }
  } else if (p > 0) {
    reference = full[0];
    const auto reduce = kernels::reduce_fn(spec.type, spec.op);
    for (int r = 1; r < p; ++r) reduce(reference.data(), reference.data(), full[r].data(), n);
    if (spec.op == ReduceOp::avg) kernels::divide(spec.type, reference.data(), n, static_cast<std::uint32_t>(p));
  }

  std::vector<RankMemory> mem(p);
  std::vector<Schedule> schedules;
  for (int r = 0; r < p; ++r) {
    const Block own = block_of(n, p, r);
    RankMemory& m = mem[r];
    m.in_place = spec.in_place;
    switch (spec.collective) {
      case Collective::allreduce:
        m.input = full[r];
        m.output.assign(n * es, std::byte{0x5a});
        break;
      case Collective::reduce_scatter:
        m.input = full[r];
        m.output.assign((spec.in_place ? n : own.count) * es, std::byte{0x5a});
        break;
      case Collective::allgather:
        m.input.assign(full[r].begin() + own.offset * es, full[r].begin() + (own.offset + own.count) * es);
        m.output.assign(n * es, std::byte{0x5a});
        break;
    }
    if (spec.in_place) {
      if (spec.collective != Collective::allgather) m.output = m.input;
      else if (own.count > 0) std::memcpy(m.output.data() + own.offset * es, m.input.data(), own.count * es);
      m.input.clear();
    }
    schedules.push_back(build(r));
  }
  if (auto e = execute_in_process(schedules, mem, spec.type, spec.op, traffic); !e.empty()) return e;

  for (int r = 0; r < p; ++r) {
    const Block own = block_of(n, p, r);
    const bool scatter = spec.collective == Collective::reduce_scatter;
    const std::uint64_t at = scatter && !spec.in_place ? 0 : (scatter ? own.offset : 0);
    const std::uint64_t ref_at = scatter ? own.offset : 0;
    const std::uint64_t len = scatter ? own.count : n;
    for (std::uint64_t i = 0; i < len; ++i)
      if (std::memcmp(mem[r].output.data() + (at + i) * es, reference.data() + (ref_at + i) * es, es) != 0)
        return fmt::format("{} of {} elements on {} ranks ({}, {}, {}): rank {} element {} differs "
                           "from the reference",
                           toroid::to_string(spec.collective), n, p, to_string(spec.type),
                           to_string(spec.op), spec.in_place ? "in place" : "out of place", r,
                           ref_at + i);
  }
  return "";
}

}  // namespace toroid::exec
