#include "exec/node_memory.hpp"

#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <new>

#include "toroid/mpi_helpers.hpp"

namespace toroid::exec {
namespace {

// Whole pages, at least one (an allocation of nothing still has a part of its own).
std::size_t whole_pages(std::size_t bytes) { return page_rounded(std::max<std::size_t>(bytes, 1)); }

}  // namespace

NodeMemory::NodeMemory(std::shared_ptr<const mpi_base::NodeSplit> nodes)
    : nodes_(std::move(nodes)) {
  const std::size_t lines =
      whole_pages(sizeof(RankControl) * static_cast<std::size_t>(local_size()));
  control_segment_ = std::make_unique<SharedSegment>(
      nodes_->comm(), lines + 2 * kStageBytes * static_cast<std::size_t>(local_size()),
      SharedSegment::Pages::reserved);
  // The file is zero filled, which is every RankControl's initial state (no call entered).
  controls_ = std::launder(reinterpret_cast<RankControl*>(control_segment_->data()));
  stages_ = control_segment_->data() + lines;
  pid_ = static_cast<std::uint32_t>(::getpid());
#ifdef PR_SET_PTRACER
  // Where Yama restricts ptrace to descendants, let the node's peers read this process's
  // memory (the all-to-all's remote reads; Open MPI's vader does the same for its CMA copies).
  ::prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
#endif
}

NodeMemory::~NodeMemory() = default;

std::shared_ptr<NodeAllocation> NodeMemory::allocate(std::size_t bytes) {
  auto a = std::make_shared<NodeAllocation>();
  a->id = ++next_id_;
  const std::uint64_t mine = whole_pages(bytes);
  std::vector<std::uint64_t> parts(static_cast<std::size_t>(local_size()));
  mpi_check(MPI_Allgather(&mine, 1, MPI_UINT64_T, parts.data(), 1, MPI_UINT64_T, nodes_->comm()),
            "MPI_Allgather");
  std::size_t total = 0;
  for (const std::uint64_t b : parts) total += b;
  a->segment =
      std::make_unique<SharedSegment>(nodes_->comm(), total, SharedSegment::Pages::reserved);
  std::byte* at = a->segment->data();
  for (const std::uint64_t b : parts) {
    a->part.push_back(at);
    a->part_bytes.push_back(b);
    at += b;
  }
  std::lock_guard lock(mutex_);
  std::erase_if(by_address_, [](const auto& e) { return e.second.expired(); });
  by_address_[a->part[static_cast<std::size_t>(local_rank())]] = a;
  return a;
}

std::optional<SharedPlace> NodeMemory::find(const void* p, std::size_t bytes) const {
  const auto* b = static_cast<const std::byte*>(p);
  std::lock_guard lock(mutex_);
  auto it = by_address_.upper_bound(b);
  if (it == by_address_.begin()) return std::nullopt;
  --it;
  const auto a = it->second.lock();
  if (!a) return std::nullopt;
  // As integers: b may lie outside the part (then the offset is large, and refused below).
  const std::size_t offset =
      reinterpret_cast<std::uintptr_t>(b) - reinterpret_cast<std::uintptr_t>(it->first);
  if (offset > a->part_bytes[static_cast<std::size_t>(local_rank())] ||
      bytes > a->part_bytes[static_cast<std::size_t>(local_rank())] - offset)
    return std::nullopt;
  return SharedPlace{a->id, offset};
}

std::shared_ptr<NodeAllocation> NodeMemory::held(std::uint64_t id) const {
  std::lock_guard lock(mutex_);
  for (const auto& [start, weak] : by_address_)
    if (auto a = weak.lock(); a && a->id == id) return a;
  return nullptr;
}

}  // namespace toroid::exec
