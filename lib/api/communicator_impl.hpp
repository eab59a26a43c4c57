// What a Communicator holds: separate parts, each with its own job.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <tuple>

#include "api/config.hpp"
#include "api/executor.hpp"
#include "exec/node_memory.hpp"
#include "exec/shm_links.hpp"
#include "exec/stock.hpp"
#include "exec/tracer.hpp"
#include "model/selector.hpp"
#include "mpi_base/nodes.hpp"
#include "schedule/later_use.hpp"
#include "schedule/step.hpp"
#include "toroid/communicator.hpp"

namespace toroid {

// Built schedules, keyed by everything a builder looks at. Bounded: cleared when full.
class ScheduleCache {
 public:
  // collective, algorithm, count, in place, average, axes (Axes::bits; -1: whole communicator), root,
  // element size (0 where the schedules do not depend on it: schedule::Context::hop_seconds)
  using Key = std::tuple<schedule::Collective, Algorithm, std::uint64_t, bool, bool, int, int,
                         std::uint32_t>;
  struct Entry {
    std::shared_ptr<const schedule::Schedule> schedule;  // ops bound to it share it
    std::uint64_t serial;  // unique per built schedule: ops bound to it know it is still this one
  };
  template <class Build>
  const Entry& get(const Key& key, Build&& build) {
    auto it = entries_.find(key);
    if (it != entries_.end()) return it->second;
    if (entries_.size() >= kCapacity) clear();
    schedule::Schedule built = build();
    schedule::set_later_uses(built);  // once per schedule, not at every bind
    auto made = std::make_shared<const schedule::Schedule>(std::move(built));
    return entries_.emplace(key, Entry{std::move(made), ++serial_}).first->second;
  }
  static constexpr std::size_t kCapacity = 256;

 private:
  void clear() { entries_.clear(); }
  std::map<Key, Entry> entries_;
  std::uint64_t serial_ = 0;
};

// Everything a blocking call's path and op depend on, the communicator's settings being fixed:
// what the call is, its buffers and counts, and its root (collectives.cpp, key_of).
struct CallKey {
  // The collective | its type << 8 | reduction << 16 | algorithm << 24 | (axes' bits + 1) << 32
  // (0: the whole communicator), in one word: one comparison for all five.
  std::uint64_t what = 0;
  std::uint64_t in = 0, in_count = 0, out = 0, out_count = 0;  // addresses and element counts
  std::uint64_t root = 0;
  // Six words compared without a branch per word (a defaulted == compares one by one).
  bool operator==(const CallKey& o) const noexcept {
    return ((what ^ o.what) | (in ^ o.in) | (in_count ^ o.in_count) | (out ^ o.out) |
            (out_count ^ o.out_count) | (root ^ o.root)) == 0;
  }
  // The same call but for its buffers' addresses.
  bool same_but_buffers(const CallKey& o) const noexcept {
    return what == o.what && in_count == o.in_count && out_count == o.out_count && root == o.root;
  }
};

// The last blocking call that ran a schedule, kept so that the same call again (the common case
// in a training loop: the same buffers every step) starts its bound op at once, skipping
// validation, the choice of algorithm, the schedule lookup and the op pool. Only calls whose
// path follows from this rank's own arguments are kept (not the single-copy ones, whose path
// depends on every rank's), never with argument checking on (that compares across ranks every
// call), and none survive an allocate (memory that becomes toroid's changes a call's path).
struct RepeatedCall {
  CallKey key;
  bool in_place = false;  // the call's form, which a call on other buffers must share
  std::shared_ptr<exec::BoundCollective> op;
  exec::CallName what;  // a request's name (non-blocking starts)
  void forget() { op.reset(); }
};

struct Communicator::Impl {
  MPI_Comm comm = MPI_COMM_NULL;
  // The stock collectives along axes (algorithm mpi): per Axes::bits(), my group's communicator
  // (Torus::group_along, ordered by position), split from `comm` at the first such call.
  std::map<unsigned, MPI_Comm> along;
  // `auto` along several axes: per Axes::bits(), the model of my group's sub-torus
  // (api/selector_setup.hpp), made at the first such call.
  std::map<unsigned, std::unique_ptr<model::Selector>> selectors_along;
  int rank = 0, size = 1;
  api::Config config;
  Torus topology{Torus2D{1, 1}};  // the shape, any number of dimensions
  std::optional<Torus2D> grid;    // the same where it is a 2D one (Communicator::topology)
  std::shared_ptr<const mpi_base::NodeSplit> node_split;  // the real nodes: one split
  topology::NodeLayout nodes;  // the real nodes, or the emulated ones (TOROID_NODES)
  ScheduleCache schedules;
  RepeatedCall last_call;  // the last blocking call: repeated, it skips prepare()
  // Whether Communicator::allocate ever ran: then a call's new buffers may be toroid's, whose
  // path (single-copy) differs, so a call on new buffers is prepared afresh.
  bool allocated = false;
  RepeatedCall last_start;  // the same for the last non-blocking start
  // The op the last alltoallv ran on, bound again to the next one's schedule when no request
  // holds it (Executor::acquire_into): an alltoallv's counts change from call to call.
  std::shared_ptr<exec::BoundCollective> alltoallv_op;
  // The op of the blocking single-copy calls (collectives.cpp single_copy_op), bound again at
  // each one; and the layouts of the blocking alltoallv, filled again at each (alltoallv_call).
  std::shared_ptr<exec::BoundCollective> blocking_single_copy_op;
  std::shared_ptr<schedule::VarBlocks> blocking_layouts;
  exec::StockOps stock_ops;
  std::unique_ptr<exec::ShmLinks> shm_links;  // null with Transport::mpi
  std::unique_ptr<model::Selector> selector;  // `auto`
  // What the schedules are built for: the links `auto` prices (model::schedule_context), so that
  // what it priced is what runs.
  schedule::Context schedule_context;
  std::unique_ptr<exec::Tracer> tracer;  // TOROID_TRACE: the timeline; null: none
  std::shared_ptr<api::Executor>
      executor;  // after shm_links: destroyed first; requests hold it weakly
  // The node's control block and the memory handed to the program (Communicator::allocate):
  // made at construction where the whole communicator is on one node, else by the first allocate.
  std::unique_ptr<exec::NodeMemory> memory;
  // Whether a collective may take the staged or single-copy path (exec/single_copy.hpp): all
  // ranks on one node (real, and one emulated node), not transport mpi.
  bool single_copy_possible() const {
    return memory && memory->whole_communicator() && nodes.nodes == 1 &&
           config.transport != Transport::mpi;
  }
};

namespace api {

// Whether every step of every collective on a communicator, an alltoallv's aside (its exact
// messages always go over MPI), is over the node's shared-memory links or local, and if not
// why: a progress thread below MPI_THREAD_MULTIPLE may not call MPI, so it can run only the
// first kind. Alike on every rank: one node's ranks are linked all or none (exec::ShmLinks),
// and every schedule on a shape of at most kLanes / 2 dimensions keeps to lanes below kLanes
// (tests/unit/test_schedules_3d.cpp).
enum class MpiSteps { none, between_nodes, unlinked, too_many_lanes };
MpiSteps steps_over_mpi(const Communicator::Impl& m);
const char* to_string(MpiSteps s) noexcept;
const char* thread_level_name(int level) noexcept;  // "MPI_THREAD_SINGLE", ...

}  // namespace api
}  // namespace toroid
