// The block rule (reduce-scatter result and all-gather contribution): a vector of `count`
// elements over p ranks is cut into p contiguous blocks; block r has count/p elements plus
// one more when r < count % p, and starts at r*(count/p) + min(r, count % p). Rank r owns
// block r. `block_of` computes it. No MPI here: the schedules use it too.
#pragma once

#include <cstdint>

namespace toroid {

struct Block {
  std::uint64_t offset = 0;
  std::uint64_t count = 0;
  friend bool operator==(const Block&, const Block&) = default;
};
// Throws InvalidArgument when nranks < 1 or r is outside [0, nranks).
Block block_of(std::uint64_t count, int nranks, int r);

}  // namespace toroid
