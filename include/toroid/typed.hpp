// The typed forms of every collective: std::span arguments, the element type from T.
//
// Generated from one table (below) so that every collective has every form: the blocking call,
// the non-blocking one (i...) and the persistent one (..._init), each with separate input and
// output spans and in place (one span). The type-erased functions they call, and what each
// argument means, are in collectives.hpp and request.hpp.
#pragma once

#include <optional>
#include <span>

#include "toroid/block.hpp"
#include "toroid/collectives.hpp"
#include "toroid/export.hpp"
#include "toroid/request.hpp"

TOROID_API_BEGIN
namespace toroid {

// Reducing collectives: (in, out) and in place.
#define TOROID_TYPED_REDUCING(R, name)                                                         \
  template <class T>                                                                           \
  R name(std::span<const T> in, std::span<T> out, ReduceOp op, Communicator& comm,             \
         std::optional<Algorithm> algo = std::nullopt) {                                       \
    return name(in.data(), in.size(), out.data(), out.size(), data_type_v<T>, op, comm, algo); \
  }                                                                                            \
  template <class T>                                                                           \
  R name(std::span<T> data, ReduceOp op, Communicator& comm,                                   \
         std::optional<Algorithm> algo = std::nullopt) {                                       \
    return name(data.data(), data.size(), data.data(), data.size(), data_type_v<T>, op, comm,  \
                algo);                                                                         \
  }
// The same along axes of the torus (Axes: one axis, a plane, ...).
#define TOROID_TYPED_REDUCING_AXIS(R, name)                                                   \
  template <class T>                                                                          \
  R name(std::span<const T> in, std::span<T> out, ReduceOp op, Axes axes, Communicator& comm, \
         std::optional<Algorithm> algo = std::nullopt) {                                      \
    return name(in.data(), in.size(), out.data(), out.size(), data_type_v<T>, op, axes, comm, \
                algo);                                                                        \
  }                                                                                           \
  template <class T>                                                                          \
  R name(std::span<T> data, ReduceOp op, Axes axes, Communicator& comm,                       \
         std::optional<Algorithm> algo = std::nullopt) {                                      \
    return name(data.data(), data.size(), data.data(), data.size(), data_type_v<T>, op, axes, \
                comm, algo);                                                                  \
  }
// All-gathers: (own block, whole vector) and in place, where the own block already sits at its
// offset in the whole vector (block_of over the ranks, or over the sub-torus by Torus::position_along).
#define TOROID_TYPED_GATHER(R, name)                                                            \
  template <class T>                                                                            \
  R name(std::span<const T> in, std::span<T> out, Communicator& comm,                           \
         std::optional<Algorithm> algo = std::nullopt) {                                        \
    return name(in.data(), in.size(), out.data(), out.size(), data_type_v<T>, comm, algo);      \
  }                                                                                             \
  template <class T>                                                                            \
  R name(std::span<T> data, Communicator& comm, std::optional<Algorithm> algo = std::nullopt) { \
    const Block own = block_of(data.size(), comm.size(), comm.rank());                          \
    return name(data.data() + own.offset, own.count, data.data(), data.size(), data_type_v<T>,  \
                comm, algo);                                                                    \
  }
#define TOROID_TYPED_GATHER_AXIS(R, name)                                                        \
  template <class T>                                                                             \
  R name(std::span<const T> in, std::span<T> out, Axes axes, Communicator& comm,                 \
         std::optional<Algorithm> algo = std::nullopt) {                                         \
    return name(in.data(), in.size(), out.data(), out.size(), data_type_v<T>, axes, comm, algo); \
  }                                                                                              \
  template <class T>                                                                             \
  R name(std::span<T> data, Axes axes, Communicator& comm,                                       \
         std::optional<Algorithm> algo = std::nullopt) {                                         \
    const Block own = block_of(data.size(), comm.shape().along(axes).chips(),                    \
                               comm.shape().position_along(comm.rank(), axes));                  \
    return name(data.data() + own.offset, own.count, data.data(), data.size(), data_type_v<T>,   \
                axes, comm, algo);                                                               \
  }
// Broadcast: one span, the root's data in, every rank's out.
#define TOROID_TYPED_BROADCAST(R, name)                                      \
  template <class T>                                                         \
  R name(std::span<T> data, int root, Communicator& comm,                    \
         std::optional<Algorithm> algo = std::nullopt) {                     \
    return name(data.data(), data.size(), data_type_v<T>, root, comm, algo); \
  }

// All-to-all: (p blocks out, p blocks in), not in place.
#define TOROID_TYPED_EXCHANGE(R, name)                                                     \
  template <class T>                                                                       \
  R name(std::span<const T> in, std::span<T> out, Communicator& comm,                      \
         std::optional<Algorithm> algo = std::nullopt) {                                   \
    return name(in.data(), in.size(), out.data(), out.size(), data_type_v<T>, comm, algo); \
  }

#define TOROID_TYPED_EXCHANGE_V(R, name)                                                        \
  template <class T>                                                                            \
  R name(std::span<const T> in, BlockLayout send, std::span<T> out, BlockLayout recv,           \
         Communicator& comm, std::optional<Algorithm> algo = std::nullopt) {                    \
    return name(in.data(), in.size(), send, out.data(), out.size(), recv, data_type_v<T>, comm, \
                algo);                                                                          \
  }

// The table: every collective, blocking, non-blocking and persistent.
TOROID_TYPED_REDUCING(void, allreduce)
TOROID_TYPED_REDUCING(Request, iallreduce)
TOROID_TYPED_REDUCING(Request, allreduce_init)
TOROID_TYPED_REDUCING(void, reduce_scatter)
TOROID_TYPED_REDUCING(Request, ireduce_scatter)
TOROID_TYPED_REDUCING(Request, reduce_scatter_init)
TOROID_TYPED_GATHER(void, allgather)
TOROID_TYPED_GATHER(Request, iallgather)
TOROID_TYPED_GATHER(Request, allgather_init)
TOROID_TYPED_BROADCAST(void, broadcast)
TOROID_TYPED_BROADCAST(Request, ibroadcast)
TOROID_TYPED_BROADCAST(Request, broadcast_init)
TOROID_TYPED_REDUCING_AXIS(void, allreduce_axis)
TOROID_TYPED_REDUCING_AXIS(Request, iallreduce_axis)
TOROID_TYPED_REDUCING_AXIS(void, reduce_scatter_axis)
TOROID_TYPED_REDUCING_AXIS(Request, ireduce_scatter_axis)
TOROID_TYPED_GATHER_AXIS(void, allgather_axis)
TOROID_TYPED_GATHER_AXIS(Request, iallgather_axis)
TOROID_TYPED_GATHER_AXIS(void, alltoall_axis)
TOROID_TYPED_GATHER_AXIS(Request, ialltoall_axis)
TOROID_TYPED_EXCHANGE(void, alltoall)
TOROID_TYPED_EXCHANGE(Request, ialltoall)
TOROID_TYPED_EXCHANGE(Request, alltoall_init)
TOROID_TYPED_EXCHANGE_V(void, alltoallv)
TOROID_TYPED_EXCHANGE_V(Request, ialltoallv)
TOROID_TYPED_EXCHANGE_V(Request, alltoallv_init)

#undef TOROID_TYPED_REDUCING
#undef TOROID_TYPED_REDUCING_AXIS
#undef TOROID_TYPED_GATHER
#undef TOROID_TYPED_GATHER_AXIS
#undef TOROID_TYPED_BROADCAST
#undef TOROID_TYPED_EXCHANGE
#undef TOROID_TYPED_EXCHANGE_V

}  // namespace toroid
TOROID_API_END
