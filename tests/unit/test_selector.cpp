// `auto`'s choice by size, and the text that names it (the preload's TOROID_LOG=info line).
#include <catch2/catch.hpp>

#include "exec/selector.hpp"

using namespace toroid;
using exec::choose_algorithm;
using exec::describe_choice;

TEST_CASE("selector: the description names each size class's algorithm and its bounds") {
  const Torus2D square(2, 2), pair(2, 1), ring(8, 1), one(1, 1);
  CHECK(describe_choice(Collective::allreduce, square) ==
        "recursive_doubling below 128 KiB, rabenseifner below 2 MiB, torus2d_both from 2 MiB");
  CHECK(describe_choice(Collective::allreduce, ring) ==
        "recursive_doubling below 128 KiB, rabenseifner below 2 MiB, bidir_ring from 2 MiB");
  // Two ranks: one exchange beats Rabenseifner's two halves, so two classes merge.
  CHECK(describe_choice(Collective::allreduce, pair) == "recursive_doubling below 2 MiB, bidir_ring from 2 MiB");
  CHECK(describe_choice(Collective::allreduce, one) == "ring");
  CHECK(describe_choice(Collective::reduce_scatter, square) == "torus2d");
  CHECK(describe_choice(Collective::allgather, ring) == "bidir_ring");
}

TEST_CASE("selector: the description agrees with the choice on both sides of every bound") {
  for (const Torus2D& t : {Torus2D(2, 2), Torus2D(2, 1), Torus2D(4, 2), Torus2D(3, 1)})
    for (std::uint64_t bound : {exec::small_message_bytes, exec::medium_message_bytes}) {
      const std::string text = describe_choice(Collective::allreduce, t);
      const Algorithm below = choose_algorithm(Collective::allreduce, bound - 1, t);
      const Algorithm at = choose_algorithm(Collective::allreduce, bound, t);
      INFO(t.to_string() << ": " << text);
      CHECK(text.find(std::string(to_string(below))) != std::string::npos);
      CHECK(text.find(std::string(to_string(at))) != std::string::npos);
      if (below != at) CHECK(text.find(std::string(to_string(below)) + " below") != std::string::npos);
    }
}
