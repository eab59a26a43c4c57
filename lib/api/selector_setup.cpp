#include "api/selector_setup.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "mpi_base/agreement.hpp"
#include "schedule/along.hpp"
#include "toroid/error.hpp"
#include "toroid/mpi_helpers.hpp"

namespace toroid::api {
namespace {

// Rank 0 reads the file; every rank gets its text, or the reason it could not be read.
model::Tuning agreed_tuning(const Communicator::Impl& m) {
  if (m.config.tuning_file.empty()) return model::default_tuning();
  std::string text;
  run_agreed(m.comm, [&] {
    if (m.rank != 0) return;
    std::ifstream in(m.config.tuning_file);
    if (!in)
      throw InvalidArgument(fmt::format("TOROID_TUNING: cannot read '{}' ({})",
                                        m.config.tuning_file, std::strerror(errno)));
    std::ostringstream all;
    all << in.rdbuf();
    text = all.str();
  });
  text = broadcast_text(m.comm, text, 0);
  try {
    return model::parse_tuning(text, m.config.tuning_file);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(std::string("TOROID_TUNING: ") + e.what());
  }
}

std::string line_for(const Communicator::Impl& m, const model::Selector& s, Collective c, int k,
                     const model::Choice& ch) {
  const std::uint64_t low = model::Selector::class_low(k), high = model::Selector::class_low(k + 1);
  std::string why;
  if (ch.measured)
    why = fmt::format("measured fastest by toroid-tune: {}", ch.rule->text);
  else if (ch.rule)
    why = fmt::format("by rule {}", ch.rule->text);
  else if (ch.exchange)
    why = fmt::format("two ranks: one exchange below {}",
                      model::size_text(model::kTwoRankExchangeBytes));
  else if (!ch.modeled)
    why = m.size == 1 ? "one rank"
                      : fmt::format("fixed rule above {} ranks", model::kMaxModeledRanks);
  else {
    why = "model:";
    for (auto [a, t] : ch.predicted) why += fmt::format(" {} {:.1f}", to_string(a), t * 1e6);
    why += " us";
  }
  return fmt::format("toroid: auto {} of {} - {} on {} ranks ({}, {} node(s); {}): {} ({})\n",
                     to_string(c), model::size_text(low), model::size_text(high), m.size,
                     m.topology.to_string(), m.nodes.nodes, s.describe_links(),
                     to_string(ch.algorithm), why);
}

}  // namespace

std::unique_ptr<model::Selector> make_selector(const Communicator::Impl& m) {
  model::SelectorInputs in;
  in.topology = m.topology;
  in.node_of_rank = m.nodes.node_of_rank;
  // Emulated nodes (TOROID_NODES) share this machine: its real nodes say which links carry what.
  if (!m.config.nodes.empty()) in.link_node_of_rank = m.node_split->node_of_rank();
  // Shared-memory links inside the nodes only where every rank has them (a node short of
  // /dev/shm room runs on MPI), so that every rank prices the same links.
  int shm = m.shm_links && (m.shm_links->local_ranks() > 1 || m.nodes.local_size == 1) ? 1 : 0;
  mpi_check(MPI_Allreduce(MPI_IN_PLACE, &shm, 1, MPI_INT, MPI_LAND, m.comm), "MPI_Allreduce");
  in.shm_inside_node = shm != 0;
  // The shared-memory links pipeline in their slots, not in the MPI executor's segments: on one
  // node the model's segment is the slot (the smallest of any rank's, so all price alike).
  unsigned long long segment = m.config.segment_bytes;
  if (in.shm_inside_node && m.shm_links && m.shm_links->local_ranks() == m.size)
    segment = m.shm_links->slot_bytes();
  mpi_check(MPI_Allreduce(MPI_IN_PLACE, &segment, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, m.comm),
            "MPI_Allreduce");
  in.segment_bytes = segment;
  in.rules = m.config.rules;
  in.tuning = agreed_tuning(m);
  std::unique_ptr<model::Selector> s;
  run_agreed(m.comm, [&] { s = std::make_unique<model::Selector>(std::move(in)); });
  if (m.config.log_choices && m.rank == 0) {
    const model::Selector* self = s.get();
    s->set_observer([&m, self](Collective c, int k, const model::Choice& ch) {
      fmt::print(stderr, "{}", line_for(m, *self, c, k, ch));
    });
  }
  return s;
}

std::unique_ptr<model::Selector> make_selector_along(const Communicator::Impl& m, Axes axes) {
  model::SelectorInputs in = m.selector->inputs();
  in.topology = m.topology.along(axes);
  in.rules.clear();
  const std::vector<int> members = m.topology.group_along(m.rank, axes);
  in.node_of_rank = schedule::nodes_along(in.node_of_rank, members);
  in.link_node_of_rank = schedule::nodes_along(in.link_node_of_rank, members);
  return std::make_unique<model::Selector>(std::move(in));
}

}  // namespace toroid::api
