// Communicators destroyed in any order across ranks: the destructor is local (communicator.hpp),
// so no rank waits in it for a rank that is destroying something else.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "mpi_test.hpp"
#include "toroid/toroid.hpp"

using namespace toroid;
using testing::all_ranks;
using testing::world_rank;
using testing::world_size;

namespace {

// An all-reduce large enough for the shared-memory rings, checked.
bool sums_right(Communicator& c) {
  const std::size_t n = 40'000;
  std::vector<float> x(n, static_cast<float>(c.rank() + 1));
  allreduce(std::span<float>(x), ReduceOp::sum, c);
  const float want = static_cast<float>(c.size() * (c.size() + 1) / 2);
  return std::all_of(x.begin(), x.end(), [&](float v) { return v == want; });
}

}  // namespace

TEST_CASE("lifetime: communicators destroyed in a different order on every rank", "[lifetime]") {
  const int rank = world_rank(), size = world_size();
  MPI_Comm unequal = MPI_COMM_NULL, with_null = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank < (size + 2) / 3 ? 0 : 1, size - rank, &unequal);
  MPI_Comm_split(MPI_COMM_WORLD, size > 1 && rank == size - 1 ? MPI_UNDEFINED : 0, rank,
                 &with_null);

  for (int round = 0; round < 3; ++round) {
    std::vector<std::unique_ptr<Communicator>> made;
    for (int i = 0; i < 3; ++i) made.push_back(std::make_unique<Communicator>(MPI_COMM_WORLD));
    made.push_back(std::make_unique<Communicator>(unequal));
    if (with_null != MPI_COMM_NULL) made.push_back(std::make_unique<Communicator>(with_null));
    bool right = true;
    for (auto& c : made) right = sums_right(*c) && right;
    REQUIRE(all_ranks(right));

    // Every rank its own order; rank 0 also late, so the others are well into theirs.
    std::mt19937 shuffle(static_cast<unsigned>(rank * 7919 + round));
    std::shuffle(made.begin(), made.end(), shuffle);
    if (rank == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    made.clear();
  }
  Communicator after(MPI_COMM_WORLD);
  CHECK(all_ranks(sums_right(after)));
  MPI_Comm_free(&unequal);
  if (with_null != MPI_COMM_NULL) MPI_Comm_free(&with_null);
}
