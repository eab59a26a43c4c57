// The block rule shared by reduce-scatter results and all-gather contributions.
#include <fmt/format.h>

#include <algorithm>

#include "toroid/block.hpp"
#include "toroid/error.hpp"

namespace toroid {

Block block_of(std::uint64_t count, int nranks, int r) {
  if (nranks < 1) throw InvalidArgument(fmt::format("block_of: nranks {} must be >= 1", nranks));
  if (r < 0 || r >= nranks)
    throw InvalidArgument(fmt::format("block_of: rank {} is outside [0, {})", r, nranks));
  const std::uint64_t p = static_cast<std::uint64_t>(nranks);
  const std::uint64_t base = count / p, extra = count % p, ur = static_cast<std::uint64_t>(r);
  return {ur * base + std::min(ur, extra), base + (ur < extra ? 1 : 0)};
}

}  // namespace toroid
