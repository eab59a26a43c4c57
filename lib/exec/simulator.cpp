// Simulator engine (the model is described in simulator.hpp).
//
// One event per (rank, phase): "rank r finished its current phase at time t". Handling it moves
// the rank into its next phase, posts that phase's remote steps, and matches each against what
// its peer has posted (same pair, same tag, send against receive, in posting order). A match is
// a transfer: its links are reserved at once, which fixes both ends' completion times, so no
// event is needed per transfer or per segment. Events are handled in time order, so links are
// reserved in the order transfers become ready (FIFO per link dir).
#include "exec/simulator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <queue>

#include "exec/sim_network.hpp"
#include "exec/sim_program.hpp"

namespace toroid::exec {
namespace {

using sim::Op;
using sim::OpKind;
using sim::Program;

struct Posted {  // a remote op waiting for its peer's matching op
  std::int32_t peer;
  std::uint16_t tag;
  OpKind kind;
  std::uint64_t bytes;
};

struct RankState {
  std::size_t pos = 0, end = 0;  // ops of the current phase: [pos, end)
  std::uint32_t outstanding = 0;  // remote ops of the phase not yet matched
  double start = 0, finish = 0;   // of the current phase
  double reducer_free = 0;
  std::size_t ordinal = 0;        // phases completed
  bool done = false;
  std::vector<Posted> posted;
};

struct Event {
  double t;
  std::uint64_t seq;
  int rank;
  bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

class Engine {
 public:
  Engine(const SimModel& m, const std::vector<Program>& programs)
      : m_(m), prog_(programs), st_(programs.size()), net_(m), sent_(programs.size(), 0) {}

  SimResult run() {
    SimResult res;
    const int p = static_cast<int>(prog_.size());
    if (p != m_.topology.size()) {
      res.error = fmt::format("{} schedules for topology {} ({} chips)", p, m_.topology.to_string(),
                              m_.topology.size());
      return res;
    }
    for (int r = 0; r < p && error_.empty(); ++r) {
      if (prog_[r].ops.empty()) st_[r].done = true;
      else enter(r, 0.0);
    }
    while (!queue_.empty() && error_.empty()) {
      const Event e = queue_.top();
      queue_.pop();
      advance(e.rank, e.t, res);
    }
    res.error = error_;
    if (res.error.empty()) res.error = stuck();
    for (int r = 0; r < p; ++r) res.time_s = std::max(res.time_s, st_[r].finish);
    res.link_bytes = net_.bytes();
    res.link_busy_s = net_.busy();
    res.chip_sent_bytes = sent_;
    res.transfers = transfers_;
    res.max_hops = max_hops_;
    for (std::size_t l = 0; l < res.link_busy_s.size(); ++l)
      if (res.busiest_link < 0 || res.link_busy_s[l] > res.link_busy_s[res.busiest_link])
        res.busiest_link = static_cast<int>(l);
    if (res.busiest_link >= 0 && res.time_s > 0)
      res.busiest_utilisation = res.link_busy_s[res.busiest_link] / res.time_s;
    return res;
  }

 private:
  void advance(int r, double t, SimResult& res) {
    RankState& s = st_[r];
    if (r == 0 && s.ordinal < prog_[0].phase_numbers.size())
      res.rank0_phases.push_back({prog_[0].phase_numbers[s.ordinal], s.start, t});
    ++s.ordinal;
    s.pos = s.end;
    if (s.pos >= prog_[r].ops.size()) {
      s.done = true;
      s.finish = t;
      return;
    }
    enter(r, t);
  }

  void enter(int r, double t) {
    RankState& s = st_[r];
    const auto& ops = prog_[r].ops;
    s.start = s.finish = t;
    s.end = s.pos + 1;
    while (s.end < ops.size() && !ops[s.end].phase_begins) ++s.end;
    s.outstanding = 0;
    for (std::size_t i = s.pos; i < s.end; ++i) {
      const Op& op = ops[i];
      if (op.kind != OpKind::local) {
        ++s.outstanding;
        continue;
      }
      // Copies and scales run on the chip while the phase's transfers fly.
      s.reducer_free = std::max(t, s.reducer_free) + static_cast<double>(op.bytes) / m_.reduce_bytes_per_s;
      s.finish = std::max(s.finish, s.reducer_free);
    }
    if (s.outstanding == 0) {
      push(s.finish, r);
      return;
    }
    for (std::size_t i = s.pos; i < s.end && error_.empty(); ++i)
      if (ops[i].kind != OpKind::local) post(r, ops[i], t);
  }

  void post(int r, const Op& op, double t) {
    if (op.peer < 0 || op.peer >= static_cast<int>(prog_.size()) || op.peer == r) {
      error_ = fmt::format("rank {}: bad peer {}", r, op.peer);
      return;
    }
    auto& theirs = st_[op.peer].posted;
    const bool sending = op.kind == OpKind::send;
    for (auto it = theirs.begin(); it != theirs.end(); ++it) {
      if (it->peer != r || it->tag != op.tag || (it->kind == OpKind::send) == sending) continue;
      if (it->bytes != op.bytes) {
        error_ = fmt::format("size mismatch: rank {} {} {} bytes, rank {} {} {} bytes (tag {})", r,
                             sending ? "sends" : "receives", op.bytes, op.peer,
                             sending ? "receives" : "sends", it->bytes, op.tag);
        return;
      }
      const OpKind recv_kind = sending ? it->kind : op.kind;
      theirs.erase(it);
      if (sending) transfer(r, op.peer, op.bytes, recv_kind == OpKind::recv_reduce, t);
      else transfer(op.peer, r, op.bytes, recv_kind == OpKind::recv_reduce, t);
      return;
    }
    st_[r].posted.push_back({op.peer, op.tag, op.kind, op.bytes});
  }

  void transfer(int from, int to, std::uint64_t bytes, bool reduce, double ready) {
    const sim::Reservation res = net_.reserve(from, to, bytes, m_.segment_bytes, ready);
    double received = res.arrive;
    if (reduce) {
      // The reducer starts on the first segment and must also finish the last one after it lands.
      const double rbw = m_.reduce_bytes_per_s;
      RankState& q = st_[to];
      const double begin = std::max(res.first_segment, q.reducer_free);
      q.reducer_free = begin + static_cast<double>(bytes) / rbw;
      received = std::max(res.arrive + static_cast<double>(std::min(bytes, m_.segment_bytes)) / rbw,
                          q.reducer_free);
    }
    sent_[from] += bytes;
    ++transfers_;
    max_hops_ = std::max<std::uint64_t>(max_hops_, static_cast<std::uint64_t>(res.hops));
    complete(from, res.arrive);
    complete(to, received);
  }

  void complete(int r, double t) {
    RankState& s = st_[r];
    s.finish = std::max(s.finish, t);
    if (--s.outstanding == 0) push(s.finish, r);
  }

  void push(double t, int r) { queue_.push({t, seq_++, r}); }

  std::string stuck() const {
    std::string out;
    int shown = 0;
    for (std::size_t r = 0; r < st_.size(); ++r) {
      if (st_[r].done) continue;
      if (shown++ == 8) {
        out += "\n  ...";
        break;
      }
      const auto& ps = st_[r].posted;
      out += ps.empty() ? fmt::format("\n  rank {} stuck", r)
                        : fmt::format("\n  rank {} waits to {} {} bytes {} rank {} tag {}", r,
                                      ps[0].kind == OpKind::send ? "send" : "receive", ps[0].bytes,
                                      ps[0].kind == OpKind::send ? "to" : "from", ps[0].peer, ps[0].tag);
    }
    return out.empty() ? "" : "deadlock:" + out;
  }

  const SimModel& m_;
  const std::vector<Program>& prog_;
  std::vector<RankState> st_;
  sim::Network net_;
  std::vector<std::uint64_t> sent_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue_;
  std::uint64_t seq_ = 0, transfers_ = 0, max_hops_ = 0;
  std::string error_;
};

SimResult run_programs(const SimModel& m, const std::vector<Program>& programs) {
  if (!(m.link_bytes_per_s[0] > 0 && m.link_bytes_per_s[1] > 0 && m.reduce_bytes_per_s > 0 &&
        m.hop_latency_s[0] >= 0 && m.hop_latency_s[1] >= 0 && m.segment_bytes > 0)) {
    SimResult r;
    r.error = "simulator: bandwidths and the segment must be positive, latencies not negative";
    return r;
  }
  return Engine(m, programs).run();
}

}  // namespace

SimResult simulate(const SimModel& m, const std::vector<schedule::Schedule>& schedules,
                   std::size_t elem_size) {
  std::vector<Program> programs;
  programs.reserve(schedules.size());
  for (std::size_t r = 0; r < schedules.size(); ++r)
    programs.push_back(sim::compile(schedules[r], elem_size, r == 0));
  return run_programs(m, programs);
}

SimResult simulate_collective(const SimModel& m, Algorithm a, const schedule::Request& r,
                              DataType type, const std::vector<int>& node_of_rank) {
  const int p = m.topology.size();
  const std::size_t es = size_of(type);
  schedule::Context ctx{0, m.topology, node_of_rank};
  std::vector<Program> programs;
  programs.reserve(static_cast<std::size_t>(p));
  for (int q = 0; q < p; ++q) {
    ctx.rank = q;
    programs.push_back(sim::compile(schedule::build(a, r, ctx), es, q == 0));
  }
  SimResult res = run_programs(m, programs);
  res.vector_bytes = r.count * es;
  if (res.time_s > 0) {
    const double factor = r.collective == Collective::allreduce   ? 2.0 * (p - 1) / p
                          : r.collective == Collective::broadcast ? 1.0
                                                                  : static_cast<double>(p - 1) / p;
    res.algbw_gbps = static_cast<double>(res.vector_bytes) / res.time_s / 1e9;
    res.busbw_gbps = res.algbw_gbps * factor;
  }
  return res;
}

std::vector<int> route(const Torus2D& t, int a, int b) {
  std::vector<int> path;
  int hops[2];
  sim::route_into(t, a, b, path, hops);
  return path;
}

}  // namespace toroid::exec
