// Simulator engine (the model is described in simulator.hpp): the schedules' dataflow.
//
// Per rank, each op counts what it still waits for: its dependencies and the op before it on
// its channel (direction, peer, tag). Events are "op j of rank r has its first segment final"
// (a receive: the steps that follow it may start) and "op j of rank r is done". When an op has
// nothing left to wait for it is posted at the event's time: a local op runs on the chip's
// reducer; a remote op meets its partner, the op on the peer's side of the same channel with the
// same place in that channel's order (paired before the run), and once both are posted the
// match is a transfer: on the torus a flow that joins its route's links (sim_network.hpp) and
// ends when they have carried it and what it forwards is final; with endpoint links a
// reservation that fixes both ends' times at once. Steps' events and links' leavings are
// handled in one time order. An event nobody waits for is not queued: its op's end is counted
// when it is known.
//
// Cost: the run is bound by reaching memory (4096 ranks of ring: 67 M ops), not by arithmetic.
// Ranks advance together, so each event lands on another rank's ops: what an event needs of an
// op is one record (sim::Instr), in one array per building thread (a rank's ops lie together), on
// huge pages where the kernel allows it; docs/simulator.md "Speed" has the numbers.
#include "model/simulator.hpp"

#include <fmt/format.h>
#include <sys/mman.h>

#include <algorithm>
#include <exception>
#include <limits>
#include <optional>
#include <thread>
#include <unordered_map>

#include "model/sim_network.hpp"
#include "model/sim_program.hpp"
#include "model/sim_symmetry.hpp"
#include "schedule/along.hpp"
#include "schedule/wait_graph.hpp"

namespace toroid::model {
namespace {

using sim::Instr;
using sim::kChannelWanted;
using sim::kDoneWanted;
using sim::kFirstWanted;
using sim::kFollow;
using sim::kInFlight;
using sim::kIssued;
using sim::kMany;
using sim::kNone;
using sim::kPosted;
using sim::OpKind;
using sim::Programs;

constexpr std::uint32_t kIndex = schedule::WaitGraph::kIndex;
constexpr std::uint32_t kChannel = schedule::WaitGraph::kChannel;
constexpr double kNever = std::numeric_limits<double>::infinity();

using schedule::channel_key;

// A slot of `v` to reuse from `free`, or a new one at its end.
template <class T>
std::uint32_t take_slot(std::vector<T>& v, std::vector<std::uint32_t>& free) {
  if (free.empty()) {
    v.emplace_back();
    return static_cast<std::uint32_t>(v.size() - 1);
  }
  const std::uint32_t id = free.back();
  free.pop_back();
  return id;
}

// Asks for huge pages under a large array before its pages are first touched: the engine
// touches its arrays at 4096 ranks' frontiers at once, and 4 KiB pages cost a page walk each.
template <class T>
void reserve_huge(std::vector<T>& v, std::size_t n) {
  v.reserve(n);
  constexpr std::uintptr_t kHuge = 2u << 20;
  const auto lo = (reinterpret_cast<std::uintptr_t>(v.data()) + kHuge - 1) & ~(kHuge - 1);
  const auto hi = (reinterpret_cast<std::uintptr_t>(v.data() + n)) & ~(kHuge - 1);
  if (hi > lo) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);  // a hint only
}

struct RankState {
  double reducer_free = 0, finish = 0;
  std::size_t remaining = 0;
};

struct Event {
  double t;
  std::uint64_t seq;
  std::uint32_t rank;
  std::uint32_t op;  // | kFollow: the first segment is final (else: done)
  // The op's waiters, waiters_[begin, end): copied from its record while that is at hand, so
  // handling the event does not reach for the record again.
  std::uint32_t begin, end;
  bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

class SimRun {
 public:
  // `parts`: the ranks' programs, rank after rank across the parts (built apart, on threads);
  // with `classes`, one rank per class (its representative's program), class after class.
  // `timeline`: when given, filled with every rank's steps (the parts keep every phase).
  SimRun(const SimModel& m, std::vector<Programs>& parts, std::vector<RankTimeline>* timeline,
         const sim::RankClasses* classes)
      : m_(m), parts_(parts), timeline_(timeline), classes_(classes), net_(m) {
    if (classes_) net_.use_link_classes(classes_->link_representatives());
    for (Programs& part : parts)
      for (int r = 0; r < part.ranks(); ++r) {
        const auto first = static_cast<std::size_t>(part.begin[static_cast<std::size_t>(r)]);
        const bool phases = part.phase_numbers.size() >= first + part.size(r);
        ranks_.push_back({part.ops.data() + first, part.deps.data(),
                          phases ? part.phase_numbers.data() + first : nullptr,
                          static_cast<std::uint32_t>(part.size(r)), 0});
      }
    st_.resize(ranks_.size());
    sent_.assign(ranks_.size(), 0);
    if (timeline_) {
      started_.resize(ranks_.size());
      for (std::size_t r = 0; r < ranks_.size(); ++r) started_[r].assign(ranks_[r].size, 0.0);
    }
  }

  SimResult run() {
    SimResult res;
    const int p = ranks();
    if (p != (classes_ ? classes_->classes() : m_.topology.chips())) {
      res.error = fmt::format("{} schedules for topology {} ({} chips)", p, m_.topology.to_string(),
                              m_.topology.chips());
      return res;
    }
    prepare();
    if (error_.empty()) pair();
    for (int r = 0; r < p && error_.empty(); ++r)
      for (std::uint32_t j = 0; j < size(r) && error_.empty(); ++j)
        if (op(r, j).waits == 0) post(r, j, 0.0);
    // Steps' events and links' leavings in time order (a leaving first at a tie: flows leave a
    // link before others join it at the same instant).
    while (error_.empty()) {
      const double leave = net_.next_time();
      if (queue_.empty() && leave == kNever) break;
      if (!queue_.empty() && queue_.front().t < leave) {
        std::pop_heap(queue_.begin(), queue_.end(), std::greater<>{});
        const Event e = queue_.back();
        queue_.pop_back();
        handle(e);
      } else {
        net_.advance(carried_);
        for (const auto& [flow, t] : carried_) carried(flow, t);
        carried_.clear();
      }
      while (!woken_.empty()) {
        const std::uint32_t flow = woken_.back();
        woken_.pop_back();
        try_finish(flow);
      }
    }
    res.error = error_;
    if (res.error.empty()) res.error = stuck();
    for (int r = 0; r < p; ++r) res.time_s = std::max(res.time_s, st_[r].finish);
    if (p > 0) res.rank0_phases = rank0_phases();
    if (timeline_) write_timeline();
    res.link_bytes = net_.bytes();
    res.link_busy_s = net_.busy();
    res.chip_sent_bytes = sent_;
    res.transfers = transfers_;
    res.max_hops = max_hops_;
    if (classes_) {  // every link and chip as its class's representative
      const std::vector<std::uint32_t>& rep = net_.link_classes();
      for (std::size_t l = 0; l < rep.size(); ++l) {
        res.link_bytes[l] = net_.bytes()[rep[l]];
        res.link_busy_s[l] = net_.busy()[rep[l]];
      }
      res.chip_sent_bytes.resize(static_cast<std::size_t>(m_.topology.chips()));
      for (int c = 0; c < m_.topology.chips(); ++c)
        res.chip_sent_bytes[static_cast<std::size_t>(c)] = sent_[classes_->class_of(c)];
      res.transfers *= static_cast<std::uint64_t>(classes_->members());
    }
    for (std::size_t l = 0; l < res.link_busy_s.size(); ++l)
      if (res.busiest_link < 0 || res.link_busy_s[l] > res.link_busy_s[res.busiest_link])
        res.busiest_link = static_cast<int>(l);
    if (res.busiest_link >= 0 && res.time_s > 0)
      res.busiest_utilisation = res.link_busy_s[res.busiest_link] / res.time_s;
    return res;
  }

 private:
  // Rank r's ops, its dependencies (Instr::dep_begin counts from `deps`), its ops' phase numbers
  // (null where they were not kept), and where its last op's waiters end.
  struct RankView {
    Instr* ops;
    const std::uint32_t* deps;
    const std::uint32_t* phases;
    std::uint32_t size;
    std::uint32_t waiters_end;
  };
  int ranks() const { return static_cast<int>(ranks_.size()); }
  // The rank (of ranks_) that stands for chip `chip`, and the chip rank r stands for: the same
  // without classes.
  int rank_of_chip(int chip) const {
    return classes_ ? static_cast<int>(classes_->class_of(chip)) : chip;
  }
  int chip_of(int r) const {
    return classes_ ? classes_->representative(static_cast<std::uint32_t>(r)) : r;
  }
  std::uint32_t size(int r) const { return ranks_[static_cast<std::size_t>(r)].size; }
  Instr& op(int r, std::uint32_t j) { return ranks_[static_cast<std::size_t>(r)].ops[j]; }
  const Instr& op(int r, std::uint32_t j) const {
    return ranks_[static_cast<std::size_t>(r)].ops[j];
  }
  std::uint32_t dep(int r, const Instr& o, std::uint32_t k) const {
    return ranks_[static_cast<std::size_t>(r)].deps[o.dep_begin + k];
  }
  // Where op j's waiters end: where the next op's begin.
  std::uint32_t waiters_end(int r, std::uint32_t j) const {
    const RankView& v = ranks_[static_cast<std::size_t>(r)];
    return j + 1 < v.size ? v.ops[j + 1].waiters : v.waiters_end;
  }

  // Every op's wait count, its waiters (schedule/wait_graph.hpp, rank by rank) and which of its
  // events anyone waits for.
  void prepare() {
    std::size_t n = 0, deps = 0;
    for (const Programs& part : parts_) {
      n += part.ops.size();
      deps += part.deps.size();
    }
    reserve_huge(waiters_, deps + n);  // deps plus one channel successor each
    posted_at_.assign(ranks() > 0 ? size(0) : 0, 0.0);
    for (int r = 0; r < ranks(); ++r) {
      RankView& v = ranks_[static_cast<std::size_t>(r)];
      st_[static_cast<std::size_t>(r)].remaining = v.size;
      const schedule::WaitGraph g = schedule::wait_graph(
          v.size,
          [&](std::uint32_t j, auto&& f) {
            const Instr& o = v.ops[j];
            for (std::uint32_t k = 0; k < o.dep_count; ++k) {
              const std::uint32_t d = v.deps[o.dep_begin + k];
              f(d & kIndex, (d & kFollow) != 0);
            }
          },
          [&](std::uint32_t j, std::uint64_t& key) {
            const Instr& o = v.ops[j];
            if (o.kind == OpKind::local) return false;
            key = channel_key(o.kind == OpKind::send, o.peer, o.tag);
            return true;
          });
      if (waiters_.size() + g.waiters.size() > UINT32_MAX) {
        error_ = "simulator: more than 2^32 waits in all";
        return;
      }
      const auto offset = static_cast<std::uint32_t>(waiters_.size());
      waiters_.insert(waiters_.end(), g.waiters.begin(), g.waiters.end());
      for (std::uint32_t j = 0; j < v.size; ++j) {
        Instr& o = v.ops[j];
        o.waits = g.waits[j];
        o.waiters = offset + g.begin[j];
        for (std::uint32_t k = g.begin[j]; k < g.begin[j + 1]; ++k)
          o.flags |= (g.waiters[k] & kFollow)    ? kFirstWanted
                     : (g.waiters[k] & kChannel) ? kChannelWanted
                                                 : kDoneWanted;
      }
      v.waiters_end = static_cast<std::uint32_t>(waiters_.size());
    }
  }

  // Pairs each send with the receive on the other side of its channel: the k-th send from r to
  // q with tag t meets q's k-th receive from r with tag t.
  void pair() {
    const int p = ranks();
    std::vector<std::unordered_map<std::uint64_t, std::vector<std::uint32_t>>> receives(
        static_cast<std::size_t>(p));
    for (int r = 0; r < p && error_.empty(); ++r)
      for (std::uint32_t j = 0; j < size(r); ++j) {
        const Instr& o = op(r, j);
        if (o.kind == OpKind::local) continue;
        if (o.peer < 0 || o.peer >= m_.topology.chips() || o.peer == chip_of(r)) {
          error_ = fmt::format("rank {}: bad peer {}", chip_of(r), o.peer);
          return;
        }
        if (o.kind != OpKind::send)
          receives[static_cast<std::size_t>(r)][channel_key(false, o.peer, o.tag)].push_back(j);
      }
    std::unordered_map<std::uint64_t, std::uint32_t> sent;  // per channel of rank r: sends so far
    for (int r = 0; r < p && error_.empty(); ++r) {
      sent.clear();
      for (std::uint32_t j = 0; j < size(r); ++j) {
        Instr& o = op(r, j);
        if (o.kind != OpKind::send) continue;
        const std::uint32_t k = sent[channel_key(true, o.peer, o.tag)]++;
        // With classes: the peer's class's representative, at its step that receives from
        // this chip as the representative sees it.
        const int peer = rank_of_chip(o.peer);
        const int me = classes_ ? classes_->seen_from_representative(o.peer, chip_of(r)) : r;
        const auto& theirs = receives[static_cast<std::size_t>(peer)];
        const auto it = theirs.find(channel_key(false, me, o.tag));
        if (it == theirs.end() || k >= it->second.size()) continue;  // never met: a deadlock
        const std::uint32_t other = it->second[k];
        Instr& q = op(peer, other);
        // With classes the two sides are moved copies of their real partners, whose sizes
        // may differ by an element (alike_bytes); the transfer moves the receive's.
        if (q.bytes != o.bytes && !(classes_ && sim::alike_bytes(q.bytes, o.bytes))) {
          error_ = fmt::format(
              "size mismatch: rank {} sends {} bytes, rank {} receives {} bytes (tag {})",
              chip_of(r), o.bytes, o.peer, q.bytes, o.tag);
          return;
        }
        o.partner = other;
        q.partner = j;
      }
    }
  }

  // An event of op j: its first segment is final (kFollow: its followers go), it is issued
  // (kChannel: the next op on its channel goes), or it ended (the rest, and the next op on its
  // channel unless that went when it was issued).
  void handle(const Event& e) {
    const std::uint32_t what = e.op & (kFollow | kChannel);
    const int r = static_cast<int>(e.rank);
    Instr* ops = ranks_[e.rank].ops;
    const bool channel_gone = what == 0 && (ops[e.op & kIndex].flags & kIssued);
    for (std::uint32_t k = e.begin; k < e.end && error_.empty(); ++k) {
      const std::uint32_t d = waiters_[k];
      const std::uint32_t kind = d & (kFollow | kChannel);
      if (what == 0 ? kind == kFollow || (kind == kChannel && channel_gone) : kind != what)
        continue;
      const std::uint32_t j = d & kIndex;
      if (--ops[j].waits == 0) post(r, j, e.t);
    }
  }

  // `what`: kFollow (first segment final), kChannel (issued) or 0 (ended).
  void push(double t, int r, std::uint32_t j, std::uint32_t what) {
    queue_.push_back(
        {t, seq_++, static_cast<std::uint32_t>(r), j | what, op(r, j).waiters, waiters_end(r, j)});
    std::push_heap(queue_.begin(), queue_.end(), std::greater<>{});
  }

  // Instr j of rank r ends at t: counted now, and queued when some op waits for it.
  void ends(int r, std::uint32_t j, double t) {
    RankState& s = st_[static_cast<std::size_t>(r)];
    Instr& o = op(r, j);
    o.done = t;
    s.finish = std::max(s.finish, t);
    --s.remaining;
    if ((o.flags & kDoneWanted) || (o.flags & (kChannelWanted | kIssued)) == kChannelWanted)
      push(t, r, j, 0);
    if (o.flags & kFirstWanted)  // a flow that forwards it may have been waiting for its end
      for (std::uint32_t k = o.waiters, e = waiters_end(r, j); k < e; ++k) {
        const std::uint32_t d = waiters_[k];
        const Instr& w = op(r, d & kIndex);
        if ((d & kFollow) && (w.flags & kInFlight)) woken_.push_back(w.waits);
      }
  }
  // Instr j of rank r's first segment is final at t.
  void first_final(int r, std::uint32_t j, double t) {
    if (op(r, j).flags & kFirstWanted) push(t, r, j, kFollow);
  }

  // When the latest `follow` source of op j is all final (0: it follows nothing).
  double source_done(int r, std::uint32_t j) const {
    const Instr& o = op(r, j);
    if (o.follows == kNone) return 0;
    if (o.follows != kMany) return op(r, o.follows).done;
    double t = 0;
    for (std::uint32_t k = 0; k < o.dep_count; ++k) {
      const std::uint32_t d = dep(r, o, k);
      if (d & kFollow) t = std::max(t, op(r, d & kIndex).done);
    }
    return t;
  }

  void post(int r, std::uint32_t j, double t) {
    RankState& s = st_[static_cast<std::size_t>(r)];
    Instr& o = op(r, j);
    if (r == 0) posted_at_[j] = t;
    if (o.kind == OpKind::local) {  // copies and scales run on the chip's reducer
      if (!m_.endpoints) {          // shared with its reductions (sim_network.hpp)
        if (timeline_) started_[static_cast<std::size_t>(r)][j] = t;
        const std::uint32_t id = take_slot(locals_, free_locals_);
        locals_[id] = {r, j};
        net_.start_reduction(id | kLocalJob, chip_of(r), o.bytes, t);
        return;
      }
      // The endpoint model's reducer takes them in turn.
      if (timeline_) started_[static_cast<std::size_t>(r)][j] = std::max(t, s.reducer_free);
      s.reducer_free =
          std::max(t, s.reducer_free) + static_cast<double>(o.bytes) / m_.reduce_bytes_per_s;
      ends(r, j, s.reducer_free);
      return;
    }
    const int peer = rank_of_chip(o.peer);
    if (o.partner == kNone || !(op(peer, o.partner).flags & kPosted)) {
      o.flags |= kPosted;
      return;
    }
    op(peer, o.partner).flags &= static_cast<std::uint8_t>(~kPosted);
    if (o.kind == OpKind::send)
      transfer({r, j, chip_of(r)}, {peer, o.partner, o.peer}, t);
    else
      transfer({peer, o.partner, o.peer}, {r, j, chip_of(r)}, t);
  }

  // One side of a transfer: its rank (of ranks_), op, and the chip it runs on (with classes a
  // peer is a moved copy of its representative: the route runs between the chips).
  struct Side {
    int rank;
    std::uint32_t op;
    int chip;
  };

  void transfer(Side from, Side to, double ready) {
    sent_[static_cast<std::size_t>(from.rank)] += op(to.rank, to.op).bytes;
    ++transfers_;
    if (m_.endpoints)
      reserve(from.rank, from.op, to.rank, to.op, ready);
    else
      start_flow(from, to, ready);
  }

  // What the network reports carried at t: a flow's links, a flow's reduction, or a local op.
  void carried(std::uint32_t id, double t) {
    if (!(id & sim::Network::kReducerJob)) {
      flows_[id].carried = t;
      woken_.push_back(id);
      return;
    }
    const std::uint32_t job = id & ~sim::Network::kReducerJob;
    if (job & kLocalJob) {
      const auto [r, j] = locals_[job & ~kLocalJob];
      free_locals_.push_back(job & ~kLocalJob);
      ends(r, j, t);
      return;
    }
    flows_[job].reducer_end = t;
    woken_.push_back(job);
  }

  // Endpoint model: the reducer's share of receive `recv` whose first segment lands at
  // `first_segment`: when its first segment is reduced (a plain receive: when it lands), and
  // when the reducer is done with all of it (0 for a plain receive). The reducer is reserved
  // now, in the order transfers start (FIFO).
  std::pair<double, double> plan_receive(int to, std::uint32_t recv, double first_segment) {
    const Instr& rop = op(to, recv);
    if (rop.kind != OpKind::recv_reduce) return {first_segment, 0.0};
    // The reducer starts on the first segment and must also finish the last one after it lands.
    const double rbw = m_.reduce_bytes_per_s;
    RankState& q = st_[static_cast<std::size_t>(to)];
    const double begin = std::max(first_segment, q.reducer_free);
    q.reducer_free = begin + static_cast<double>(rop.bytes) / rbw;
    return {begin + segment_reduced(rop), q.reducer_free};
  }
  // One segment's reduction of op o.
  double segment_reduced(const Instr& o) const {
    return static_cast<double>(std::min(o.bytes, m_.segment_bytes)) / m_.reduce_bytes_per_s;
  }
  // When receive `recv`, whose last byte lands at `arrive`, is final: a recv_reduce also
  // reduces its last segment, waits for the reducer, and for its local operand's last segment
  // when that is still arriving (`local`: that operand's end, 0 for none).
  double received_at(int to, std::uint32_t recv, double arrive, double reducer_end,
                     double local) const {
    const Instr& rop = op(to, recv);
    if (rop.kind != OpKind::recv_reduce) return arrive;
    const double seg = segment_reduced(rop);
    return std::max({arrive + seg, reducer_end, local > 0 ? local + seg : 0.0});
  }

  // Endpoint model: the transfer's links are reserved at once, which fixes both ends' times.
  void reserve(int from, std::uint32_t send, int to, std::uint32_t recv, double ready) {
    const std::uint64_t bytes = op(to, recv).bytes;
    const sim::Reservation res =
        net_.reserve(from, to, bytes, m_.segment_bytes, ready, source_done(from, send));
    const auto [first, reducer_end] = plan_receive(to, recv, res.first_segment);
    const double received = received_at(to, recv, res.arrive, reducer_end, source_done(to, recv));
    max_hops_ = std::max<std::uint64_t>(max_hops_, static_cast<std::uint64_t>(res.hops));
    if (timeline_) {
      started_[static_cast<std::size_t>(from)][send] = res.start;
      started_[static_cast<std::size_t>(to)][recv] = res.start;
    }
    ends(from, send, res.arrive);
    first_final(to, recv, std::min(first, received));
    ends(to, recv, received);
  }

  // Torus model: the transfer joins its route's links as a flow now; its ends are known when
  // the links have carried it and its sources are final (try_finish).
  void start_flow(Side s, Side d, double t) {
    const int from = s.rank, to = d.rank;
    const std::uint32_t send = s.op, recv = d.op;
    const std::uint32_t id = take_slot(flows_, free_flows_);
    Instr& sop = op(from, send);
    Instr& rop = op(to, recv);
    sim::FlowStart fs;
    const bool on_links = net_.start(id, s.chip, d.chip, rop.bytes, m_.segment_bytes, t, fs);
    // A reduction joins the receiver's reducer now and shares it with the others in flight
    // there (the engine reduces every transfer's segments as they land); the receive ends once
    // both its links and its reduction are done.
    const bool reduces = rop.kind == OpKind::recv_reduce;
    if (reduces) net_.start_reduction(id, chip_of(to), rop.bytes, t);
    const double first = fs.first_segment + (reduces ? segment_reduced(rop) : 0.0);
    const double reducer_end = reduces ? kNever : 0.0;
    Flow& f = flows_[id];
    f = {from,
         to,
         send,
         recv,
         fs.latency,
         fs.segment_s,
         reducer_end,
         on_links ? kNever : t,
         rop.bytes <= m_.segment_bytes,
         false,
         0.0};
    // One segment: its first is its last, known at its end. Several: followers start on the
    // first as estimated at the shares the flow found (the pipelining the engine does).
    if (!f.first_at_end) first_final(to, recv, first);
    sop.flags |= kInFlight;
    rop.flags |= kInFlight;
    sop.waits = rop.waits = id;
    max_hops_ = std::max<std::uint64_t>(max_hops_, static_cast<std::uint64_t>(fs.hops));
    if (timeline_) {
      started_[static_cast<std::size_t>(from)][send] = t;
      started_[static_cast<std::size_t>(to)][recv] = t;
    }
    if (!on_links) woken_.push_back(id);
  }

  // Ends flow `id` when its links have carried it and the data it forwards is final: its last
  // byte cannot land before its source's last segment has been sent after it (plus the route's
  // latency). Otherwise it waits; the source's end wakes it (ends).
  void try_finish(std::uint32_t id) {
    Flow& f = flows_[id];
    if (f.carried == kNever || !(op(f.to, f.recv).flags & kInFlight)) return;
    if (!f.sent) {
      const double source = source_done(f.from, f.send);
      if (source == kNever) return;
      const double issued = std::max(f.carried, source > 0 ? source + f.segment_s : 0.0);
      f.arrive = issued + f.latency;
      f.sent = true;
      // Its last byte has left: as in the engine over MPI (a step goes once the one before it
      // on its channel has posted every segment), the next transfer on either side's channel
      // may follow it on the links now, not a route's latency later.
      for (auto [r, j] : {std::pair{f.from, f.send}, std::pair{f.to, f.recv}})
        if (op(r, j).flags & kChannelWanted) {
          op(r, j).flags |= kIssued;
          push(issued, r, j, kChannel);
        }
      op(f.from, f.send).flags &= static_cast<std::uint8_t>(~kInFlight);
      ends(f.from, f.send, f.arrive);  // queues events and wakes flows, adds none
    }
    // The receive also waits for its reduction and for its local operand.
    const double local = source_done(f.to, f.recv);
    if (local == kNever || f.reducer_end == kNever) return;
    const double received = received_at(f.to, f.recv, f.arrive, f.reducer_end, local);
    op(f.to, f.recv).flags &= static_cast<std::uint8_t>(~kInFlight);
    f.carried = kNever;
    free_flows_.push_back(id);  // reused by the next start_flow, not before these return
    if (f.first_at_end) first_final(f.to, f.recv, received);
    ends(f.to, f.recv, received);
  }

  // Every rank's steps that ran, in microseconds, as one call from its first start to its end
  // (the caller names the call).
  void write_timeline() const {
    timeline_->assign(ranks_.size(), {});
    for (int r = 0; r < ranks(); ++r) {
      const RankView& v = ranks_[static_cast<std::size_t>(r)];
      RankTimeline& t = (*timeline_)[static_cast<std::size_t>(r)];
      t.rank = r;
      double begin = kNever;
      for (std::uint32_t j = 0; j < v.size; ++j) {
        const Instr& o = v.ops[j];
        if (o.done == kNever) continue;
        const double start = started_[static_cast<std::size_t>(r)][j];
        begin = std::min(begin, start);
        const bool local = o.kind == OpKind::local;
        const char* kind = local                    ? ((o.flags & sim::kScale) ? "scale" : "copy")
                           : o.kind == OpKind::send ? "send"
                           : o.kind == OpKind::recv ? "recv"
                                                    : "recv_reduce";
        t.steps.push_back({start * 1e6, o.done * 1e6, 0, j, v.phases ? v.phases[j] : 0,
                           local ? -1 : o.peer, local ? 0 : o.tag, o.bytes, kind,
                           local ? "local" : "link"});
      }
      const double finish = st_[static_cast<std::size_t>(r)].finish;
      t.calls.push_back({begin == kNever ? 0 : begin * 1e6, finish * 1e6, "", 0});
    }
  }

  // Rank 0's phases: from the first of its steps posted to the last one done.
  std::vector<SimPhase> rank0_phases() const {
    std::vector<SimPhase> out;
    const RankView& v = ranks_.front();
    if (!v.phases) return out;
    const std::uint32_t* phases = v.phases;
    for (std::uint32_t j = 0; j < v.size; ++j) {
      const double done = v.ops[j].done;
      const double end = done == kNever ? posted_at_[j] : done;
      if (out.empty() || out.back().phase != phases[j]) {
        out.push_back({phases[j], posted_at_[j], end});
      } else {
        out.back().start_s = std::min(out.back().start_s, posted_at_[j]);
        out.back().end_s = std::max(out.back().end_s, end);
      }
    }
    return out;
  }

  std::string stuck() const {
    std::string out;
    int shown = 0;
    for (int r = 0; r < ranks(); ++r) {
      if (st_[static_cast<std::size_t>(r)].remaining == 0) continue;
      if (shown++ == 8) {
        out += "\n  ...";
        break;
      }
      std::uint32_t waiting = kNone;
      for (std::uint32_t j = 0; j < size(r) && waiting == kNone; ++j)
        if (op(r, j).flags & kPosted) waiting = j;
      if (waiting == kNone) {
        out += fmt::format("\n  rank {} stuck", chip_of(r));
        continue;
      }
      const Instr& o = op(r, waiting);
      const bool send = o.kind == OpKind::send;
      out += fmt::format("\n  rank {} waits to {} {} bytes {} rank {} tag {}", chip_of(r),
                         send ? "send" : "receive", o.bytes, send ? "to" : "from", o.peer, o.tag);
    }
    return out.empty() ? "" : "deadlock:" + out;
  }

  const SimModel& m_;
  std::vector<Programs>& parts_;
  std::vector<RankTimeline>* timeline_;
  const sim::RankClasses* classes_;           // null: every rank its own
  std::vector<std::vector<double>> started_;  // with a timeline: when each op took its links
  std::vector<RankView> ranks_;
  std::vector<RankState> st_;
  sim::Network net_;
  std::vector<std::uint64_t> sent_;
  std::vector<std::uint32_t> waiters_;  // rank-local op index | kFollow | kChannel
  std::vector<double> posted_at_;       // rank 0's ops only
  std::vector<Event> queue_;            // a heap, earliest first (std::push_heap with greater)
  std::uint64_t seq_ = 0, transfers_ = 0, max_hops_ = 0;
  std::string error_;

  // A transfer on the torus's links (start_flow), by the index the network knows it by.
  struct Flow {
    int from = 0, to = 0;
    std::uint32_t send = 0, recv = 0;
    double latency = 0, segment_s = 0, reducer_end = 0;  // reducer_end: kNever while reducing
    double carried = kNever;    // when every link of its route had carried it
    bool first_at_end = false;  // one segment: its first-segment event is its end
    bool sent = false;          // the sender's side has ended (at `arrive`)
    double arrive = 0;
  };
  std::vector<Flow> flows_;
  std::vector<std::uint32_t> free_flows_;                  // indices to reuse
  std::vector<std::pair<std::uint32_t, double>> carried_;  // reused by each leaving
  std::vector<std::uint32_t> woken_;                       // flows that may end now (try_finish)
  // Local ops on the torus model's shared reducers, by the job index the network knows them
  // by (| kLocalJob, apart from the flows' reductions).
  static constexpr std::uint32_t kLocalJob = 1u << 30;
  std::vector<std::pair<int, std::uint32_t>> locals_;
  std::vector<std::uint32_t> free_locals_;
};

bool endpoints_valid(const EndpointLinks& e, int ranks) {
  for (const LinkParams& p : e.params)
    if (!(p.bytes_per_s > 0 && p.alpha_s >= 0)) return false;
  if (e.node_of_rank.size() != static_cast<std::size_t>(ranks)) return false;
  for (int n : e.node_of_rank)
    if (n < 0 || n >= ranks) return false;
  return true;
}

// `parts`: every rank's program, rank after rank across the parts (with `classes`, each class's
// representative's, class after class; never with endpoint links or a timeline).
SimResult run_programs(const SimModel& m, std::vector<Programs>& parts,
                       std::vector<RankTimeline>* timeline = nullptr,
                       const sim::RankClasses* classes = nullptr) {
  bool links_valid = m.reduce_bytes_per_s > 0 && m.segment_bytes > 0;
  for (int d = 0; d < std::max(2, m.topology.dimensions()); ++d)
    links_valid = links_valid && m.link_bytes_per_s[static_cast<std::size_t>(d)] > 0 &&
                  m.hop_latency_s[static_cast<std::size_t>(d)] >= 0;
  if (!links_valid || (m.endpoints && !endpoints_valid(*m.endpoints, m.topology.chips()))) {
    SimResult r;
    r.error =
        "simulator: bandwidths and the segment must be positive, latencies not negative (endpoint "
        "links: "
        "one node index in [0, ranks) per rank)";
    return r;
  }
  return SimRun(m, parts, timeline, classes).run();
}

// The programs of one representative per class of `a` on `m`'s torus, when its ranks'
// schedules have a translation symmetry (sim_symmetry.hpp), and the classes; else nothing (a
// candidate that fails stops at its first mismatch, so looking builds a few ranks, not many).
struct ClassedPrograms {
  sim::RankClasses classes;
  std::vector<Programs> parts;  // one per class, class after class
};
std::optional<ClassedPrograms> classed_programs(const SimModel& m, Algorithm a,
                                                const schedule::Spec& spec,
                                                const schedule::Context& ctx, std::size_t es) {
  std::unordered_map<int, Programs> built;
  const auto program = [&](int q) -> const Programs& {
    auto it = built.find(q);
    if (it == built.end()) {
      schedule::Context c = ctx;
      c.rank = q;
      Programs one;
      sim::append(one, schedule::build(a, spec, c), es);
      it = built.emplace(q, std::move(one)).first;
    }
    return it->second;
  };
  std::optional<sim::RankClasses> classes = sim::find_symmetry(m.topology, program);
  if (!classes) return std::nullopt;
  ClassedPrograms out{*classes, {}};
  for (int k = 0; k < classes->classes(); ++k)
    out.parts.push_back(
        std::move(built.at(classes->representative(static_cast<std::uint32_t>(k)))));
  return out;
}

}  // namespace

SimResult simulate(const SimModel& m, const std::vector<schedule::Schedule>& schedules,
                   std::size_t elem_size) {
  std::vector<Programs> parts(1);
  for (const schedule::Schedule& s : schedules) sim::append(parts[0], s, elem_size);
  SimResult res = run_programs(m, parts);
  res.simulated_ranks = static_cast<int>(schedules.size());
  return res;
}

SimModel model_along(const SimModel& m, Axes axes) {
  SimModel out = m;
  out.topology = m.topology.along(axes);
  out.link_bytes_per_s =
      schedule::values_along(m.link_bytes_per_s, m.link_bytes_per_s, m.topology, axes);
  out.hop_latency_s = schedule::values_along(m.hop_latency_s, m.hop_latency_s, m.topology, axes);
  return out;
}

schedule::Context schedule_context(const SimModel& m, const std::vector<int>& node_of_rank) {
  schedule::Context ctx{0, m.topology, node_of_rank};
  ctx.link_rate = m.link_bytes_per_s;
  if (!m.endpoints) {  // the endpoint links have no hops
    ctx.hop_seconds = m.hop_latency_s;
    ctx.reduce_rate = m.reduce_bytes_per_s;
  }
  return ctx;
}

namespace {

// Every rank's program, rank after rank across the parts: above kThreadsFrom ranks built on
// all cores, each thread's ranks into a part of their own that the engine reads in place
// (building the schedules is half the time of a large simulation and each rank's is its own;
// never below: `auto` simulates up to 64 ranks inside an application's process, which should
// not see threads start). `every_phase`: keep every op's phase (a timeline).
std::vector<Programs> every_program(const SimModel& m, Algorithm a, const schedule::Spec& spec,
                                    const schedule::Context& ctx, std::size_t es,
                                    bool every_phase) {
  const int p = m.topology.chips();
  // Ranks [lo, hi) into `into`.
  const auto build_ranks = [&](Programs& into, int lo, int hi) {
    into.every_phase = every_phase;
    schedule::Context c = ctx;
    for (int q = lo; q < hi; ++q) {
      c.rank = q;
      const schedule::Schedule s = schedule::build(a, spec, c);
      if (q == lo) {  // most algorithms give every rank about as many steps as the first
        const auto ranks = static_cast<std::size_t>(hi - lo) + 1;
        reserve_huge(into.ops, s.steps.size() * ranks);
        reserve_huge(into.deps, s.deps.size() * ranks);
      }
      sim::append(into, s, es);
    }
  };
  constexpr int kThreadsFrom = 512;
  const int threads = p < kThreadsFrom
                          ? 1
                          : std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, 8);
  std::vector<Programs> parts(static_cast<std::size_t>(threads));
  std::vector<std::exception_ptr> failed(parts.size());
  std::vector<std::thread> workers;
  for (int t = 1; t < threads; ++t)
    workers.emplace_back([&, t] {
      try {
        build_ranks(parts[static_cast<std::size_t>(t)], p * t / threads, p * (t + 1) / threads);
      } catch (...) {
        failed[static_cast<std::size_t>(t)] = std::current_exception();
      }
    });
  try {
    build_ranks(parts[0], 0, p / threads);
  } catch (...) {
    failed[0] = std::current_exception();
  }
  for (std::thread& w : workers) w.join();
  for (const std::exception_ptr& e : failed)
    if (e) std::rethrow_exception(e);
  return parts;
}

}  // namespace

SimResult simulate_collective(const SimModel& m, Algorithm a, const schedule::Spec& r,
                              DataType type, const std::vector<int>& node_of_rank,
                              std::vector<RankTimeline>* timeline) {
  const int p = m.topology.chips();
  const std::size_t es = size_of(type);
  const schedule::Context ctx = schedule_context(m, node_of_rank);
  schedule::Spec spec = r;
  spec.elem_bytes = static_cast<std::uint32_t>(es);
  // One rank per class where the ranks' schedules allow it (a collective without a root, on
  // the torus model, no timeline asked for), else every rank.
  std::optional<ClassedPrograms> classed;
  if (m.symmetric && !m.endpoints && !timeline && r.collective != Collective::broadcast && p > 1)
    classed = classed_programs(m, a, spec, ctx, es);
  std::vector<Programs> parts;
  if (!classed) parts = every_program(m, a, spec, ctx, es, timeline != nullptr);
  SimResult res = classed ? run_programs(m, classed->parts, nullptr, &classed->classes)
                          : run_programs(m, parts, timeline);
  res.simulated_ranks = classed ? classed->classes.classes() : p;
  res.vector_bytes = r.count * es;
  if (timeline)
    for (RankTimeline& t : *timeline)
      for (TraceCall& call : t.calls) {
        call.name = fmt::format("{} ({})", toroid::to_string(r.collective), to_string(a));
        call.bytes = res.vector_bytes;
      }
  if (res.time_s > 0) {
    const int k = r.axes ? m.topology.along(*r.axes).chips() : p;  // the ranks of one group
    const double factor = r.collective == Collective::allreduce   ? 2.0 * (k - 1) / k
                          : r.collective == Collective::broadcast ? 1.0
                                                                  : static_cast<double>(k - 1) / k;
    res.algbw_gbps = static_cast<double>(res.vector_bytes) / res.time_s / 1e9;
    res.busbw_gbps = res.algbw_gbps * factor;
  }
  return res;
}

std::vector<int> route(const Torus& t, int a, int b) {
  std::vector<int> path;
  sim::Hops hops{};
  sim::route_into(t, a, b, path, hops);
  return path;
}

}  // namespace toroid::model
