// Single-copy collectives of toroid-owned buffers (Communicator::allocate,
// exec/single_copy.hpp): exact results, the path really taken where it can be (and not where it
// cannot), no rank touching a peer's buffers outside the call, and mismatches as errors.
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "api/internal.hpp"
#include "catch_extras.hpp"
#include "exec/single_copy.hpp"
#include "mpi_test.hpp"
#include "node_paths.hpp"
#include "toroid/toroid.hpp"

using namespace toroid;
using testing::all_ranks;
using testing::single_copy_calls;
using testing::single_copy_here;
using testing::staged_calls;
using testing::world_rank;
using testing::world_size;

namespace {

// Rank r's element i in iteration `it`: small integers, so sums in float are exact.
float value(int r, std::size_t i, int it) {
  return static_cast<float>((r + 1) * static_cast<int>(i % 13) + it % 5 + r);
}
float sum_of(std::size_t i, int it) {
  float s = 0;
  for (int r = 0; r < world_size(); ++r) s += value(r, i, it);
  return s;
}

}  // namespace

TEST_CASE("single-copy: all-reduce, reduce-scatter and all-gather of toroid buffers are exact",
          "[single_copy]") {
  Communicator comm(MPI_COMM_WORLD);
  const int p = world_size(), me = world_rank();
  // One element, fewer than the ranks, several 16 KiB chunks with an odd tail, and over the
  // 1 MiB from which the outputs are streamed.
  for (const std::size_t n :
       {std::size_t{1}, std::size_t(p > 1 ? p - 1 : 1), std::size_t{5003}, std::size_t{300'007}}) {
    for (const bool in_place : {false, true}) {
      INFO("n = " << n << (in_place ? ", in place" : ""));
      Buffer<float> in = comm.allocate<float>(n), out = comm.allocate<float>(n);
      const std::uint64_t before = single_copy_calls(comm), staged_before = staged_calls(comm);

      for (std::size_t i = 0; i < n; ++i) in[i] = value(me, i, 0);
      if (in_place) {
        allreduce(in.span(), ReduceOp::sum, comm);
      } else {
        allreduce(std::span<const float>(in), out.span(), ReduceOp::sum, comm);
      }
      const Buffer<float>& sum = in_place ? in : out;
      bool ok = true;
      for (std::size_t i = 0; i < n; ++i) ok = ok && sum[i] == sum_of(i, 0);
      CHECK(all_ranks(ok));

      // Reduce-scatter (max), then all-gather of the blocks back into a whole vector.
      for (std::size_t i = 0; i < n; ++i) in[i] = value(me, i, 1);
      const Block own = block_of(n, p, me);
      if (in_place) {
        reduce_scatter(in.span(), ReduceOp::max, comm);
      } else {
        reduce_scatter(std::span<const float>(in), out.span().first(own.count), ReduceOp::max,
                       comm);
      }
      const float* block = in_place ? in.data() + own.offset : out.data();
      ok = true;
      for (std::size_t k = 0; k < own.count; ++k)
        ok = ok && block[k] == value(p - 1, own.offset + k, 1);  // the largest rank's is largest
      CHECK(all_ranks(ok));
      if (in_place) {
        allgather(in.span(), comm);
      } else {
        std::memcpy(in.data(), out.data(), own.count * sizeof(float));
        allgather(std::span<const float>(in.data(), own.count), out.span(), comm);
      }
      ok = true;
      for (std::size_t i = 0; i < n; ++i) ok = ok && sum[i] == value(p - 1, i, 1);
      CHECK(all_ranks(ok));

      // Small calls are staged (any memory), the others single-copy; which, by size alone.
      // (At 2 ranks small calls run their schedule.)
      std::uint64_t staged = 0, single = 0;
      for (const Collective c :
           {Collective::allreduce, Collective::reduce_scatter, Collective::allgather}) {
        staged += exec::takes_staged_path(c, n, sizeof(float), p);
        single += !exec::small_enough_to_stage(c, n, sizeof(float), p);
      }
      const bool here = single_copy_here(comm);
      CHECK(staged_calls(comm) - staged_before == (here ? staged : 0u));
      CHECK(single_copy_calls(comm) - before == (here ? single : 0u));
    }
  }
}

// Communicator::plan answers with the rule a call follows: each call takes the path its plan
// named (counted by the node's paths) and, on the schedule path, the plan's algorithm is auto's.
TEST_CASE("plan: each call takes the path and algorithm its plan names", "[single_copy]") {
  Communicator comm(MPI_COMM_WORLD);
  const int me = world_rank();
  for (const std::size_t n : {std::size_t{16}, std::size_t{5003}, std::size_t{300'007}})
    for (const bool toroid_memory : {false, true}) {
      INFO("n = " << n << (toroid_memory ? ", toroid's buffers" : ", other memory"));
      Buffer<float> in_t = comm.allocate<float>(n), out_t = comm.allocate<float>(n);
      std::vector<float> in_v(n), out_v(n);
      float* in = toroid_memory ? in_t.data() : in_v.data();
      float* out = toroid_memory ? out_t.data() : out_v.data();
      for (std::size_t i = 0; i < n; ++i) in[i] = value(me, i, 0);
      CallQuery q;
      q.collective = Collective::allreduce;
      q.count = n;
      q.toroid_buffers = toroid_memory;
      const CallPlan plan = comm.plan(q);
      const NodePathCalls before = comm.node_path_calls();
      allreduce(std::span<const float>(in, n), std::span<float>(out, n), ReduceOp::sum, comm);
      const NodePathCalls after = comm.node_path_calls();
      CHECK(after.staged - before.staged == (plan.path == CallPath::staged ? 1u : 0u));
      CHECK(after.single_copy - before.single_copy ==
            (plan.path == CallPath::single_copy ? 1u : 0u));
      CHECK((plan.path == CallPath::schedule) == (plan.algorithm != Algorithm::automatic));
      if (!single_copy_here(comm)) CHECK(plan.path == CallPath::schedule);
      bool ok = true;
      for (std::size_t i = 0; i < n; ++i) ok = ok && out[i] == sum_of(i, 0);
      CHECK(all_ranks(ok));
    }
  // A named algorithm runs its schedule, priced by the model; `mpi` the stock call.
  CallQuery ring;
  ring.collective = Collective::allreduce;
  ring.count = 1 << 20;
  ring.algorithm = Algorithm::ring;
  const CallPlan r = comm.plan(ring);
  CHECK(r.path == CallPath::schedule);
  CHECK(r.algorithm == Algorithm::ring);
  CHECK((world_size() == 1 || (r.predicted_seconds && *r.predicted_seconds > 0)));
  ring.algorithm = Algorithm::mpi;
  CHECK(comm.plan(ring).path == CallPath::stock);
  CHECK(to_string(CallPath::remote_reads) == "remote_reads");
}

TEST_CASE("single-copy: small calls on ordinary memory are staged (from 3 ranks) and exact",
          "[single_copy]") {
  Communicator comm(MPI_COMM_WORLD);
  const int p = world_size(), me = world_rank();
  for (const std::size_t n :
       {std::size_t{1}, std::size_t{3}, std::size_t{1000}, std::size_t{4096}}) {
    INFO("n = " << n);
    std::vector<float> in(n), out(n);
    const std::uint64_t before = staged_calls(comm);
    for (std::size_t i = 0; i < n; ++i) in[i] = value(me, i, 2);
    allreduce(std::span<const float>(in), std::span<float>(out), ReduceOp::sum, comm);
    bool ok = true;
    for (std::size_t i = 0; i < n; ++i) ok = ok && out[i] == sum_of(i, 2);
    allreduce(std::span<float>(in), ReduceOp::avg, comm);  // in place
    for (std::size_t i = 0; i < n; ++i)
      ok = ok && std::abs(in[i] - sum_of(i, 2) / static_cast<float>(p)) <= 1e-5f * std::abs(in[i]);
    CHECK(all_ranks(ok));
    const bool fits = exec::takes_staged_path(Collective::allreduce, n, sizeof(float), p);
    CHECK(staged_calls(comm) - before == (single_copy_here(comm) && fits ? 2u : 0u));
  }
}

TEST_CASE("single-copy: every type and op gives what the schedules give", "[single_copy]") {
  Communicator comm(MPI_COMM_WORLD);
  const std::size_t n = 40'001;
  for (const DataType t : {DataType::f32, DataType::f64, DataType::bf16, DataType::f16,
                           DataType::i32, DataType::i64}) {
    for (const ReduceOp op :
         {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max, ReduceOp::avg}) {
      if (op == ReduceOp::avg && !is_floating(t)) continue;
      INFO(to_string(t) << " " << to_string(op));
      const std::size_t es = size_of(t);
      Buffer<std::byte> in = comm.allocate<std::byte>(n * es),
                        out = comm.allocate<std::byte>(n * es);
      std::vector<std::byte> ref(n * es);
      std::mt19937 random(static_cast<unsigned>(world_rank() * 7919 + 1));
      for (std::size_t i = 0; i < n * es; ++i)  // small positive bit patterns, no NaNs
        in[i] = std::byte(i % es == es - 1 ? 0x3c : random() % 200);
      // The order of a single-copy reduction is rank order, which ring's is not: compare with
      // recursive_doubling at 2 ranks (the same pairwise sum), with exact operations beyond.
      const bool same_order = world_size() <= 2 || op == ReduceOp::min || op == ReduceOp::max ||
                              t == DataType::i32 || t == DataType::i64;
      allreduce(in.data(), n, out.data(), n, t, op, comm);
      allreduce(in.data(), n, ref.data(), n, t, op, comm, Algorithm::recursive_doubling);
      // (Floating sums over 3 ranks and more round in another order than the reference's.)
      if (same_order) CHECK(all_ranks(std::memcmp(out.data(), ref.data(), n * es) == 0));
      // Every rank holds the same bits (one rank reduced each block and copied it to all).
      std::vector<std::byte> first(out.data(), out.data() + n * es);
      MPI_Bcast(first.data(), static_cast<int>(n * es), MPI_BYTE, 0, MPI_COMM_WORLD);
      CHECK(all_ranks(std::memcmp(first.data(), out.data(), n * es) == 0));
    }
  }
}

TEST_CASE(
    "single-copy: no rank reads an input before it is final or writes an output after "
    "its owner returned",
    "[single_copy]") {
  Communicator comm(MPI_COMM_WORLD);
  const int me = world_rank();
  // A staged size (its stage reused every other call) and a single-copy one.
  const std::size_t n = GENERATE(std::size_t{1001}, std::size_t{70'001});
  Buffer<float> in = comm.allocate<float>(n), out = comm.allocate<float>(n);
  std::mt19937 random(static_cast<unsigned>(me + 11));
  bool ok = true;
  for (int it = 0; it < 60; ++it) {
    // A late rank writes its input only just before it calls: a peer that read early would sum
    // the previous iteration's values.
    std::this_thread::sleep_for(std::chrono::microseconds(random() % 300));
    for (std::size_t i = 0; i < n; ++i) in[i] = value(me, i, it);
    allreduce(std::span<const float>(in), out.span(), ReduceOp::sum, comm);
    for (std::size_t i = 0; i < n; ++i) ok = ok && out[i] == sum_of(i, it);
    // Scribble over both at once: a peer still reading the input would sum garbage, one still
    // writing the output would overwrite the scribble, which is checked after a pause.
    std::memset(in.data(), 0xff, n * sizeof(float));
    std::memset(out.data(), 0x55, n * sizeof(float));
    std::this_thread::sleep_for(std::chrono::microseconds(random() % 300));
    const auto* bytes = reinterpret_cast<const unsigned char*>(out.data());
    for (std::size_t b = 0; b < n * sizeof(float); b += 64) ok = ok && bytes[b] == 0x55;
  }
  CHECK(all_ranks(ok));
}

TEST_CASE("single-copy: buffers from different allocations on different ranks run the schedule",
          "[single_copy]") {
  Communicator comm(MPI_COMM_WORLD);
  const std::size_t n = 10'000;
  Buffer<float> a = comm.allocate<float>(n), b = comm.allocate<float>(n),
                out = comm.allocate<float>(n);
  Buffer<float>& in = world_rank() == 0 ? a : b;  // rank 0's input is in another allocation
  for (std::size_t i = 0; i < n; ++i) in[i] = value(world_rank(), i, 3);
  const std::uint64_t before = single_copy_calls(comm);
  allreduce(std::span<const float>(in), out.span(), ReduceOp::sum, comm);
  bool ok = true;
  for (std::size_t i = 0; i < n; ++i) ok = ok && out[i] == sum_of(i, 3);
  CHECK(all_ranks(ok));
  const bool one_allocation = world_size() == 1;  // alone, rank 0's is the only input
  CHECK(single_copy_calls(comm) - before == (single_copy_here(comm) && one_allocation ? 1u : 0u));
  // A named algorithm runs its schedule whatever the buffers.
  allreduce(std::span<const float>(out), b.span(), ReduceOp::sum, comm, Algorithm::ring);
  CHECK(single_copy_calls(comm) - before == (single_copy_here(comm) && one_allocation ? 1u : 0u));
}

TEST_CASE("single-copy: mismatched counts are an error on every rank, checked or not",
          "[single_copy]") {
  if (world_size() < 2) SKIP_CASE("needs two ranks");
  for (const bool check : {false, true}) {
    Options o;
    o.check = check;
    Communicator comm(MPI_COMM_WORLD, o);
    Buffer<float> in = comm.allocate<float>(10000), out = comm.allocate<float>(10000);
    // Unchecked, only the single-copy path sees the mismatch (the schedules do not look).
    if (!check && !single_copy_here(comm)) continue;
    const std::size_t n = world_rank() == 1 ? 9999 : 10000;
    CHECK_THROWS_WITH(
        allreduce(in.data(), n, out.data(), n, DataType::f32, ReduceOp::sum, comm),
        Catch::Contains("count differs between ranks") && Catch::Contains("rank 1 has 9999"));
    // The communicator still works afterwards.
    for (std::size_t i = 0; i < 10000; ++i) in[i] = 1.0f;
    allreduce(std::span<const float>(in), out.span(), ReduceOp::sum, comm);
    CHECK(all_ranks(out[9999] == static_cast<float>(world_size())));
  }
}

TEST_CASE(
    "single-copy: toroid buffers on some ranks and other memory on others is an error when "
    "checked",
    "[single_copy]") {
  if (world_size() < 2) SKIP_CASE("needs two ranks");
  Options o;
  o.check = true;
  Communicator comm(MPI_COMM_WORLD, o);
  const std::size_t n = 10'000;  // above the staged sizes, which take any memory alike
  Buffer<float> in = comm.allocate<float>(n), out = comm.allocate<float>(n);
  if (!single_copy_here(comm)) SKIP_CASE("no single-copy path on this node");
  std::vector<float> mine(n);
  const bool others = world_rank() == 1;
  CHECK_THROWS_WITH(allreduce(others ? mine.data() : in.data(), n, out.data(), n, DataType::f32,
                              ReduceOp::sum, comm),
                    Catch::Contains("buffers differs between ranks"));
}

TEST_CASE("single-copy: allocate errors on every rank, and buffers outlive their communicator",
          "[single_copy]") {
  Buffer<double> kept;
  {
    Communicator comm(MPI_COMM_WORLD);
    const std::size_t huge = world_rank() == world_size() - 1 ? std::size_t{1} << 62 : 10;
    CHECK_THROWS_WITH(comm.allocate<double>(huge), Catch::Contains("too large"));
    kept = comm.allocate<double>(1000);
    kept[999] = 2.5;
    allreduce(kept.span(), ReduceOp::sum, comm);
    CHECK(all_ranks(kept[999] == 2.5 * world_size()));
  }
  kept[0] = 1.0;  // still mapped after the communicator is gone
  CHECK(all_ranks(kept[0] == 1.0 && kept[999] == 2.5 * world_size()));
}

TEST_CASE("single-copy: non-blocking and persistent calls, several in flight, in start order",
          "[single_copy]") {
  Communicator comm(MPI_COMM_WORLD);
  const int me = world_rank();
  const std::size_t n = 100'003;
  Buffer<float> a = comm.allocate<float>(n), b = comm.allocate<float>(n),
                c = comm.allocate<float>(n), d = comm.allocate<float>(n);
  const std::uint64_t before = single_copy_calls(comm) + staged_calls(comm);
  bool ok = true;
  Request persistent = allreduce_init(c.data(), n, d.data(), n, DataType::f32, ReduceOp::sum, comm);
  for (int it = 0; it < 5; ++it) {
    for (std::size_t i = 0; i < n; ++i) a[i] = value(me, i, it), c[i] = value(me, i, it + 1);
    // Three in flight at once: a non-blocking one, a persistent one, then a blocking one on
    // other buffers, waited for in another order than started.
    Request first = iallreduce(a.data(), n, b.data(), n, DataType::f32, ReduceOp::sum, comm);
    persistent.start();
    Buffer<float> e = comm.allocate<float>(8);
    for (std::size_t i = 0; i < 8; ++i) e[i] = static_cast<float>(me);
    allreduce(e.span(), ReduceOp::max, comm);
    ok = ok && e[7] == static_cast<float>(world_size() - 1);
    persistent.wait();
    first.wait();
    for (std::size_t i = 0; i < n; ++i)
      ok = ok && b[i] == sum_of(i, it) && d[i] == sum_of(i, it + 1);
  }
  CHECK(all_ranks(ok));
  // Ten single-copy calls, and five staged ones where the small one is staged (3 ranks and more).
  const std::uint64_t small =
      exec::takes_staged_path(Collective::allreduce, 8, sizeof(float), world_size());
  CHECK(single_copy_calls(comm) + staged_calls(comm) - before ==
        (single_copy_here(comm) ? 10u + 5u * small : 0u));
}

TEST_CASE("single-copy: a non-blocking call on buffers of different allocations is an error",
          "[single_copy]") {
  Communicator comm(MPI_COMM_WORLD);
  const std::size_t n = 10'000;  // above the staged sizes
  Buffer<float> a = comm.allocate<float>(n), b = comm.allocate<float>(n),
                out = comm.allocate<float>(n);
  if (!single_copy_here(comm) || world_size() < 2)
    SKIP_CASE("needs two ranks and the single-copy path");
  Buffer<float>& in = world_rank() == 0 ? a : b;
  Request r = iallreduce(in.data(), n, out.data(), n, DataType::f32, ReduceOp::sum, comm);
  CHECK_THROWS_WITH(r.wait(), Catch::Contains("different Communicator::allocate calls"));
  // The communicator goes on.
  for (std::size_t i = 0; i < n; ++i) a[i] = 1.0f;
  allreduce(std::span<const float>(a), out.span(), ReduceOp::sum, comm);
  CHECK(all_ranks(out[n - 1] == static_cast<float>(world_size())));
}

TEST_CASE("single-copy: back-to-back staged calls never read a stage of the next call",
          "[single_copy]") {
  // No pauses: a rank that finishes a call first starts the next one at once and writes its
  // stage while slower peers may still be reading the last one's (two stages by parity).
  Communicator comm(MPI_COMM_WORLD);
  const int me = world_rank();
  const std::size_t n = 2048;
  std::vector<float> in(n), out(n);
  bool ok = true;
  for (int it = 0; it < 3000; ++it) {
    for (std::size_t i = 0; i < n; i += 97) in[i] = value(me, i, it);
    allreduce(std::span<const float>(in), std::span<float>(out), ReduceOp::sum, comm);
    for (std::size_t i = 0; i < n; i += 97) ok = ok && out[i] == sum_of(i, it);
  }
  CHECK(all_ranks(ok));
}

TEST_CASE("repeated blocking calls reuse their op, never across an allocate or with checking",
          "[single_copy]") {
  for (const bool check : {false, true}) {
    Options o;
    o.check = check;
    Communicator comm(MPI_COMM_WORLD, o);
    // Above the staged sizes: this call runs its schedule on ordinary memory at any rank count.
    const std::size_t n = 20'000;
    std::vector<float> in(n), out(n);
    bool ok = true;
    for (int it = 0; it < 4; ++it) {
      for (std::size_t i = 0; i < n; ++i) in[i] = value(world_rank(), i, it);
      allreduce(std::span<const float>(in), std::span<float>(out), ReduceOp::sum, comm);
      for (std::size_t i = 0; i < n; ++i) ok = ok && out[i] == sum_of(i, it);
      ok = ok && (internal::impl(comm).last_call.op != nullptr) == !check;
    }
    // Memory that becomes toroid's may change a call's path: allocate forgets the last call.
    Buffer<float> b = comm.allocate<float>(n);
    ok = ok && internal::impl(comm).last_call.op == nullptr;
    // Another call (other arguments) replaces the kept one and is right too.
    allreduce(std::span<const float>(out), std::span<float>(in), ReduceOp::max, comm);
    for (std::size_t i = 0; i < n; ++i) ok = ok && in[i] == sum_of(i, 3);
    CHECK(all_ranks(ok));
  }
}

TEST_CASE("blocking calls on other buffers of the last call's shape rebind its op, exactly",
          "[single_copy]") {
  const int p = world_size(), me = world_rank();
  for (const char* transport : {"auto", "mpi"}) {
    Options o;
    o.transport = parse_transport(transport);
    Communicator comm(MPI_COMM_WORLD, o);  // never allocates: new buffers cannot be toroid's
    // Small and small-staged sizes at 2 ranks, and one over several shared-memory slots and MPI
    // segments (relayed receives, staging, streamed stores none of which may keep old addresses).
    for (const std::size_t n : {std::size_t{37}, std::size_t{300'007}}) {
      for (const Algorithm a :
           {Algorithm::ring, Algorithm::bidir_ring, Algorithm::torus2d,
            Algorithm::recursive_doubling, Algorithm::swing, Algorithm::automatic}) {
        INFO(transport << ", n = " << n << ", " << to_string(a));
        const Block own = block_of(n, p, me);
        // Three buffer pairs; calls A, B, C, A, then B in place (another form: the full path),
        // then C in place (rebinding the in-place op), each with new inputs.
        std::vector<std::vector<float>> in(3, std::vector<float>(n)), out(3, std::vector<float>(n));
        bool ok = true, rebound = true;
        const std::pair<int, bool> calls[] = {{0, false}, {1, false}, {2, false},
                                              {0, false}, {1, true},  {2, true}};
        const exec::BoundCollective* first_op = nullptr;
        for (int it = 0; it < 6; ++it) {
          const auto [k, ip] = calls[it];
          for (std::size_t i = 0; i < n; ++i) in[k][i] = value(me, i, it);
          if (ip) out[k] = in[k];
          const std::span<const float> src(ip ? out[k] : in[k]);
          allreduce(src, std::span<float>(out[k]), ReduceOp::sum, comm, a);
          for (std::size_t i = 0; i < n; ++i) ok = ok && out[k][i] == sum_of(i, it);
          // Every call after the first of a form ran the op the first one bound.
          const exec::BoundCollective* op = internal::impl(comm).last_call.op.get();
          if (it == 0 || it == 4) first_op = op;
          rebound = rebound && op == first_op;
        }
        // The other collectives: A then B, out of place.
        for (int it = 0; it < 2; ++it) {
          for (std::size_t i = 0; i < n; ++i) in[it][i] = value(me, i, it);
          if (implements(a, Collective::reduce_scatter)) {
            std::vector<float> rs(own.count);
            reduce_scatter(std::span<const float>(in[it]), std::span<float>(rs), ReduceOp::sum,
                           comm, a);
            for (std::size_t i = 0; i < own.count; ++i)
              ok = ok && rs[i] == sum_of(own.offset + i, it);
            allgather(std::span<const float>(in[it]).subspan(own.offset, own.count),
                      std::span<float>(out[it]), comm, a);
            for (int r = 0; r < p; ++r) {
              const Block b = block_of(n, p, r);
              for (std::size_t i = b.offset; i < b.offset + b.count; ++i)
                ok = ok && out[it][i] == value(r, i, it);
            }
          }
          if (implements(a, Collective::broadcast)) {
            std::vector<float>& data = out[it];
            for (std::size_t i = 0; i < n; ++i) data[i] = me == 0 ? value(0, i, it) : -1.0f;
            broadcast(std::span<float>(data), 0, comm, a);
            for (std::size_t i = 0; i < n; ++i) ok = ok && data[i] == value(0, i, it);
          }
        }
        CHECK(all_ranks(ok));
        CHECK(all_ranks(rebound));
      }
    }
  }
}
