#include "core/who_holds.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace toroid {

Holders holders_by_first_rank(const std::vector<std::string>& value_of_rank) {
  Holders holders;
  for (int r = 0; r < static_cast<int>(value_of_rank.size()); ++r) {
    const std::string& value = value_of_rank[static_cast<std::size_t>(r)];
    auto it = std::find_if(holders.begin(), holders.end(),
                           [&](const auto& h) { return h.first == value; });
    if (it == holders.end())
      holders.push_back({value, {r}});
    else
      it->second.push_back(r);
  }
  return holders;
}

std::string who_holds(const Holders& holders) {
  std::string detail;
  for (const auto& [held, ranks] : holders)
    detail += fmt::format("{}{} {} {} {}", detail.empty() ? "" : "; ",
                          ranks.size() == 1 ? "rank" : "ranks", fmt::join(ranks, ","),
                          ranks.size() == 1 ? "has" : "have", held);
  return detail;
}

}  // namespace toroid
