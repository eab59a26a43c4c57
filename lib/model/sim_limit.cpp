#include "model/sim_limit.hpp"

#include <map>

namespace toroid::model {
namespace {

// Link directions out of coordinate x of a dimension: none on a dimension of one, one between
// two chips or at the end of a line, two round a ring of more than two or inside a line.
int ports_at(const DimensionLinks& d, int x) {
  if (d.size < 2) return 0;
  if (d.size == 2) return 1;
  return d.wraps || (x > 0 && x < d.size - 1) ? 2 : 1;
}

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
      ports += ports_at(dims[i], x) * dims[i].bytes_per_s;
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
    } else if (c == Collective::reduce_scatter || c == Collective::allgather) {
      // Farthest first: the k farthest blocks take k·(n/p) of the ports' time.
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

std::uint64_t link_directions(const Torus2D& t, Axis a) {
  const std::uint64_t k = static_cast<std::uint64_t>(t.dim(a));
  const std::uint64_t lines = static_cast<std::uint64_t>(t.size()) / k;
  if (k < 2) return 0;
  return lines * (t.wraps(a) && k > 2 ? 2 * k : 2 * (k - 1));
}

int fewest_ports(const Torus2D& t, Axis a) {
  const int k = t.dim(a);
  if (k < 2) return 0;
  return t.wraps(a) && k > 2 ? 2 : 1;
}

SimLimit limit_of(const SimModel& m, Collective c, std::uint64_t bytes) {
  SimLimit l;
  const Torus2D& t = m.topology;
  const auto p = static_cast<double>(t.size());
  if (t.size() < 2) return l;
  const double crossings = (c == Collective::allreduce ? 2.0 : 1.0) * (p - 1);
  const double capacity = static_cast<double>(link_directions(t, Axis::x)) * m.link_bytes_per_s[0] +
                          static_cast<double>(link_directions(t, Axis::y)) * m.link_bytes_per_s[1];
  l.bandwidth_s = crossings * static_cast<double>(bytes) / capacity;
  if (c == Collective::allreduce || c == Collective::reduce_scatter)
    l.reduction_s = (p - 1) / p * static_cast<double>(bytes) / m.reduce_bytes_per_s;
  // A corner of the grid (on a torus, any chip) has the fewest ports along both axes at once,
  // and a grid of two or more chips has such a chip other than any one root, so the
  // broadcast's receivers meet the same bound.
  const double ports = fewest_ports(t, Axis::x) * m.link_bytes_per_s[0] +
                       fewest_ports(t, Axis::y) * m.link_bytes_per_s[1];
  const double missing = (c == Collective::allgather || c == Collective::reduce_scatter)
                             ? (p - 1) / p * static_cast<double>(bytes)
                             : static_cast<double>(bytes);
  l.port_s = missing / ports;
  for (Axis a : {Axis::x, Axis::y}) {
    const int k = t.dim(a);
    const int diameter = t.wraps(a) ? k / 2 : k - 1;
    l.latency_s += diameter * m.hop_latency_s[a == Axis::x ? 0 : 1];
  }
  l.distance_s =
      distance_bound({{t.x_dim(), t.wraps(Axis::x), m.hop_latency_s[0], m.link_bytes_per_s[0]},
                      {t.y_dim(), t.wraps(Axis::y), m.hop_latency_s[1], m.link_bytes_per_s[1]}},
                     c, static_cast<double>(bytes));
  return l;
}

}  // namespace toroid::model
