// Bad inputs: each gives a clear error on every rank, never a hang.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "catch_extras.hpp"
#include "mpi_test.hpp"
#include "toroid/toroid.hpp"

using namespace toroid;
using testing::all_ranks;
using testing::world_size;

TEST_CASE("a topology that does not fit the communicator names both sizes", "[errors]") {
  Options o;
  o.topology = "3x3";
  if (world_size() == 9) o.topology = "2x2";
  const std::string expect = world_size() == 9 ? "topology 2x2 needs 4 ranks, communicator has 9"
                                               : "topology 3x3 needs 9 ranks, communicator has " +
                                                     std::to_string(world_size());
  CHECK_THROWS_WITH(Communicator(MPI_COMM_WORLD, o), expect);
  o.topology = "4x";
  CHECK_THROWS_WITH(Communicator(MPI_COMM_WORLD, o), Catch::Contains("invalid topology '4x'"));
}

TEST_CASE("a topology error on one rank only is raised on every rank", "[errors][mpich]") {
  Options o;
  o.topology = testing::world_rank() == world_size() - 1 ? "0x1" : "auto";
  bool threw = false;
  try {
    Communicator c(MPI_COMM_WORLD, o);
  } catch (const TopologyError& e) {
    threw = std::string(e.what()).find("at least 1") != std::string::npos;
  }
  CHECK(all_ranks(threw));
}

TEST_CASE("explicit topologies shape the communicator, auto follows the nodes", "[errors]") {
  const int p = world_size();
  Options o;
  o.topology = std::to_string(p) + "x1:wrap=none";
  Communicator c(MPI_COMM_WORLD, o);
  CHECK(c.topology().x_dim() == p);
  CHECK_FALSE(c.topology().wraps(Axis::x));
  Communicator a(MPI_COMM_WORLD);
  CHECK(a.topology().size() == p);
  CHECK(a.nodes() == testing::real_nodes());
  // Across real nodes MPI messages stay under TCP's eager limit by default (communicator.hpp).
  if (!std::getenv("TOROID_SEGMENT_BYTES"))
    CHECK(a.segment_bytes() ==
          (testing::real_nodes() > 1 ? cross_node_segment_bytes : default_segment_bytes));
  // With nodes of one size and consecutive or dealt-out ranks, one torus dimension stays inside
  // every node: all of my row, or all of my column, shares my node.
  const std::string placement(a.node_placement());
  if (a.nodes() == p && p > 1) {
    CHECK(a.topology() == Torus2D::most_square(p));  // a rank per node: nothing to keep inside
  } else if (placement == "by node" || placement == "round robin") {
    const Torus2D& t = a.topology();
    const Coord me = t.coord_of(a.rank());
    bool row_local = true, column_local = true;
    for (int x = 0; x < t.x_dim(); ++x)
      row_local = row_local && a.node_of(t.rank_of({x, me.y})) == a.node_of(a.rank());
    for (int y = 0; y < t.y_dim(); ++y)
      column_local = column_local && a.node_of(t.rank_of({me.x, y})) == a.node_of(a.rank());
    INFO(placement << ": topology " << t.to_string());
    CHECK(all_ranks(placement == "by node" ? row_local : column_local));
  } else {
    CHECK(a.topology() == Torus2D::most_square(p));
  }
}

TEST_CASE("argument errors name the argument, the value and the rank", "[errors][mpich]") {
  Communicator comm(MPI_COMM_WORLD);
  const int r = comm.rank(), p = comm.size();
  const std::string on = " on rank " + std::to_string(r) + ": ";
  std::vector<float> in(100), out(100);
  std::vector<std::int32_t> ints(100);

  CHECK_THROWS_WITH(allreduce(in.data(), 100, out.data(), 99, DataType::f32, ReduceOp::sum, comm),
                    "allreduce" + on + "output has 99 elements, needs 100");
  CHECK_THROWS_WITH(allreduce(nullptr, 100, out.data(), 100, DataType::f32, ReduceOp::sum, comm),
                    "allreduce" + on + "input is null with count 100");
  CHECK_THROWS_WITH(allreduce(in.data(), 100, nullptr, 100, DataType::f32, ReduceOp::sum, comm),
                    "allreduce" + on + "output is null but 100 elements are needed");
  CHECK_THROWS_WITH(allreduce(std::span<std::int32_t>(ints), ReduceOp::avg, comm),
                    "allreduce" + on + "op avg needs a floating type, got i32");
  CHECK_THROWS_WITH(
      allreduce(in.data(), 100, in.data() + 1, 100, DataType::f32, ReduceOp::sum, comm),
      Catch::Contains("overlap without being in place"));
  const std::uint64_t block = block_of(100 * p, p, r).count;
  CHECK_THROWS_WITH(
      reduce_scatter(in.data(), 100 * p, out.data(), block - 1, DataType::f32, ReduceOp::sum, comm),
      Catch::Contains("output has " + std::to_string(block - 1) + " elements, needs " +
                      std::to_string(block)));
  std::vector<float> gathered(100 * p + 1);
  CHECK_THROWS_WITH(
      allgather(in.data(), 50, gathered.data(), gathered.size(), DataType::f32, comm),
      Catch::Contains("allgather" + on + "input has 50 elements, but block " + std::to_string(r) +
                      " of a " + std::to_string(gathered.size()) + "-element result has"));
  // All-to-all: equal blocks, one for each rank, and never in place.
  if (p > 1)
    CHECK_THROWS_WITH(alltoall(in.data(), 100 * p + 1, out.data(), 100, DataType::f32, comm),
                      "alltoall" + on + "input has " + std::to_string(100 * p + 1) +
                          " elements, not " + std::to_string(p) +
                          " equal blocks (one for each rank)");
  CHECK_THROWS_WITH(alltoall(in.data(), 10 * p, in.data(), 10 * p, DataType::f32, comm),
                    "alltoall" + on + "in place is not supported; give separate input and output");
  std::vector<float> few(static_cast<std::size_t>(10 * p));
  CHECK_THROWS_WITH(alltoall(few.data(), 10 * p, out.data(), 10 * p - 1, DataType::f32, comm),
                    "alltoall" + on + "output has " + std::to_string(10 * p - 1) +
                        " elements, needs " + std::to_string(10 * p));
  // Along no axis at all; along axes, the block is the place in the group.
  CHECK_THROWS_WITH(
      allreduce_axis(in.data(), 100, out.data(), 100, DataType::f32, ReduceOp::sum, Axes{}, comm),
      "allreduce" + on + "no axes named; name at least one (Axis::x, or Axes{Axis::x, Axis::z})");
  // (Axes whose sub-torus is the whole communicator are its own call, named without them.)
  const bool whole = comm.shape().along(Axis::x).chips() == p;
  CHECK_THROWS_WITH(
      allgather_axis(in.data(), 50, gathered.data(), gathered.size(), DataType::f32, Axis::x, comm),
      Catch::Contains(std::string(whole ? "allgather" : "allgather along x") + on +
                      "input has 50 elements, but block " +
                      std::to_string(comm.shape().position_along(r, Axis::x)) + " of a"));
  // Nothing above left a rank inside a collective: a normal call still works.
  std::vector<float> ok(10, 1.0f);
  allreduce(std::span<float>(ok), ReduceOp::sum, comm);
  CHECK(all_ranks(ok[0] == static_cast<float>(p)));
}

TEST_CASE("with checking on, ranks that disagree on the count all get an error naming them",
          "[errors]") {
  Options o;
  o.check = true;
  Communicator comm(MPI_COMM_WORLD, o);
  if (comm.size() < 2) SKIP_CASE("needs two ranks");
  std::vector<float> v(comm.rank() == 1 ? 7 : 8);
  bool named = false;
  try {
    allreduce(std::span<float>(v), ReduceOp::sum, comm);
  } catch (const InvalidArgument& e) {
    const std::string m = e.what();
    named = m.find("count differs between ranks") != std::string::npos &&
            m.find("rank 1 has 7") != std::string::npos;
  }
  CHECK(all_ranks(named));
  // An argument error on one rank only is raised on all ranks instead of hanging them.
  std::vector<float> out(comm.rank() == 0 ? 3 : 8);
  std::vector<float> in(8);
  bool raised = false;
  try {
    allreduce(in.data(), 8, out.data(), out.size(), DataType::f32, ReduceOp::sum, comm);
  } catch (const InvalidArgument& e) {
    raised = std::string(e.what()).find("output has 3 elements, needs 8") != std::string::npos;
  }
  CHECK(all_ranks(raised));
}

// Communicator construction with `name=value` in the environment raises `expect` on every rank.
void check_bad_env(const char* name, const char* value, const std::string& expect) {
  setenv(name, value, 1);
  std::string got = "(no error)";
  try {
    Communicator c(MPI_COMM_WORLD);
  } catch (const Error& e) {
    got = e.what();
  }
  unsetenv(name);
  INFO(name << "=" << value << ": " << got);
  CHECK(all_ranks(got.find(expect) != std::string::npos));
}

TEST_CASE("bad TOROID_* values name the variable and the value on every rank", "[errors][mpich]") {
  check_bad_env("TOROID_ALGO", "fastest", "TOROID_ALGO: unknown algorithm 'fastest'");
  check_bad_env("TOROID_SEGMENT_BYTES", "12Q", "TOROID_SEGMENT_BYTES: '12Q' is not a size");
  check_bad_env("TOROID_TOPOLOGY", "4x", "invalid topology '4x': Y dimension '' is not an integer");
  check_bad_env("TOROID_NODES", "3,x",
                "TOROID_NODES: '3,x' has 'x', which is not a positive rank count");
  check_bad_env(
      "TOROID_NODES", "999",
      "TOROID_NODES: '999' adds up to 999 ranks, communicator has " + std::to_string(world_size()));
  check_bad_env("TOROID_TIMEOUT", "soon",
                "TOROID_TIMEOUT: 'soon' is not a number of seconds in [0, 1e6]");
  check_bad_env("TOROID_CHECK", "yes", "TOROID_CHECK: 'yes' is not 0, 1, on or off");
  check_bad_env("TOROID_ALGO", "allreduce:0-64K=rong",
                "TOROID_ALGO: 'allreduce:0-64K=rong': unknown algorithm 'rong'");
  check_bad_env(
      "TOROID_ALGO", "allgather:0-inf=rabenseifner",
      "TOROID_ALGO: 'allgather:0-inf=rabenseifner': rabenseifner does not implement allgather");
  check_bad_env("TOROID_LOG", "loud", "TOROID_LOG: 'loud' is not off or info");
  check_bad_env("TOROID_TUNING", "/nonexistent/tuning.txt",
                "TOROID_TUNING: cannot read '/nonexistent/tuning.txt'");
}

TEST_CASE("a malformed tuning file, read by rank 0, is an error naming its line on every rank",
          "[errors]") {
  const testing::RankZeroFile file("malformed_tuning",
                                   "toroid-tuning 1\nshm.alpha_us = 1\nshm.gbps = fast\n");
  const std::string& path = file.path();
  check_bad_env("TOROID_TUNING", path.c_str(),
                "TOROID_TUNING: tuning file " + path + ":3: shm.gbps: 'fast' is not a number");
}

TEST_CASE("a TOROID_* variable set on one rank only is an error naming the ranks, on every rank",
          "[errors]") {
  if (world_size() < 2) SKIP_CASE("needs two ranks");
  if (testing::world_rank() == 0) setenv("TOROID_ALGO", "ring", 1);
  std::string got = "(no error)";
  try {
    Communicator c(MPI_COMM_WORLD);
  } catch (const InvalidArgument& e) {
    got = e.what();
  }
  unsetenv("TOROID_ALGO");
  const std::string others = world_size() == 2 ? "rank 1 has it unset" : "ranks 1,";
  INFO(got);
  CHECK(all_ranks(got.find("TOROID_ALGO differs between ranks: rank 0 has 'ring'; " + others) !=
                  std::string::npos));
  // An option given explicitly is not read from the environment, so it need not agree.
  if (testing::world_rank() == 0) setenv("TOROID_ALGO", "ring", 1);
  Options o;
  o.algorithm = Algorithm::automatic;
  bool built = false;
  try {
    Communicator c(MPI_COMM_WORLD, o);
    built = true;
  } catch (const Error&) {
  }
  unsetenv("TOROID_ALGO");
  CHECK(all_ranks(built));
}

TEST_CASE("Options::nodes \"real\" sees the real nodes whatever TOROID_NODES says", "[errors]") {
  setenv("TOROID_NODES", "999", 1);
  Options real;
  real.nodes = "real";
  std::string got = "(no error)";
  int nodes = 0;
  try {
    Communicator c(MPI_COMM_WORLD, real);
    nodes = c.nodes();
  } catch (const Error& e) {
    got = e.what();
  }
  unsetenv("TOROID_NODES");
  INFO(got);
  CHECK(all_ranks(nodes == testing::real_nodes()));
}

TEST_CASE("counts whose byte size cannot be represented are refused before any memory is touched",
          "[errors]") {
  Communicator comm(MPI_COMM_WORLD);
  const std::string on = " on rank " + std::to_string(comm.rank()) + ": ";
  // Never dereferenced: the count is checked first. 2^62 f32 is 2^64 bytes (wraps size_t).
  float dummy[2] = {};
  const std::uint64_t wraps = 1ull << 62;
  CHECK_THROWS_WITH(allreduce(dummy, wraps, dummy + 1, wraps, DataType::f32, ReduceOp::sum, comm),
                    "allreduce" + on + "count 4611686018427387904 of f32 is too large");
  CHECK_THROWS_WITH(
      reduce_scatter(dummy, UINT64_MAX, dummy + 1, 1, DataType::f64, ReduceOp::max, comm),
      "reduce_scatter" + on + "count 18446744073709551615 of f64 is too large");
  CHECK_THROWS_WITH(allgather(dummy, 1, dummy + 1, UINT64_MAX / 2, DataType::i64, comm),
                    "allgather" + on + "count 9223372036854775807 of i64 is too large");
}

TEST_CASE("partly overlapping buffers are refused for every collective", "[errors]") {
  Communicator comm(MPI_COMM_WORLD);
  const int p = comm.size(), r = comm.rank();
  std::vector<double> buf(64 * p + 8);
  CHECK_THROWS_WITH(
      reduce_scatter(buf.data(), 64 * p, buf.data() + 3, 64, DataType::f64, ReduceOp::sum, comm),
      Catch::Contains("reduce_scatter on rank " + std::to_string(r) +
                      ": input and output overlap"));
  const std::uint64_t own = block_of(64 * p, p, r).count;
  // The own block one element off its place inside the output: neither in place nor disjoint.
  CHECK_THROWS_WITH(
      allgather(buf.data() + block_of(64 * p, p, r).offset + 1, own, buf.data(), 64 * p,
                DataType::f64, comm),
      Catch::Contains("allgather on rank " + std::to_string(r) + ": input and output overlap"));
  CHECK_THROWS_WITH(
      allreduce(std::span<const double>(buf.data() + 8, 64), std::span<double>(buf.data(), 64),
                ReduceOp::min, comm),
      Catch::Contains("allreduce on rank " + std::to_string(r) + ": input and output overlap"));
}
