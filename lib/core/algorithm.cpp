// Algorithm names.
#include "toroid/algorithm.hpp"

#include <string>

#include "toroid/error.hpp"

namespace toroid {

std::string_view to_string(Algorithm a) noexcept {
  switch (a) {
    case Algorithm::automatic:
      return "auto";
    case Algorithm::ring:
      return "ring";
    case Algorithm::bidir_ring:
      return "bidir_ring";
    case Algorithm::torus2d:
      return "torus2d";
    case Algorithm::torus2d_both:
      return "torus2d_both";
    case Algorithm::hierarchical:
      return "hierarchical";
    case Algorithm::recursive_doubling:
      return "recursive_doubling";
    case Algorithm::rabenseifner:
      return "rabenseifner";
    case Algorithm::swing:
      return "swing";
    case Algorithm::swing_latency:
      return "swing_latency";
    case Algorithm::mpi:
      return "mpi";
    case Algorithm::direct:
      return "direct";
    case Algorithm::bruck:
      return "bruck";
  }
  return "?";
}

std::string_view to_string(Collective c) noexcept {
  switch (c) {
    case Collective::allreduce:
      return "allreduce";
    case Collective::reduce_scatter:
      return "reduce_scatter";
    case Collective::allgather:
      return "allgather";
    case Collective::broadcast:
      return "broadcast";
    case Collective::alltoall:
      return "alltoall";
  }
  return "?";
}

bool implements(Algorithm a, Collective c) noexcept {
  if (c == Collective::alltoall)
    return a == Algorithm::direct || a == Algorithm::bruck || a == Algorithm::ring ||
           a == Algorithm::torus2d || a == Algorithm::torus2d_both ||
           a == Algorithm::hierarchical || a == Algorithm::mpi || a == Algorithm::automatic;
  if (a == Algorithm::direct || a == Algorithm::bruck) return false;
  if (c == Collective::broadcast)
    return a == Algorithm::ring || a == Algorithm::torus2d || a == Algorithm::recursive_doubling ||
           a == Algorithm::mpi || a == Algorithm::automatic;
  switch (a) {
    case Algorithm::hierarchical:
    case Algorithm::recursive_doubling:
    case Algorithm::rabenseifner:
    case Algorithm::swing:
      return c == Collective::allreduce;
    default:
      return true;
  }
}

Algorithm parse_algorithm(std::string_view text) {
  std::string valid;
  for (Algorithm a : all_algorithms) {
    if (text == to_string(a)) return a;
    valid += (valid.empty() ? "" : ", ") + std::string(to_string(a));
  }
  throw InvalidArgument("unknown algorithm '" + std::string(text) + "' (valid: " + valid + ")");
}

}  // namespace toroid
