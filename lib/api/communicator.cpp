// Communicator: duplicate, resolve topology, set up the node links and `auto`.
#include <fmt/format.h>

#include <exception>

#include "api/call_path.hpp"
#include "api/communicator_impl.hpp"
#include "api/selector_setup.hpp"
#include "exec/backoff.hpp"
#include "mpi_base/agreement.hpp"
#include "toroid/error.hpp"
#include "toroid/mpi_helpers.hpp"

namespace toroid {
namespace {

Torus resolve_topology(const std::string& text, int size, const topology::NodeLayout& nodes) {
  if (text != "auto") {
    Torus t = Torus::parse(text);
    t.require_size(size);
    return t;
  }
  // One dimension within the nodes, so its rings never leave a node, where the placement
  // allows: rows are the nodes when ranks fill one node after the other, columns are when they
  // are dealt out in turn (--map-by node). Otherwise, and where each node has one rank (which
  // says nothing of how the nodes are wired), the most square grid; node_placement() says which.
  using topology::Placement;
  if (nodes.local_size == 1 && nodes.nodes > 1) return Torus2D::most_square(size);
  if (nodes.placement == Placement::by_node) return Torus2D(nodes.local_size, nodes.nodes);
  if (nodes.placement == Placement::round_robin) return Torus2D(nodes.nodes, nodes.local_size);
  return Torus2D::most_square(size);
}

// The progress thread below MPI_THREAD_MULTIPLE (communicator_impl.hpp): it makes no MPI call
// then, so it can run the communicator only where steps_over_mpi finds nothing, and refuses
// what still needs MPI (an alltoallv's exact messages). MPI's thread levels govern the threads
// that call MPI; one that never does runs beside the program's at any level, as an OpenMP
// runtime's threads do (strictly, MPI_THREAD_SINGLE promises one thread: docs/executor.md).
std::string progress_without_mpi(const Communicator::Impl& m, int level) {
  const std::string needs = fmt::format(
      "progress mode thread (Options::progress or TOROID_PROGRESS) on rank {} with MPI at {}",
      m.rank, api::thread_level_name(level));
  if (const api::MpiSteps why = api::steps_over_mpi(m); why != api::MpiSteps::none)
    throw InvalidArgument(
        fmt::format("{}: {}, and the progress thread may call MPI only under "
                    "MPI_THREAD_MULTIPLE (MPI_Init_thread)",
                    needs, api::to_string(why)));
  return fmt::format(
      "its messages go over MPI, which this communicator's progress thread may "
      "call only under MPI_THREAD_MULTIPLE (MPI is at {}); run it blocking, or "
      "initialize MPI with MPI_THREAD_MULTIPLE",
      api::thread_level_name(level));
}

}  // namespace

namespace api {

MpiSteps steps_over_mpi(const Communicator::Impl& m) {
  if (m.size == 1) return MpiSteps::none;
  if (!(m.shm_links && m.shm_links->local_ranks() == m.size))
    return m.node_split->layout().nodes > 1 ? MpiSteps::between_nodes : MpiSteps::unlinked;
  if (2 * m.topology.dimensions() > exec::ShmLinks::kLanes) return MpiSteps::too_many_lanes;
  return MpiSteps::none;
}

const char* thread_level_name(int level) noexcept {
  return level == MPI_THREAD_SINGLE       ? "MPI_THREAD_SINGLE"
         : level == MPI_THREAD_FUNNELED   ? "MPI_THREAD_FUNNELED"
         : level == MPI_THREAD_SERIALIZED ? "MPI_THREAD_SERIALIZED"
                                          : "MPI_THREAD_MULTIPLE";
}

const char* to_string(MpiSteps s) noexcept {
  switch (s) {
    case MpiSteps::none:
      return "every step over shared memory";
    case MpiSteps::between_nodes:
      return "the communicator spans nodes, so steps between them go over MPI";
    case MpiSteps::unlinked:
      return "its ranks are not linked by shared memory (transport mpi, or no room in /dev/shm), "
             "so their steps go over MPI";
    case MpiSteps::too_many_lanes:
      return "its shape has more than 4 dimensions, whose schedules use more lanes than the "
             "shared-memory links carry (8), so some of their steps go over MPI";
  }
  return "";
}

}  // namespace api

namespace {

void free_comm(MPI_Comm& c) {
  if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
}

}  // namespace

Communicator::Communicator(MPI_Comm comm, Options options) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) throw InvalidArgument("toroid::Communicator: MPI is not initialized");
  if (comm == MPI_COMM_NULL)
    throw InvalidArgument("toroid::Communicator: communicator is MPI_COMM_NULL");
  // The settings, resolved once: their timeout watches the copy below; a bad one is reported on
  // every rank once the copy exists (run_agreed below).
  api::Config config;
  std::exception_ptr bad_setting;
  try {
    config = api::resolve_config(options);
  } catch (const Error&) {
    bad_setting = std::current_exception();
  }
  {
    // Watched: a rank that never comes (it skipped the first call on this communicator, which
    // builds it lazily under the preload) ends the job with a message, not a silent hang.
    MPI_Request dup = MPI_REQUEST_NULL;
    mpi_check(MPI_Comm_idup(comm, &m.comm, &dup), "MPI_Comm_idup");
    toroid::finish_watched(dup, comm, bad_setting ? 0 : config.timeout_s,
                           "building toroid's communicator (MPI_Comm_idup)");
  }
  {  // the program's name for it (MPI_COMM_WORLD, MPI's name for a duplicate, its own): messages
    char name[MPI_MAX_OBJECT_NAME] = {};
    int len = 0;
    if (MPI_Comm_get_name(comm, name, &len) == MPI_SUCCESS && len > 0)
      MPI_Comm_set_name(m.comm, name);
  }
  mpi_check(MPI_Comm_set_errhandler(m.comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  mpi_check(MPI_Comm_rank(m.comm, &m.rank), "MPI_Comm_rank");
  mpi_check(MPI_Comm_size(m.comm, &m.size), "MPI_Comm_size");
  try {
    toroid::require_same_environment(m.comm, api::variables_read(options));
    toroid::run_agreed(m.comm, [&] {
      if (bad_setting) std::rethrow_exception(bad_setting);
      m.config = config;
    });
    // The real nodes, found once: the layout, the shared-memory links and the node memory all
    // take this split. It is collective and can only fail with an MPI error; emulated nodes
    // come from text alone, so their errors can be agreed on.
    m.node_split = std::make_shared<const mpi_base::NodeSplit>(m.comm);
    if (!m.config.nodes.empty())
      toroid::run_agreed(
          m.comm, [&] { m.nodes = topology::emulated_nodes(m.config.nodes, m.size, m.rank); });
    else
      m.nodes = m.node_split->layout();
    toroid::run_agreed(m.comm,
                       [&] { m.topology = resolve_topology(m.config.topology, m.size, m.nodes); });
    m.grid = m.topology.as_torus2d();
    // Real nodes only: emulated ones share this machine's memory, where MPI is no TCP stream.
    if (!m.config.segment_bytes_given && m.config.nodes.empty() && m.nodes.nodes > 1)
      m.config.segment_bytes = cross_node_segment_bytes;
    if (m.config.transport != Transport::mpi)
      m.shm_links = std::make_unique<exec::ShmLinks>(
          m.comm, m.node_split,
          m.config.slot_stores == SlotStores::automatic ? std::nullopt
          : m.config.slot_stores == SlotStores::streaming
              ? std::optional<exec::SlotFill>(exec::SlotFill::streaming)
              : std::optional<exec::SlotFill>(exec::SlotFill::cached));
    if (m.config.log_choices && m.shm_links && m.shm_links->slot_fill_probe().measured &&
        m.node_split->local() == 0) {
      const exec::SlotFillProbe& p = m.shm_links->slot_fill_probe();
      fmt::print(stderr, "toroid: shared-memory slots on rank {}'s node: {} stores ({})\n", m.rank,
                 exec::to_string(m.shm_links->slot_fill()), exec::describe(p));
    }
    exec::Backoff::note_node_ranks(m.shm_links ? m.shm_links->node_ranks() : m.nodes.local_size);
    // `shm` asks for the shared-memory links: where a node has no room for them, say so (only
    // `auto` may run such a node over MPI instead).
    if (m.config.transport == Transport::shm)
      toroid::run_agreed(m.comm, [&] {
        if (m.shm_links->node_ranks() > 1 && m.shm_links->local_ranks() < 2)
          throw InvalidArgument(
              fmt::format("transport shm (Options::transport or TOROID_TRANSPORT): rank {}'s node "
                          "has no room in /dev/shm for "
                          "the shared-memory links of its {} ranks; free space there, or use "
                          "transport auto (MPI on such a node)",
                          m.rank, m.shm_links->node_ranks()));
      });
    // A communicator all on one node meets in a control block for its small collectives (the
    // staged path of exec/single_copy.hpp); one that spans nodes gets it at its first allocate.
    if (m.config.transport != Transport::mpi && m.nodes.nodes == 1 && m.size > 1 &&
        m.shm_links->local_ranks() == m.size)
      toroid::run_agreed(m.comm,
                         [&] { m.memory = std::make_unique<exec::NodeMemory>(m.node_split); });
    m.selector = api::make_selector(m);
    m.schedule_context = model::schedule_context(m.selector->model(), m.nodes.node_of_rank);
    m.schedule_context.rank = m.rank;
    m.executor = std::make_shared<api::Executor>(m.comm);
    if (!m.config.trace.empty()) {
      const std::string path = exec::Tracer::path_for(m.config.trace);
      toroid::run_agreed(m.comm, [&] {
        if (m.rank == 0) exec::Tracer::check_writable(path);
      });
      m.tracer = std::make_unique<exec::Tracer>(m.comm, path);
      m.executor->set_tracer(m.tracer.get());
    }
    if (m.config.progress == ProgressMode::thread) {
      int level = MPI_THREAD_SINGLE;
      mpi_check(MPI_Query_thread(&level), "MPI_Query_thread");
      std::string refusal;  // agreed on every rank, whatever its own level (ranks may differ)
      toroid::run_agreed(m.comm, [&] {
        if (level < MPI_THREAD_MULTIPLE) refusal = progress_without_mpi(m, level);
      });
      m.executor->start_thread(std::move(refusal));
    }
  } catch (...) {
    m.executor.reset();
    m.tracer.reset();
    m.memory.reset();
    m.shm_links.reset();
    free_comm(m.comm);
    throw;
  }
}

Communicator::~Communicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!impl_) return;
  if (finalized) {
    if (impl_->tracer) impl_->tracer->write(MPI_COMM_NULL);  // each rank its own file
    return;
  }
  if (impl_->executor) {
    try {
      impl_->executor->wait_all();
    } catch (const std::exception& e) {
      fmt::print(
          stderr,
          "toroid: rank {}: a collective still in flight at the communicator's end failed: {}\n",
          impl_->rank, e.what());
    }
    if (impl_->tracer) {
      impl_->executor->set_tracer(nullptr);
      impl_->tracer->write(impl_->comm);
    }
    impl_->executor.reset();
  }
  impl_->shm_links.reset();
  impl_->memory.reset();
  for (auto& [bits, comm] : impl_->along) free_comm(comm);
  free_comm(impl_->comm);
}

int Communicator::rank() const noexcept { return impl_->rank; }
int Communicator::size() const noexcept { return impl_->size; }
const Torus& Communicator::shape() const noexcept { return impl_->topology; }
const Torus2D& Communicator::topology() const {
  if (!impl_->grid)
    throw TopologyError(
        fmt::format("Communicator::topology(): the shape {} has {} dimensions{}, not a 2D torus; "
                    "Communicator::shape() describes it",
                    impl_->topology.to_string(), impl_->topology.dimensions(),
                    impl_->topology.twisted() ? " and a twist" : ""));
  return *impl_->grid;
}
Algorithm Communicator::default_algorithm() const noexcept { return impl_->config.algorithm; }
std::size_t Communicator::segment_bytes() const noexcept { return impl_->config.segment_bytes; }
double Communicator::timeout_seconds() const noexcept { return impl_->config.timeout_s; }
Transport Communicator::transport() const noexcept { return impl_->config.transport; }
ProgressMode Communicator::progress_mode() const noexcept { return impl_->config.progress; }
bool Communicator::checks_arguments() const noexcept { return impl_->config.check; }
bool Communicator::uses_shared_memory() const noexcept {
  return impl_->shm_links && impl_->shm_links->local_ranks() > 1;
}
SlotStores Communicator::slot_stores() const noexcept {
  if (!uses_shared_memory()) return SlotStores::automatic;
  return impl_->shm_links->slot_fill() == exec::SlotFill::streaming ? SlotStores::streaming
                                                                    : SlotStores::cached;
}
std::string Communicator::slot_stores_measurement() const {
  if (!uses_shared_memory()) return {};
  const exec::SlotFillProbe& p = impl_->shm_links->slot_fill_probe();
  return p.measured ? exec::describe(p) : std::string();
}
const std::string& Communicator::tuning_layout() const noexcept {
  return impl_->selector->layout();
}
CallPlan Communicator::plan(const CallQuery& query) { return api::plan_call(*impl_, query); }
NodePathCalls Communicator::node_path_calls() const noexcept {
  if (!impl_->memory) return {};
  const exec::NodeMemory& m = *impl_->memory;
  return {m.staged_calls(), m.single_copy_calls(), m.remote_read_calls()};
}
int Communicator::nodes() const noexcept { return impl_->nodes.nodes; }
std::string_view Communicator::node_placement() const noexcept {
  return topology::to_string(impl_->nodes.placement);
}
int Communicator::node_of(int rank) const {
  if (rank < 0 || rank >= impl_->size)
    throw InvalidArgument(fmt::format("node_of: rank {} is outside [0, {})", rank, impl_->size));
  return impl_->nodes.node_of_rank[rank];
}
MPI_Comm Communicator::mpi_comm() const noexcept { return impl_->comm; }

std::shared_ptr<void> Communicator::allocate_bytes(std::size_t count, std::size_t elem_size,
                                                   void*& data) {
  Impl& m = *impl_;
  m.last_call.forget();  // on every rank alike: allocate is collective
  m.last_start.forget();
  m.allocated = true;
  std::shared_ptr<exec::NodeAllocation> a;
  // First the arguments (no MPI inside), then the collective part: a rank that stopped at a bad
  // count must not leave the others inside the node's collectives.
  toroid::run_agreed(
      m.comm,
      [&] {
        if (elem_size == 0 || count > (std::size_t{1} << 62) / elem_size)
          throw InvalidArgument(
              fmt::format("allocate on rank {}: {} elements of {} bytes is too large", m.rank,
                          count, elem_size));
      },
      m.config.timeout_s);
  // SharedSegment agrees on its errors within each node; these make them every node's. Where
  // any node could not map its control block, no rank keeps one (the next allocate tries anew
  // on every rank alike).
  if (!m.memory) try {
      toroid::run_agreed(
          m.comm, [&] { m.memory = std::make_unique<exec::NodeMemory>(m.node_split); },
          m.config.timeout_s);
    } catch (...) {
      m.memory.reset();
      throw;
    }
  toroid::run_agreed(
      m.comm, [&] { a = m.memory->allocate(count * elem_size); }, m.config.timeout_s);
  data = a->part[static_cast<std::size_t>(m.memory->local_rank())];
  return a;
}

}  // namespace toroid
