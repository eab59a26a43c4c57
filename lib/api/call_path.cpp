#include "api/call_path.hpp"

#include "api/selector_setup.hpp"
#include "exec/single_copy.hpp"

namespace toroid {

std::string_view to_string(CallPath p) noexcept {
  switch (p) {
    case CallPath::schedule:
      return "schedule";
    case CallPath::stock:
      return "stock";
    case CallPath::staged:
      return "staged";
    case CallPath::single_copy:
      return "single_copy";
    case CallPath::remote_reads:
      return "remote_reads";
  }
  return "?";
}

namespace api {

bool node_path_possible(const Communicator::Impl& m, Collective c, Algorithm a, bool along_axes,
                        std::uint64_t count, bool varying) {
  return a == Algorithm::automatic && !along_axes && c != Collective::broadcast &&
         m.single_copy_possible() && (varying || count > 0);
}

namespace {

// The model that prices a call: the communicator's, or along axes its group's.
model::Selector& selector_for(Communicator::Impl& m, const std::optional<Axes>& axes) {
  if (!axes) return *m.selector;
  std::unique_ptr<model::Selector>& s = m.selectors_along[axes->bits()];
  if (!s) s = make_selector_along(m, *axes);
  return *s;
}

CallPath path_of(exec::NodePath p) {
  switch (p) {
    case exec::NodePath::staged:
      return CallPath::staged;
    case exec::NodePath::single_copy:
      return CallPath::single_copy;
    case exec::NodePath::remote_reads:
      return CallPath::remote_reads;
    case exec::NodePath::schedule:
      break;
  }
  return CallPath::schedule;
}

}  // namespace

Algorithm schedule_algorithm(Communicator::Impl& m, Collective c, std::uint64_t bytes, Algorithm a,
                             const std::optional<Axes>& axes, bool varying) {
  if (a != Algorithm::automatic) return a;
  if (varying) return Algorithm::direct;
  return selector_for(m, axes).choose(c, bytes);
}

CallPlan plan_call(Communicator::Impl& m, const CallQuery& query) {
  CallQuery q = query;
  if (q.axes && spans_communicator(m, *q.axes)) q.axes.reset();  // as a call does
  CallPlan plan;
  const std::size_t es = size_of(q.type);
  if (node_path_possible(m, q.collective, q.algorithm, q.axes.has_value(), q.count,
                         q.varying_blocks)) {
    plan.path = path_of(
        exec::node_path(q.collective, q.count, es, m.size, q.toroid_buffers, q.varying_blocks));
    if (plan.path != CallPath::schedule) return plan;
  }
  const std::uint64_t bytes = q.count * es;
  plan.algorithm =
      schedule_algorithm(m, q.collective, bytes, q.algorithm, q.axes, q.varying_blocks);
  if (plan.algorithm == Algorithm::mpi) {
    plan.path = CallPath::stock;
    return plan;
  }
  plan.path = CallPath::schedule;
  if (!q.varying_blocks)
    plan.predicted_seconds = selector_for(m, q.axes).predict(q.collective, plan.algorithm, bytes);
  return plan;
}

}  // namespace api
}  // namespace toroid
