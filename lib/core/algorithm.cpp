// Algorithm names.
#include "toroid/algorithm.hpp"

#include <string>

#include "toroid/error.hpp"

namespace toroid {

std::string_view to_string(Algorithm a) noexcept {
  switch (a) {
    case Algorithm::automatic: return "auto";
    case Algorithm::ring: return "ring";
    case Algorithm::mpi: return "mpi";
  }
  return "?";
}

Algorithm parse_algorithm(std::string_view text) {
  for (Algorithm a : {Algorithm::automatic, Algorithm::ring, Algorithm::mpi})
    if (text == to_string(a)) return a;
  throw InvalidArgument("unknown algorithm '" + std::string(text) + "' (valid: auto, ring, mpi)");
}

}  // namespace toroid
