// The verifier must catch broken schedules, or its green light means nothing.
#include <catch2/catch.hpp>
#include <cstring>

#include "model/verifier.hpp"
#include "schedule/build.hpp"
#include "schedule/dependencies.hpp"
#include "schedule/group.hpp"

using namespace toroid;
using namespace toroid::schedule;

namespace {

std::vector<model::RankMemory> memory(int p, std::size_t bytes) {
  std::vector<model::RankMemory> m(p);
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

TEST_CASE("a send without its receive is a deadlock, naming the rank and step", "[verifier]") {
  std::vector<Schedule> s{empty(0, 2), empty(1, 2)};
  s[0].steps.push_back({Kind::send, 1, 0, 0, {Buf::input, 0, 4}, {}});
  auto m = memory(2, 16);
  const std::string e = model::execute_in_process(s, m, DataType::f32, ReduceOp::sum);
  CHECK_THAT(e, Catch::Contains("deadlock") && Catch::Contains("rank 0 waits at phase 0 send"));
}

TEST_CASE("a size mismatch between send and receive is reported", "[verifier]") {
  std::vector<Schedule> s{empty(0, 2), empty(1, 2)};
  s[0].steps.push_back({Kind::send, 1, 0, 0, {Buf::input, 0, 4}, {}});
  s[1].steps.push_back({Kind::recv, 0, 0, 0, {}, {Buf::output, 0, 3}});
  auto m = memory(2, 16);
  CHECK_THAT(model::execute_in_process(s, m, DataType::f32, ReduceOp::sum),
             Catch::Contains("size mismatch"));
}

TEST_CASE("crossed waits deadlock under rendezvous semantics", "[verifier]") {
  // Both ranks first wait to receive, then send what they received: MPI would hang; so must
  // the verifier.
  std::vector<Schedule> s{empty(0, 2), empty(1, 2)};
  for (int r = 0; r < 2; ++r) {
    s[r].steps.push_back({Kind::recv, 1 - r, 0, 0, {}, {Buf::output, 0, 4}});
    s[r].steps.push_back({Kind::send, 1 - r, 0, 1, {Buf::output, 0, 4}, {}});
    derive_dependencies(s[r]);
  }
  REQUIRE(s[0].deps.size() == 1);
  CHECK(s[0].deps[0].wait == Wait::follow);
  auto m = memory(2, 16);
  CHECK_THAT(model::execute_in_process(s, m, DataType::f32, ReduceOp::sum),
             Catch::Contains("deadlock"));
}

TEST_CASE("phases are not barriers: a send that reads nothing the receive writes does not wait",
          "[verifier]") {
  // Each rank receives in phase 0 and sends other data in phase 1: no dependency, so the sends
  // go first and nothing hangs (a phase-by-phase executor would deadlock here).
  std::vector<Schedule> s{empty(0, 2), empty(1, 2)};
  for (int r = 0; r < 2; ++r) {
    s[r].steps.push_back({Kind::recv, 1 - r, 0, 0, {}, {Buf::output, 0, 4}});
    s[r].steps.push_back({Kind::send, 1 - r, 0, 1, {Buf::input, 0, 4}, {}});
    derive_dependencies(s[r]);
    CHECK(s[r].deps.empty());
  }
  auto m = memory(2, 16);
  CHECK(model::execute_in_process(s, m, DataType::f32, ReduceOp::sum).empty());
}

TEST_CASE("a missing or wrong dependency is reported", "[verifier]") {
  std::vector<Schedule> s{empty(0, 2), empty(1, 2)};
  s[0].steps.push_back({Kind::recv, 1, 0, 0, {}, {Buf::output, 0, 4}});
  s[0].steps.push_back({Kind::send, 1, 0, 1, {Buf::output, 0, 4}, {}});
  s[1].steps.push_back({Kind::send, 0, 0, 0, {Buf::input, 0, 4}, {}});
  s[1].steps.push_back({Kind::recv, 0, 0, 1, {}, {Buf::output, 0, 4}});
  auto m = memory(2, 16);
  // Not derived: rank 0's send reads what its receive writes and waits for nothing.
  CHECK_THAT(model::execute_in_process(s, m, DataType::f32, ReduceOp::sum),
             Catch::Contains("rank 0: missing dependency") && Catch::Contains("reads what"));
  for (auto& x : s) derive_dependencies(x);
  CHECK(model::execute_in_process(s, m, DataType::f32, ReduceOp::sum).empty());
  // A follow whose offset does not say where the source lies in the receive's destination.
  s[0].deps[0].offset = 1;
  CHECK_THAT(model::execute_in_process(s, m, DataType::f32, ReduceOp::sum),
             Catch::Contains("wrong dependency"));
  // Overwriting what an earlier send reads, without waiting for it.
  std::vector<Schedule> w{empty(0, 2), empty(1, 2)};
  w[0].steps.push_back({Kind::send, 1, 0, 0, {Buf::output, 0, 4}, {}});
  w[0].steps.push_back({Kind::recv, 1, 0, 1, {}, {Buf::output, 0, 4}});
  CHECK_THAT(model::execute_in_process(w, m, DataType::f32, ReduceOp::sum),
             Catch::Contains("overwrites what"));
}

TEST_CASE("a receive lands in gathered runs, and a send of the same runs follows it",
          "[verifier]") {
  // Rank 1 sends 4 contiguous floats; rank 0 receives them into runs [0, 2) and [5, 7) of its
  // output and forwards those runs back: the dependency follows the receive, and the elements
  // land where the runs say.
  std::vector<Schedule> s{empty(0, 2), empty(1, 2)};
  const Chunk runs = gathered_chunk(s[0], Buf::output, {{0, 2}, {5, 2}});
  REQUIRE(runs.gathered());
  s[0].steps.push_back({Kind::recv, 1, 0, 0, {}, runs});
  s[0].steps.push_back({Kind::send, 1, 1, 1, runs, {}});
  s[1].steps.push_back({Kind::send, 0, 0, 0, {Buf::input, 0, 4}, {}});
  s[1].steps.push_back({Kind::recv, 0, 1, 1, {}, {Buf::output, 0, 4}});
  for (auto& x : s) derive_dependencies(x);
  REQUIRE(s[0].deps.size() == 1);
  CHECK(s[0].deps[0].wait == Wait::follow);
  CHECK(s[0].deps[0].offset == 0);
  std::vector<model::RankMemory> m = memory(2, 8 * sizeof(float));
  for (int i = 0; i < 4; ++i) {
    const float v = 10.0f + static_cast<float>(i);
    std::memcpy(m[1].input.data() + i * sizeof(float), &v, sizeof v);
  }
  REQUIRE(model::execute_in_process(s, m, DataType::f32, ReduceOp::sum).empty());
  auto at = [&](int r, int i) {
    float v = 0;
    std::memcpy(&v, m[r].output.data() + i * sizeof(float), sizeof v);
    return v;
  };
  CHECK(at(0, 0) == 10.0f);
  CHECK(at(0, 1) == 11.0f);
  CHECK(at(0, 2) == 0.0f);
  CHECK(at(0, 5) == 12.0f);
  CHECK(at(0, 6) == 13.0f);
  for (int i = 0; i < 4; ++i) CHECK(at(1, i) == 10.0f + static_cast<float>(i));
  // A reduction into runs (the relative halves of bidir_ring.cpp): the local operand's i-th
  // element plus the i-th received one lands at the i-th place of the runs.
  s[0].steps[0].kind = Kind::recv_reduce;
  s[0].steps[0].src = {Buf::input, 0, 4};
  for (auto& x : s) derive_dependencies(x);
  m = memory(2, 8 * sizeof(float));
  for (int i = 0; i < 4; ++i) {
    const float v = 10.0f + static_cast<float>(i), mine = 1.0f + static_cast<float>(i);
    std::memcpy(m[1].input.data() + i * sizeof(float), &v, sizeof v);
    std::memcpy(m[0].input.data() + i * sizeof(float), &mine, sizeof mine);
  }
  REQUIRE(model::execute_in_process(s, m, DataType::f32, ReduceOp::sum).empty());
  CHECK(at(0, 0) == 11.0f);
  CHECK(at(0, 1) == 13.0f);
  CHECK(at(0, 2) == 0.0f);
  CHECK(at(0, 5) == 15.0f);
  CHECK(at(0, 6) == 17.0f);
  for (int i = 0; i < 4; ++i) CHECK(at(1, i) == 11.0f + 2.0f * static_cast<float>(i));
}

TEST_CASE("a ring all-reduce forwards each received block segment by segment", "[verifier]") {
  const Schedule s = build(Algorithm::ring, {Collective::allreduce, 400, false, false, {}},
                           {1, Torus2D(4, 1), {}});
  int follows = 0;
  for (const Step& st : s.steps)
    for (std::uint32_t k = 0; k < st.dep_count; ++k) {
      const Dep& d = s.deps[st.dep_begin + k];
      if (d.wait != Wait::follow) continue;
      ++follows;
      CHECK(st.kind == Kind::send);
      CHECK(s.steps[d.step].kind != Kind::send);
      CHECK(st.src.buf == s.steps[d.step].dst.buf);
      CHECK(st.src.offset == s.steps[d.step].dst.offset + d.offset);
    }
  // p = 4: the 2 partial sums of the reduce-scatter and the 2 received blocks of the all-gather
  // are sent on, and the reduced own block (the all-gather's first send).
  CHECK(follows == 5);
}

TEST_CASE("rabenseifner's halving moves follow the receives before them", "[verifier]") {
  // 8 ranks: 3 moves each way. From the second move of the reduce-scatter on, each send and each
  // reduction (into its own operand, in place) follows the receive of the move before, and so
  // does each all-gather send of what the move before brought: no move waits for the one
  // before it to end. (A recv_reduce over its own operand used to wait for it: done.)
  const Schedule s = build(Algorithm::rabenseifner, {Collective::allreduce, 8000, false, false, {}},
                           {5, Torus2D(8, 1), {}});
  int in_place = 0, received_waits = 0;
  for (const Step& st : s.steps) {
    if (st.kind != Kind::send && st.kind != Kind::recv_reduce) continue;
    for (std::uint32_t k = 0; k < st.dep_count; ++k) {
      const Dep& d = s.deps[st.dep_begin + k];
      const Step& earlier = s.steps[d.step];
      if (earlier.kind != Kind::recv && earlier.kind != Kind::recv_reduce) continue;
      if (d.wait == Wait::follow && st.kind == Kind::recv_reduce) ++in_place;
      if (d.wait == Wait::done && st.src.buf == earlier.dst.buf &&
          st.src.offset >= earlier.dst.offset &&
          st.src.offset + st.src.count <= earlier.dst.offset + earlier.dst.count)
        ++received_waits;  // reads what a receive brings, yet waits for its end
    }
  }
  CHECK(in_place >= 4);  // moves 2 and 3 of the reduce-scatter, two halves each (move 3 whole)
  CHECK(received_waits == 0);
  std::vector<Schedule> all;
  for (int r = 0; r < 8; ++r)
    all.push_back(build(Algorithm::rabenseifner, {Collective::allreduce, 8000, false, false, {}},
                        {r, Torus2D(8, 1), {}}));
  auto m = memory(8, 8000 * 4);
  CHECK(model::execute_in_process(all, m, DataType::f32, ReduceOp::sum) == "");
}

TEST_CASE("a phase that writes what it also sends is a hazard", "[verifier]") {
  std::vector<Schedule> s{empty(0, 2), empty(1, 2)};
  s[0].steps.push_back({Kind::send, 1, 0, 0, {Buf::output, 0, 4}, {}});
  s[0].steps.push_back({Kind::recv, 1, 0, 0, {}, {Buf::output, 2, 2}});
  auto m = memory(2, 16);
  CHECK_THAT(model::execute_in_process(s, m, DataType::f32, ReduceOp::sum),
             Catch::Contains("hazard"));
}

TEST_CASE("in place, input and output are one memory for the hazard check", "[verifier]") {
  std::vector<Schedule> s{empty(0, 2), empty(1, 2)};
  s[0].steps.push_back({Kind::send, 1, 0, 0, {Buf::input, 0, 4}, {}});
  s[0].steps.push_back({Kind::recv, 1, 0, 0, {}, {Buf::output, 0, 4}});
  auto m = memory(2, 16);
  m[0].in_place = true;
  CHECK_THAT(model::execute_in_process(s, m, DataType::f32, ReduceOp::sum),
             Catch::Contains("hazard"));
}

TEST_CASE("out-of-bounds chunks and writes to the input are rejected", "[verifier]") {
  std::vector<Schedule> s{empty(0, 1)};
  s[0].steps.push_back({Kind::copy, -1, 0, 0, {Buf::input, 2, 4}, {Buf::output, 0, 4}});
  auto m = memory(1, 16);  // 4 floats
  CHECK_THAT(model::execute_in_process(s, m, DataType::f32, ReduceOp::sum),
             Catch::Contains("out of bounds"));
  s[0].steps[0] = {Kind::copy, -1, 0, 0, {Buf::output, 0, 4}, {Buf::input, 0, 4}};
  CHECK_THAT(model::execute_in_process(s, m, DataType::f32, ReduceOp::sum),
             Catch::Contains("writes the input"));
}

TEST_CASE("a wrong result is caught by the reference comparison", "[verifier]") {
  // Reduce-scatter schedules run as if they were all-reduce: the blocks not owned stay unset.
  model::CheckSpec spec{Collective::allreduce, 4, 40, false, DataType::i64, ReduceOp::sum, 0, {}};
  const std::string e = model::check_collective(spec, [](int r) {
    return build(Algorithm::ring, {Collective::reduce_scatter, 40, true, false, {}},
                 {r, Torus2D(4, 1), {}});
  });
  CHECK_THAT(e, Catch::Contains("differs from the reference"));
}
