// Communicator: a duplicated MPI communicator with its torus topology, sub-communicators,
// configuration and schedule cache.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "toroid/algorithm.hpp"
#include "toroid/buffer.hpp"
#include "toroid/call_plan.hpp"
#include "toroid/defaults.hpp"
#include "toroid/export.hpp"
#include "toroid/topology.hpp"
#include "toroid/torus.hpp"

TOROID_API_BEGIN
namespace toroid {
namespace internal {
struct Access;
}  // namespace internal

// How steps between two ranks travel. automatic and shm: over shared-memory channels when both
// ranks are on one node (MPI otherwise); a node whose /dev/shm has no room for the channels runs
// over MPI under automatic and is an error on every rank under shm; mpi: always MPI point-to-point.
enum class Transport { automatic, mpi, shm };
std::string_view to_string(Transport t) noexcept;
Transport parse_transport(
    std::string_view name);  // "auto", "mpi", "shm"; InvalidArgument otherwise

// How a sender writes the shared-memory slots its peer reads (docs/transport.md, "Slot
// stores"). cached: plain stores, so the receiver takes the lines out of the sender's cache
// (fastest where the two cores share a cache); streaming: non-temporal stores, so the lines go
// to memory and the receiver reads them from there (faster where the cores share no cache, or
// a VM's host has put them far apart); automatic: measured on each node when the communicator
// is made.
enum class SlotStores { automatic, cached, streaming };
std::string_view to_string(SlotStores s) noexcept;
SlotStores parse_slot_stores(
    std::string_view name);  // "auto", "cached", "streaming"; InvalidArgument otherwise

// Who moves non-blocking collectives (request.hpp). caller: toroid calls on the communicator
// (test, wait, other collectives). thread: also a progress thread per communicator, so they
// advance while the caller computes; it needs MPI initialized with MPI_THREAD_MULTIPLE.
enum class ProgressMode { caller, thread };
std::string_view to_string(ProgressMode p) noexcept;
ProgressMode parse_progress_mode(
    std::string_view name);  // "caller", "thread"; InvalidArgument otherwise

struct Options {
  // "auto", "4x2", "4x2:wrap=x", "16x16x16", "4x4x8:twist", ... (any number of dimensions, 1 to
  // 6; toroid::Torus::parse). Empty: TOROID_TOPOLOGY, else "auto".
  std::string topology;
  // Default algorithm of collectives that do not name one. Empty: TOROID_ALGO, else automatic.
  std::optional<Algorithm> algorithm;
  // Rules that override `auto` for size ranges, e.g. "allreduce:0-64K=recursive_doubling,64K-inf=ring"
  // (docs/algorithms.md, section `auto`). Empty: TOROID_ALGO when it holds rules, else none.
  std::string algorithm_rules;
  // Pipelining segment of the MPI executor in bytes. 0: TOROID_SEGMENT_BYTES, else the default
  // (default_segment_bytes, or cross_node_segment_bytes when the ranks span several nodes).
  std::size_t segment_bytes = 0;
  // Compare each collective's arguments across ranks first, so a mismatch, or a bad argument on
  // one rank only, raises an error naming the ranks on every rank instead of hanging: per call
  // one small MPI_Iallreduce (agreeing on local argument errors) and one small MPI_Iallgather
  // (comparing the arguments), both watched by the watchdog. Empty: TOROID_CHECK, else on in
  // debug builds of the library (no NDEBUG) and off in release builds.
  std::optional<bool> check;
  // Emulated nodes, e.g. "3,2,3": ranks per node, consecutive ranks (node-aware algorithms
  // and `auto` topology then see these nodes). "real": the real shared-memory nodes
  // (MPI_Comm_split_type) whatever TOROID_NODES says. Empty: TOROID_NODES, else the real nodes.
  std::string nodes;
  // Watchdog: a collective that makes no progress for this many seconds prints, on each stuck
  // rank, what it waits for and aborts the job (MPI_Abort). Empty: TOROID_TIMEOUT, else off.
  std::optional<double> timeout_seconds;
  // Empty: TOROID_TRANSPORT, else automatic.
  std::optional<Transport> transport;
  // Empty: TOROID_PROGRESS, else caller.
  std::optional<ProgressMode> progress;
  // Empty: TOROID_SLOT_STORES, else automatic.
  std::optional<SlotStores> slot_stores;
  // A timeline of every collective, written at the communicator's end to this file (Chrome trace
  // JSON, which Perfetto and chrome://tracing open; docs/performance.md, "Timelines"): each
  // rank's calls and steps with their start, end, peer, bytes and transport. A process's later
  // communicators write FILE.2, FILE.3, ... Empty: TOROID_TRACE, else none.
  std::string trace;
};

class Communicator {
 public:
  // Collective over `comm`: duplicates it (MPI_ERRORS_RETURN on the duplicate), resolves the
  // topology, and sets up the node's links and `auto`. Throws TopologyError / InvalidArgument /
  // MpiError on every rank alike (the inputs are compared across ranks first).
  explicit Communicator(MPI_Comm comm, Options options = {});
  // Local, not collective: frees this rank's resources (its MPI communicators, its view of the
  // node's shared memory) and waits for no other rank, so Communicators may be destroyed in any
  // order across ranks, at any time no collective of this rank is running on them. Collectives
  // still in flight (requests not waited for) are completed first, which does need their peers
  // to progress them too. After MPI_Finalize it frees nothing MPI owns (MPI has freed it).
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const noexcept;
  int size() const noexcept;
  // The shape its ranks play (any number of dimensions).
  const Torus& shape() const noexcept;
  // The same as a 2D torus; throws TopologyError where the shape has more dimensions or a twist
  // (shape() describes those).
  const Torus2D& topology() const;
  Algorithm default_algorithm() const noexcept;
  std::size_t segment_bytes() const noexcept;
  double timeout_seconds() const noexcept;  // the watchdog's (0: off)
  int nodes() const noexcept;   // number of (shared-memory or emulated) nodes the ranks span
  int node_of(int rank) const;  // node index of a rank
  // How ranks lie on the nodes: "by node" (consecutive ranks share a node), "round robin" (rank
  // r on node r mod nodes), "scattered" or "uneven" (nodes of different sizes). `auto` topology
  // keeps one torus dimension inside the nodes for the first two (rows, resp. columns) and is
  // the most square grid for the others, and where every node has one rank.
  std::string_view node_placement() const noexcept;
  // The transport asked for, and whether this rank has shared-memory channels (peers on its node).
  Transport transport() const noexcept;
  bool uses_shared_memory() const noexcept;
  // How this node's senders write shared-memory slots: cached or streaming (automatic: measured
  // to be so); automatic where this rank has no channels.
  SlotStores slot_stores() const noexcept;
  ProgressMode progress_mode() const noexcept;
  // Whether collectives compare their arguments across ranks first (Options::check).
  bool checks_arguments() const noexcept;

  // How the slot-store way was measured ("measured per 128 KiB, fill + read: ..."); empty where
  // it was not (set by TOROID_SLOT_STORES, or no channels).
  std::string slot_stores_measurement() const;
  // The name of this communicator's links and shape in `auto`'s model: the key under which a
  // tuning file (TOROID_TUNING, toroid-tune) keeps the rules measured on it.
  const std::string& tuning_layout() const noexcept;

  // What a call with these arguments runs on this rank: the same rule the call follows. Local
  // (along axes it builds the group's model the first time, as the call would).
  CallPlan plan(const CallQuery& query);
  // Calls this rank ran through the node's control block so far (all zero without one).
  NodePathCalls node_path_calls() const noexcept;

  MPI_Comm mpi_comm() const noexcept;  // the duplicate; usable for MPI calls of the caller's own

  // Collective: every rank gets `count` zero-filled elements of its own (counts may differ) in
  // its node's shared memory (buffer.hpp), every page reserved now. Throws on every rank alike
  // when any node cannot hold its ranks' parts (toroid::Error, saying which rank and why) or a
  // count is too large (InvalidArgument).
  template <class T>
  Buffer<T> allocate(std::size_t count) {
    void* data = nullptr;
    std::shared_ptr<void> owner = allocate_bytes(count, sizeof(T), data);
    return Buffer<T>(std::move(owner), static_cast<T*>(data), count);
  }
  // The untyped form: count elements of elem_size bytes; `data` receives this rank's part.
  std::shared_ptr<void> allocate_bytes(std::size_t count, std::size_t elem_size, void*& data);

  struct TOROID_HIDDEN Impl;  // the library's own (lib/api/communicator_impl.hpp)

 private:
  friend struct internal::Access;  // lib/api/internal.hpp: for the project's own code only
  std::unique_ptr<Impl> impl_;
};

}  // namespace toroid
TOROID_API_END
