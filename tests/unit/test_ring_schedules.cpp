// Ring schedules checked by the in-process verifier: every rank's schedule runs on real data
// and the outputs are compared with a directly computed reference.
#include <catch2/catch.hpp>

#include "exec/verifier.hpp"
#include "schedule/ring.hpp"

using namespace toroid;
using schedule::Collective;

namespace {

std::string check_ring(Collective c, int p, std::uint64_t n, bool in_place, DataType t, ReduceOp op,
                       exec::Traffic* traffic = nullptr) {
  exec::CheckSpec spec{c, p, n, in_place, t, op};
  return exec::check_collective(
      spec, [&](int r) { return schedule::build_ring(c, r, p, n, in_place, op == ReduceOp::avg); },
      traffic);
}

}  // namespace

TEST_CASE("ring collectives are right for p = 1..64 and awkward counts") {
  for (Collective c : {Collective::allreduce, Collective::reduce_scatter, Collective::allgather})
    for (int p = 1; p <= 64; ++p)
      for (std::uint64_t n : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t(p - 1),
                              std::uint64_t(p), std::uint64_t(p + 1), std::uint64_t{1000}})
        for (bool in_place : {false, true}) {
          INFO(schedule::to_string(c) << " p=" << p << " n=" << n << " in_place=" << in_place);
          REQUIRE(check_ring(c, p, n, in_place, DataType::i64, ReduceOp::sum) == "");
        }
}

TEST_CASE("ring collectives for every type and op") {
  for (DataType t : {DataType::f32, DataType::f64, DataType::f16, DataType::bf16, DataType::i32, DataType::i64})
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max, ReduceOp::avg}) {
      if (op == ReduceOp::avg && !is_floating(t)) continue;
      for (Collective c : {Collective::allreduce, Collective::reduce_scatter})
        for (int p : {2, 3, 5, 8}) {
          INFO(to_string(t) << " " << to_string(op) << " p=" << p);
          REQUIRE(check_ring(c, p, 37, false, t, op) == "");
          REQUIRE(check_ring(c, p, 37, true, t, op) == "");
        }
    }
}

TEST_CASE("ring all-reduce at 4096 ranks, small counts") {
  for (std::uint64_t n : {std::uint64_t{1}, std::uint64_t{100}, std::uint64_t{600}}) {
    INFO("n=" << n);
    REQUIRE(check_ring(Collective::allreduce, 4096, n, false, DataType::i64, ReduceOp::sum) == "");
  }
  REQUIRE(check_ring(Collective::reduce_scatter, 4096, 300, true, DataType::f32, ReduceOp::max) == "");
  REQUIRE(check_ring(Collective::allgather, 4096, 300, false, DataType::i32, ReduceOp::sum) == "");
}

TEST_CASE("ring moves the bandwidth-optimal number of bytes, only to ring neighbours") {
  const int p = 6;
  const std::uint64_t n = 600;  // 100 elements per block
  exec::Traffic t;
  REQUIRE(check_ring(Collective::allreduce, p, n, false, DataType::f32, ReduceOp::sum, &t) == "");
  // Each rank sends 2(p-1) blocks of n/p elements.
  CHECK(t.bytes == std::uint64_t(p) * 2 * (p - 1) * (n / p) * 4);
  CHECK(t.messages == std::uint64_t(p) * 2 * (p - 1));
  for (auto [from, to] : t.links) CHECK(to == (from + 1) % p);
}
