#include "exec/shm_links.hpp"

#include <sys/statvfs.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "exec/mpi_check.hpp"

namespace toroid::exec {
namespace {

constexpr std::size_t kLine = 64;  // head and tail on lines of their own: no false sharing

std::size_t channel_bytes(std::size_t slot_bytes, std::uint32_t slots) { return 2 * kLine + slot_bytes * slots; }

}  // namespace

std::size_t ShmLinks::slot_bytes_for(int local_ranks) {
  std::size_t slot = std::size_t{64} << 10;
  while (slot > (std::size_t{16} << 10) &&
         static_cast<std::size_t>(local_ranks) * kLanes * channel_bytes(slot, kSlots) > kBudgetBytes)
    slot /= 2;
  return slot;
}

std::uint32_t ShmLinks::deep_slots_for(int local_ranks, std::size_t slot_bytes) {
  std::uint32_t slots = kDeepSlots;
  while (slots > kSlots &&
         static_cast<std::size_t>(local_ranks) * kLanes * channel_bytes(slot_bytes, slots) > kReserveBytes)
    slots /= 2;
  return slots;
}

// How many slots per channel fit in the node's shared-memory file system, where the window is a
// file (Open MPI: /dev/shm). A window that does not fit does not fail cleanly inside MPI (ranks
// are left waiting), so the node's first rank looks first and every rank on the node takes its
// answer: the deep slots halve until the window takes at most half of what is free (other
// windows and jobs share it); 0 when not even kSlots fit, and the links stay on MPI.
std::uint32_t ShmLinks::slots_that_fit(int local_ranks, std::size_t slot_bytes, std::uint32_t slots,
                                       std::uint64_t free_bytes) {
  const auto ranks = static_cast<std::uint64_t>(local_ranks);
  for (;; slots /= 2) {
    if (ranks * ranks * kLanes * channel_bytes(slot_bytes, slots) <= free_bytes / 2) return slots;  // every part
    if (slots <= kSlots) return 0;
  }
}

ShmLinks::ShmLinks(MPI_Comm comm) {
  int size = 0;
  mpi_check(MPI_Comm_rank(comm, &rank_), "MPI_Comm_rank");
  mpi_check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  mpi_check(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node_), "MPI_Comm_split_type");
  int local = 0;
  mpi_check(MPI_Comm_size(node_, &local), "MPI_Comm_size");
  local_count_ = local;
  slot_bytes_ = slot_bytes_for(local);
  slots_ = deep_slots_for(local, slot_bytes_);
  mpi_check(MPI_Comm_rank(node_, &my_local_), "MPI_Comm_rank");

  // Which communicator ranks share this node, and their index on it.
  local_index_.assign(static_cast<std::size_t>(size), -1);
  {
    MPI_Group world_group, node_group;
    mpi_check(MPI_Comm_group(comm, &world_group), "MPI_Comm_group");
    mpi_check(MPI_Comm_group(node_, &node_group), "MPI_Comm_group");
    std::vector<int> node_ranks(static_cast<std::size_t>(local)), comm_ranks(static_cast<std::size_t>(local));
    for (int i = 0; i < local; ++i) node_ranks[static_cast<std::size_t>(i)] = i;
    mpi_check(MPI_Group_translate_ranks(node_group, local, node_ranks.data(), world_group, comm_ranks.data()),
              "MPI_Group_translate_ranks");
    for (int i = 0; i < local; ++i) local_index_[static_cast<std::size_t>(comm_ranks[static_cast<std::size_t>(i)])] = i;
    MPI_Group_free(&world_group);
    MPI_Group_free(&node_group);
  }
  if (local < 2) {  // nobody to share with
    reach_no_one();
    return;
  }

  std::uint32_t fit = slots_;
  if (my_local_ == 0) {
    // Open MPI's osc/sm places the file in osc_sm_backing_directory (default /dev/shm on Linux).
    const char* dir = std::getenv("OMPI_MCA_osc_sm_backing_directory");
    struct statvfs fs {};
    if (statvfs(dir && *dir ? dir : kShmDir, &fs) == 0)
      fit = slots_that_fit(local, slot_bytes_, slots_, static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize);
  }
  mpi_check(MPI_Bcast(&fit, 1, MPI_UINT32_T, 0, node_), "MPI_Bcast");
  if (fit == 0) {  // no room for channels on this node: its links stay on MPI
    reach_no_one();
    return;
  }
  slots_ = fit;

  // Each rank's part holds the channels it receives on; "noncontig" lets each part be placed
  // near its owner, which reads it.
  const MPI_Aint part = static_cast<MPI_Aint>(bytes_per_rank());
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "alloc_shared_noncontig", "true");
  std::byte* mine = nullptr;
  const int rc = MPI_Win_allocate_shared(part, 1, info, node_, &mine, &win_);
  MPI_Info_free(&info);
  mpi_check(rc, "MPI_Win_allocate_shared");
  // Counters start at zero; the slots need no initial contents.
  for (int s = 0; s < local; ++s)
    for (int lane = 0; lane < kLanes; ++lane) {
      std::byte* ch = mine + (static_cast<std::size_t>(s) * kLanes + static_cast<std::size_t>(lane)) *
                                 channel_bytes(slot_bytes_, slots_);
      std::memset(ch, 0, 2 * kLine);
    }
  written_.assign(static_cast<std::size_t>(local) * kLanes * slots_, 0);
  bases_.resize(static_cast<std::size_t>(local));
  for (int i = 0; i < local; ++i) {
    MPI_Aint bytes = 0;
    int disp = 0;
    void* base = nullptr;
    mpi_check(MPI_Win_shared_query(win_, i, &bytes, &disp, &base), "MPI_Win_shared_query");
    bases_[static_cast<std::size_t>(i)] = static_cast<std::byte*>(base);
  }
  // Nobody may use a channel before its receiver has zeroed the counters.
  mpi_check(MPI_Barrier(node_), "MPI_Barrier");
}

void ShmLinks::reach_no_one() {
  std::fill(local_index_.begin(), local_index_.end(), -1);
  local_count_ = 0;
}

ShmLinks::~ShmLinks() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (win_ != MPI_WIN_NULL) MPI_Win_free(&win_);
  if (node_ != MPI_COMM_NULL) MPI_Comm_free(&node_);
}

std::size_t ShmLinks::bytes_per_rank() const noexcept {
  return static_cast<std::size_t>(local_count_) * kLanes * channel_bytes(slot_bytes_, slots_);
}

ShmChannel ShmLinks::channel(int receiver_local, int sender_local, int lane) const {
  std::byte* ch = bases_[static_cast<std::size_t>(receiver_local)] +
                  (static_cast<std::size_t>(sender_local) * kLanes + static_cast<std::size_t>(lane)) *
                      channel_bytes(slot_bytes_, slots_);
  return {reinterpret_cast<std::uint64_t*>(ch), reinterpret_cast<std::uint64_t*>(ch + kLine), ch + 2 * kLine,
          slot_bytes_, slots_, nullptr};
}

ShmChannel ShmLinks::outgoing(int peer, int lane) const {
  const int receiver = local_index_[static_cast<std::size_t>(peer)];
  ShmChannel c = channel(receiver, my_local_, lane);
  c.written = written_.data() + (static_cast<std::size_t>(receiver) * kLanes + static_cast<std::size_t>(lane)) * slots_;
  return c;
}

ShmChannel ShmLinks::incoming(int peer, int lane) const {
  return channel(my_local_, local_index_[static_cast<std::size_t>(peer)], lane);
}

}  // namespace toroid::exec
