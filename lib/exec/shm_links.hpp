// Shared-memory links between the ranks of a communicator that share a node.
//
// Every directed link (sender -> receiver, lane) is a single-producer single-consumer ring of
// `slots` segments of `slot_bytes`, placed in the receiver's part of one MPI-3 shared window:
//
//   receiver's part:  [ from local rank 0: lane 0 .. lane 7 ][ from local rank 1: ... ] ...
//   one channel:      | head (64 B line) | tail (64 B line) | slot 0 | slot 1 | ... | slot 7 |
//
//   head = segments the sender has published, tail = segments the receiver has consumed; both
//   only grow, across collectives, so a ring never needs resetting. The sender writes slot
//   head % slots when head - tail < slots and then publishes head + 1 (release); the receiver
//   reads slot tail % slots once head > tail (acquire), reduces or copies it straight into its
//   destination in one pass, and then publishes tail + 1 (release) to hand the slot back.
//
// A lane is a schedule step's tag, so two transfers between one pair in one phase never share
// a ring. Steps and peers this cannot carry (another node, a tag >= kLanes) stay on MPI.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace toroid::exec {

struct ShmChannel {
  std::uint64_t* head = nullptr;
  std::uint64_t* tail = nullptr;
  std::byte* slots = nullptr;
  std::size_t slot_bytes = 0;
  std::uint32_t slot_count = 0;
};

class ShmLinks {
 public:
  static constexpr int kLanes = 8;
  static constexpr std::uint32_t kSlots = 8;
  // Slot size: the largest power of two in [16 KiB, 64 KiB] that keeps a rank's part of the
  // window within kBudgetBytes (64 KiB at up to 4 ranks per node, 16 KiB from 16 ranks on).
  // Larger rings measured faster at 4 oversubscribed ranks (fewer waits for a descheduled peer).
  static constexpr std::size_t kBudgetBytes = std::size_t{16} << 20;
  static std::size_t slot_bytes_for(int local_ranks);

  // Collective over `comm`. Ranks alone on their node get no window and reach no one.
  explicit ShmLinks(MPI_Comm comm);
  ~ShmLinks();
  ShmLinks(const ShmLinks&) = delete;
  ShmLinks& operator=(const ShmLinks&) = delete;

  // Whether a step to or from `peer` on `lane` goes over shared memory.
  bool carries(int peer, int lane) const {
    return lane >= 0 && lane < kLanes && peer >= 0 && static_cast<std::size_t>(peer) < local_index_.size() &&
           local_index_[static_cast<std::size_t>(peer)] >= 0 && peer != rank_;
  }
  ShmChannel outgoing(int peer, int lane) const;  // this rank sends to peer
  ShmChannel incoming(int peer, int lane) const;  // this rank receives from peer
  int local_ranks() const noexcept { return static_cast<int>(bases_.size()); }
  std::size_t slot_bytes() const noexcept { return slot_bytes_; }
  std::size_t bytes_per_rank() const noexcept;

 private:
  ShmChannel channel(int receiver_local, int sender_local, int lane) const;

  MPI_Comm node_ = MPI_COMM_NULL;
  MPI_Win win_ = MPI_WIN_NULL;
  int rank_ = 0;
  int my_local_ = -1;
  int local_count_ = 0;
  std::size_t slot_bytes_ = 0;
  std::uint32_t slots_ = kSlots;
  std::vector<int> local_index_;   // communicator rank -> node-local index, -1 elsewhere
  std::vector<std::byte*> bases_;  // node-local index -> that rank's part of the window
};

}  // namespace toroid::exec
