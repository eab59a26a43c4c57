// `auto` on a real communicator: rules from TOROID_ALGO, a tuning file from TOROID_TUNING, every
// rank choosing alike.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "api/internal.hpp"
#include "catch_extras.hpp"
#include "model/tuning.hpp"
#include "mpi_test.hpp"
#include "toroid/toroid.hpp"

using namespace toroid;
using testing::all_ranks;
using testing::world_size;

namespace {

// Every rank's choice for (c, bytes) equals rank 0's.
bool same_everywhere(Communicator& comm, Collective c, std::uint64_t bytes) {
  int mine = static_cast<int>(internal::impl(comm).selector->choose(c, bytes)), first = mine;
  MPI_Bcast(&first, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return all_ranks(first == mine);
}

bool sums_right(Communicator& comm, std::size_t n) {
  std::vector<float> v(n, static_cast<float>(comm.rank() + 1)), out(n);
  allreduce(std::span<const float>(v), std::span<float>(out), ReduceOp::sum, comm);
  const float expect = static_cast<float>(world_size() * (world_size() + 1) / 2);
  for (float x : out)
    if (x != expect) return false;
  return true;
}

}  // namespace

TEST_CASE("auto: every rank makes the same choice and sums right at every size", "[auto][mpich]") {
  Communicator comm(MPI_COMM_WORLD);
  for (std::uint64_t bytes : {4ull, 64ull, 4096ull, 65536ull, 1ull << 20, 4ull << 20}) {
    CHECK(same_everywhere(comm, Collective::allreduce, bytes));
    CHECK(same_everywhere(comm, Collective::allgather, bytes));
    CHECK(all_ranks(sums_right(comm, bytes / 4)));
  }
}

TEST_CASE("auto: TOROID_ALGO rules decide the sizes they cover, the model the rest",
          "[auto][mpich]") {
  setenv("TOROID_ALGO", "allreduce:0-1K=mpi,1K-64K=ring", 1);
  {
    Communicator comm(MPI_COMM_WORLD);
    model::Selector& s = *internal::impl(comm).selector;
    CHECK(all_ranks(s.choose(Collective::allreduce, 512) == Algorithm::mpi));
    CHECK(all_ranks(s.choose(Collective::allreduce, 4096) == Algorithm::ring));
    CHECK(all_ranks(s.choice(Collective::allreduce, model::Selector::size_class(1u << 20)).rule ==
                    nullptr));
    CHECK(all_ranks(sums_right(comm, 100)));     // stock
    CHECK(all_ranks(sums_right(comm, 4000)));    // ring
    CHECK(all_ranks(sums_right(comm, 300000)));  // the model's
  }
  unsetenv("TOROID_ALGO");
}

TEST_CASE("auto: a tuning file from rank 0 sets the link parameters on every rank",
          "[auto][mpich]") {
  model::Tuning t = model::default_tuning();
  t[model::LinkClass::shm] = model::LinkParams{3e-6, 2e9};
  const testing::RankZeroFile file("tuning", model::format_tuning(t, "test"));
  const std::string& path = file.path();
  setenv("TOROID_TUNING", path.c_str(), 1);
  std::string links = "(no communicator)";
  try {
    Communicator comm(MPI_COMM_WORLD);
    links = internal::impl(comm).selector->describe_links();
    CHECK(all_ranks(sums_right(comm, 5000)));
  } catch (const Error& e) {
    links = e.what();
  }
  unsetenv("TOROID_TUNING");
  INFO(links);
  // One rank has no links to price; otherwise the file's source is named.
  CHECK(all_ranks(world_size() == 1 || links.find(path) != std::string::npos));
}

TEST_CASE("auto: a tuning file without the links this communicator uses is refused on every rank",
          "[auto][mpich]") {
  if (world_size() < 2 || testing::real_nodes() != 1)
    SKIP_CASE("needs two ranks or more on one node");
  const testing::RankZeroFile file(
      "tuning_network_only",
      "toroid-tuning 1\nnetwork.alpha_us = 50\nnetwork.gbps = 0.1\nreduce.gbps = 5\n");
  const std::string& path = file.path();
  setenv("TOROID_TUNING", path.c_str(), 1);
  std::string got = "(no error)";
  try {
    Communicator comm(MPI_COMM_WORLD);
  } catch (const InvalidArgument& e) {
    got = e.what();
  }
  unsetenv("TOROID_TUNING");
  INFO(got);
  CHECK(all_ranks(got.find("tuning " + path + " has no shm link parameters") != std::string::npos));
}
