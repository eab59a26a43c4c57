// Simulator engine (the model is described in simulator.hpp): the schedules' dataflow.
//
// Per rank, each op counts what it still waits for: its dependencies and the op before it on
// its channel (direction, peer, tag). Events are "op j of rank r has its first segment final"
// (a receive: the steps that follow it may start) and "op j of rank r is done". When an op has
// nothing left to wait for it is posted at the event's time: a local op runs on the chip's
// reducer; a remote op is matched against the peer's posted op of the same channel, and the
// match is a transfer whose links are reserved at once, which fixes both ends' times. Events
// are handled in time order, so links are reserved in the order transfers become ready (FIFO
// per link dir).
#include "exec/simulator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <queue>
#include <unordered_map>

#include "exec/sim_network.hpp"
#include "exec/sim_program.hpp"
#include "schedule/wait_graph.hpp"

namespace toroid::exec {
namespace {

using sim::kFollow;
using sim::Op;
using sim::OpKind;
using sim::Program;

constexpr std::uint32_t kIndex = schedule::WaitGraph::kIndex;
constexpr double kNever = std::numeric_limits<double>::infinity();

using schedule::channel_key;

struct RankState {
  std::vector<double> done;       // per op: when it ends (kNever while unknown)
  schedule::WaitGraph graph;      // per op: conditions not met yet, and who waits for it
  std::vector<double> posted_at;  // rank 0 only
  std::unordered_map<std::uint64_t, std::uint32_t> pending;  // channel -> posted op not yet matched
  double reducer_free = 0, finish = 0;
  std::size_t remaining = 0;
};

struct Event {
  double t;
  std::uint64_t seq;
  int rank;
  std::uint32_t op;
  bool first;  // first segment final (else: done)
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
    for (int r = 0; r < p; ++r) prepare(r);
    for (int r = 0; r < p && error_.empty(); ++r)
      for (std::uint32_t j = 0; j < prog_[r].ops.size() && error_.empty(); ++j)
        if (st_[r].graph.waits[j] == 0) post(r, j, 0.0);
    while (!queue_.empty() && error_.empty()) {
      const Event e = queue_.top();
      queue_.pop();
      handle(e);
    }
    res.error = error_;
    if (res.error.empty()) res.error = stuck();
    for (int r = 0; r < p; ++r) res.time_s = std::max(res.time_s, st_[r].finish);
    if (p > 0) res.rank0_phases = rank0_phases();
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
  // Wait counts and the reverse edges of rank r's ops (schedule/wait_graph.hpp).
  void prepare(int r) {
    RankState& s = st_[r];
    const Program& pg = prog_[r];
    const std::size_t n = pg.ops.size();
    s.done.assign(n, kNever);
    s.remaining = n;
    if (r == 0) s.posted_at.assign(n, 0.0);
    s.graph = schedule::wait_graph(
        n,
        [&](std::uint32_t j, auto&& f) {
          const Op& op = pg.ops[j];
          for (std::uint32_t k = 0; k < op.dep_count; ++k) {
            const std::uint32_t d = pg.deps[op.dep_begin + k];
            f(d & kIndex, (d & kFollow) != 0);
          }
        },
        [&](std::uint32_t j, std::uint64_t& key) {
          const Op& op = pg.ops[j];
          if (op.kind == OpKind::local) return false;
          key = schedule::channel_key(op.kind == OpKind::send, op.peer, op.tag);
          return true;
        });
  }

  void handle(const Event& e) {
    RankState& s = st_[e.rank];
    if (!e.first) {
      s.finish = std::max(s.finish, e.t);
      --s.remaining;
    }
    schedule::WaitGraph& g = s.graph;
    for (std::uint32_t k = g.begin[e.op]; k < g.begin[e.op + 1] && error_.empty(); ++k) {
      const std::uint32_t d = g.waiters[k];
      if (((d & kFollow) != 0) != e.first)
        continue;  // follow waits for the first segment, the rest for the end
      const std::uint32_t j = d & kIndex;
      if (--g.waits[j] == 0) post(e.rank, j, e.t);
    }
  }

  void push(double t, int r, std::uint32_t op, bool first) {
    queue_.push({t, seq_++, r, op, first});
  }

  // When the latest `follow` source of op j is all final (0: it follows nothing).
  double source_done(int r, std::uint32_t j) const {
    const Program& pg = prog_[r];
    const Op& op = pg.ops[j];
    double t = 0;
    for (std::uint32_t k = 0; k < op.dep_count; ++k) {
      const std::uint32_t d = pg.deps[op.dep_begin + k];
      if (d & kFollow) t = std::max(t, st_[r].done[d & kIndex]);
    }
    return t;
  }

  void post(int r, std::uint32_t j, double t) {
    RankState& s = st_[r];
    const Op& op = prog_[r].ops[j];
    if (r == 0) s.posted_at[j] = t;
    if (op.kind == OpKind::local) {  // copies and scales run on the chip's reducer
      s.reducer_free =
          std::max(t, s.reducer_free) + static_cast<double>(op.bytes) / m_.reduce_bytes_per_s;
      s.done[j] = s.reducer_free;
      push(s.done[j], r, j, false);
      return;
    }
    if (op.peer < 0 || op.peer >= static_cast<int>(prog_.size()) || op.peer == r) {
      error_ = fmt::format("rank {}: bad peer {}", r, op.peer);
      return;
    }
    const bool sending = op.kind == OpKind::send;
    auto& theirs = st_[op.peer].pending;
    auto it = theirs.find(channel_key(!sending, r, op.tag));
    if (it == theirs.end()) {
      s.pending.emplace(channel_key(sending, op.peer, op.tag), j);
      return;
    }
    const std::uint32_t other = it->second;
    theirs.erase(it);
    const Op& o = prog_[op.peer].ops[other];
    if (o.bytes != op.bytes) {
      error_ = fmt::format("size mismatch: rank {} {} {} bytes, rank {} {} {} bytes (tag {})", r,
                           sending ? "sends" : "receives", op.bytes, op.peer,
                           sending ? "receives" : "sends", o.bytes, op.tag);
      return;
    }
    if (sending)
      transfer(r, j, op.peer, other, t);
    else
      transfer(op.peer, other, r, j, t);
  }

  void transfer(int from, std::uint32_t send, int to, std::uint32_t recv, double ready) {
    const Op& rop = prog_[to].ops[recv];
    const std::uint64_t bytes = rop.bytes;
    const sim::Reservation res =
        net_.reserve(from, to, bytes, m_.segment_bytes, ready, source_done(from, send));
    const double seg = static_cast<double>(std::min(bytes, m_.segment_bytes));
    double first = res.first_segment, received = res.arrive;
    if (rop.kind == OpKind::recv_reduce) {
      // The reducer starts on the first segment and must also finish the last one after it
      // lands, and after the local operand's last segment when that is still arriving.
      const double rbw = m_.reduce_bytes_per_s;
      RankState& q = st_[to];
      const double begin = std::max(res.first_segment, q.reducer_free);
      q.reducer_free = begin + static_cast<double>(bytes) / rbw;
      received =
          std::max({res.arrive + seg / rbw, q.reducer_free, source_done(to, recv) + seg / rbw});
      first = begin + seg / rbw;
    }
    sent_[from] += bytes;
    ++transfers_;
    max_hops_ = std::max<std::uint64_t>(max_hops_, static_cast<std::uint64_t>(res.hops));
    st_[from].done[send] = res.arrive;
    st_[to].done[recv] = received;
    push(res.arrive, from, send, false);
    push(std::min(first, received), to, recv, true);
    push(received, to, recv, false);
  }

  // Rank 0's phases: from the first of its steps posted to the last one done.
  std::vector<SimPhase> rank0_phases() const {
    std::vector<SimPhase> out;
    const Program& pg = prog_[0];
    for (std::size_t j = 0; j < pg.phase_numbers.size(); ++j) {
      const double end = st_[0].done[j] == kNever ? st_[0].posted_at[j] : st_[0].done[j];
      if (out.empty() || out.back().phase != pg.phase_numbers[j]) {
        out.push_back({pg.phase_numbers[j], st_[0].posted_at[j], end});
      } else {
        out.back().start_s = std::min(out.back().start_s, st_[0].posted_at[j]);
        out.back().end_s = std::max(out.back().end_s, end);
      }
    }
    return out;
  }

  std::string stuck() const {
    std::string out;
    int shown = 0;
    for (std::size_t r = 0; r < st_.size(); ++r) {
      if (st_[r].remaining == 0) continue;
      if (shown++ == 8) {
        out += "\n  ...";
        break;
      }
      const auto& ps = st_[r].pending;
      if (ps.empty()) {
        out += fmt::format("\n  rank {} stuck", r);
        continue;
      }
      const Op& op = prog_[r].ops[ps.begin()->second];
      const bool send = op.kind == OpKind::send;
      out +=
          fmt::format("\n  rank {} waits to {} {} bytes {} rank {} tag {}", r,
                      send ? "send" : "receive", op.bytes, send ? "to" : "from", op.peer, op.tag);
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

bool endpoints_valid(const EndpointLinks& e, int ranks) {
  for (const LinkParams& p : e.params)
    if (!(p.bytes_per_s > 0 && p.alpha_s >= 0)) return false;
  if (e.node_of_rank.size() != static_cast<std::size_t>(ranks)) return false;
  for (int n : e.node_of_rank)
    if (n < 0 || n >= ranks) return false;
  return true;
}

SimResult run_programs(const SimModel& m, const std::vector<Program>& programs) {
  if (!(m.link_bytes_per_s[0] > 0 && m.link_bytes_per_s[1] > 0 && m.reduce_bytes_per_s > 0 &&
        m.hop_latency_s[0] >= 0 && m.hop_latency_s[1] >= 0 && m.segment_bytes > 0) ||
      (m.endpoints && !endpoints_valid(*m.endpoints, m.topology.size()))) {
    SimResult r;
    r.error =
        "simulator: bandwidths and the segment must be positive, latencies not negative (endpoint "
        "links: "
        "one node index in [0, ranks) per rank)";
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
  ctx.link_rate[0] = m.link_bytes_per_s[0];
  ctx.link_rate[1] = m.link_bytes_per_s[1];
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
