// In-process verifier (see verifier.hpp for the rules it enforces).
#include "model/verifier.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <tuple>
#include <vector>

#include "core/element.hpp"
#include "kernels/reduce.hpp"
#include "schedule/buffers.hpp"
#include "schedule/chunk_range.hpp"
#include "schedule/wait_graph.hpp"
#include "toroid/block.hpp"

namespace toroid::model {
namespace {

using schedule::Buf;
using schedule::BufferSet;
using schedule::Chunk;
using schedule::Kind;
using schedule::Schedule;
using schedule::Step;

using schedule::ChunkRange;
using schedule::read_range;
using schedule::write_range;

bool writes(const Step& s) { return s.kind != Kind::send; }

// Steps guaranteed finished before step j starts: for a `done` dep d, d and what d had waited
// for; for a `follow` dep, only what d had waited for (d itself may still be running).
class Finished {
 public:
  explicit Finished(const Schedule& s)
      : n_(s.steps.size()), words_((n_ + 63) / 64), bits_(n_ * words_, 0) {
    for (std::size_t j = 0; j < n_; ++j) {
      const Step& st = s.steps[j];
      for (std::uint32_t k = 0; k < st.dep_count; ++k) {
        const schedule::Dep& d = s.deps[st.dep_begin + k];
        if (d.step >= j) continue;  // reported by the caller
        for (std::size_t w = 0; w < words_; ++w)
          bits_[j * words_ + w] |= bits_[d.step * words_ + w];
        if (d.wait == schedule::Wait::done)
          bits_[j * words_ + d.step / 64] |= 1ull << (d.step % 64);
      }
    }
  }
  bool before(std::size_t i, std::size_t j) const {
    return bits_[j * words_ + i / 64] >> (i % 64) & 1;
  }

 private:
  std::size_t n_, words_;
  std::vector<std::uint64_t> bits_;
};

// The pairwise part of the dependency check (every two steps that touch a common element, the
// transitive order between them quadratic in the steps): it runs on schedules of at most this
// many steps, on every rank up to kPairwiseRanks ranks and on ranks 0, 1, p/2 and p-1 beyond (one
// builder makes every rank's schedule; 4096 ranks of ring, each checked, took 45 s of the unit
// tests).
constexpr std::size_t kPairwiseSteps = 4096;
constexpr int kPairwiseRanks = 64;

// Two steps of one rank that touch a common element, the later one reading what the earlier
// wrote (raw) or writing what the earlier read or wrote (other).
struct Hazard {
  std::uint32_t later, earlier;
  bool raw, other;
};

// Every hazard of a schedule, ordered by the later step, then the earlier. The steps' touched
// ranges, sorted by buffer and start, are swept left to right; a range stays open until a start
// passes its end, and each new range is compared with the open ones only, so the cost is the
// pairs that meet rather than all pairs of steps:
//
//   output   [--1 write--)   [--3 read--)
//               [--2 read--------)          1-2 meet (raw), 2-3 meet (two reads: none),
//   scratch  [--4 write----------------)    1-3 never compared; 4 is another buffer
std::vector<Hazard> hazards(const std::vector<Step>& steps, bool ip, const Block* pieces) {
  struct Touch {
    ChunkRange range;
    std::uint32_t step;
    bool write;
  };
  std::vector<Touch> touches;
  touches.reserve(2 * steps.size());
  for (std::uint32_t j = 0; j < steps.size(); ++j) {
    const ChunkRange rd = read_range(steps[j], ip, pieces), wr = write_range(steps[j], ip, pieces);
    if (!rd.empty()) touches.push_back({rd, j, false});
    if (!wr.empty()) touches.push_back({wr, j, true});
  }
  std::sort(touches.begin(), touches.end(), [](const Touch& x, const Touch& y) {
    return x.range.space != y.range.space ? x.range.space < y.range.space : x.range.lo < y.range.lo;
  });
  std::vector<Hazard> found;
  std::vector<const Touch*> open;  // touches of this buffer that may still meet the next ones
  for (const Touch& t : touches) {
    std::erase_if(open, [&](const Touch* o) {
      return o->range.space != t.range.space || o->range.hi <= t.range.lo;
    });
    for (const Touch* o : open) {
      if (o->step == t.step || !overlaps(o->range, t.range)) continue;
      const Touch &e = o->step < t.step ? *o : t, &l = o->step < t.step ? t : *o;
      if (!e.write && !l.write) continue;  // two reads
      found.push_back({l.step, e.step, e.write && !l.write, l.write});
    }
    open.push_back(&t);
  }
  std::sort(found.begin(), found.end(), [](const Hazard& x, const Hazard& y) {
    return x.later != y.later ? x.later < y.later : x.earlier < y.earlier;
  });
  // One entry per pair of steps (a scale, or two touches of each, may meet more than once).
  std::vector<Hazard> pairs;
  for (const Hazard& h : found) {
    if (!pairs.empty() && pairs.back().later == h.later && pairs.back().earlier == h.earlier) {
      pairs.back().raw |= h.raw;
      pairs.back().other |= h.other;
    } else {
      pairs.push_back(h);
    }
  }
  return pairs;
}

struct RankState {
  std::vector<bool> finished;  // per step
  schedule::WaitGraph graph;   // waits: dependencies and channel predecessor not finished
  std::size_t first_open = 0;
  // Per channel (direction, peer, tag): the step there that could run and waits for its peer.
  std::map<std::tuple<bool, int, int>, std::size_t> ready;
};

class Runner {
 public:
  Runner(const std::vector<Schedule>& s, std::vector<RankMemory>& m, DataType t, ReduceOp op,
         Traffic* traffic)
      : sched_(s),
        mem_(m),
        type_(t),
        esize_(size_of(t)),
        reduce_(kernels::reduce_fn(t, op)),
        traffic_(traffic) {}

  std::string run() {
    const int p = static_cast<int>(sched_.size());
    state_.resize(p);
    scratch_.resize(p);
    for (int r = 0; r < p; ++r) {
      if (sched_[r].rank != r || sched_[r].nranks != p)
        return fmt::format("schedule {} says rank {} of {}", r, sched_[r].rank, sched_[r].nranks);
      scratch_[r].assign(sched_[r].scratch_count * esize_, std::byte{0});
      if (auto e = check_steps(r); !e.empty()) return e;
      if (auto e = check_dependencies(r); !e.empty()) return e;
      index_channels(r);
    }
    // Dataflow: a step runs once what it waits for has finished and the step before it on its
    // channel has; a transfer runs when both ends can (rendezvous). Each step is run once, when
    // its last wait ends.
    for (int r = 0; r < p; ++r)
      for (std::size_t j = 0; j < sched_[r].steps.size(); ++j)
        if (state_[r].graph.waits[j] == 0) work_.push_back({r, j});
    while (!work_.empty()) {
      const auto [r, j] = work_.back();
      work_.pop_back();
      if (auto e = run_step(r, j); !e.empty()) return e;
    }
    std::string stuck;
    for (int r = 0; r < p; ++r) {
      RankState& st = state_[r];
      while (st.first_open < sched_[r].steps.size() && st.finished[st.first_open]) ++st.first_open;
      if (st.first_open < sched_[r].steps.size())
        stuck += fmt::format("\n  rank {} waits at {}", r,
                             schedule::describe(sched_[r].steps[st.first_open]));
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
    const std::size_t bytes = b == Buf::scratch                ? scratch_[r].size()
                              : b == Buf::output || m.in_place ? m.output.size()
                                                               : m.input.size();
    return bytes / esize_;
  }

  // Static checks: steps ordered by phase, chunks in bounds, peers valid, no hazard in a phase.
  std::string check_steps(int r) {
    const auto& steps = sched_[r].steps;
    const Block* pieces = sched_[r].pieces.data();
    const int p = static_cast<int>(sched_.size());
    const bool ip = mem_[r].in_place;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const Step& s = steps[i];
      if (i > 0 && s.phase < steps[i - 1].phase)
        return fmt::format("rank {}: steps out of phase order at {}", r, schedule::describe(s));
      const bool remote =
          s.kind == Kind::send || s.kind == Kind::recv || s.kind == Kind::recv_reduce;
      if (remote && (s.peer < 0 || s.peer >= p || s.peer == r))
        return fmt::format("rank {}: bad peer in {}", r, schedule::describe(s));
      const bool reads_src = s.kind == Kind::send || s.kind == Kind::recv_reduce ||
                             s.kind == Kind::copy || s.kind == Kind::reduce;
      if (reads_src)
        if (auto e = check_chunk(r, s.src); !e.empty())
          return fmt::format("rank {}: source {} in {}", r, e, schedule::describe(s));
      if (writes(s))
        if (auto e = check_chunk(r, s.dst); !e.empty())
          return fmt::format("rank {}: destination {} in {}", r, e, schedule::describe(s));
      // Gathered: a send's, recv_reduce's or copy's source, a recv's or recv_reduce's
      // destination, or a copy's (not both sides of one copy); never a local reduce's.
      const bool gathered_ok = !s.dst.gathered() || s.kind == Kind::recv ||
                               s.kind == Kind::recv_reduce ||
                               (s.kind == Kind::copy && !s.src.gathered());
      if (!gathered_ok || (!reads_src && s.src.gathered()) ||
          (s.kind == Kind::reduce && s.src.gathered()))
        return fmt::format("rank {}: a gathered chunk where the executors take none in {}", r,
                           schedule::describe(s));
      if (writes(s) && s.dst.buf == Buf::input && !ip)
        return fmt::format("rank {}: writes the input buffer in {}", r, schedule::describe(s));
      if ((s.kind == Kind::recv_reduce || s.kind == Kind::copy || s.kind == Kind::reduce) &&
          s.src.count != s.dst.count)
        return fmt::format("rank {}: source and destination sizes differ in {}", r,
                           schedule::describe(s));
      for (std::size_t j = i + 1; j < steps.size() && steps[j].phase == s.phase; ++j) {
        const Step& t = steps[j];
        if (remote && s.kind == t.kind && s.peer == t.peer && s.tag == t.tag)
          return fmt::format("rank {}: two {} with peer {} tag {} in phase {}", r,
                             schedule::to_string(s.kind), s.peer, s.tag, s.phase);
        auto clash = [&](const Step& w, const Step& o) {
          const ChunkRange wr = write_range(w, ip, pieces);
          return overlaps(wr, write_range(o, ip, pieces)) ||
                 overlaps(wr, read_range(o, ip, pieces));
        };
        if (clash(s, t) || clash(t, s))
          return fmt::format("rank {}: hazard in phase {} between '{}' and '{}'", r, s.phase,
                             schedule::describe(s), schedule::describe(t));
      }
    }
    return "";
  }

  // The dependencies: well formed, every `follow` one of a kind the executors can pipeline, and
  // every conflict between steps of different phases (one writes what the other reads or
  // writes) ordered, directly or through steps that had to finish in between.
  std::string check_dependencies(int r) {
    const Schedule& s = sched_[r];
    const auto& steps = s.steps;
    const Block* pieces = s.pieces.data();
    const bool ip = mem_[r].in_place;
    for (std::size_t j = 0; j < steps.size(); ++j) {
      const Step& st = steps[j];
      if (static_cast<std::size_t>(st.dep_begin) + st.dep_count > s.deps.size())
        return fmt::format("rank {}: dependencies of '{}' lie outside the list", r,
                           schedule::describe(st));
      for (std::uint32_t k = 0; k < st.dep_count; ++k) {
        const schedule::Dep& d = s.deps[st.dep_begin + k];
        if (d.step >= j)
          return fmt::format("rank {}: '{}' waits for a step that is not earlier ({})", r,
                             schedule::describe(st), d.step);
        if (d.wait != schedule::Wait::follow) continue;
        const Step& g = steps[d.step];
        const ChunkRange rd = read_range(st, ip, pieces), gw = write_range(g, ip, pieces);
        const bool kinds = (st.kind == Kind::send || st.kind == Kind::recv_reduce) &&
                           (g.kind == Kind::recv || g.kind == Kind::recv_reduce);
        std::uint64_t at = 0;
        const bool inside = schedule::position_in(gw, rd, at) && at == d.offset;
        const ChunkRange wr = write_range(st, ip, pieces);
        if (!kinds || !inside || (overlaps(wr, gw) && !schedule::accumulates_in_place(st, rd, wr)))
          return fmt::format("rank {}: wrong dependency: '{}' follows '{}' at offset {}", r,
                             schedule::describe(st), schedule::describe(g), d.offset);
      }
    }
    const int p = static_cast<int>(sched_.size());
    if (steps.size() > kPairwiseSteps) return "";
    if (p > kPairwiseRanks && r != 0 && r != 1 && r != p / 2 && r != p - 1) return "";
    const Finished finished(s);
    for (const Hazard& h : hazards(steps, ip, pieces)) {
      const Step &a = steps[h.earlier], &b = steps[h.later];
      if (a.phase == b.phase) continue;
      if (finished.before(h.earlier, h.later)) continue;
      bool followed = false;
      for (std::uint32_t k = 0; k < b.dep_count && !followed; ++k) {
        const schedule::Dep& d = s.deps[b.dep_begin + k];
        followed = d.step == h.earlier && d.wait == schedule::Wait::follow;
      }
      if (followed && (!h.other || schedule::accumulates_in_place(b, read_range(b, ip, pieces),
                                                                  write_range(b, ip, pieces))))
        continue;
      return fmt::format("rank {}: missing dependency: '{}' {} '{}' but does not wait for it", r,
                         schedule::describe(b), h.raw ? "reads what" : "overwrites what",
                         schedule::describe(a));
    }
    return "";
  }

  // Wait counts and the reverse edges (schedule/wait_graph.hpp).
  void index_channels(int r) {
    RankState& st = state_[r];
    const Schedule& sc = sched_[r];
    st.finished.assign(sc.steps.size(), false);
    st.graph = schedule::wait_graph(
        sc.steps.size(),
        [&](std::uint32_t j, auto&& f) {
          const Step& s = sc.steps[j];
          for (std::uint32_t k = 0; k < s.dep_count; ++k) {
            const schedule::Dep& d = sc.deps[s.dep_begin + k];
            if (d.step < j) f(d.step, schedule::lets_go_on_start(d.wait));
          }
        },
        [&](std::uint32_t j, std::uint64_t& key) {
          const Step& s = sc.steps[j];
          if (schedule::is_local(s.kind)) return false;
          key = schedule::channel_key(s.kind == Kind::send, s.peer, s.tag);
          return true;
        });
  }

  void finish(int r, std::size_t j) {
    RankState& st = state_[r];
    schedule::WaitGraph& g = st.graph;
    st.finished[j] = true;
    for (std::uint32_t k = g.begin[j]; k < g.begin[j + 1]; ++k) {
      const std::uint32_t w = g.waiters[k] & schedule::WaitGraph::kIndex;
      if (--g.waits[w] == 0) work_.push_back({r, w});
    }
  }

  // Runs step j of rank r, whose waits are over: a local step at once, a transfer when its peer
  // has the matching step ready too.
  std::string run_step(int r, std::size_t j) {
    const Step& s = sched_[r].steps[j];
    if (schedule::is_local(s.kind)) {
      run_local(r, s);
      finish(r, j);
      return "";
    }
    const bool sends = s.kind == Kind::send;
    RankState& ps = state_[s.peer];
    auto it = ps.ready.find({!sends, r, s.tag});
    if (it == ps.ready.end()) {
      state_[r].ready[{sends, s.peer, s.tag}] = j;
      return "";
    }
    const std::size_t other = it->second;
    ps.ready.erase(it);
    const int from = sends ? r : s.peer, to = sends ? s.peer : r;
    const Step& send = sends ? s : sched_[s.peer].steps[other];
    const Step& recv = sends ? sched_[s.peer].steps[other] : s;
    if (send.src.count != recv.dst.count)
      return fmt::format("size mismatch: rank {} '{}' meets rank {} '{}'", from,
                         schedule::describe(send), to, schedule::describe(recv));
    deliver(from, send, to, recv);
    finish(r, j);
    finish(s.peer, other);
    return "";
  }

  void run_local(int r, const Step& s) {
    const BufferSet b = buffers(r);
    if (s.kind == Kind::copy) {
      if (s.src.gathered() || s.dst.gathered()) {
        gather(r, s.src, packed_);
        scatter(r, packed_, s.dst);
      } else if (b.readable(s.src) != b.writable(s.dst)) {
        std::memmove(b.writable(s.dst), b.readable(s.src), s.dst.count * esize_);
      }
    } else if (s.kind == Kind::reduce) {
      if (s.dst.count > 0)
        reduce_(b.writable(s.dst), b.readable(s.dst), b.readable(s.src), s.dst.count);
    } else {
      kernels::divide(type_, b.writable(s.dst), s.dst.count, s.divisor);
    }
  }

  // A chunk's elements, one after the other (a gathered chunk's runs in order).
  void gather(int r, const Chunk& c, std::vector<std::byte>& into) {
    const BufferSet b = buffers(r);
    into.resize(c.count * esize_);
    schedule::each_run(c, sched_[r].pieces.data(), 0, c.count,
                       [&](std::uint64_t at, std::uint64_t pos, std::uint64_t n) {
                         Chunk run{c.buf, at, n};
                         std::memcpy(into.data() + pos * esize_, b.readable(run), n * esize_);
                       });
  }
  void scatter(int r, const std::vector<std::byte>& from, const Chunk& c) {
    const BufferSet b = buffers(r);
    schedule::each_run(c, sched_[r].pieces.data(), 0, c.count,
                       [&](std::uint64_t at, std::uint64_t pos, std::uint64_t n) {
                         Chunk run{c.buf, at, n};
                         std::memcpy(b.writable(run), from.data() + pos * esize_, n * esize_);
                       });
  }
  // Empty, or what is wrong with the chunk (out of bounds; runs out of order or miscounted).
  std::string check_chunk(int r, const Chunk& c) {
    const std::uint64_t cap = capacity(r, c.buf);
    if (!c.gathered()) return c.offset + c.count > cap ? "out of bounds" : "";
    const auto& pieces = sched_[r].pieces;
    if (std::uint64_t{c.first_piece} + c.pieces > pieces.size()) return "with runs not listed";
    std::uint64_t total = 0, end = c.offset;
    for (std::uint32_t k = 0; k < c.pieces; ++k) {
      const Block& b = pieces[c.first_piece + k];
      if (b.offset < end || (k == 0 && b.offset != c.offset)) return "with runs out of order";
      total += b.count;
      end = b.offset + b.count;
    }
    if (total != c.count || end != c.offset + c.extent) return "with runs that do not add up";
    return end > cap ? "out of bounds" : "";
  }

  void deliver(int from, const Step& send, int to, const Step& recv) {
    const BufferSet rb = buffers(to);
    const std::size_t bytes = recv.dst.count * esize_;
    // A reduction stages the message first (the sender's chunk aliases nothing of ours, but
    // MPI's semantics are kept); a gathered one is packed, and a receive or a reduction into
    // runs scatters the packed message (or sum). A plain one is copied straight.
    const std::byte* sent = buffers(from).readable(send.src);
    if (recv.kind != Kind::recv || send.src.gathered() || recv.dst.gathered())
      gather(from, send.src, staging_), sent = staging_.data();
    if (recv.kind == Kind::recv && recv.dst.gathered()) {
      scatter(to, staging_, recv.dst);
    } else if (recv.kind == Kind::recv) {
      std::memcpy(rb.writable(recv.dst), sent, bytes);
    } else {
      const std::byte* local = rb.readable(recv.src);
      if (recv.src.gathered()) gather(to, recv.src, packed_), local = packed_.data();
      if (recv.dst.gathered()) {  // reduced packed, then scattered into the runs
        summed_.resize(bytes);
        reduce_(summed_.data(), local, sent, recv.dst.count);
        scatter(to, summed_, recv.dst);
      } else {
        reduce_(rb.writable(recv.dst), local, sent, recv.dst.count);
      }
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
  std::vector<std::byte> packed_;  // a gathered chunk packed
  std::vector<std::byte> summed_;  // a reduction into runs, before it is scattered
  std::vector<std::byte> staging_;
  std::vector<std::pair<int, std::size_t>> work_;  // (rank, step) whose waits are over
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
    for (std::uint64_t i = 0; i < n; ++i)
      store_as(spec.type, full[r].data() + i * es, exact_input(spec.op, r, i));
  std::vector<std::vector<int>> groups = spec.groups;
  if (groups.empty()) {
    groups.emplace_back();
    for (int r = 0; r < p; ++r) groups[0].push_back(r);
  }
  std::vector<int> group_of(static_cast<std::size_t>(p), -1), position(static_cast<std::size_t>(p));
  for (std::size_t g = 0; g < groups.size(); ++g)
    for (std::size_t k = 0; k < groups[g].size(); ++k) {
      const int r = groups[g][k];
      if (r < 0 || r >= p || group_of[static_cast<std::size_t>(r)] >= 0)
        return fmt::format("check: rank {} is outside [0, {}) or in two groups", r, p);
      group_of[static_cast<std::size_t>(r)] = static_cast<int>(g);
      position[static_cast<std::size_t>(r)] = static_cast<int>(k);
    }
  for (int r = 0; r < p; ++r)
    if (group_of[static_cast<std::size_t>(r)] < 0)
      return fmt::format("check: rank {} is in no group", r);
  // Per group, what its members must end with.
  std::vector<std::vector<std::byte>> references;
  for (const std::vector<int>& members : groups) {
    const int k = static_cast<int>(members.size());
    std::vector<std::byte> reference(n * es);
    if (spec.collective == Collective::broadcast) {
      if (spec.root < 0 || spec.root >= k)
        return fmt::format("check: root {} outside a group of {}", spec.root, k);
      reference = full[static_cast<std::size_t>(members[static_cast<std::size_t>(spec.root)])];
    } else if (spec.collective == Collective::alltoall) {
      // Per member, not per group: compared below, rank by rank.
    } else if (spec.collective == Collective::allgather) {
      for (int q = 0; q < k; ++q) {
        const Block b = block_of(n, k, q);
        if (b.count > 0)
          std::memcpy(reference.data() + b.offset * es,
                      full[static_cast<std::size_t>(members[static_cast<std::size_t>(q)])].data() +
                          b.offset * es,
                      b.count * es);
      }
    } else {
      reference = full[static_cast<std::size_t>(members[0])];
      const auto reduce = kernels::reduce_fn(spec.type, spec.op);
      for (int q = 1; q < k; ++q)
        reduce(reference.data(), reference.data(),
               full[static_cast<std::size_t>(members[static_cast<std::size_t>(q)])].data(), n);
      if (spec.op == ReduceOp::avg)
        kernels::divide(spec.type, reference.data(), n, static_cast<std::uint32_t>(k));
    }
    references.push_back(std::move(reference));
  }
  // A rank's own block: its place in its group.
  const auto own_block = [&](int r) {
    const auto g = static_cast<std::size_t>(group_of[static_cast<std::size_t>(r)]);
    return block_of(n, static_cast<int>(groups[g].size()), position[static_cast<std::size_t>(r)]);
  };

  std::vector<RankMemory> mem(p);
  std::vector<Schedule> schedules;
  for (int r = 0; r < p; ++r) {
    const Block own = own_block(r);
    const bool root = position[static_cast<std::size_t>(r)] == spec.root;
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
        m.input.assign(full[r].begin() + own.offset * es,
                       full[r].begin() + (own.offset + own.count) * es);
        m.output.assign(n * es, std::byte{0x5a});
        break;
      case Collective::broadcast:  // one buffer: the root's data, garbage elsewhere
        m.output = root ? full[r] : std::vector<std::byte>(n * es, std::byte{0x5a});
        break;
      case Collective::alltoall:  // block j of the input for the group's member j
        m.input = full[r];
        m.output.assign(n * es, std::byte{0x5a});
        break;
    }
    if (spec.in_place && spec.collective != Collective::broadcast) {
      if (spec.collective != Collective::allgather)
        m.output = m.input;
      else if (own.count > 0)
        std::memcpy(m.output.data() + own.offset * es, m.input.data(), own.count * es);
      m.input.clear();
    }
    schedules.push_back(build(r));
  }
  if (auto e = execute_in_process(schedules, mem, spec.type, spec.op, traffic); !e.empty())
    return e;

  for (int r = 0; r < p; ++r) {
    const Block own = own_block(r);
    std::vector<std::byte> reference =
        references[static_cast<std::size_t>(group_of[static_cast<std::size_t>(r)])];
    if (spec.collective == Collective::alltoall) {  // block q: member q's block for my place
      const std::vector<int>& members =
          groups[static_cast<std::size_t>(group_of[static_cast<std::size_t>(r)])];
      const auto k = static_cast<std::uint64_t>(members.size());
      if (n % k != 0) return fmt::format("check: {} elements are not {} equal blocks", n, k);
      const std::uint64_t b = n / k,
                          mine = static_cast<std::uint64_t>(position[static_cast<std::size_t>(r)]);
      for (std::uint64_t q = 0; q < k && b > 0; ++q)
        std::memcpy(reference.data() + q * b * es,
                    full[static_cast<std::size_t>(members[q])].data() + mine * b * es, b * es);
    }
    const bool scatter = spec.collective == Collective::reduce_scatter;
    const std::uint64_t at = scatter && !spec.in_place ? 0 : (scatter ? own.offset : 0);
    const std::uint64_t ref_at = scatter ? own.offset : 0;
    const std::uint64_t len = scatter ? own.count : n;
    for (std::uint64_t i = 0; i < len; ++i)
      if (std::memcmp(mem[r].output.data() + (at + i) * es, reference.data() + (ref_at + i) * es,
                      es) != 0)
        return fmt::format(
            "{} of {} elements on {} ranks ({}, {}, {}): rank {} element {} differs "
            "from the reference",
            toroid::to_string(spec.collective), n, p, to_string(spec.type), to_string(spec.op),
            spec.in_place ? "in place" : "out of place", r, ref_at + i);
  }
  return "";
}

}  // namespace toroid::model
