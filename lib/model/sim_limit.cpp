#include "model/sim_limit.hpp"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>

namespace toroid::model {
namespace {

// Hops from x to every coordinate of the dimension, as (latency, how many coordinates).
std::map<double, double> distances_from(const DimensionLinks& d, int x) {
  std::map<double, double> h;
  for (int y = 0; y < d.size; ++y) {
    const int a = x > y ? x - y : y - x;
    h[(d.wraps ? std::min(a, d.size - a) : a) * d.hop_s] += 1;
  }
  return h;
}

// The coordinates that differ up to symmetry: one round a ring, half a line (mirrored).
std::vector<int> classes_of(const DimensionLinks& d) {
  std::vector<int> xs;
  const int n = d.wraps ? 1 : (d.size + 1) / 2;
  for (int x = 0; x < n; ++x) xs.push_back(x);
  return xs;
}

}  // namespace

double distance_bound(const std::vector<DimensionLinks>& dims, Collective c, double bytes) {
  double p = 1;
  for (const DimensionLinks& d : dims) p *= d.size;
  if (p < 2) return 0;
  double bound = 0, radius = -1, most_ports = 0;
  // Every class of chip: one coordinate class per dimension (an odometer over them).
  std::vector<std::vector<int>> xs;
  for (const DimensionLinks& d : dims) xs.push_back(classes_of(d));
  std::vector<std::size_t> at(dims.size(), 0);
  for (;;) {
    double ports = 0;
    std::map<double, double> far{{0.0, 1.0}};  // latency to every chip, and how many
    for (std::size_t i = 0; i < dims.size(); ++i) {
      const int x = xs[i][at[i]];
      ports += ports_along(dims[i].size, dims[i].wraps, x) * dims[i].bytes_per_s;
      std::map<double, double> next;
      for (const auto& [la, na] : far)
        for (const auto& [lb, nb] : distances_from(dims[i], x)) next[la + lb] += na * nb;
      far = std::move(next);
    }
    const double ecc = far.rbegin()->first;
    most_ports = std::max(most_ports, ports);
    radius = radius < 0 ? ecc : std::min(radius, ecc);
    if (c == Collective::allreduce) {
      bound = std::max(bound, ecc + bytes / ports);
    } else if (c == Collective::reduce_scatter || c == Collective::allgather ||
               c == Collective::alltoall) {
      // Farthest first: the k farthest blocks take k·(n/p) of the ports' time (an all-to-all
      // chip's block for each other chip, as a reduce-scatter's).
      double blocks = 0;
      far[0.0] -= 1;  // not to itself
      for (auto it = far.rbegin(); it != far.rend(); ++it) {
        blocks += it->second;
        if (it->second > 0) bound = std::max(bound, it->first + blocks * bytes / p / ports);
      }
    }
    std::size_t i = 0;
    while (i < dims.size() && ++at[i] == xs[i].size()) at[i++] = 0;
    if (i == dims.size()) break;
  }
  if (c == Collective::broadcast) bound = radius + bytes / most_ports;
  return bound;
}

namespace {

// Every row along d alike: a row's chips' ports along d (Torus::ports), once per row.
std::uint64_t directions_along(const Torus& t, int d) {
  const auto k = static_cast<std::uint64_t>(t.size(d));
  std::uint64_t row = 0;
  for (int chip : t.line_through(0, d)) row += static_cast<std::uint64_t>(t.ports(chip, d));
  return static_cast<std::uint64_t>(t.chips()) / k * row;
}

// A line's end has the fewest (coordinate 0, as chip 0; on a ring every coordinate is alike).
int fewest_along(const Torus& t, int d) { return t.ports(0, d); }

}  // namespace

std::uint64_t link_directions(const Torus& t, int d) { return directions_along(t, d); }

int fewest_ports(const Torus& t, int d) { return fewest_along(t, d); }

SimLimit limit_of(const Torus& t, const TorusLinks& links, Collective c, std::uint64_t bytes) {
  SimLimit l;
  const auto p = static_cast<double>(t.chips());
  if (t.chips() < 2) return l;
  const double n = static_cast<double>(bytes);
  const double crossings = (c == Collective::allreduce ? 2.0 : 1.0) * (p - 1);
  double capacity = 0, ports = 0, least_hop = links.hop_s.at(0);
  for (int d = 0; d < t.dimensions(); ++d) {
    const double bw = links.bytes_per_s.at(static_cast<std::size_t>(d));
    capacity += static_cast<double>(directions_along(t, d)) * bw;
    // A corner of the grid (on a torus, any chip) has the fewest ports along every dimension at
    // once, and a grid of two or more chips has such a chip other than any one root, so the
    // broadcast's receivers meet the same bound.
    ports += fewest_along(t, d) * bw;
    least_hop = std::min(least_hop, links.hop_s.at(static_cast<std::size_t>(d)));
  }
  l.bandwidth_s = crossings * n / capacity;
  if (c == Collective::alltoall) {
    // Every block (n/p bytes from each chip to each other) crosses at least its chips' distance:
    // Σ over pairs of d(i, j) block-hops in all. Along a dimension of k the pairs of coordinates
    // (x, y) each stand for (p/k)² pairs of chips.
    double block_hops = 0;
    double bisection = 0;
    if (!t.twisted()) {
      for (int d = 0; d < t.dimensions(); ++d) {
        const int k = t.size(d);
        double pairs = 0;
        for (int x = 0; x < k; ++x)
          for (int y = 0; y < k; ++y)
            pairs += t.wraps(d) ? std::min(std::abs(x - y), k - std::abs(x - y)) : std::abs(x - y);
        block_hops += pairs * (p / k) * (p / k);
        // The bisection across d: the h·M chips below the cut send each of the (k−h)·M above
        // it a block, through one link direction per row (M of them) on a line, two (the cut
        // and the wraparound) on a ring. On a ring it equals the block-hops bound; on a line it
        // is tighter: the middle links carry more than the average link (the multipod's X).
        if (k > 1) {
          const double rows = p / k, h = k / 2;
          const double crossing = h * rows * (k - h) * rows * n / p;
          const double cut = (t.wraps(d) && k > 2 ? 2 : 1) * rows *
                             links.bytes_per_s.at(static_cast<std::size_t>(d));
          bisection = std::max(bisection, crossing / cut);
        }
      }
    } else {
      for (int h : t.hops_from(0)) block_hops += p * h;  // every chip sees the same distances
    }
    l.bandwidth_s = std::max(n / p * block_hops / capacity, bisection);
  }
  if (c == Collective::allreduce || c == Collective::reduce_scatter)
    l.reduction_s = (p - 1) / p * n / links.reduce_bytes_per_s;
  const double missing =
      (c == Collective::allgather || c == Collective::reduce_scatter || c == Collective::alltoall)
          ? (p - 1) / p * n
          : n;
  l.port_s = missing / ports;
  // An all-reduce's busiest reducer ends its last sum no earlier than the average above, and
  // every chip needs that sum: it still travels at least the radius (the least eccentricity).
  const bool sum_travels = c == Collective::allreduce;
  if (!t.twisted()) {
    std::vector<DimensionLinks> dims;
    double radius = 0;  // each dimension's middle: k/2 hops round a ring or from a line's middle
    for (int d = 0; d < t.dimensions(); ++d) {
      const int k = t.size(d);
      const double hop = links.hop_s.at(static_cast<std::size_t>(d));
      l.latency_s += (t.wraps(d) ? k / 2 : k - 1) * hop;
      radius += k / 2 * hop;
      dims.push_back({k, t.wraps(d), hop, links.bytes_per_s.at(static_cast<std::size_t>(d))});
    }
    l.distance_s = distance_bound(dims, c, n);
    if (sum_travels) l.reduction_s += radius;
    return l;
  }
  // Twisted: every chip alike (each sees the same distances, through the same ports), so one
  // chip's shortest paths give the diameter (the radius too) and the distance bound.
  std::vector<int> hops = t.hops_from(0);
  std::sort(hops.begin(), hops.end(), std::greater<>());
  l.latency_s = hops.front() * least_hop;
  if (sum_travels) l.reduction_s += l.latency_s;
  if (c == Collective::allreduce || c == Collective::broadcast) {
    l.distance_s = l.latency_s + n / ports;  // (for broadcast: the radius is the diameter here)
  } else {
    for (std::size_t k = 0; k + 1 < hops.size(); ++k)  // hops.back() is the chip itself
      l.distance_s = std::max(l.distance_s, hops[k] * least_hop + (k + 1) * n / p / ports);
  }
  return l;
}

SimLimit limit_of(const SimModel& m, Collective c, std::uint64_t bytes) {
  const auto dims = static_cast<std::ptrdiff_t>(m.topology.dimensions());
  return limit_of(m.topology,
                  {{m.link_bytes_per_s.begin(), m.link_bytes_per_s.begin() + dims},
                   {m.hop_latency_s.begin(), m.hop_latency_s.begin() + dims},
                   m.reduce_bytes_per_s},
                  c, bytes);
}

}  // namespace toroid::model
