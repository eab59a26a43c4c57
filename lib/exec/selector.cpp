#include "exec/selector.hpp"

namespace toroid::exec {

Algorithm choose_algorithm(schedule::Collective c, std::uint64_t bytes, const Torus2D& t) {
  const bool two_d = t.x_dim() > 1 && t.y_dim() > 1;
  if (c == schedule::Collective::allreduce) {
    if (t.size() == 1) return Algorithm::ring;
    // Latency-bound: fewest rounds wins (log2 p exchanges instead of 2(p-1) ring steps).
    if (bytes < small_message_bytes) return Algorithm::recursive_doubling;
    // Two ranks: Rabenseifner is two half-size exchanges where one whole exchange does.
    if (bytes < medium_message_bytes) return t.size() == 2 ? Algorithm::recursive_doubling : Algorithm::rabenseifner;
    // Bandwidth-bound: the algorithms that follow the torus and keep its links busy.
    return two_d ? Algorithm::torus2d_both : Algorithm::bidir_ring;
  }
  return two_d ? Algorithm::torus2d : Algorithm::bidir_ring;
}

}  // namespace toroid::exec
