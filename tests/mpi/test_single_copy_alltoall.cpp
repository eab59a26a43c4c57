// Single-copy all-to-all and alltoallv on toroid-owned buffers (exec/single_copy.hpp): every
// block exact and the path really taken where it can be; small all-to-alls staged on any
// memory; alltoallv's layouts published and compared on every rank, so counts that disagree
// are the same error everywhere; non-blocking and persistent forms; no rank reading an input
// before it is final or writing an output after its owner returned.
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "alltoallv_layout.hpp"
#include "api/internal.hpp"
#include "catch_extras.hpp"
#include "exec/single_copy.hpp"
#include "mpi_test.hpp"
#include "node_paths.hpp"
#include "toroid/toroid.hpp"

using namespace toroid;
using namespace toroid::testing;

namespace {

// Element k of the block rank `from` sends rank `to` in iteration `it`: distinct for every
// (from, to, k) up to 2^24, so a block from the wrong peer or offset shows.
float sent(int from, int to, std::uint64_t k, int it) {
  return static_cast<float>((from * 31 + to * 7 + it * 3 + static_cast<int>(k % 4099)) %
                            16'000'000);
}

void fill_blocks(float* in, const Layout& l, int me, int it) {
  for (std::size_t q = 0; q < l.send_counts.size(); ++q)
    for (std::uint64_t k = 0; k < l.send_counts[q]; ++k)
      in[l.send_offsets[q] + k] = sent(me, static_cast<int>(q), k, it);
}
bool blocks_arrived(const float* out, const Layout& l, int me, int it) {
  bool ok = true;
  for (std::size_t q = 0; q < l.recv_counts.size(); ++q)
    for (std::uint64_t k = 0; k < l.recv_counts[q]; ++k)
      ok = ok && out[l.recv_offsets[q] + k] == sent(static_cast<int>(q), me, k, it);
  return ok;
}

}  // namespace

TEST_CASE(
    "single-copy: all-to-all of toroid buffers is exact, of other memory read remotely; small "
    "ones staged on any memory",
    "[single_copy][alltoall]") {
  Communicator comm(MPI_COMM_WORLD);
  const int p = world_size(), me = world_rank();
  const auto P = static_cast<std::uint64_t>(p);
  // Per peer: one element, a staged size at 3 ranks and more, and one over the 1 MiB from which
  // the output is streamed.
  for (const std::uint64_t b : {std::uint64_t{1}, std::uint64_t{1000}, std::uint64_t{90'001}}) {
    INFO("block = " << b);
    const std::uint64_t n = b * P;
    // Small ones are staged at 3 ranks and more, and run their schedule at 2 (as the others).
    const bool staged = exec::takes_staged_path(Collective::alltoall, n, sizeof(float), p);
    const bool small = exec::small_enough_to_stage(Collective::alltoall, n, sizeof(float), p);
    for (const bool owned : {true, false}) {
      Buffer<float> in_owned = comm.allocate<float>(n), out_owned = comm.allocate<float>(n);
      std::vector<float> in_plain(n), out_plain(n);
      float* in = owned ? in_owned.data() : in_plain.data();
      float* out = owned ? out_owned.data() : out_plain.data();
      const std::uint64_t single_before = single_copy_calls(comm),
                          staged_before = staged_calls(comm),
                          remote_before = remote_read_calls(comm);
      for (int it = 0; it < 2; ++it) {
        for (std::uint64_t j = 0; j < P; ++j)
          for (std::uint64_t k = 0; k < b; ++k)
            in[j * b + k] = sent(me, static_cast<int>(j), k, it);
        alltoall(in, n, out, n, DataType::f32, comm);
        bool ok = true;
        for (std::uint64_t i = 0; i < P; ++i)
          for (std::uint64_t k = 0; k < b; ++k)
            ok = ok && out[i * b + k] == sent(static_cast<int>(i), me, k, it);
        CHECK(all_ranks(ok));
      }
      const bool here = single_copy_here(comm);
      CHECK(staged_calls(comm) - staged_before == (here && staged ? 2u : 0u));
      CHECK(single_copy_calls(comm) - single_before == (here && owned && !small ? 2u : 0u));
      CHECK(remote_read_calls(comm) - remote_before == (here && !owned && !small ? 2u : 0u));
    }
  }
}

TEST_CASE(
    "single-copy: alltoallv delivers skewed blocks at their offsets, of toroid buffers and read "
    "remotely from other memory",
    "[single_copy][alltoall]") {
  Communicator comm(MPI_COMM_WORLD);
  const int p = world_size(), me = world_rank();
  // Inputs that fit the stage on every rank, on some (scale 300 at 2-4 ranks), on none.
  for (const std::uint64_t scale : {std::uint64_t{1}, std::uint64_t{300}, std::uint64_t{40'013}})
    for (const bool owned : {true, false}) {
      INFO("scale = " << scale << (owned ? ", toroid's buffers" : ", other memory"));
      // The largest layout of the seeds, so one allocation serves every call.
      Layout big;
      for (int seed = 0; seed < 3; ++seed) {
        const Layout l = layout_of(me, p, seed, scale, true);
        big.in_count = std::max(big.in_count, l.in_count);
        big.out_count = std::max(big.out_count, l.out_count);
      }
      Buffer<float> in_owned = comm.allocate<float>(big.in_count + 1),
                    out_owned = comm.allocate<float>(big.out_count + 1);
      std::vector<float> in_plain(big.in_count + 1), out_plain(big.out_count + 1);
      float* in = owned ? in_owned.data() : in_plain.data();
      float* out = owned ? out_owned.data() : out_plain.data();
      const std::uint64_t single_before = single_copy_calls(comm),
                          remote_before = remote_read_calls(comm),
                          staged_before = staged_calls(comm);
      bool ok = true;
      std::uint64_t all_staged = 0;           // calls whose every input fit its rank's stage
      for (int seed = 0; seed < 3; ++seed) {  // counts that change at every call
        const Layout l = layout_of(me, p, seed, scale, true);
        all_staged += all_ranks(l.in_count * sizeof(float) <=
                                exec::NodeMemory::kStageBytes -
                                    3 * sizeof(std::uint64_t) * static_cast<std::size_t>(p));
        fill_blocks(in, l, me, seed);
        std::memset(out, 0, (big.out_count + 1) * sizeof(float));
        alltoallv(in, l.in_count, {l.send_counts, l.send_offsets}, out, l.out_count,
                  {l.recv_counts, l.recv_offsets}, DataType::f32, comm);
        ok = ok && blocks_arrived(out, l, me, seed);
        // The gaps between blocks stay untouched.
        std::vector<char> written(l.out_count, 0);
        for (std::size_t q = 0; q < l.recv_counts.size(); ++q)
          std::fill_n(written.begin() + static_cast<std::ptrdiff_t>(l.recv_offsets[q]),
                      l.recv_counts[q], 1);
        for (std::uint64_t i = 0; i < l.out_count; ++i) ok = ok && (written[i] || out[i] == 0.0f);
      }
      CHECK(all_ranks(ok));
      const bool here = single_copy_here(comm);
      CHECK(staged_calls(comm) - staged_before == (here ? all_staged : 0u));
      CHECK(single_copy_calls(comm) - single_before == (here && owned ? 3u - all_staged : 0u));
      CHECK(remote_read_calls(comm) - remote_before == (here && !owned ? 3u - all_staged : 0u));
    }
}

TEST_CASE("single-copy: an alltoallv with nothing to send from a null input of some length",
          "[single_copy][alltoall]") {
  // Rank 0 sends nothing and passes a null input with a length: nothing of it is staged or read.
  Communicator comm(MPI_COMM_WORLD);
  const int p = world_size(), me = world_rank();
  std::vector<std::uint64_t> send(static_cast<std::size_t>(p), me == 0 ? 0 : 1), recv(send.size());
  for (int q = 0; q < p; ++q) recv[static_cast<std::size_t>(q)] = q == 0 ? 0 : 1;
  std::vector<float> in(static_cast<std::size_t>(p), static_cast<float>(me)), out(in.size(), -1.0f);
  alltoallv(me == 0 ? nullptr : in.data(), me == 0 ? 16 : in.size(), {send}, out.data(), out.size(),
            {recv}, DataType::f32, comm);
  bool ok = true;
  std::uint64_t at = 0;
  for (int q = 1; q < p; ++q) ok = ok && out[at++] == static_cast<float>(q);
  CHECK(all_ranks(ok));
}

TEST_CASE("single-copy: toroid buffers on some ranks and other memory on others read remotely",
          "[single_copy][alltoall]") {
  Communicator comm(MPI_COMM_WORLD);
  const int p = world_size(), me = world_rank();
  const auto P = static_cast<std::uint64_t>(p);
  const std::uint64_t b = 5'000, n = b * P;
  Buffer<float> in_owned = comm.allocate<float>(n), out_owned = comm.allocate<float>(n);
  std::vector<float> in_plain(n), out_plain(n);
  // Rank 0 passes toroid's input and ordinary output, rank 1 the other way round, the rest
  // ordinary memory: nobody's pair is all toroid's, and the call still meets in one path.
  float* in = me == 0 ? in_owned.data() : in_plain.data();
  float* out = me == 1 ? out_owned.data() : out_plain.data();
  const std::uint64_t before = remote_read_calls(comm);
  for (std::uint64_t j = 0; j < P; ++j)
    for (std::uint64_t k = 0; k < b; ++k) in[j * b + k] = sent(me, static_cast<int>(j), k, 5);
  alltoall(in, n, out, n, DataType::f32, comm);
  bool ok = true;
  for (std::uint64_t i = 0; i < P; ++i)
    for (std::uint64_t k = 0; k < b; ++k)
      ok = ok && out[i * b + k] == sent(static_cast<int>(i), me, k, 5);
  CHECK(all_ranks(ok));
  const bool small = exec::small_enough_to_stage(Collective::alltoall, n, sizeof(float), p);
  CHECK(remote_read_calls(comm) - before == (single_copy_here(comm) && !small ? 1u : 0u));
}

TEST_CASE("single-copy: a remote read the kernel refuses is the same error on every rank",
          "[single_copy][alltoall]") {
  Communicator comm(MPI_COMM_WORLD);
  const int p = world_size(), me = world_rank();
  if (p < 2 || !single_copy_here(comm)) SKIP_CASE("needs two ranks and the single-copy path");
  // Rank 1's input is memory nobody may read, its blocks at its end (past what its stage holds),
  // and it sends nothing to itself: the peers' reads of it fail in the kernel (EFAULT), which is
  // what a refusing ptrace policy looks like.
  const std::size_t fenced_count = exec::NodeMemory::kStageBytes / sizeof(float) * 2;
  void* fenced =
      mmap(nullptr, fenced_count * sizeof(float), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(fenced != MAP_FAILED);
  std::vector<float> in_plain(fenced_count), out(static_cast<std::size_t>(p));
  std::vector<std::uint64_t> send(static_cast<std::size_t>(p), 1), recv = send, at;
  if (me == 1) send[1] = recv[1] = 0;
  for (int q = 0; q < p; ++q) at.push_back(fenced_count - static_cast<std::size_t>(p - q));
  const float* in = me == 1 ? static_cast<const float*>(fenced) : in_plain.data();
  CHECK_THROWS_WITH(
      alltoallv(in, fenced_count, {send, at}, out.data(), static_cast<std::uint64_t>(p), {recv},
                DataType::f32, comm),
      Catch::Contains("could not read its peers' buffers") && Catch::Contains("process_vm_readv"));
  munmap(fenced, fenced_count * sizeof(float));
  // The communicator goes on.
  send.assign(static_cast<std::size_t>(p), 1), recv = send;
  for (int q = 0; q < p; ++q) in_plain[static_cast<std::size_t>(q)] = static_cast<float>(me);
  alltoallv(in_plain.data(), static_cast<std::uint64_t>(p), {send}, out.data(),
            static_cast<std::uint64_t>(p), {recv}, DataType::f32, comm);
  bool ok = true;
  for (int q = 0; q < p; ++q) ok = ok && out[static_cast<std::size_t>(q)] == static_cast<float>(q);
  CHECK(all_ranks(ok));
}

TEST_CASE("single-copy: alltoallv counts that disagree are an error on every rank, unchecked",
          "[single_copy][alltoall]") {
  Communicator comm(MPI_COMM_WORLD);
  const int p = world_size(), me = world_rank();
  if (p < 2) SKIP_CASE("needs two ranks");
  Buffer<float> in = comm.allocate<float>(64), out = comm.allocate<float>(64);
  if (!single_copy_here(comm)) SKIP_CASE("no single-copy path on this node");
  // (Other memory meets in the same place: remote reads, test above.)
  std::vector<std::uint64_t> send(static_cast<std::size_t>(p), 2), recv = send;
  if (me == 1) recv[0] = 3;  // rank 0 sends 2, rank 1 expects 3
  // Every rank sees every layout: the same message on every rank, before anything moves.
  CHECK_THROWS_WITH(alltoallv(in.data(), 64, {send}, out.data(), 64, {recv}, DataType::f32, comm),
                    Catch::Contains("rank 0 sends 2 elements to rank 1") &&
                        Catch::Contains("receive count for rank 0 is 3"));
  // The communicator goes on.
  recv[0] = 2;
  for (int q = 0; q < p; ++q) in[static_cast<std::size_t>(2 * q)] = static_cast<float>(me);
  alltoallv(in.data(), 64, {send}, out.data(), 64, {recv}, DataType::f32, comm);
  bool ok = true;
  for (int q = 0; q < p; ++q)
    ok = ok && out[static_cast<std::size_t>(2 * q)] == static_cast<float>(q);
  CHECK(all_ranks(ok));
}

TEST_CASE("single-copy: non-blocking and persistent all-to-alls of toroid buffers",
          "[single_copy][alltoall]") {
  Communicator comm(MPI_COMM_WORLD);
  const int p = world_size(), me = world_rank();
  const auto P = static_cast<std::uint64_t>(p);
  const std::uint64_t b = 30'011, n = b * P;
  const Layout l = layout_of(me, p, 1, 5'003, true);
  Buffer<float> a = comm.allocate<float>(n), c = comm.allocate<float>(n);
  Buffer<float> vin = comm.allocate<float>(l.in_count), vout = comm.allocate<float>(l.out_count);
  Buffer<float> pin = comm.allocate<float>(l.in_count), pout = comm.allocate<float>(l.out_count);
  const std::uint64_t before = single_copy_calls(comm);
  Request persistent =
      alltoallv_init(pin.data(), l.in_count, {l.send_counts, l.send_offsets}, pout.data(),
                     l.out_count, {l.recv_counts, l.recv_offsets}, DataType::f32, comm);
  bool ok = true;
  for (int it = 0; it < 4; ++it) {
    for (std::uint64_t j = 0; j < P; ++j)
      for (std::uint64_t k = 0; k < b; ++k) a[j * b + k] = sent(me, static_cast<int>(j), k, it);
    fill_blocks(vin.data(), l, me, it + 1);
    fill_blocks(pin.data(), l, me, it + 2);
    // Three in flight, waited for in another order than started.
    Request first = ialltoall(a.data(), n, c.data(), n, DataType::f32, comm);
    Request second =
        ialltoallv(vin.data(), l.in_count, {l.send_counts, l.send_offsets}, vout.data(),
                   l.out_count, {l.recv_counts, l.recv_offsets}, DataType::f32, comm);
    persistent.start();
    persistent.wait();
    second.wait();
    first.wait();
    for (std::uint64_t i = 0; i < P; ++i)
      for (std::uint64_t k = 0; k < b; ++k)
        ok = ok && c[i * b + k] == sent(static_cast<int>(i), me, k, it);
    ok = ok && blocks_arrived(vout.data(), l, me, it + 1) &&
         blocks_arrived(pout.data(), l, me, it + 2);
  }
  CHECK(all_ranks(ok));
  CHECK(single_copy_calls(comm) - before == (single_copy_here(comm) ? 12u : 0u));
}

TEST_CASE(
    "single-copy: an all-to-all reads no input before it is final and writes no output after "
    "its owner returned",
    "[single_copy][alltoall]") {
  Communicator comm(MPI_COMM_WORLD);
  const int p = world_size(), me = world_rank();
  const auto P = static_cast<std::uint64_t>(p);
  const std::uint64_t b = 20'000, n = b * P;
  Buffer<float> in = comm.allocate<float>(n), out = comm.allocate<float>(n);
  std::mt19937 random(static_cast<unsigned>(me + 17));
  bool ok = true;
  for (int it = 0; it < 40; ++it) {
    // A late rank writes its input only just before it calls: a peer that read early would
    // copy the previous iteration's blocks (or the scribble below).
    std::this_thread::sleep_for(std::chrono::microseconds(random() % 300));
    for (std::uint64_t j = 0; j < P; ++j)
      for (std::uint64_t k = 0; k < b; ++k) in[j * b + k] = sent(me, static_cast<int>(j), k, it);
    alltoall(in.data(), n, out.data(), n, DataType::f32, comm);
    for (std::uint64_t i = 0; i < P; ++i)
      for (std::uint64_t k = 0; k < b; ++k)
        ok = ok && out[i * b + k] == sent(static_cast<int>(i), me, k, it);
    std::memset(in.data(), 0xff, n * sizeof(float));
    std::memset(out.data(), 0x55, n * sizeof(float));
    std::this_thread::sleep_for(std::chrono::microseconds(random() % 300));
    const auto* bytes = reinterpret_cast<const unsigned char*>(out.data());
    for (std::uint64_t k = 0; k < n * sizeof(float); k += 64) ok = ok && bytes[k] == 0x55;
  }
  CHECK(all_ranks(ok));
}
