// The block rule (reduce-scatter result and all-gather contribution): a vector of `count`
// elements over p ranks is cut into p contiguous blocks; block r has count/p elements plus
// one more when r < count % p, and starts at r*(count/p) + min(r, count % p). Rank r owns
// block r. `block_of` computes it. No MPI here: the schedules use it too.
#pragma once

#include <cstdint>
#include <span>

#include "toroid/export.hpp"

TOROID_API_BEGIN
namespace toroid {

struct Block {
  std::uint64_t offset = 0;
  std::uint64_t count = 0;
  friend bool operator==(const Block&, const Block&) = default;
};
// Throws InvalidArgument when nranks < 1 or r is outside [0, nranks).
Block block_of(std::uint64_t count, int nranks, int r);

// One rank's blocks of an alltoallv (collectives.hpp): per peer, a count and where the block
// starts, in elements.
struct BlockLayout {
  BlockLayout(std::span<const std::uint64_t> counts_per_rank,
              std::span<const std::uint64_t> offsets_per_rank = {})
      : counts(counts_per_rank), offsets(offsets_per_rank) {}
  std::span<const std::uint64_t> counts;   // one per rank
  std::span<const std::uint64_t> offsets;  // one per rank, or none: packed in rank order
};

}  // namespace toroid
TOROID_API_END
