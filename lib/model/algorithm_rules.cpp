#include "model/algorithm_rules.hpp"

#include <fmt/format.h>

#include "core/parse_size.hpp"
#include "toroid/error.hpp"

namespace toroid::model {
namespace {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  for (;;) {
    const auto at = s.find(sep);
    parts.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return parts;
    s.remove_prefix(at + 1);
  }
}

std::string bytes_text(std::uint64_t b) { return b == kRuleNoEnd ? "inf" : std::to_string(b); }

}  // namespace

bool is_rule_list(std::string_view text) noexcept {
  return text.find(':') != std::string_view::npos;
}

std::vector<AlgorithmRule> parse_algorithm_rules(std::string_view text) {
  std::vector<AlgorithmRule> rules;
  for (std::string_view group : split(text, ';')) {
    if (group.empty()) continue;  // a trailing ';'
    const auto colon = group.find(':');
    if (colon == std::string_view::npos)
      throw InvalidArgument(fmt::format(
          "'{}' has no 'collective:' (e.g. allreduce:0-64K=recursive_doubling)", group));
    const std::string_view name = group.substr(0, colon);
    std::optional<Collective> c;
    for (Collective k : kRuleCollectives)
      if (name == to_string(k)) c = k;
    if (!c)
      throw InvalidArgument(fmt::format(
          "'{}': unknown collective '{}' (allreduce, reduce_scatter, allgather, broadcast)", group,
          name));
    for (std::string_view item : split(group.substr(colon + 1), ',')) {
      const std::string whole = fmt::format("{}:{}", name, item);
      const auto eq = item.find('=');
      const auto dash = item.find('-');
      if (eq == std::string_view::npos || dash == std::string_view::npos || dash > eq)
        throw InvalidArgument(
            fmt::format("'{}' is not 'low-high=algorithm' (e.g. 0-64K=recursive_doubling)", whole));
      AlgorithmRule r;
      r.collective = *c;
      r.text = whole;
      const std::string_view low = item.substr(0, dash),
                             high = item.substr(dash + 1, eq - dash - 1);
      r.low = parse_size(low, fmt::format("'{}': low end", whole));
      r.high = high == "inf" ? kRuleNoEnd : parse_size(high, fmt::format("'{}': high end", whole));
      if (r.high <= r.low)
        throw InvalidArgument(fmt::format(
            "'{}': the range is empty (high end {} is not above low end {})", whole, high, low));
      try {
        r.algorithm = parse_algorithm(item.substr(eq + 1));
      } catch (const InvalidArgument& e) {
        throw InvalidArgument(fmt::format("'{}': {}", whole, e.what()));
      }
      if (r.algorithm == Algorithm::automatic)
        throw InvalidArgument(fmt::format(
            "'{}': a rule names a fixed algorithm (sizes no rule covers are auto's)", whole));
      if (!implements(r.algorithm, *c))
        throw InvalidArgument(
            fmt::format("'{}': {} does not implement {}", whole, to_string(r.algorithm), name));
      for (const AlgorithmRule& o : rules)
        if (o.collective == *c && r.low < o.high && o.low < r.high)
          throw InvalidArgument(fmt::format("'{}' overlaps '{}' ([{}, {}) and [{}, {}) bytes)",
                                            whole, o.text, r.low, bytes_text(r.high), o.low,
                                            bytes_text(o.high)));
      rules.push_back(std::move(r));
    }
  }
  if (rules.empty()) throw InvalidArgument(fmt::format("'{}' has no rules", text));
  return rules;
}

const AlgorithmRule* find_rule(const std::vector<AlgorithmRule>& rules, Collective c,
                               std::uint64_t bytes) noexcept {
  for (const AlgorithmRule& r : rules)
    if (r.collective == c && bytes >= r.low && bytes < r.high) return &r;
  return nullptr;
}

}  // namespace toroid::model
