// The skewed alltoallv layouts the MPI tests share: counts as a gate's choices are (some peers
// many, some none), packed or spaced out with the receive blocks in reverse rank order.
#pragma once

#include <cstdint>
#include <numeric>
#include <vector>

namespace toroid::testing {

// Elements rank i sends rank j: skewed as a gate's choices are (some peers many, some none).
inline std::uint64_t skewed(int i, int j, int seed, std::uint64_t scale) {
  const auto h = static_cast<std::uint64_t>(i * 7 + j * 13 + seed * 5);
  return h % 4 == 0 ? 0 : (h % 11) * scale + (h % 3);
}

struct Layout {
  std::vector<std::uint64_t> send_counts, send_offsets, recv_counts, recv_offsets;
  std::uint64_t in_count = 0, out_count = 0;
};

// This rank's layout; `gaps`: blocks spaced out and the receive blocks in reverse rank order
// (offsets given), else packed (no offsets).
inline Layout layout_of(int me, int p, int seed, std::uint64_t scale, bool gaps) {
  Layout l;
  for (int q = 0; q < p; ++q) {
    l.send_counts.push_back(skewed(me, q, seed, scale));
    l.recv_counts.push_back(skewed(q, me, seed, scale));
  }
  if (!gaps) {
    l.in_count = std::accumulate(l.send_counts.begin(), l.send_counts.end(), std::uint64_t{0});
    l.out_count = std::accumulate(l.recv_counts.begin(), l.recv_counts.end(), std::uint64_t{0});
    return l;
  }
  for (int q = 0; q < p; ++q) {
    l.send_offsets.push_back(l.in_count + 2);
    l.in_count += l.send_counts[static_cast<std::size_t>(q)] + 2;
  }
  l.recv_offsets.resize(static_cast<std::size_t>(p));
  for (int q = p - 1; q >= 0; --q) {
    l.recv_offsets[static_cast<std::size_t>(q)] = l.out_count + 1;
    l.out_count += l.recv_counts[static_cast<std::size_t>(q)] + 3;
  }
  return l;
}

}  // namespace toroid::testing
