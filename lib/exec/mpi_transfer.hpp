// One schedule step carried by MPI point-to-point, advanced without blocking.
//
//   segment = slice of the step's bytes of at most segment_bytes (whole elements); each MPI
//             message is one segment (< 2 GiB), so no MPI count overflows
//   send    = posts each segment once the bytes it reads are final (`limit`)
//   recv    = posts every segment straight into place at start; `ready` is the prefix that
//             has arrived, which steps that follow it read on from
//   gathered = a send's source or a recv's destination in runs (step.hpp): each segment's runs
//             are one derived datatype, so MPI reads or writes them where they lie
//   recv_reduce = `depth` segments in flight into staging slots; an arrived segment is reduced
//             into place as soon as it is the next one and its local operand is final, and its
//             slot is re-posted for segment k + depth, so the reduction of segment k overlaps
//             the transfer of the following ones
//
// Segments of one (peer, tag) stream match in posting order (MPI's non-overtaking rule), so
// the k-th receive posted always carries segment k.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "exec/request_table.hpp"
#include "kernels/reduce.hpp"
#include "schedule/buffers.hpp"
#include "schedule/step.hpp"

namespace toroid::exec {

class MpiTransfer final : public RequestOwner {
 public:
  // staging: depth * segment bytes for a recv_reduce (unused otherwise). exact: one message
  // whatever its size, an empty one too, and a receive notes what arrived (Schedule::exact_messages).
  void bind(const schedule::Step& st, const schedule::Operand& src,
            const schedule::Destination& dst, std::size_t bytes, std::size_t segment_bytes,
            std::size_t elem_size, std::byte* staging, std::uint32_t depth, bool exact = false);
  void reset();
  void start(RequestTable& table, MPI_Comm comm);
  // Moves what may move with the first `limit` bytes of the source final; whether anything did.
  bool advance(RequestTable& table, MPI_Comm comm, std::size_t limit, kernels::ReduceFn reduce);
  void completed(std::uint32_t segment) override;
  // An exact receive's message was not the size expected: the bytes that came (received aside,
  // the destination untouched); none: it was the size expected.
  struct Mismatch {
    bool found = false;
    std::size_t arrived = 0;
  };
  const Mismatch& mismatch() const noexcept { return mismatch_; }
  // An exact receive started whose message has not been matched yet: only advance() moves it
  // (by MPI_Improbe), so its engine must not block inside MPI meanwhile.
  bool probing() const noexcept { return probing_; }

  bool issued() const noexcept { return posted_ == nseg_; }  // every segment posted
  bool finished() const noexcept;
  std::size_t ready() const noexcept { return ready_; }  // receives: bytes final in place
  std::size_t bytes() const noexcept { return bytes_; }

 private:
  std::size_t seg_len(std::uint32_t k) const noexcept {
    const std::size_t at = static_cast<std::size_t>(k) * seg_bytes_;
    return bytes_ - at < seg_bytes_ ? bytes_ - at : seg_bytes_;
  }
  void post(RequestTable& table, MPI_Comm comm, std::uint32_t k);

  const schedule::Step* step_ = nullptr;
  schedule::Operand src_;
  schedule::Destination dst_;
  std::byte* staging_ = nullptr;
  std::size_t bytes_ = 0, seg_bytes_ = 1, elem_size_ = 1;
  std::uint32_t nseg_ = 0, depth_ = 1;
  bool exact_ = false, probing_ = false;
  Mismatch mismatch_;
  std::vector<std::byte> discard_;  // a mismatched exact message's bytes
  bool receive_exact(RequestTable& table, MPI_Comm comm);
  // Progress.
  std::uint32_t posted_ = 0, sends_done_ = 0, prefix_ = 0;  // prefix_: segments final in place
  std::size_t ready_ = 0;
  std::vector<std::uint8_t> arrived_;  // per segment
};

}  // namespace toroid::exec
