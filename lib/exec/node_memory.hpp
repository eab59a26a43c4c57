// Memory the ranks of a node share, handed to the program (Communicator::allocate), and what
// the single-copy collectives need to use it: where each peer's part lies in this rank's address
// space, and a small control block through which the ranks of a call meet.
//
// One allocate call is collective over the communicator and makes one segment per node
// (shm_segment.hpp: a /dev/shm file every local rank maps, every page reserved up front), cut
// into one part per local rank, each of the size that rank asked for:
//
//   segment of allocation #id:  [ local rank 0's part | local rank 1's part | ... ]
//   every local rank maps all of it, so rank i reaches rank j's part at  part(id, j)
//
// The allocation lives as long as this rank holds it (a toroid::Buffer holds a shared pointer);
// letting go only unmaps this rank's view (peers keep theirs). Allocations are numbered per
// communicator in call order, so the same number names the same allocation on every rank.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "exec/shm_segment.hpp"
#include "mpi_base/nodes.hpp"

namespace toroid::exec {

struct NodeAllocation {
  std::uint64_t id = 0;
  std::unique_ptr<SharedSegment> segment;
  std::vector<std::byte*> part;         // by node-local index, in this rank's address space
  std::vector<std::size_t> part_bytes;  // by node-local index
};

// Where a call's buffer lies: which allocation, and how far into this rank's part.
struct SharedPlace {
  std::uint64_t id = 0;
  std::uint64_t offset = 0;
};

// Per node-local rank, in the control segment: the call it has entered (two lines, by the
// call's parity, so a fast rank's next call never overwrites one a slow rank is still reading)
// and the last call it has finished. 64-byte lines: no false sharing.
struct alignas(64) CallPost {
  std::uint64_t seq = 0;  // written last (release); 0: never
  std::uint64_t in_id = 0, in_offset = 0, out_id = 0, out_offset = 0;
  std::uint64_t count = 0;
  std::uint32_t collective = 0;
  std::uint16_t type = 0, reduction = 0;
  std::uint32_t staged = 0;   // 1: the staged path (its input in the stage)
  std::uint32_t varying = 0;  // 1: an alltoallv (its blocks' layout in the stage)
  // An all-to-all that may read its peers' memory wherever it is (single_copy.hpp, "Remote
  // reads"): 1, with this rank's process and the addresses of its input and output there.
  std::uint32_t remote_reads = 0, pid = 0;
  std::uint64_t in_address = 0, out_address = 0;
  std::uint32_t in_stage = 0;  // 1: an alltoallv whose input is in the stage after its layout
};
struct alignas(64) RankControl {
  CallPost post[2];
  std::uint64_t done = 0;  // seq of the last call this rank finished (release)
  // The seq of a call this rank could not finish (a remote read refused), and the errno; written
  // before its done (release), read by every peer after seeing that done.
  std::uint64_t failed = 0, failed_errno = 0;
};

class NodeMemory {
 public:
  // Per local rank and call parity, room for a small call's input (the staged path of
  // single_copy.hpp), after the RankControl lines in the control segment.
  static constexpr std::size_t kStageBytes = 16 * 1024;

  // Collective over the ranks of `nodes`' node: maps the node's control segment.
  explicit NodeMemory(std::shared_ptr<const mpi_base::NodeSplit> nodes);
  // Local: unmaps this rank's views; peers keep theirs.
  ~NodeMemory();
  NodeMemory(const NodeMemory&) = delete;
  NodeMemory& operator=(const NodeMemory&) = delete;

  // Collective over the communicator's ranks on this node: every rank's part of `bytes`
  // (rounded up to whole pages, at least one), zero filled. Throws toroid::Error on every rank
  // of the node alike when the node cannot hold it.
  std::shared_ptr<NodeAllocation> allocate(std::size_t bytes);
  // The allocation whose part of this rank holds [p, p + bytes), if one this rank still holds.
  std::optional<SharedPlace> find(const void* p, std::size_t bytes) const;
  // The allocation `id` if this rank still holds it.
  std::shared_ptr<NodeAllocation> held(std::uint64_t id) const;

  // Whether the whole communicator is on this node (the single-copy collectives need that).
  bool whole_communicator() const noexcept {
    return static_cast<std::size_t>(local_size()) == nodes_->local_of_rank().size();
  }
  int local_of(int comm_rank) const {
    return nodes_->local_of_rank()[static_cast<std::size_t>(comm_rank)];
  }
  int local_rank() const noexcept { return nodes_->local(); }
  int local_size() const noexcept { return nodes_->size(); }
  std::uint32_t pid() const noexcept { return pid_; }
  RankControl& control(int local) const { return controls_[static_cast<std::size_t>(local)]; }
  std::byte* stage(int local, std::uint64_t seq) const {
    return stages_ + (static_cast<std::size_t>(local) * 2 + seq % 2) * kStageBytes;
  }
  // Calls this rank has entered through the control block (the next one's seq is this + 1).
  std::uint64_t next_seq() noexcept { return ++seq_; }
  // Calls this rank ran single-copy (toroid's buffers) and staged (small calls), for tests.
  std::uint64_t single_copy_calls() const noexcept { return single_copy_calls_; }
  std::uint64_t staged_calls() const noexcept { return staged_calls_; }
  void count_single_copy() noexcept { ++single_copy_calls_; }
  void count_staged() noexcept { ++staged_calls_; }
  // All-to-alls that read their peers' memory where it is (single_copy.hpp, "Remote reads").
  std::uint64_t remote_read_calls() const noexcept { return remote_read_calls_; }
  void count_remote_reads() noexcept { ++remote_read_calls_; }

 private:
  std::shared_ptr<const mpi_base::NodeSplit> nodes_;
  std::unique_ptr<SharedSegment> control_segment_;
  RankControl* controls_ = nullptr;
  std::byte* stages_ = nullptr;
  std::uint64_t next_id_ = 0, seq_ = 0, single_copy_calls_ = 0, staged_calls_ = 0;
  std::uint64_t remote_read_calls_ = 0;
  std::uint32_t pid_ = 0;
  // This rank's parts by start address. Weak: an allocation ends when the program lets go of it.
  mutable std::mutex mutex_;
  std::map<const std::byte*, std::weak_ptr<NodeAllocation>> by_address_;
};

}  // namespace toroid::exec
