// alltoallv: blocks of each rank's own sizes against MPI_Alltoallv on the same bytes; counts
// that disagree between a sender and its receiver (an error on the receiver, never a hang or a
// write past its block, and the communicator still usable after); bad layouts on every rank.
#include <catch2/catch.hpp>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "alltoallv_layout.hpp"
#include "catch_extras.hpp"
#include "mpi_test.hpp"
#include "toroid/toroid.hpp"

using namespace toroid;
using namespace toroid::testing;

namespace {

std::vector<int> ints(const std::vector<std::uint64_t>& v) { return {v.begin(), v.end()}; }

// Packed offsets for MPI where the layout gives none.
std::vector<int> displs(const std::vector<std::uint64_t>& offsets,
                        const std::vector<std::uint64_t>& counts) {
  if (!offsets.empty()) return ints(offsets);
  std::vector<int> d;
  int at = 0;
  for (std::uint64_t c : counts) {
    d.push_back(at);
    at += static_cast<int>(c);
  }
  return d;
}

}  // namespace

TEST_CASE("alltoallv delivers skewed blocks as MPI_Alltoallv, blocking, non-blocking, persistent",
          "[collectives][mpich][alltoall]") {
  Communicator comm(MPI_COMM_WORLD);
  const int p = comm.size(), me = comm.rank();
  for (DataType t : {DataType::f32, DataType::i64, DataType::bf16})
    for (std::uint64_t scale : {std::uint64_t{1}, std::uint64_t{977}})
      for (bool gaps : {false, true})
        for (int seed = 0; seed < 2; ++seed) {
          const Layout l = layout_of(me, p, seed, scale, gaps);
          const std::size_t es = size_of(t);
          std::vector<unsigned char> in(l.in_count * es), want(l.out_count * es, 0xee);
          for (std::size_t b = 0; b < in.size(); ++b)
            in[b] = static_cast<unsigned char>(b * 31 + static_cast<std::size_t>(me) * 7 + seed);
          MPI_Datatype block;  // one element of the type, as bytes
          MPI_Type_contiguous(static_cast<int>(es), MPI_BYTE, &block);
          MPI_Type_commit(&block);
          const auto sc = ints(l.send_counts), rc = ints(l.recv_counts);
          const auto sd = displs(l.send_offsets, l.send_counts),
                     rd = displs(l.recv_offsets, l.recv_counts);
          MPI_Alltoallv(in.data(), sc.data(), sd.data(), block, want.data(), rc.data(), rd.data(),
                        block, MPI_COMM_WORLD);
          MPI_Type_free(&block);
          const BlockLayout send{l.send_counts, l.send_offsets},
              recv{l.recv_counts, l.recv_offsets};
          for (Algorithm a : {Algorithm::automatic, Algorithm::direct, Algorithm::mpi}) {
            for (int form = 0; form < 3; ++form) {
              std::vector<unsigned char> out(l.out_count * es, 0xee);
              if (form == 0) {
                alltoallv(in.data(), l.in_count, send, out.data(), l.out_count, recv, t, comm, a);
              } else if (form == 1) {
                Request r = ialltoallv(in.data(), l.in_count, send, out.data(), l.out_count, recv,
                                       t, comm, a);
                r.wait();
              } else {  // persistent: twice, the output cleared between
                Request r = alltoallv_init(in.data(), l.in_count, send, out.data(), l.out_count,
                                           recv, t, comm, a);
                for (int round = 0; round < 2; ++round) {
                  std::fill(out.begin(), out.end(), static_cast<unsigned char>(0xee));
                  r.start();
                  r.wait();
                }
              }
              INFO(to_string(t) << " scale " << scale << (gaps ? " with gaps" : " packed")
                                << " seed " << seed << " " << to_string(a) << " form " << form);
              CHECK(all_ranks(out == want));
            }
          }
        }
}

TEST_CASE("alltoallv's counts that disagree raise on the receiver naming both ranks, never hang",
          "[errors][mpich][alltoall]") {
  // Checking off whatever TOROID_CHECK says: the first part is the unchecked path.
  Options unchecked;
  unchecked.check = false;
  Communicator comm(MPI_COMM_WORLD, unchecked);
  const int p = comm.size(), me = comm.rank();
  if (p < 2) SKIP_CASE("needs two ranks");
  const int last = p - 1;
  // The last rank expects one element more (then one fewer) from rank 0 than rank 0 sends.
  for (int delta : {1, -1}) {
    std::vector<std::uint64_t> send(static_cast<std::size_t>(p), 4),
        recv(static_cast<std::size_t>(p), 4);
    if (me == last) recv[0] = static_cast<std::uint64_t>(4 + delta);
    const std::uint64_t out_count = std::accumulate(recv.begin(), recv.end(), std::uint64_t{0});
    std::vector<float> in(static_cast<std::size_t>(4 * p), 1.0f);
    // One guard element past the output: nothing may write it.
    std::vector<float> out(out_count + 1, -1.0f);
    std::string error;
    try {
      alltoallv(in.data(), in.size(), {send}, out.data(), out_count, {recv}, DataType::f32, comm,
                Algorithm::direct);
    } catch (const InvalidArgument& e) {
      error = e.what();
    }
    INFO("rank " << me << " delta " << delta << ": " << error);
    const std::string want = "rank 0 sent 4 elements to rank " + std::to_string(last);
    CHECK(all_ranks(me == last ? error.find(want) != std::string::npos : error.empty()));
    CHECK(all_ranks(me != last || error.find("receive count for rank 0 is " +
                                             std::to_string(4 + delta)) != std::string::npos));
    CHECK(all_ranks(out.back() == -1.0f));
    // No message was left behind: the next call on the communicator is right.
    std::vector<std::uint64_t> even(static_cast<std::size_t>(p), 2);
    std::vector<float> a(static_cast<std::size_t>(2 * p), static_cast<float>(me)), b(a.size());
    alltoallv(std::span<const float>(a), {even}, std::span<float>(b), {even}, comm);
    bool right = true;
    for (int q = 0; q < p; ++q) right = right && b[static_cast<std::size_t>(2 * q)] == q;
    CHECK(all_ranks(right));
  }
  // With checking on, every rank raises before any data moves, naming the pair.
  Options o;
  o.check = true;
  Communicator checked(MPI_COMM_WORLD, o);
  std::vector<std::uint64_t> send(static_cast<std::size_t>(p), 4),
      recv(static_cast<std::size_t>(p), 4);
  if (me == last) recv[0] = 5;
  std::vector<float> in(static_cast<std::size_t>(4 * p)), out(static_cast<std::size_t>(4 * p + 1));
  std::string error;
  try {
    ialltoallv(in.data(), in.size(), {send}, out.data(), out.size(), {recv}, DataType::f32, checked)
        .wait();
  } catch (const InvalidArgument& e) {
    error = e.what();
  }
  INFO(error);
  CHECK(all_ranks(error.find("rank 0 sends 4 elements to rank " + std::to_string(last) +
                             ", whose receive count for rank 0 is 5") != std::string::npos));
}

TEST_CASE("alltoallv's bad layouts are named on every rank", "[errors][mpich][alltoall]") {
  Communicator comm(MPI_COMM_WORLD);
  const int p = comm.size(), me = comm.rank();
  const std::string on = "alltoallv on rank " + std::to_string(me) + ": ";
  const auto n = static_cast<std::size_t>(p);
  std::vector<std::uint64_t> two(n, 2), short_list(n - 1, 2), offsets(n);
  std::vector<float> in(2 * n), out(2 * n);
  const auto call = [&](BlockLayout s, BlockLayout r, std::uint64_t in_count,
                        std::uint64_t out_count, std::optional<Algorithm> a = std::nullopt) {
    alltoallv(in.data(), in_count, s, out.data(), out_count, r, DataType::f32, comm, a);
  };
  CHECK_THROWS_WITH(call({short_list}, {two}, 2 * n, 2 * n),
                    on + std::to_string(p - 1) + " send counts and " + std::to_string(p) +
                        " receive counts given; one per rank (" + std::to_string(p) + ") each");
  CHECK_THROWS_WITH(call({two}, {two}, 2 * n - 1, 2 * n),
                    Catch::Contains(on + "the send block for rank " + std::to_string(p - 1)) &&
                        Catch::Contains("ends past the " + std::to_string(2 * p - 1) +
                                        " elements of the send buffer"));
  std::vector<std::uint64_t> self(n, 2);
  self[static_cast<std::size_t>(me)] = 1;
  CHECK_THROWS_WITH(call({two}, {self}, 2 * n, 2 * n),
                    on + "it sends 2 elements to itself but its receive count for itself is 1");
  if (p >= 2) {
    for (std::size_t q = 0; q < n; ++q) offsets[q] = q;  // 2 elements every 1: overlapping
    CHECK_THROWS_WITH(
        call({two}, {two, offsets}, 2 * n, 2 * n),
        Catch::Contains(on + "the receive blocks for ranks") && Catch::Contains("overlap"));
    for (std::size_t q = 0; q < n; ++q) offsets[q] = n - 1 - q;  // the same, in reverse rank order
    CHECK_THROWS_WITH(
        call({two}, {two, offsets}, 2 * n, 2 * n),
        Catch::Contains(on + "the receive blocks for ranks") && Catch::Contains("overlap"));
  }
  CHECK_THROWS_WITH(call({two}, {two}, 2 * n, 2 * n, Algorithm::ring),
                    Catch::Contains(on + "algorithm ring cannot run it; alltoallv runs on direct, "
                                         "mpi or auto"));
  CHECK_THROWS_WITH(
      alltoallv(in.data(), 2 * n, {two}, in.data(), 2 * n, {two}, DataType::f32, comm),
      on + "input and output overlap (an alltoallv is not in place)");
  // Nothing above left a rank inside a collective.
  std::vector<float> ok(10, 1.0f);
  allreduce(std::span<float>(ok), ReduceOp::sum, comm);
  CHECK(all_ranks(ok[0] == static_cast<float>(p)));
}
