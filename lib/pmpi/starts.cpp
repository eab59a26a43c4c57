#include "pmpi/starts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "kernels/reduce.hpp"
#include "pmpi/guard.hpp"
#include "toroid/block.hpp"
#include "toroid/collectives.hpp"
#include "toroid/error.hpp"
#include "toroid/request.hpp"

namespace toroid::pmpi {
namespace {

std::optional<Algorithm> algorithm(Communicator& c, Collective k) {
  if (implements(c.default_algorithm(), k)) return std::nullopt;
  return Algorithm::automatic;
}

}  // namespace

Started allreduce_start(bool persistent, const void* sendbuf, void* recvbuf, const Plan& p,
                        Communicator& c) {
  const void* in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  const auto algo = algorithm(c, Collective::allreduce);
  return {persistent ? allreduce_init(in, p.count, recvbuf, p.count, p.type, p.reduction, c, algo)
                     : iallreduce(in, p.count, recvbuf, p.count, p.type, p.reduction, c, algo),
          {}};
}

Started reduce_scatter_start(bool persistent, const void* sendbuf, void* recvbuf, const Plan& p,
                             Communicator& c) {
  const Block own = block_of(p.count, p.size, c.rank());
  const auto algo = algorithm(c, Collective::reduce_scatter);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  const void* in = in_place ? recvbuf : sendbuf;
  const std::uint64_t out_count = in_place ? p.count : own.count;
  Request r =
      persistent
          ? reduce_scatter_init(in, p.count, recvbuf, out_count, p.type, p.reduction, c, algo)
          : ireduce_scatter(in, p.count, recvbuf, out_count, p.type, p.reduction, c, algo);
  if (!in_place) return {std::move(r), {}};
  const std::size_t es = size_of(p.type);
  return {std::move(r), [recvbuf, own, es] {
            std::memmove(recvbuf, static_cast<std::byte*>(recvbuf) + own.offset * es,
                         own.count * es);
          }};
}

Started allgather_start(bool persistent, const void* sendbuf, void* recvbuf, const Plan& p,
                        Communicator& c) {
  const Block own = block_of(p.count, p.size, c.rank());
  const void* in = sendbuf == MPI_IN_PLACE
                       ? static_cast<std::byte*>(recvbuf) + own.offset * size_of(p.type)
                       : sendbuf;
  const auto algo = algorithm(c, Collective::allgather);
  return {persistent ? allgather_init(in, own.count, recvbuf, p.count, p.type, c, algo)
                     : iallgather(in, own.count, recvbuf, p.count, p.type, c, algo),
          {}};
}

Started allgatherv_start(bool persistent, const void* sendbuf, void* recvbuf, const int displs[],
                         const Plan& p, Communicator& c) {
  const std::size_t es = size_of(p.type);
  const int rank = c.rank();
  std::vector<std::uint64_t> places(static_cast<std::size_t>(p.size));
  bool rule_layout = true;
  for (int r = 0; r < p.size; ++r) {
    places[static_cast<std::size_t>(r)] = static_cast<std::uint64_t>(displs[r]);
    rule_layout =
        rule_layout && places[static_cast<std::size_t>(r)] == block_of(p.count, p.size, r).offset;
  }
  const Block own = block_of(p.count, p.size, rank);
  auto* out = static_cast<std::byte*>(recvbuf);
  const void* in =
      sendbuf == MPI_IN_PLACE ? out + static_cast<std::size_t>(displs[rank]) * es : sendbuf;
  const auto algo = algorithm(c, Collective::allgather);
  auto start = [&](void* into) {
    return persistent ? allgather_init(in, own.count, into, p.count, p.type, c, algo)
                      : iallgather(in, own.count, into, p.count, p.type, c, algo);
  };
  if (rule_layout) return {start(recvbuf), {}};
  auto scratch = std::make_shared<std::vector<std::byte>>(p.count * es);
  Request r = start(scratch->data());
  return {std::move(r), [scratch, places = std::move(places), out, plan = p, es] {
            for (int q = 0; q < plan.size; ++q) {
              const Block b = block_of(plan.count, plan.size, q);
              kernels::copy(out + places[static_cast<std::size_t>(q)] * es,
                            scratch->data() + b.offset * es, b.count * es);
            }
          }};
}

Started bcast_start(bool persistent, void* buffer, int root, const Plan& p, Communicator& c) {
  const auto algo = algorithm(c, Collective::broadcast);
  return {persistent ? broadcast_init(buffer, p.count, p.type, root, c, algo)
                     : ibroadcast(buffer, p.count, p.type, root, c, algo),
          {}};
}

Decision same_send_side(Decision p, const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                        int recvcount, MPI_Datatype recvtype) {
  if (!p || sendbuf == MPI_IN_PLACE || (sendtype == recvtype && sendcount == recvcount)) return p;
  return Decision::forward(kSendSideDiffers);
}

Started alltoall_start(bool persistent, const void* sendbuf, void* recvbuf, const Plan& p,
                       Communicator& c) {
  const auto algo = algorithm(c, Collective::alltoall);
  return {persistent ? alltoall_init(sendbuf, p.count, recvbuf, p.count, p.type, c, algo)
                     : ialltoall(sendbuf, p.count, recvbuf, p.count, p.type, c, algo),
          {}};
}

VarLayout var_layout(const int sendcounts[], const int sdispls[], const int recvcounts[],
                     const int rdispls[], int size) {
  VarLayout v;
  const auto take = [&](const int* counts, const int* displs, const char* what,
                        std::vector<std::uint64_t>& c, std::vector<std::uint64_t>& d,
                        std::uint64_t& length) {
    for (int r = 0; r < size; ++r) {
      if (counts[r] < 0 || displs[r] < 0)
        throw InvalidArgument(
            fmt::format("MPI_Alltoallv: the {} count or displacement for rank "
                        "{} is negative ({}, {})",
                        what, r, counts[r], displs[r]));
      c.push_back(static_cast<std::uint64_t>(counts[r]));
      d.push_back(static_cast<std::uint64_t>(displs[r]));
      length = std::max(length, d.back() + c.back());
    }
  };
  take(sendcounts, sdispls, "send", v.send_counts, v.send_offsets, v.in_count);
  take(recvcounts, rdispls, "receive", v.recv_counts, v.recv_offsets, v.out_count);
  return v;
}

// alltoallv's only schedule is direct: a default algorithm that cannot run it (a torus one) is
// left for `auto`, as for every served collective a default does not implement.
Started alltoallv_start(const void* sendbuf, const int sendcounts[], const int sdispls[],
                        void* recvbuf, const int recvcounts[], const int rdispls[], const Plan& p,
                        Communicator& c) {
  const VarLayout v = var_layout(sendcounts, sdispls, recvcounts, rdispls, p.size);
  const Algorithm d = c.default_algorithm();
  const std::optional<Algorithm> algo = d == Algorithm::direct || d == Algorithm::mpi
                                            ? std::nullopt
                                            : std::optional(Algorithm::automatic);
  return {ialltoallv(sendbuf, v.in_count, {v.send_counts, v.send_offsets}, recvbuf, v.out_count,
                     {v.recv_counts, v.recv_offsets}, p.type, c, algo),
          {}};
}

Decision alltoall_sides(Decision p, const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                        int recvcount, MPI_Datatype recvtype) {
  if (!p) return p;
  if (sendbuf == MPI_IN_PLACE) return Decision::forward("an all-to-all in place");
  if (sendtype != recvtype || sendcount != recvcount) return Decision::forward(kSendSideDiffers);
  return p;
}

}  // namespace toroid::pmpi
