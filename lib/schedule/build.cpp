#include "schedule/build.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "schedule/dependencies.hpp"
#include "schedule/dimension.hpp"
#include "schedule/group.hpp"
#include "toroid/error.hpp"

namespace toroid::schedule {

Torus2D Context::grid(std::string_view who) const {
  if (const std::optional<Torus2D> t = topology.as_torus2d()) return *t;
  throw InvalidArgument(fmt::format("{} runs on 2D shapes; topology {} has {} dimensions{}", who,
                                    topology.to_string(), topology.dimensions(),
                                    topology.twisted() ? " and a twist" : ""));
}

namespace {

// A ring or bidir_ring along one dimension runs on that line's own links (one_dimension.cpp: a
// line where the dimension does not close); every other collective along axes is the
// algorithm on the sub-torus (along.cpp).
bool runs_on_the_line(Algorithm a, const Spec& r, const Context& ctx) {
  if ((a != Algorithm::ring && a != Algorithm::bidir_ring) ||
      r.collective == Collective::broadcast || r.collective == Collective::alltoall)
    return false;
  int lines = 0;
  for (int d = 0; d < ctx.topology.dimensions(); ++d)
    lines += r.axes->has(d) && ctx.topology.size(d) > 1 ? 1 : 0;
  return lines <= 1;
}

// torus2d_both's 2D form (torus2d.cpp) serves one case the N-dimensional one (torus_dims.cpp)
// does not match: the all-reduce on two dimensions where one is a line of more than 2, whose
// parts it cuts into pieces by the line's pipeline and shares by its latency (128x32 with X a
// line). Everywhere else the N-dimensional form is as fast or faster: toroid-sim, f32, 1 KiB to
// 1 GiB by 4x (2026-12-07), tpu-v3-pod all-reduce 64 MiB 467 -> 449 us, 1 GiB 6.95 -> 6.77 ms;
// reduce-scatter / all-gather 1 GiB 3.77 -> 3.59 and 3.68 -> 3.37 ms; the multipod's
// reduce-scatter 16 MiB 262 -> 229 us, all-gather 64 MiB 437 -> 356 us; nothing slower. On
// the multipod the N-dimensional all-reduce took 1.1-2x as long.
bool two_d_line_allreduce(const Spec& r, const Context& ctx) {
  const std::optional<Torus2D> t = ctx.topology.as_torus2d();
  if (!t || r.collective != Collective::allreduce) return false;
  return long_line(*t, Axis::x) || long_line(*t, Axis::y);
}

}  // namespace

Schedule build(Algorithm a, const Spec& r, const Context& ctx) {
  const auto refuse = [&](std::string_view why) -> Schedule {
    throw InvalidArgument(fmt::format("algorithm {} cannot run {} on topology {}: {}", to_string(a),
                                      toroid::to_string(r.collective), ctx.topology.to_string(),
                                      why));
  };
  if (r.axes && !runs_on_the_line(a, r, ctx)) return build_along(a, r, ctx);
  if (r.collective == Collective::broadcast && !implements(a, r.collective))
    return refuse("broadcast runs on ring, torus2d, recursive_doubling, mpi or auto");
  if (r.collective == Collective::broadcast && (r.root < 0 || r.root >= ctx.nranks()))
    return refuse("the root is outside the communicator");
  if (r.collective == Collective::alltoall && !implements(a, r.collective))
    return refuse(
        "all-to-all runs on direct, bruck, ring, torus2d, torus2d_both, hierarchical, mpi or "
        "auto");
  if (r.collective == Collective::alltoall && r.in_place)
    return refuse("an all-to-all in place is not supported (give separate input and output)");
  if (r.collective == Collective::alltoall &&
      r.count % static_cast<std::uint64_t>(ctx.nranks()) != 0)
    return refuse(fmt::format("{} elements are not {} equal blocks", r.count, ctx.nranks()));
  if ((a == Algorithm::direct || a == Algorithm::bruck) && !implements(a, r.collective))
    return refuse("it only implements alltoall");
  if (!implements(a, r.collective)) return refuse("it only implements allreduce");
  Schedule s;
  if ((r.collective == Collective::broadcast || r.collective == Collective::alltoall) &&
      !has_schedule(a))
    return refuse("no schedule: resolved by the caller");
  if (r.collective == Collective::broadcast)
    s = build_broadcast(a, r, ctx);
  else if (r.collective == Collective::alltoall)
    s = build_alltoall(a, r, ctx);
  else
    switch (a) {
      case Algorithm::ring:
      case Algorithm::bidir_ring:
        s = build_one_dimension(a, r, ctx);
        break;
      case Algorithm::torus2d:
        s = build_torus_dims(false, r, ctx);
        break;
      case Algorithm::torus2d_both:
        s = two_d_line_allreduce(r, ctx) ? build_torus2d_both(r, ctx)
                                         : build_torus_dims(true, r, ctx);
        break;
      case Algorithm::hierarchical:
        s = build_hierarchical(r, ctx);
        break;
      case Algorithm::recursive_doubling:
      case Algorithm::rabenseifner:
        s = build_halving_doubling(a, r, ctx);
        break;
      case Algorithm::swing:
      case Algorithm::swing_latency:
        if (a == Algorithm::swing_latency && r.collective == Collective::allreduce)
          s = build_swing_latency_dims(r, ctx);  // any number of dimensions, combs included
        else if (ctx.topology.as_torus2d())
          s = build_swing(a, r, ctx);
        else if (r.collective != Collective::allreduce)
          return refuse(
              "swing_latency's reduce-scatter and all-gather run on 2D shapes so far (its "
              "all-reduce and Swing's run on any number of dimensions)");
        else
          s = build_swing_dims(r, ctx);
        break;
      case Algorithm::automatic:
      case Algorithm::mpi:
      case Algorithm::direct:  // all-to-all only, above
      case Algorithm::bruck:
        return refuse("no schedule: resolved by the caller");
    }
  s.algorithm = std::string(to_string(a));
  s.rank = ctx.rank;
  s.nranks = ctx.nranks();
  order_by_phase(s);
  // In place, reduce-scatter and all-reduce read the input where they write the output. An
  // in-place all-gather's input is its own block inside the output, which the builders name
  // as output; naming the input would alias at an offset the dependencies do not model.
  s.in_place = r.in_place && r.collective != Collective::allgather;
  if (r.in_place && r.collective == Collective::allgather)
    for (const Step& st : s.steps)
      if (st.src.buf == Buf::input && st.src.count > 0)
        throw std::logic_error("in-place all-gather schedule reads the input buffer: " +
                               describe(st));
  derive_dependencies(s);
  return s;
}

}  // namespace toroid::schedule
