// Rules that override `auto` for size ranges, in the style of UCC's score maps:
//
//   TOROID_ALGO="allreduce:0-64K=recursive_doubling,64K-inf=ring;allgather:0-inf=bidir_ring"
//
// Per collective, ranges [low, high) of the whole vector's bytes (sizes as parse_size reads
// them, "inf" for no end) each name an algorithm (any that implements the collective, `mpi`
// included). A size no rule covers is left to the cost model.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "toroid/algorithm.hpp"

namespace toroid::model {

// The collectives a rule may name, in the order rules are written.
inline constexpr Collective kRuleCollectives[] = {Collective::allreduce, Collective::reduce_scatter,
                                                  Collective::allgather, Collective::broadcast};
// A rule's high end when it has none ("inf").
inline constexpr std::uint64_t kRuleNoEnd = UINT64_MAX;

struct AlgorithmRule {
  Collective collective = Collective::allreduce;
  std::uint64_t low = 0, high = 0;  // bytes, [low, high); high = kRuleNoEnd: no end
  Algorithm algorithm = Algorithm::ring;
  std::string text;  // as written, for messages ("allreduce:0-64K=recursive_doubling")
};

// Whether `text` is a rule list rather than one algorithm's name (it has a ':').
bool is_rule_list(std::string_view text) noexcept;

// Throws InvalidArgument quoting the bad part: an unknown collective or algorithm, a malformed
// or empty range, an algorithm that does not implement the collective, overlapping ranges.
std::vector<AlgorithmRule> parse_algorithm_rules(std::string_view text);

// The rule covering `bytes` of collective c, if any.
const AlgorithmRule* find_rule(const std::vector<AlgorithmRule>& rules, Collective c,
                               std::uint64_t bytes) noexcept;

}  // namespace toroid::model
