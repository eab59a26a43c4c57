// Names of the collective algorithms a caller can ask for.
#pragma once

#include <string_view>

namespace toroid {

enum class Algorithm {
  automatic,  // "auto": chosen per call from size and topology
  ring,       // unidirectional ring over all ranks (row-major order of the torus)
  mpi,        // the stock MPI collective of the same MPI library
};

std::string_view to_string(Algorithm a) noexcept;
// Accepts the names above ("auto", "ring", "mpi"); throws InvalidArgument listing the valid ones.
Algorithm parse_algorithm(std::string_view text);

}  // namespace toroid
