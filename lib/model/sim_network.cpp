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

}  // namespace

Network::Network(const SimModel& m)
    : m_(m),
      free_(m.endpoints ? static_cast<std::size_t>(m.topology.size()) * 4 : 0, 0.0),
      active_(m.endpoints ? 0 : static_cast<std::size_t>(m.topology.size()) * 4),
      bytes_(static_cast<std::size_t>(m.topology.size()) * 4, 0),
      busy_(bytes_.size(), 0.0) {
  if (!m.endpoints) return;
  // A node's network ports are the +y/-y link ids of its lowest rank.
  for (std::size_t r = 0; r < m.endpoints->node_of_rank.size(); ++r) {
    const auto n = static_cast<std::size_t>(m.endpoints->node_of_rank[r]);
    if (node_port_.size() <= n) node_port_.resize(n + 1, -1);
    if (node_port_[n] < 0) node_port_[n] = static_cast<int>(r);
  }
}

void route_into(const Torus2D& t, int a, int b, std::vector<int>& path, int hops[2]) {
  Coord c = t.coord_of(a);
  const Coord to = t.coord_of(b);
  const int X = t.x_dim(), Y = t.y_dim();
  const auto [dx, hx] = steps_along(c.x, to.x, X, t.wraps(Axis::x));
  for (int i = 0; i < hx; ++i) {
    path.push_back(link_id(c.y * X + c.x, dx > 0 ? LinkDir::plus_x : LinkDir::minus_x));
    c.x = (c.x + dx + X) % X;
  }
  const auto [dy, hy] = steps_along(c.y, to.y, Y, t.wraps(Axis::y));
  for (int i = 0; i < hy; ++i) {
    path.push_back(link_id(c.y * X + c.x, dy > 0 ? LinkDir::plus_y : LinkDir::minus_y));
    c.y = (c.y + dy + Y) % Y;
  }
  hops[0] = hx;
  hops[1] = hy;
}

Reservation Network::reserve_endpoints(int a, int b, std::uint64_t bytes,
                                       std::uint64_t segment_bytes, double ready,
                                       double source_done) {
  const EndpointLinks& e = *m_.endpoints;
  const LinkClass c = e.class_of(a, b);
  const LinkParams& p = e.params[static_cast<std::size_t>(c)];
  int out = link_id(a, LinkDir::plus_x), in = link_id(b, LinkDir::minus_x);
  if (c == LinkClass::network) {
    out = link_id(node_port_[static_cast<std::size_t>(e.node_of_rank[static_cast<std::size_t>(a)])],
                  LinkDir::plus_y);
    in = link_id(node_port_[static_cast<std::size_t>(e.node_of_rank[static_cast<std::size_t>(b)])],
                 LinkDir::minus_y);
  }
  const double seg = static_cast<double>(std::min(bytes, segment_bytes)) / p.bytes_per_s;
  const double hold = p.alpha_s + static_cast<double>(bytes) / p.bytes_per_s;
  Reservation r;
  r.hops = 1;
  r.start =
      std::max({ready, free_[static_cast<std::size_t>(out)], free_[static_cast<std::size_t>(in)],
                source_done > 0 ? source_done + p.alpha_s + seg - hold : 0.0});
  for (int l : {out, in}) {
    free_[static_cast<std::size_t>(l)] = r.start + hold;
    bytes_[static_cast<std::size_t>(l)] += bytes;
    busy_[static_cast<std::size_t>(l)] += hold;
  }
  r.arrive = r.start + hold;
  r.first_segment = r.start + p.alpha_s + seg;
  return r;
}

Reservation Network::reserve(int a, int b, std::uint64_t bytes, std::uint64_t segment_bytes,
                             double ready, double source_done) {
  if (m_.endpoints) return reserve_endpoints(a, b, bytes, segment_bytes, ready, source_done);
  path_.clear();
  route_into(m_.topology, a, b, path_, hops_);
  Reservation r;
  r.hops = static_cast<int>(path_.size());
  double bw = 0;  // the slowest dimension crossed
  for (int d = 0; d < 2; ++d)
    if (hops_[d] > 0) bw = bw == 0 ? m_.link_bytes_per_s[d] : std::min(bw, m_.link_bytes_per_s[d]);
  const double seg = bw > 0 ? static_cast<double>(std::min(bytes, segment_bytes)) / bw : 0.0;
  const double slowest = bw > 0 ? static_cast<double>(bytes) / bw : 0.0;
  // A send behind its source cannot end before the source's last segment is in and sent.
  const double head = std::max(ready, source_done > 0 ? source_done + seg - slowest : 0.0);
  r.start = head;
  // Each link direction is shared by the transfers on it, segment by segment (as the
  // executor's segments interleave): a transfer of duration d on a link that still carries
  // transfers ending at e_i gets its share, so it ends at
  //     head + d + Σ_i min(e_i − head, d)
  // (equal shares: each of those moves at most as much as it does meanwhile). k transfers that
  // start together end at d, 2d, ..., kd, the last one where fair sharing ends them all; a small
  // transfer behind a large one takes 2d, not the large one's whole remainder. Transfers already
  // placed are not slowed by later ones (their ends are fixed when they start), so a link's total
  // time is its bytes'. Links are not coupled along the route: the last byte arrives when every
  // link of it has carried the transfer, plus the route's hop latencies.
  double first = head, last = head, latency = 0;
  for (const int l : path_) {
    const int d = (l % 4) < 2 ? 0 : 1;
    const double duration = static_cast<double>(bytes) / m_.link_bytes_per_s[d];
    std::vector<double>& ends = active_[static_cast<std::size_t>(l)];
    std::erase_if(ends, [&](double e) { return e <= head; });
    double shared = 0;
    for (double e : ends) shared += std::min(e - head, duration);
    const double end = head + duration + shared;
    ends.push_back(end);
    first = std::max(first, head + std::min(end - head, seg * static_cast<double>(ends.size())));
    last = std::max(last, end);
    latency += m_.hop_latency_s[d];
    bytes_[l] += bytes;
    busy_[l] += duration;
  }
  r.arrive = last + latency;
  r.first_segment = first + latency;
  return r;
}

}  // namespace toroid::model::sim
