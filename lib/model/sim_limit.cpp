#include "model/sim_limit.hpp"

namespace toroid::model {

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
  return l;
}

}  // namespace toroid::model
