#include "model/sim_program.hpp"

#include <fmt/format.h>

#include "toroid/error.hpp"

namespace toroid::model::sim {

void append(Programs& p, const schedule::Schedule& s, std::size_t elem_size) {
  using schedule::Kind;
  const bool keep_phases = p.ranks() == 0 || p.every_phase;
  if (p.deps.size() + s.deps.size() > UINT32_MAX)
    throw InvalidArgument("simulator: more than 2^32 dependencies in all");
  for (std::size_t i = 0; i < s.steps.size(); ++i) {
    const schedule::Step& st = s.steps[i];
    if (i > 0 && st.phase < s.steps[i - 1].phase)
      throw InvalidArgument(fmt::format("simulator: rank {}: steps out of phase order at {}",
                                        s.rank, schedule::describe(st)));
    if (st.tag < 0 || st.tag > 0xffff)
      throw InvalidArgument(
          fmt::format("simulator: rank {}: tag {} outside 0..65535", s.rank, st.tag));
    if (st.dep_count > 0xffff)
      throw InvalidArgument(
          fmt::format("simulator: rank {}: {} dependencies on one step", s.rank, st.dep_count));
    Instr op;
    op.peer = st.peer;
    op.tag = static_cast<std::uint16_t>(st.tag);
    switch (st.kind) {
      case Kind::send:
        op.kind = OpKind::send;
        op.bytes = st.src.count * elem_size;
        break;
      case Kind::recv:
        op.kind = OpKind::recv;
        op.bytes = st.dst.count * elem_size;
        break;
      case Kind::recv_reduce:
        op.kind = OpKind::recv_reduce;
        op.bytes = st.dst.count * elem_size;
        break;
      case Kind::copy:
      case Kind::scale:
      case Kind::reduce:
        op.kind = OpKind::local;
        if (st.kind == Kind::scale) op.flags = kScale;
        op.peer = -1;
        op.bytes = st.dst.count * elem_size;
        break;
    }
    op.dep_begin = static_cast<std::uint32_t>(p.deps.size());
    op.dep_count = static_cast<std::uint16_t>(st.dep_count);
    for (std::uint32_t k = 0; k < st.dep_count; ++k) {
      const schedule::Dep& d = s.deps[st.dep_begin + k];
      p.deps.push_back(d.step | (schedule::lets_go_on_start(d.wait) ? kFollow : 0u));
      if (d.wait == schedule::Wait::follow) op.follows = op.follows == kNone ? d.step : kMany;
    }
    if (keep_phases) p.phase_numbers.push_back(st.phase);
    p.ops.push_back(op);
  }
  p.begin.push_back(p.ops.size());
}

}  // namespace toroid::model::sim
