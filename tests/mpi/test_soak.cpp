// Soak: a bounded, seeded random mix of collectives (algorithm, shape, type, op, count,
// placement), every one compared with the stock MPI reduction. TOROID_SOAK_ITERS sets the number
// (default 300 in the test suite; scripts/soak.sh runs thousands). All ranks draw the same sequence.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>

#include "catch_extras.hpp"
#include "collective_case.hpp"
#include "mpi_test.hpp"

using namespace toroid;
using namespace toroid::testing;

TEST_CASE("soak: randomized collectives match stock MPI", "[soak]") {
  const int p = world_size();
  const char* env = std::getenv("TOROID_SOAK_ITERS");
  const long iters = env ? std::strtol(env, nullptr, 10) : 300;
  REQUIRE(iters > 0);
  std::mt19937_64 rng(20261130);  // same seed on every rank: the same collective everywhere
  auto pick = [&](auto n) {
    return static_cast<std::size_t>(rng() % static_cast<std::uint64_t>(n));
  };
  const std::vector<std::string> shape_list = shapes(p);
  std::map<std::string, std::unique_ptr<Communicator>> comms;
  const Collective colls[] = {Collective::allreduce, Collective::reduce_scatter,
                              Collective::allgather};
  long done = 0;
  for (long it = 0; it < iters; ++it) {
    const std::string& shape = shape_list[pick(shape_list.size())];
    auto& comm = comms[shape];
    if (!comm) {
      Options o;
      o.topology = shape;
      o.segment_bytes = std::size_t{64} << pick(12);  // 64 B .. 128 KiB: many segment layouts
      comm = std::make_unique<Communicator>(MPI_COMM_WORLD, o);
    }
    const Collective coll = colls[pick(3)];
    Algorithm a = all_algorithms[pick(std::size(all_algorithms))];
    if (!implements(a, coll)) a = Algorithm::automatic;
    ReduceOp op = coll == Collective::allgather ? ReduceOp::sum : kOps[pick(std::size(kOps))];
    DataType t = kTypes[pick(std::size(kTypes))];
    if (op == ReduceOp::avg && !is_floating(t)) t = DataType::f32;
    // Mostly small counts, sometimes a few segments' worth.
    const std::uint64_t n = pick(8) == 0 ? pick(200000) : pick(3 * p + 40);
    const Case c{a, t, op, n, pick(2) == 1};
    const std::vector<double> ref = reference(op, n, comm->rank(), p);
    const std::uint64_t wrong = run_case(coll, c, *comm, ref);
    REQUIRE_SAYING(all_ranks(wrong == 0),
                   "soak iteration " << it << ": " << c.describe(std::string(to_string(coll)))
                                     << " on " << shape << ": " << wrong << " wrong on rank "
                                     << comm->rank());
    ++done;
  }
  CHECK(done == iters);
}
