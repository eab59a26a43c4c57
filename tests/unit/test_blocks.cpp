#include <catch2/catch.hpp>

#include "toroid/block.hpp"
#include "toroid/error.hpp"

using namespace toroid;

TEST_CASE("block rule: contiguous, covering, sizes differ by at most one, larger first",
          "[blocks]") {
  for (int p : {1, 2, 3, 7, 64}) {
    for (std::uint64_t n : {0ull, 1ull, 5ull, 63ull, 64ull, 65ull, 1000003ull}) {
      std::uint64_t next = 0;
      for (int r = 0; r < p; ++r) {
        const Block b = block_of(n, p, r);
        CHECK(b.offset == next);
        CHECK((b.count == n / p || b.count == n / p + 1));
        if (r > 0) CHECK(b.count <= block_of(n, p, r - 1).count);
        next += b.count;
      }
      CHECK(next == n);
    }
  }
  CHECK(block_of(10, 4, 0) == Block{0, 3});
  CHECK(block_of(10, 4, 3) == Block{8, 2});
  CHECK_THROWS_AS(block_of(10, 0, 0), InvalidArgument);
  CHECK_THROWS_WITH(block_of(10, 4, 4), Catch::Contains("rank 4 is outside [0, 4)"));
}
