#include "model/sim_network.hpp"

#include <algorithm>

namespace toroid::model::sim {
namespace {

// Steps along one dimension of length n from u to v: (direction +1/-1, hop count).
std::pair<int, int> steps_along(int u, int v, int n, bool wraps) {
  if (u == v) return {+1, 0};
  if (!wraps) return {v > u ? +1 : -1, v > u ? v - u : u - v};
  const int forward = ((v - u) % n + n) % n;
  // A tie (exactly half way round) goes the + way, so both directions of a ring stay apart.
  return forward <= n - forward ? std::pair{+1, forward} : std::pair{-1, n - forward};
}

// The share of a rank's memory time one shared-memory flow uses while it runs at its own rate:
// ring against bidir_ring (one flow a rank against two), 32 MiB, measured on a 16-core Xeon:
// reduce-scatter 0.76 at 2 ranks and 0.83 at 4, all-gather 0.89 at 4; on the 2-core VM 0.94.
constexpr double kShmOneFlowShare = 0.85;

}  // namespace

Network::Network(const SimModel& m)
    : m_(m),
      directions_(directions_per_chip(m.topology)),
      free_(m.endpoints ? static_cast<std::size_t>(m.topology.chips()) *
                              static_cast<std::size_t>(directions_)
                        : 0,
            0.0),
      links_(m.endpoints ? 0
                         : static_cast<std::size_t>(m.topology.chips()) *
                               static_cast<std::size_t>(directions_ + 1)),
      bytes_(static_cast<std::size_t>(m.topology.chips()) * static_cast<std::size_t>(directions_),
             0),
      busy_(bytes_.size(), 0.0) {
  if (!m.endpoints) return;
  // A node's network ports are the +y/-y link ids of its lowest rank.
  for (std::size_t r = 0; r < m.endpoints->node_of_rank.size(); ++r) {
    const auto n = static_cast<std::size_t>(m.endpoints->node_of_rank[r]);
    if (node_port_.size() <= n) node_port_.resize(n + 1, -1);
    if (node_port_[n] < 0) node_port_[n] = static_cast<int>(r);
  }
}

namespace {

// A twisted torus's route (torus.hpp: a short dimension's wraparound link lands k further along
// every long one): each short dimension goes straight or the other way round through its
// wraparound (all the way round where it need not move at all), whichever subset of them makes
// the shortest route once the long dimensions' ring distances are added (crossing any one wraps
// every long coordinate by k, half its ring, so only how many cross counts); then dimension
// order, short ones straight or round as chosen. Ties go straight, so the route is the plain
// one wherever that is as short.
void twisted_route_into(const Torus& t, int a, int b, std::vector<int>& path, Hops& hops) {
  const std::vector<int> from = t.coord_of(a), to = t.coord_of(b);
  const int dims = t.dimensions();
  std::vector<int> shorts;
  for (int d = 0; d < dims; ++d)
    if (!t.ring_along(d)) shorts.push_back(d);
  const auto at = [](const std::vector<int>& c, int d) { return c[static_cast<std::size_t>(d)]; };
  unsigned best_round = 0;
  int best = -1;
  for (unsigned round = 0; round < (1u << shorts.size()); ++round) {
    int len = 0, crossings = 0;
    for (std::size_t i = 0; i < shorts.size(); ++i) {
      const int d = shorts[i], k = t.size(d), dx = std::abs(at(to, d) - at(from, d));
      const bool r = (round >> i) & 1u;  // round once even where dx is 0: on k x 2k x 2k the
      len += r ? k - dx : dx;            // k hops can save up to 2k along the two long ones
      crossings += r ? 1 : 0;
    }
    for (int d = 0; d < dims; ++d)
      if (t.ring_along(d)) {
        const int k = t.size(d);
        len +=
            steps_along((at(from, d) + (crossings % 2) * (k / 2)) % k, at(to, d), k, true).second;
      }
    if (best < 0 || len < best) {
      best = len;
      best_round = round;
    }
  }
  hops.fill(0);
  int here = a;
  const auto step = [&](int d, int dir) {
    path.push_back(link_id(t, here, d, dir));
    here = *t.neighbour(here, d, dir);
    ++hops[static_cast<std::size_t>(d)];
  };
  for (std::size_t i = 0; i < shorts.size(); ++i) {
    const int d = shorts[i], k = t.size(d), dx = at(to, d) - at(from, d);
    const bool round = (best_round >> i) & 1u;
    const int dir = (dx > 0) != round ? +1 : -1;
    for (int n = round ? k - std::abs(dx) : std::abs(dx); n > 0; --n) step(d, dir);
  }
  for (int d = 0; d < dims; ++d) {
    if (!t.ring_along(d)) continue;
    const int k = t.size(d), c = t.coord_of(here)[static_cast<std::size_t>(d)];
    const auto [dir, n] = steps_along(c, at(to, d), k, true);
    for (int i = 0; i < n; ++i) step(d, dir);
  }
}

}  // namespace

void route_into(const Torus& t, int a, int b, std::vector<int>& path, Hops& hops) {
  if (t.twisted()) {
    twisted_route_into(t, a, b, path, hops);
    return;
  }
  hops.fill(0);
  int at = a;
  int weight = 1;  // of a step along d in rank numbers
  for (int d = 0; d < t.dimensions(); ++d) {
    const int k = t.size(d);
    const int from = at / weight % k, to = b / weight % k;
    const auto [dir, n] = steps_along(from, to, k, t.ring_along(d));
    for (int i = 0; i < n; ++i) {
      path.push_back(link_id(t, at, d, dir));
      const int c = at / weight % k;
      at += ((c + dir + k) % k - c) * weight;
    }
    hops[static_cast<std::size_t>(d)] = n;
    weight *= k;
  }
}

Reservation Network::reserve(int a, int b, std::uint64_t bytes, std::uint64_t segment_bytes,
                             double ready, double source_done) {
  const EndpointLinks& e = *m_.endpoints;
  const LinkClass c = e.class_of(a, b);
  const LinkParams& p = e.params[static_cast<std::size_t>(c)];
  const Torus& t = m_.topology;
  int out = link_id(t, a, 0, +1), in = link_id(t, b, 0, -1);
  if (c == LinkClass::network) {
    out = link_id(t,
                  node_port_[static_cast<std::size_t>(e.node_of_rank[static_cast<std::size_t>(a)])],
                  1, +1);
    in = link_id(t,
                 node_port_[static_cast<std::size_t>(e.node_of_rank[static_cast<std::size_t>(b)])],
                 1, -1);
  }
  const double seg = static_cast<double>(std::min(bytes, segment_bytes)) / p.bytes_per_s;
  const double hold = p.alpha_s + static_cast<double>(bytes) / p.bytes_per_s;
  const auto o = static_cast<std::size_t>(out), i = static_cast<std::size_t>(in);
  const double earliest =
      std::max(ready, source_done > 0 ? source_done + p.alpha_s + seg - hold : 0.0);
  Reservation r;
  r.hops = 1;
  if (c == LinkClass::shm) {
    // Shared memory: the sender fills slots the receiver has not read yet (rings of up to a
    // few MiB), so its port is free again when it has written, whether or not the receiver's
    // was busy meanwhile. Holding both ports over one common interval instead left a rank
    // with two peers idle whenever one peer's port was taken: bidir_ring priced 1.9x ring at
    // 4 ranks, measured alike. And one flow, waiting on each slot's hand-off, moves at the
    // link's rate (what toroid-tune measures, one flow each way) but keeps the rank's memory
    // busy only kShmOneFlowShare of that time: a second flow fills the gaps.
    const double occupied =
        p.alpha_s + kShmOneFlowShare * static_cast<double>(bytes) / p.bytes_per_s;
    const double sent = std::max(earliest, free_[o]) + occupied;
    r.start = std::max(sent - occupied, free_[i]);
    r.arrive = r.start + hold;
    free_[o] = sent;
    free_[i] = r.start + occupied;
  } else {
    r.start = std::max({earliest, free_[o], free_[i]});
    r.arrive = r.start + hold;
    free_[o] = free_[i] = r.arrive;
  }
  for (int l : {out, in}) {
    bytes_[static_cast<std::size_t>(l)] += bytes;
    busy_[static_cast<std::size_t>(l)] += hold;
  }
  r.first_segment = r.start + p.alpha_s + seg;
  return r;
}

bool Network::start(std::uint32_t id, int a, int b, std::uint64_t bytes,
                    std::uint64_t segment_bytes, double t, FlowStart& out) {
  path_.clear();
  route_into(m_.topology, a, b, path_, hops_);
  out.hops = static_cast<int>(path_.size());
  if (path_.empty()) return false;
  double bw = 0;  // the slowest dimension crossed
  for (std::size_t d = 0; d < hops_.size(); ++d)
    if (hops_[d] > 0) bw = bw == 0 ? m_.link_bytes_per_s[d] : std::min(bw, m_.link_bytes_per_s[d]);
  const double seg = static_cast<double>(std::min(bytes, segment_bytes));
  out.segment_s = seg / bw;
  out.latency = 0;
  double first = 0;  // the first segment through the busiest link, at the share it finds there
  if (links_left_.size() <= id) links_left_.resize(static_cast<std::size_t>(id) + 1, 0);
  links_left_[id] = static_cast<std::uint32_t>(path_.size());
  for (const int link : path_) {
    const int l =
        link_rep_.empty() ? link : static_cast<int>(link_rep_[static_cast<std::size_t>(link)]);
    const auto d = static_cast<std::size_t>(l % directions_ / 2);
    const double duration = static_cast<double>(bytes) / m_.link_bytes_per_s[d];
    const std::uint32_t flows = join(static_cast<std::uint32_t>(l), id, duration, t);
    first = std::max(first, seg / m_.link_bytes_per_s[d] * flows);
    out.latency += m_.hop_latency_s[d];
    bytes_[static_cast<std::size_t>(l)] += bytes;
    busy_[static_cast<std::size_t>(l)] += duration;
  }
  out.first_segment = t + first + out.latency;
  return true;
}

void Network::start_reduction(std::uint32_t id, int chip, std::uint64_t bytes, double t) {
  join(static_cast<std::uint32_t>(m_.topology.chips() * directions_ + chip), id | kReducerJob,
       static_cast<double>(bytes) / m_.reduce_bytes_per_s, t);
}

std::uint32_t Network::join(std::uint32_t at, std::uint32_t flow, double duration, double t) {
  Link& link = links_[at];
  catch_up(link, t);
  link.tags.push_back({link.clock + duration, flow});
  std::push_heap(link.tags.begin(), link.tags.end(), std::greater<>{});
  ++link.flows;
  schedule_leave(at, link, t);
  return link.flows;
}

void Network::catch_up(Link& l, double t) const {
  if (l.flows > 0) l.clock += (t - l.at) / l.flows;
  l.at = t;
}

// The link's next leaving, as a new event; the one queued before it is stale.
void Network::schedule_leave(std::uint32_t id, Link& l, double t) {
  ++l.version;
  if (l.flows == 0) return;
  const double remaining = std::max(0.0, l.tags.front().leave - l.clock);
  events_.push_back({t + remaining * l.flows, seq_++, id, l.version});
  std::push_heap(events_.begin(), events_.end(), std::greater<>{});
}

void Network::advance(std::vector<std::pair<std::uint32_t, double>>& carried) {
  std::pop_heap(events_.begin(), events_.end(), std::greater<>{});
  const Event e = events_.back();
  events_.pop_back();
  Link& l = links_[e.link];
  if (e.version != l.version) return;
  catch_up(l, e.t);
  // This event was queued for the first tag: it leaves now, whatever rounding left of it, and
  // so does every flow whose tag is not later.
  l.clock = std::max(l.clock, l.tags.front().leave);
  while (!l.tags.empty() && l.tags.front().leave <= l.clock) {
    const std::uint32_t flow = l.tags.front().flow;
    std::pop_heap(l.tags.begin(), l.tags.end(), std::greater<>{});
    l.tags.pop_back();
    --l.flows;
    if ((flow & kReducerJob) || --links_left_[flow] == 0) carried.emplace_back(flow, e.t);
  }
  schedule_leave(e.link, l, e.t);
}

}  // namespace toroid::model::sim
