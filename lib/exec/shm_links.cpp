#include "exec/shm_links.hpp"

#include <sys/statvfs.h>

#include <algorithm>

#include "toroid/mpi_helpers.hpp"

namespace toroid::exec {
namespace {

constexpr std::size_t kLine = 64;  // head and tail on lines of their own: no false sharing

std::size_t channel_bytes(std::size_t slot_bytes, std::uint32_t slots) {
  return 2 * kLine + slot_bytes * slots;
}

}  // namespace

std::size_t ShmLinks::slot_bytes_for(int local_ranks) {
  std::size_t slot = std::size_t{64} << 10;
  while (slot > (std::size_t{16} << 10) &&
         static_cast<std::size_t>(local_ranks) * kLanes * channel_bytes(slot, kSlots) >
             kBudgetBytes)
    slot /= 2;
  return slot;
}

std::uint32_t ShmLinks::deep_slots_for(int local_ranks, std::size_t slot_bytes) {
  std::uint32_t slots = kDeepSlots;
  while (slots > kSlots &&
         static_cast<std::size_t>(local_ranks) * kLanes * channel_bytes(slot_bytes, slots) >
             kReserveBytes)
    slots /= 2;
  return slots;
}

// How many slots per channel fit in the node's shared-memory file system (/dev/shm). The segment
// is a sparse file, so running out shows only later, as SIGBUS on a first touch; the node's
// first rank therefore looks first and every rank on the node takes its answer: the deep slots
// halve until the segment takes at most half of what is free (other segments and jobs share
// it); 0 when not even kSlots fit, and the links stay on MPI.
std::uint32_t ShmLinks::slots_that_fit(int local_ranks, std::size_t slot_bytes, std::uint32_t slots,
                                       std::uint64_t free_bytes) {
  const auto ranks = static_cast<std::uint64_t>(local_ranks);
  for (;; slots /= 2) {
    if (ranks * ranks * kLanes * channel_bytes(slot_bytes, slots) <= free_bytes / 2)
      return slots;  // every part
    if (slots <= kSlots) return 0;
  }
}

ShmLinks::ShmLinks(MPI_Comm comm, std::shared_ptr<const mpi_base::NodeSplit> nodes,
                   std::optional<SlotFill> fill)
    : nodes_(std::move(nodes)) {
  mpi_check(MPI_Comm_rank(comm, &rank_), "MPI_Comm_rank");
  my_local_ = nodes_->local();
  const int local = nodes_->size();
  local_count_ = local;
  node_ranks_ = local;
  slot_bytes_ = slot_bytes_for(local);
  slots_ = deep_slots_for(local, slot_bytes_);
  // Which communicator ranks share this node, and their index on it.
  local_index_ = nodes_->local_of_rank();
  if (local < 2) {  // nobody to share with
    reach_no_one();
    return;
  }

  std::uint32_t fit = slots_;
  if (my_local_ == 0) {
    struct statvfs fs {};
    if (statvfs(SharedSegment::kDir, &fs) == 0)
      fit = slots_that_fit(local, slot_bytes_, slots_,
                           static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize);
  }
  mpi_check(MPI_Bcast(&fit, 1, MPI_UINT32_T, 0, nodes_->comm()), "MPI_Bcast");
  if (fit == 0) {  // no room for channels on this node: its links stay on MPI
    reach_no_one();
    return;
  }
  slots_ = fit;

  // Each rank's part holds the channels it receives on; parts start on pages of their own.
  const std::size_t part_stride = page_rounded(bytes_per_rank());
  segment_ = std::make_unique<SharedSegment>(nodes_->comm(),
                                             part_stride * static_cast<std::size_t>(local));
  bases_.resize(static_cast<std::size_t>(local));
  for (int i = 0; i < local; ++i)
    bases_[static_cast<std::size_t>(i)] = segment_->data() + part_stride * i;
  // Counters start at zero because the file does (ftruncate fills it with zeros), so no rank
  // writes them here and nobody need wait for anybody before the first transfer; the slots need
  // no initial contents.
  written_.assign(static_cast<std::size_t>(local) * kLanes * slots_, 0);
  // The measurement writes and reads lane 0's slots of the channels into local rank 0, which
  // hold nothing yet (their counters are not touched).
  if (fill) {
    fill_ = *fill;
  } else {
    probe_ = measure_slot_fill(nodes_->comm(), my_local_, local,
                               [&](int sender) { return channel(0, sender, 0).slots; });
    fill_ = slot_fill_of(probe_);
  }
  ways_.assign(static_cast<std::size_t>(local), SlotWay(fill_, !fill));
}

void ShmLinks::reach_no_one() {
  std::fill(local_index_.begin(), local_index_.end(), -1);
  local_count_ = 0;
}

// Local, like everything in a communicator's teardown: the segment unmaps (peers keep their
// views); the node's communicator goes with the last holder of the split.
ShmLinks::~ShmLinks() = default;

std::size_t ShmLinks::bytes_per_rank() const noexcept {
  return static_cast<std::size_t>(local_count_) * kLanes * channel_bytes(slot_bytes_, slots_);
}

ShmChannel ShmLinks::channel(int receiver_local, int sender_local, int lane) const {
  std::byte* ch =
      bases_[static_cast<std::size_t>(receiver_local)] +
      (static_cast<std::size_t>(sender_local) * kLanes + static_cast<std::size_t>(lane)) *
          channel_bytes(slot_bytes_, slots_);
  return {reinterpret_cast<std::uint64_t*>(ch),
          reinterpret_cast<std::uint64_t*>(ch + kLine),
          ch + 2 * kLine,
          slot_bytes_,
          slots_,
          nullptr,
          nullptr,
          kernels::copy_stream_fn(),
          kernels::copy_fn()};
}

ShmChannel ShmLinks::outgoing(int peer, int lane) const {
  const int receiver = local_index_[static_cast<std::size_t>(peer)];
  ShmChannel c = channel(receiver, my_local_, lane);
  c.written =
      written_.data() +
      (static_cast<std::size_t>(receiver) * kLanes + static_cast<std::size_t>(lane)) * slots_;
  c.way = &ways_[static_cast<std::size_t>(receiver)];
  return c;
}

ShmChannel ShmLinks::incoming(int peer, int lane) const {
  return channel(my_local_, local_index_[static_cast<std::size_t>(peer)], lane);
}

}  // namespace toroid::exec
