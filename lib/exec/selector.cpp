#include "exec/selector.hpp"

#include <fmt/format.h>

#include <string_view>

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
  if (c == schedule::Collective::broadcast) {
    if (t.size() == 1 || bytes < broadcast_tree_bytes) return Algorithm::recursive_doubling;
    return two_d ? Algorithm::torus2d : Algorithm::ring;
  }
  return two_d ? Algorithm::torus2d : Algorithm::bidir_ring;
}

namespace {

std::string size_text(std::uint64_t bytes) {
  if (bytes % (1u << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  if (bytes % (1u << 10) == 0) return fmt::format("{} KiB", bytes >> 10);
  return fmt::format("{} B", bytes);
}

}  // namespace

std::string describe_choice(schedule::Collective c, const Torus2D& t) {
  // The size classes' lower ends; each class runs what its first byte count gets.
  const std::uint64_t starts[] = {broadcast_tree_bytes, small_message_bytes, medium_message_bytes};
  std::string text;
  Algorithm current = choose_algorithm(c, 0, t);
  std::uint64_t from = 0;
  for (std::uint64_t start : starts) {
    const Algorithm a = choose_algorithm(c, start, t);
    if (a == current) continue;
    text += fmt::format("{} below {}, ", to_string(current), size_text(start));
    current = a;
    from = start;
  }
  if (text.empty()) return std::string(to_string(current));
  return text + fmt::format("{} from {}", to_string(current), size_text(from));
}

}  // namespace toroid::exec
