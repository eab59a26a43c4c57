#include "pmpi/starts.hpp"

#include <cstring>
#include <memory>
#include <vector>

#include "kernels/reduce.hpp"
#include "pmpi/guard.hpp"
#include "toroid/block.hpp"
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
  return {persistent ? allreduce_init(in, p.count, recvbuf, p.count, p.type, p.op, c, algo)
                     : iallreduce(in, p.count, recvbuf, p.count, p.type, p.op, c, algo),
          {}};
}

Started reduce_scatter_start(bool persistent, const void* sendbuf, void* recvbuf, const Plan& p,
                             Communicator& c) {
  const Block own = block_of(p.count, p.size, c.rank());
  const auto algo = algorithm(c, Collective::reduce_scatter);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  const void* in = in_place ? recvbuf : sendbuf;
  const std::uint64_t out_count = in_place ? p.count : own.count;
  Request r = persistent
                  ? reduce_scatter_init(in, p.count, recvbuf, out_count, p.type, p.op, c, algo)
                  : ireduce_scatter(in, p.count, recvbuf, out_count, p.type, p.op, c, algo);
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

}  // namespace toroid::pmpi
