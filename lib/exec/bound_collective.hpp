// One collective bound to its buffers: the schedule's steps as tasks of the engine, each with
// its transport, and the memory the collective needs of its own (scratch, MPI staging), so that
// several collectives can be in flight on one communicator at once. Bound once and started many
// times (a persistent collective), or bound again for the next call.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <vector>

#include "exec/mpi_transfer.hpp"
#include "exec/params.hpp"
#include "exec/shm_transfer.hpp"
#include "exec/single_copy.hpp"
#include "schedule/buffers.hpp"
#include "schedule/step.hpp"

namespace toroid::exec {

class Engine;
struct Channel;

enum class Via : std::uint8_t { local, mpi, shm };

struct Task {
  const schedule::Step* step = nullptr;
  Via via = Via::local;
  std::size_t bytes = 0;
  bool started = false, finished = false;
  Channel* channel = nullptr;  // steps on one (direction, peer, tag) run in order
  Task* next_on_channel = nullptr;
  int relay = -1;  // shared memory: the send that forwards exactly what this receive brings
  // Shared memory: a local copy whose source one send reads whole (an all-gather's own block)
  // rides along that send, segment by segment, while the source is in cache: the send's
  // `carries` is the copy's index, and the copy is `carried` (done when the send is).
  int carries = -1;
  bool carried = false;
  MpiTransfer mpi;
  ShmTransfer shm;
  double trace_start_us = 0;  // when it started, while a timeline is recorded

  // Bytes of the destination that are final (a receive's prefix); all of them once finished.
  std::size_t ready() const noexcept {
    if (finished) return bytes;
    return via == Via::shm ? shm.done : via == Via::mpi ? mpi.ready() : 0;
  }
  // Whether the next step on this task's channel may begin.
  bool issued() const noexcept { return finished || (via == Via::mpi && mpi.issued()); }
};

class BoundCollective {
 public:
  enum class Status : std::uint8_t { idle, active, done, failed };

  // Binds `s` (kept alive while bound) to `user` buffers (input, output; scratch is the
  // op's own) and resolves each step's transport and channel on `engine`.
  void bind(std::shared_ptr<const schedule::Schedule> s, const schedule::BufferSet& user,
            const ExecParams& params, Engine& engine);
  // The bound schedule on other buffers of the same sizes and in-place form (a call repeated
  // on new vectors): only what depends on their addresses is bound again; the steps' transports
  // and channels stay. Only while bound to a schedule and not running.
  void rebind(const schedule::BufferSet& user);
  // Whether bind(s, user, params) would bind the same thing again.
  bool bound_to(const schedule::Schedule& s, std::uint64_t serial, const schedule::BufferSet& user,
                const ExecParams& params) const noexcept;
  void set_serial(std::uint64_t serial) noexcept { serial_ = serial; }
  // Binds a single-copy collective (single_copy.hpp) instead of a schedule: no steps, no
  // channels; the engine runs one communicator's single-copy ops one after the other.
  void bind_single_copy(NodeMemory& memory, const SingleCopyCall& call, const ExecParams& params,
                        bool may_fall_back);
  // A single-copy op that found the ranks' buffers in different allocations and did nothing.
  bool fell_back() const noexcept { return single_copy_ && single_copy_->fell_back(); }
  // Ends a finished single-copy op's hold on its call (an alltoallv's layouts, which the
  // communicator's next blocking alltoallv fills again where nothing else holds them).
  void release_single_copy() noexcept { single_copy_.reset(); }

  Status status() const noexcept { return status_; }

 private:
  friend class Engine;
  void bind_addresses();  // each step's transfer on buf_ (its transport chosen)
  void mark_shared_memory_hints();
  void carry_local_copies();  // at bind: which send carries which local copy

  std::shared_ptr<const schedule::Schedule> schedule_;
  std::uint64_t serial_ = 0;
  schedule::BufferSet user_{}, buf_{};
  ExecParams params_;
  kernels::ReduceFn reduce_ = nullptr;
  kernels::ReduceCopyFn reduce_copy_ = nullptr;
  kernels::CopyFn copy_ = nullptr;  // local copies (kernels/reduce.hpp: not glibc's rep movsb)
  std::vector<Task> tasks_;
  // Set: a single-copy op (no tasks). In place, not on the heap: a small call bound again to
  // the same op (the communicator's blocking single-copy op) allocates nothing.
  std::optional<SingleCopy> single_copy_;
  std::vector<std::byte> scratch_, staging_;
  std::size_t first_open_ = 0, shm_tasks_ = 0, mpi_tasks_ = 0;
  std::size_t segment_ = 0;  // bytes per staged segment, and segments staged per receive:
  std::uint32_t depth_ = 1;  // set by bind, kept by rebind (same type, same params)
  Status status_ = Status::idle;
  std::exception_ptr error_;
  std::uint32_t trace_call_ = UINT32_MAX;  // its call in the timeline being recorded
};

// A copy, scale or reduce step (local: no peer), run at once; copies by `copy`
// (kernels::copy_fn()), reduces by `reduce` (the call's type and op).
void run_local_step(const schedule::Step& st, const schedule::BufferSet& buf, DataType type,
                    kernels::CopyFn copy, kernels::ReduceFn reduce);

}  // namespace toroid::exec
