// Non-blocking and persistent collectives: a Request stands for one collective in flight.
//
//   toroid::Request r = toroid::iallreduce(std::span<float>(grads), toroid::ReduceOp::sum, comm);
//   ...compute...                      // the collective moves inside test()/wait(), inside any
//   r.wait();                          // other collective on `comm`, or on the progress thread
//
//   toroid::Request p = toroid::allreduce_init(std::span<float>(grads), toroid::ReduceOp::sum, comm);
//   for (step...) { p.start(); ...; p.wait(); }   // schedule and buffers bound once
//
// Rules (docs/executor.md):
// - Every rank starts the collectives of one communicator in the same order (TOROID_CHECK
//   compares each start across ranks). They may complete, and be waited for, in any order.
// - The buffers belong to the collective until it completes: not to be read, written or freed.
// - wait() or test() on a request that is not active (completed, never started, empty) is an
//   InvalidArgument; start() on an active or non-persistent one too. wait_all and wait_any skip
//   inactive requests, as MPI does.
// - A Request destroyed while its collective runs does not stop it: the collective completes
//   during later progress on its communicator (its buffers must stay valid until then), and the
//   Communicator's destructor completes whatever is still in flight. No memory is freed under it.
// - Errors raised while the collective progresses (an MPI error, a peer that failed) are thrown
//   by this request's test() or wait(), and by those of every collective in flight with it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "toroid/algorithm.hpp"
#include "toroid/block.hpp"
#include "toroid/communicator.hpp"
#include "toroid/export.hpp"
#include "toroid/topology.hpp"
#include "toroid/torus.hpp"
#include "toroid/types.hpp"

TOROID_API_BEGIN
namespace toroid {
namespace internal {
struct Access;
}  // namespace internal

class Request {
 public:
  Request() noexcept;
  Request(Request&&) noexcept;
  Request& operator=(Request&&) noexcept;
  ~Request();

  // One round of progress on the communicator; true once the collective is complete (the
  // request is then inactive). Throws what the collective raised.
  bool test();
  // Progress until complete; throws what the collective raised.
  void wait();
  // Persistent requests only, when inactive: run the bound collective again.
  void start();
  bool active() const noexcept;
  bool persistent() const noexcept;
  // Whether the collective has completed, without moving it (with the progress thread it turns
  // true by itself); the request stays active until test() or wait() sees the completion.
  bool is_complete() const;

  struct TOROID_HIDDEN State;  // the library's own (lib/api/request_state.hpp)

 private:
  friend struct internal::Access;  // lib/api/internal.hpp: only the library makes requests
  TOROID_HIDDEN explicit Request(std::shared_ptr<State> state) noexcept;
  std::shared_ptr<State> state_;
};

// Waits for every active request; rethrows the first error after all have ended.
void wait_all(std::span<Request> requests);
// Waits until one active request completes and returns its index; requests.size() when none is
// active.
std::size_t wait_any(std::span<Request> requests);

// ---- Non-blocking: start now, complete later. Arguments as the blocking calls (collectives.hpp).
Request iallreduce(const void* in, std::uint64_t in_count, void* out, std::uint64_t out_count,
                   DataType type, ReduceOp op, Communicator& comm,
                   std::optional<Algorithm> algo = std::nullopt);
Request ireduce_scatter(const void* in, std::uint64_t in_count, void* out, std::uint64_t out_count,
                        DataType type, ReduceOp op, Communicator& comm,
                        std::optional<Algorithm> algo = std::nullopt);
Request iallgather(const void* in, std::uint64_t in_count, void* out, std::uint64_t out_count,
                   DataType type, Communicator& comm, std::optional<Algorithm> algo = std::nullopt);
Request ialltoall(const void* in, std::uint64_t in_count, void* out, std::uint64_t out_count,
                  DataType type, Communicator& comm, std::optional<Algorithm> algo = std::nullopt);
Request ialltoallv(const void* in, std::uint64_t in_count, BlockLayout send, void* out,
                   std::uint64_t out_count, BlockLayout recv, DataType type, Communicator& comm,
                   std::optional<Algorithm> algo = std::nullopt);
Request iallreduce_axis(const void* in, std::uint64_t in_count, void* out, std::uint64_t out_count,
                        DataType type, ReduceOp op, Axes axes, Communicator& comm,
                        std::optional<Algorithm> algo = std::nullopt);
Request ireduce_scatter_axis(const void* in, std::uint64_t in_count, void* out,
                             std::uint64_t out_count, DataType type, ReduceOp op, Axes axes,
                             Communicator& comm, std::optional<Algorithm> algo = std::nullopt);
Request iallgather_axis(const void* in, std::uint64_t in_count, void* out, std::uint64_t out_count,
                        DataType type, Axes axes, Communicator& comm,
                        std::optional<Algorithm> algo = std::nullopt);
Request ialltoall_axis(const void* in, std::uint64_t in_count, void* out, std::uint64_t out_count,
                       DataType type, Axes axes, Communicator& comm,
                       std::optional<Algorithm> algo = std::nullopt);

Request ibroadcast(void* data, std::uint64_t count, DataType type, int root, Communicator& comm,
                   std::optional<Algorithm> algo = std::nullopt);

// ---- Persistent: validated, scheduled and bound once; start()/wait() every step.
Request allreduce_init(const void* in, std::uint64_t in_count, void* out, std::uint64_t out_count,
                       DataType type, ReduceOp op, Communicator& comm,
                       std::optional<Algorithm> algo = std::nullopt);
Request reduce_scatter_init(const void* in, std::uint64_t in_count, void* out,
                            std::uint64_t out_count, DataType type, ReduceOp op, Communicator& comm,
                            std::optional<Algorithm> algo = std::nullopt);
Request allgather_init(const void* in, std::uint64_t in_count, void* out, std::uint64_t out_count,
                       DataType type, Communicator& comm,
                       std::optional<Algorithm> algo = std::nullopt);
Request alltoall_init(const void* in, std::uint64_t in_count, void* out, std::uint64_t out_count,
                      DataType type, Communicator& comm,
                      std::optional<Algorithm> algo = std::nullopt);
// The counts fixed for the request's life (copied at the call).
Request alltoallv_init(const void* in, std::uint64_t in_count, BlockLayout send, void* out,
                       std::uint64_t out_count, BlockLayout recv, DataType type, Communicator& comm,
                       std::optional<Algorithm> algo = std::nullopt);

Request broadcast_init(void* data, std::uint64_t count, DataType type, int root, Communicator& comm,
                       std::optional<Algorithm> algo = std::nullopt);

// The typed (std::span) forms of every call: typed.hpp, included below.

}  // namespace toroid
TOROID_API_END

// Last, so that each header alone gives every form (typed.hpp includes both).
#include "toroid/collectives.hpp"
#include "toroid/typed.hpp"
