// Naming which ranks hold which value, for the errors that say how ranks disagree:
// "rank 1 has 999; ranks 0,2,3 have 1000". No MPI here: the callers gather the values.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace toroid {

// Values with the ranks that hold each, in the order given.
using Holders = std::vector<std::pair<std::string, std::vector<int>>>;

// Each rank's value (index = rank) grouped, in the order of the lowest rank holding each.
Holders holders_by_first_rank(const std::vector<std::string>& value_of_rank);
// "rank 0 has 8; ranks 1,2 have 16".
std::string who_holds(const Holders& holders);

}  // namespace toroid
