// MPI's progress rule inside toroid: a rank waiting in a toroid collective still completes its
// own pending MPI operations, as it would inside a stock collective (mpi_base/progress.hpp).
// Without that, a peer waiting in MPI for one of them never starts the collective this rank
// waits on, and the job hangs (the tests' TOROID_TIMEOUT turns that into a failure).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <numeric>
#include <vector>

#include "catch_extras.hpp"
#include "mpi_test.hpp"
#include "toroid/toroid.hpp"

using namespace toroid;
using namespace toroid::testing;

namespace {

// 1 MiB: past every eager limit, so the sender's wait needs the receiver's progress.
constexpr int kMessage = 1 << 18;

// Small integers: every sum exact in any order.
std::vector<float> numbers(int rank, std::size_t n, int salt) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = static_cast<float>((i * 5 + static_cast<std::size_t>(rank * 31 + salt * 13)) % 23) - 11;
  return v;
}

// xorshift64*, seeded alike (the order of starts) or per rank (the way each rank completes).
struct Draw {
  std::uint64_t s;
  int below(int n) {
    s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
    return static_cast<int>((s * 2685821657736338717ULL) % static_cast<std::uint64_t>(n));
  }
};

}  // namespace

TEST_CASE("a rank waiting in a toroid collective moves its pending MPI sends and receives",
          "[nonblocking][mpich]") {
  const int p = world_size(), rank = world_rank();
  if (p < 2) SKIP_CASE("needs two ranks");
  const std::size_t n = 4099;
  std::vector<float> want(n, 0.0f);
  for (int r = 0; r < p; ++r) {
    const std::vector<float> v = numbers(r, n, 1);
    for (std::size_t i = 0; i < n; ++i) want[i] += v[i];
  }
  for (const char* transport : {"auto", "mpi"})
    for (int how = 0; how < 3; ++how) {  // blocking call, wait(), test() polled
      Options o;
      o.transport = parse_transport(transport);
      Communicator comm(MPI_COMM_WORLD, o);
      std::vector<int> message(kMessage, rank), got(kMessage, -1);
      MPI_Request mpi = MPI_REQUEST_NULL;
      // Rank 1 posts its receive and goes into the collective; rank 0 sends and waits for the
      // send before it joins the collective: only rank 1's progress inside toroid frees it.
      if (rank == 1) MPI_Irecv(got.data(), kMessage, MPI_INT, 0, 5, MPI_COMM_WORLD, &mpi);
      if (rank == 0) {
        MPI_Isend(message.data(), kMessage, MPI_INT, 1, 5, MPI_COMM_WORLD, &mpi);
        MPI_Wait(&mpi, MPI_STATUS_IGNORE);
      }
      std::vector<float> v = numbers(rank, n, 1);
      if (how == 0) {
        allreduce(std::span<float>(v), ReduceOp::sum, comm);
      } else {
        Request r = iallreduce(std::span<float>(v), ReduceOp::sum, comm);
        if (how == 1)
          r.wait();
        else
          while (!r.test()) {
          }
      }
      if (rank == 1) MPI_Wait(&mpi, MPI_STATUS_IGNORE);
      const bool ok = v == want && (rank != 1 || got == std::vector<int>(kMessage, 0));
      REQUIRE_SAYING(all_ranks(ok), "over " << transport << ", completed by " << how);
    }
}

TEST_CASE(
    "collectives on four communicators and MPI's own requests in flight, each rank completing "
    "them its own way",
    "[nonblocking]") {
  const int p = world_size(), rank = world_rank();
  int level = 0;
  MPI_Query_thread(&level);
  for (ProgressMode mode : {ProgressMode::caller, ProgressMode::thread}) {
    if (mode == ProgressMode::thread && level < MPI_THREAD_MULTIPLE) continue;
    Options o;
    o.progress = mode;
    std::vector<MPI_Comm> dups(4);
    std::vector<std::unique_ptr<Communicator>> comms;
    for (MPI_Comm& d : dups) {
      MPI_Comm_dup(MPI_COMM_WORLD, &d);
      comms.push_back(std::make_unique<Communicator>(d, o));
    }
    struct Op {
      Collective kind;
      int comm = 0, root = 0;
      std::vector<float> in, out;
      std::vector<int> sent, got;  // a point-to-point pair instead
      Request request;
      MPI_Request mpi[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    };
    constexpr int kOps = 160, kWindow = 12;
    std::vector<Op> ops(kOps);
    Draw alike{0x9E3779B97F4A7C15ULL},
        mine{0xD1B54A32D192ED03ULL * static_cast<unsigned>(rank + 1)};
    std::vector<int> open;  // ops with a request still active
    const auto done = [&](int k) {
      const Op& op = ops[static_cast<std::size_t>(k)];
      return !op.request.active() && op.mpi[0] == MPI_REQUEST_NULL && op.mpi[1] == MPI_REQUEST_NULL;
    };
    MPI_Status statuses[2];  // not MPI_STATUSES_IGNORE: MPICH's (1) trips gcc's bounds check
    // With the progress threads every way goes, MPI's own waits included. Without them a rank
    // blocked in MPI's wait moves no toroid collective (only toroid's calls do, on every
    // communicator: Executor::move_besides), so there MPI's waits come once no toroid request
    // of this rank is open.
    const auto complete_some = [&] {
      std::vector<int> toroid_open;
      for (int j : open)
        if (ops[static_cast<std::size_t>(j)].request.active()) toroid_open.push_back(j);
      const bool mpi_waits = mode == ProgressMode::thread || toroid_open.empty();
      const std::vector<int>& from = mpi_waits ? open : toroid_open;
      Op& op = ops[static_cast<std::size_t>(
          from[static_cast<std::size_t>(mine.below(static_cast<int>(from.size())))])];
      switch (mine.below(4)) {
        case 0:  // every MPI request of the window at once
          if (mpi_waits)
            for (int j : open) MPI_Waitall(2, ops[static_cast<std::size_t>(j)].mpi, statuses);
          break;
        case 1:
          if (op.request.active()) op.request.wait();
          if (mpi_waits) MPI_Waitall(2, op.mpi, statuses);
          break;
        case 2:
          if (op.request.active())
            while (!op.request.test()) {
            }
          if (mpi_waits) MPI_Waitall(2, op.mpi, statuses);
          break;
        default: {
          std::vector<Request> view;  // wait_any takes a span of requests: moved in and back
          for (int j : toroid_open)
            view.push_back(std::move(ops[static_cast<std::size_t>(j)].request));
          wait_any(view);
          for (std::size_t i = 0; i < view.size(); ++i)
            ops[static_cast<std::size_t>(toroid_open[i])].request = std::move(view[i]);
          break;
        }
      }
      if (mine.below(30) == 0) usleep(static_cast<useconds_t>(1000 * (1 + mine.below(10))));
      std::erase_if(open, done);
    };
    for (int k = 0; k < kOps; ++k) {
      while (static_cast<int>(open.size()) >= kWindow || (!open.empty() && mine.below(4) == 0))
        complete_some();
      Op& op = ops[static_cast<std::size_t>(k)];
      const int what = alike.below(5);
      op.comm = alike.below(4);
      op.root = alike.below(p);
      const std::size_t n = alike.below(8) == 0
                                ? 20000 + static_cast<std::size_t>(alike.below(5000))
                                : 1 + static_cast<std::size_t>(alike.below(60));
      Communicator& c = *comms[static_cast<std::size_t>(op.comm)];
      op.in = numbers(rank, n * static_cast<std::size_t>(p), k);
      if (what == 4) {  // a pair: send right, receive from the left, 1 MiB now and then
        const int count = n > 60 ? kMessage : static_cast<int>(n);
        op.sent.assign(static_cast<std::size_t>(count), rank * 1000 + k);
        op.got.assign(static_cast<std::size_t>(count), -1);
        MPI_Irecv(op.got.data(), count, MPI_INT, (rank + p - 1) % p, k,
                  dups[static_cast<std::size_t>(op.comm)], &op.mpi[0]);
        MPI_Isend(op.sent.data(), count, MPI_INT, (rank + 1) % p, k,
                  dups[static_cast<std::size_t>(op.comm)], &op.mpi[1]);
        op.kind = Collective::allreduce;  // unused
      } else {
        op.kind = what == 0   ? Collective::allreduce
                  : what == 1 ? Collective::reduce_scatter
                  : what == 2 ? Collective::allgather
                              : Collective::broadcast;
        const Block own = block_of(n * static_cast<std::size_t>(p), p, rank);
        const std::uint64_t whole = n * static_cast<std::uint64_t>(p);
        if (op.kind == Collective::allreduce) {
          op.out.assign(whole, 0.0f);
          op.request = iallreduce(op.in.data(), whole, op.out.data(), whole, DataType::f32,
                                  ReduceOp::sum, c);
        } else if (op.kind == Collective::reduce_scatter) {
          op.out.assign(own.count, 0.0f);
          op.request = ireduce_scatter(op.in.data(), whole, op.out.data(), own.count, DataType::f32,
                                       ReduceOp::sum, c);
        } else if (op.kind == Collective::allgather) {
          op.out.assign(whole, 0.0f);
          op.request = iallgather(op.in.data() + own.offset, own.count, op.out.data(), whole,
                                  DataType::f32, c);
        } else {
          op.out = rank == op.root ? op.in : std::vector<float>(whole, 0.0f);
          op.request = ibroadcast(op.out.data(), whole, DataType::f32, op.root, c);
        }
      }
      open.push_back(k);
    }
    while (!open.empty()) complete_some();
    // Every result against MPI's blocking call on the same inputs, op by op in start order.
    bool ok = true;
    for (int k = 0; k < kOps; ++k) {
      Op& op = ops[static_cast<std::size_t>(k)];
      MPI_Comm c = dups[static_cast<std::size_t>(op.comm)];
      const int whole = static_cast<int>(op.in.size());
      std::vector<float> ref(op.out.size());
      if (!op.sent.empty()) {
        ok = ok && op.got == std::vector<int>(op.got.size(), ((rank + p - 1) % p) * 1000 + k);
        continue;
      }
      if (op.kind == Collective::allreduce) {
        MPI_Allreduce(op.in.data(), ref.data(), whole, MPI_FLOAT, MPI_SUM, c);
      } else if (op.kind == Collective::reduce_scatter) {
        std::vector<int> counts(static_cast<std::size_t>(p));
        for (int r = 0; r < p; ++r)
          counts[static_cast<std::size_t>(r)] =
              static_cast<int>(block_of(op.in.size(), p, r).count);
        MPI_Reduce_scatter(op.in.data(), ref.data(), counts.data(), MPI_FLOAT, MPI_SUM, c);
      } else if (op.kind == Collective::allgather) {
        std::vector<int> counts(static_cast<std::size_t>(p)), displs(static_cast<std::size_t>(p));
        for (int r = 0; r < p; ++r) {
          const Block b = block_of(op.in.size(), p, r);
          counts[static_cast<std::size_t>(r)] = static_cast<int>(b.count);
          displs[static_cast<std::size_t>(r)] = static_cast<int>(b.offset);
        }
        const Block own = block_of(op.in.size(), p, rank);
        MPI_Allgatherv(op.in.data() + own.offset, static_cast<int>(own.count), MPI_FLOAT,
                       ref.data(), counts.data(), displs.data(), MPI_FLOAT, c);
      } else {
        ref = op.in;
        MPI_Bcast(ref.data(), whole, MPI_FLOAT, op.root, c);
      }
      if (op.out != ref) {
        ok = false;
        WARN("rank " << rank << " op " << k << " (" << to_string(op.kind) << " on communicator "
                     << op.comm << ", " << whole << " elements) differs from MPI's result");
      }
    }
    CHECK(all_ranks(ok));
    comms.clear();
    for (MPI_Comm& d : dups) MPI_Comm_free(&d);
  }
}
