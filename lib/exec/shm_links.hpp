// Shared-memory links between the ranks of a communicator that share a node.
//
// Every directed link (sender -> receiver, lane) is a single-producer single-consumer ring of
// `slots` segments of `slot_bytes`, placed in the receiver's part of one node-wide shared segment
// (shm_segment.hpp, which says why not an MPI window):
//
//   receiver's part:  [ from local rank 0: lane 0 .. lane 7 ][ from local rank 1: ... ] ...
//   one channel:      | head (64 B line) | tail (64 B line) | slot 0 .. slot 7 | slot 8 .. slot 63 |
//                                                             every transfer     large ones only
//
//   head = segments the sender has published, tail = segments the receiver has consumed; both
//   only grow, across collectives, so a ring never needs resetting. Which slot a segment uses
//   depends on its transfer (both ends know the transfer's size): one-segment transfers cycle
//   through slots 0-7 by sequence number, a longer one puts its k-th segment in slot k % depth
//   (depth: its segment count, up to the ring's), so it touches no more slots than it fills. The
//   sender writes a slot once the receiver has consumed whatever went there last (tail past the
//   sequence number it recorded for that slot, acquire) and then publishes head + 1 (release);
//   the receiver reads the slot once head > tail (acquire), reduces or copies it straight into
//   its destination in one pass, and then publishes tail + 1 (release) to hand the slot back.
//
// A lane is a schedule step's tag, so two transfers between one pair in one phase never share
// a ring. Steps and peers this cannot carry (another node, a tag >= kLanes) stay on MPI.
//
// How senders write the slots, with plain stores or non-temporal ones, is fixed by the options,
// or measured on the node's own ranks (slot_fill.hpp) and then kept current by each sender for
// each peer while the job runs (slot_way.hpp).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "exec/shm_segment.hpp"
#include "exec/slot_fill.hpp"
#include "exec/slot_way.hpp"
#include "kernels/reduce.hpp"
#include "mpi_base/nodes.hpp"

namespace toroid::exec {

struct ShmChannel {
  std::uint64_t* head = nullptr;
  std::uint64_t* tail = nullptr;
  std::byte* slots = nullptr;
  std::size_t slot_bytes = 0;
  std::uint32_t deep_slots = 0;      // slots reserved; a large transfer uses up to this many
  std::uint64_t* written = nullptr;  // sender only, in its own memory: per slot, 1 + the last
                                     // sequence number written there (0: never)
  SlotWay* way = nullptr;            // sender only: how it writes slots to this peer now
  kernels::CopyFn stream = nullptr;  // the non-temporal copy, for when it streams
  kernels::CopyFn copy = nullptr;    // the plain copy (kernels::copy_fn: no rep movsb)
};

class ShmLinks {
 public:
  static constexpr int kLanes = 8;
  // One-segment transfers cycle through the first kSlots slots; longer ones use as many slots
  // as they have segments, up to deep_slots_for(..), from slot 0 (ShmTransfer::slot_index), so
  // a sender can run further ahead of a receiver that is not running. The deep slots are
  // reserved address space: only transfers that large ever touch them (first touches of fresh
  // shared pages are slow, so small collectives must not wander through them).
  static constexpr std::uint32_t kSlots = 8;
  static constexpr std::uint32_t kDeepSlots = 64;
  // Slot size: the largest power of two in [16 KiB, 64 KiB] that keeps the first kSlots slots of
  // a rank's channels, counter lines included, within kBudgetBytes (64 KiB up to 3 ranks per
  // node, 32 KiB at 4-7, 16 KiB from 8 on); then as many deep slots (kSlots..kDeepSlots) as keep
  // its whole part within kReserveBytes (rings 4 MiB deep up to 3 ranks, 2 MiB at 4-7, 1 MiB at
  // 8, shallower from 16 ranks on). Larger and deeper rings measured faster at 4 oversubscribed
  // ranks (a producer waits less often for a descheduled consumer).
  static constexpr std::size_t kBudgetBytes = std::size_t{16} << 20;
  static constexpr std::size_t kReserveBytes = std::size_t{128} << 20;
  static std::size_t slot_bytes_for(int local_ranks);
  static std::uint32_t deep_slots_for(int local_ranks, std::size_t slot_bytes);
  // Of `slots`, the most (halving, down to kSlots) whose whole segment takes at most half of
  // free_bytes; 0 when not even kSlots fit (then the links stay on MPI).
  static std::uint32_t slots_that_fit(int local_ranks, std::size_t slot_bytes, std::uint32_t slots,
                                      std::uint64_t free_bytes);
  // Collective over `comm`, whose node split is `nodes`. Ranks alone on their node get no
  // segment and reach no one. `fill`: how senders write slots; none: measured (slot_fill.hpp).
  ShmLinks(MPI_Comm comm, std::shared_ptr<const mpi_base::NodeSplit> nodes,
           std::optional<SlotFill> fill = std::nullopt);
  // Local: waits for no other rank, so communicators can be freed in any order across ranks.
  ~ShmLinks();
  ShmLinks(const ShmLinks&) = delete;
  ShmLinks& operator=(const ShmLinks&) = delete;

  // Whether a step to or from `peer` on `lane` goes over shared memory.
  bool carries(int peer, int lane) const {
    return lane >= 0 && lane < kLanes && peer >= 0 &&
           static_cast<std::size_t>(peer) < local_index_.size() &&
           local_index_[static_cast<std::size_t>(peer)] >= 0 && peer != rank_;
  }
  ShmChannel outgoing(int peer, int lane) const;  // this rank sends to peer
  ShmChannel incoming(int peer, int lane) const;  // this rank receives from peer
  int local_ranks() const noexcept { return static_cast<int>(bases_.size()); }
  // Ranks of this communicator on this rank's node, linked or not (no room in /dev/shm).
  int node_ranks() const noexcept { return node_ranks_; }
  std::size_t slot_bytes() const noexcept { return slot_bytes_; }
  std::size_t bytes_per_rank() const noexcept;
  // How this node's senders started writing slots, and the measurement that chose it (when one
  // did); under auto each sender then keeps its way to each peer current (ShmChannel::way).
  SlotFill slot_fill() const noexcept { return fill_; }
  const SlotFillProbe& slot_fill_probe() const noexcept { return probe_; }

 private:
  ShmChannel channel(int receiver_local, int sender_local, int lane) const;
  // No channels: every peer is reached over MPI (alone on the node, or no room for the segment).
  void reach_no_one();

  std::shared_ptr<const mpi_base::NodeSplit> nodes_;
  std::unique_ptr<SharedSegment> segment_;
  int rank_ = 0;
  int my_local_ = -1;
  int local_count_ = 0;
  int node_ranks_ = 0;
  std::size_t slot_bytes_ = 0;
  std::uint32_t slots_ = kSlots;
  SlotFill fill_ = SlotFill::cached;
  SlotFillProbe probe_;
  std::vector<int> local_index_;   // communicator rank -> node-local index, -1 elsewhere
  std::vector<std::byte*> bases_;  // node-local index -> that rank's part of the segment
  // Per outgoing channel (receiver's local index, lane), the sender's record of what it wrote
  // into each slot (ShmChannel::written).
  mutable std::vector<std::uint64_t> written_;
  // Per receiver's local index: how this rank writes its slots to it now.
  mutable std::vector<SlotWay> ways_;
};

}  // namespace toroid::exec
