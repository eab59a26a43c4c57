// The verifier must catch broken schedules, or its green light means nothing.
#include <catch2/catch.hpp>

#include "exec/verifier.hpp"
#include "schedule/build.hpp"

using namespace toroid;
using namespace toroid::schedule;

namespace {

std::vector<exec::RankMemory> memory(int p, std::size_t bytes) {
  std::vector<exec::RankMemory> m(p);
  for (auto& r : m) {
    r.input.assign(bytes, std::byte{1});
    r.output.assign(bytes, std::byte{0});
  }
  return m;
}

Schedule empty(int r, int p) {
  Schedule s;
  s.rank = r;
  s.nranks = p;
  return s;
}

}  // namespace

TEST_CASE("a send without its receive is a deadlock, naming the rank and step") {
  std::vector<Schedule> s{empty(0, 2), empty(1, 2)};
  s[0].steps.push_back({Kind::send, 1, 0, 0, {Buf::input, 0, 4}, {}});
  auto m = memory(2, 16);
  const std::string e = exec::execute_in_process(s, m, DataType::f32, ReduceOp::sum);
  CHECK_THAT(e, Catch::Contains("deadlock") && Catch::Contains("rank 0 waits at phase 0 send"));
}

TEST_CASE("a size mismatch between send and receive is reported") {
  std::vector<Schedule> s{empty(0, 2), empty(1, 2)};
  s[0].steps.push_back({Kind::send, 1, 0, 0, {Buf::input, 0, 4}, {}});
  s[1].steps.push_back({Kind::recv, 0, 0, 0, {}, {Buf::output, 0, 3}});
  auto m = memory(2, 16);
  CHECK_THAT(exec::execute_in_process(s, m, DataType::f32, ReduceOp::sum), Catch::Contains("size mismatch"));
}

TEST_CASE("crossed waits across phases deadlock under rendezvous semantics") {
  // Both ranks first wait to receive, then send: MPI would hang; so must the verifier.
  std::vector<Schedule> s{empty(0, 2), empty(1, 2)};
  for (int r = 0; r < 2; ++r) {
    s[r].steps.push_back({Kind::recv, 1 - r, 0, 0, {}, {Buf::output, 0, 4}});
    s[r].steps.push_back({Kind::send, 1 - r, 0, 1, {Buf::input, 0, 4}, {}});
  }
  auto m = memory(2, 16);
  CHECK_THAT(exec::execute_in_process(s, m, DataType::f32, ReduceOp::sum), Catch::Contains("deadlock"));
}

TEST_CASE("a phase that writes what it also sends is a hazard") {
  std::vector<Schedule> s{empty(0, 2), empty(1, 2)};
  s[0].steps.push_back({Kind::send, 1, 0, 0, {Buf::output, 0, 4}, {}});
  s[0].steps.push_back({Kind::recv, 1, 0, 0, {}, {Buf::output, 2, 2}});
  auto m = memory(2, 16);
  CHECK_THAT(exec::execute_in_process(s, m, DataType::f32, ReduceOp::sum), Catch::Contains("hazard"));
}

TEST_CASE("in place, input and output are one memory for the hazard check") {
  std::vector<Schedule> s{empty(0, 2), empty(1, 2)};
  s[0].steps.push_back({Kind::send, 1, 0, 0, {Buf::input, 0, 4}, {}});
  s[0].steps.push_back({Kind::recv, 1, 0, 0, {}, {Buf::output, 0, 4}});
  auto m = memory(2, 16);
  m[0].in_place = true;
  CHECK_THAT(exec::execute_in_process(s, m, DataType::f32, ReduceOp::sum), Catch::Contains("hazard"));
}

TEST_CASE("out-of-bounds chunks and writes to the input are rejected") {
  std::vector<Schedule> s{empty(0, 1)};
  s[0].steps.push_back({Kind::copy, -1, 0, 0, {Buf::input, 2, 4}, {Buf::output, 0, 4}});
  auto m = memory(1, 16);  // 4 floats
  CHECK_THAT(exec::execute_in_process(s, m, DataType::f32, ReduceOp::sum), Catch::Contains("out of bounds"));
  s[0].steps[0] = {Kind::copy, -1, 0, 0, {Buf::output, 0, 4}, {Buf::input, 0, 4}};
  CHECK_THAT(exec::execute_in_process(s, m, DataType::f32, ReduceOp::sum), Catch::Contains("writes the input"));
}

TEST_CASE("a wrong result is caught by the reference comparison") {
  // Reduce-scatter schedules run as if they were all-reduce: the blocks not owned stay unset.
  exec::CheckSpec spec{Collective::allreduce, 4, 40, false, DataType::i64, ReduceOp::sum};
  const std::string e = exec::check_collective(spec, [](int r) {
    return build(Algorithm::ring, {Collective::reduce_scatter, 40, true, false, {}}, {r, Torus2D(4, 1), {}});
  });
  CHECK_THAT(e, Catch::Contains("differs from the reference"));
}
