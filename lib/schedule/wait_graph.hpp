// Who waits for whom, for running a schedule as a dataflow in one pass: per step the number of
// steps it waits for (its dependencies, and the step before it on its channel: direction, peer,
// tag), and per step the steps that wait for it, released on start or on finish as the rule in
// step.hpp (lets_go) says. The verifier and the simulator count down this graph; the engine
// checks the same rule directly, task by task.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace toroid::schedule {

struct WaitGraph {
  static constexpr std::uint32_t kFollow = 1u
                                           << 31;  // in `waiters`: waits for the first segment only
  static constexpr std::uint32_t kChannel = 1u << 30;  // in `waiters`: the next step on the channel
  static constexpr std::uint32_t kIndex = kChannel - 1;
  std::vector<std::uint32_t> waits;  // per step
  std::vector<std::uint32_t> begin;  // per step + 1: its waiters are waiters[begin[i], begin[i+1])
  std::vector<std::uint32_t> waiters;  // step index | kFollow | kChannel
};

// n steps; deps(j, f) calls f(i, follow) for each dependency of step j on step i; channel(j, key)
// sets `key` and returns true for a step that has a channel (not a local one).
template <class Deps, class Channel>
WaitGraph wait_graph(std::size_t n, Deps&& deps, Channel&& channel) {
  WaitGraph g;
  g.waits.assign(n, 0);
  std::vector<std::uint32_t> count(n, 0), before(n, WaitGraph::kIndex);
  std::unordered_map<std::uint64_t, std::uint32_t> last;
  for (std::uint32_t j = 0; j < n; ++j) {
    deps(j, [&](std::uint32_t i, bool) {
      ++count[i];
      ++g.waits[j];
    });
    std::uint64_t key = 0;
    if (!channel(j, key)) continue;
    auto [it, fresh] = last.try_emplace(key, j);
    if (fresh) continue;
    before[j] = it->second;
    it->second = j;
    ++count[before[j]];
    ++g.waits[j];
  }
  g.begin.assign(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) g.begin[i + 1] = g.begin[i] + count[i];
  g.waiters.assign(g.begin[n], 0);
  std::vector<std::uint32_t> fill(g.begin.begin(), g.begin.end() - 1);
  for (std::uint32_t j = 0; j < n; ++j) {
    deps(j, [&](std::uint32_t i, bool follow) {
      g.waiters[fill[i]++] = j | (follow ? WaitGraph::kFollow : 0u);
    });
    if (before[j] != WaitGraph::kIndex) g.waiters[fill[before[j]]++] = j | WaitGraph::kChannel;
  }
  return g;
}

// The channel key of a step (direction, peer, tag).
inline std::uint64_t channel_key(bool sends, std::int32_t peer, std::int32_t tag) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(peer)) << 33) |
         (static_cast<std::uint64_t>(static_cast<std::uint32_t>(tag)) << 1) | (sends ? 1u : 0u);
}

}  // namespace toroid::schedule
