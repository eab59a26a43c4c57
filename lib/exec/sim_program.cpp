#include "exec/sim_program.hpp"

#include <fmt/format.h>

#include "toroid/error.hpp"

namespace toroid::exec::sim {

Program compile(const schedule::Schedule& s, std::size_t elem_size, bool keep_phase_numbers) {
  using schedule::Kind;
  Program p;
  p.ops.reserve(s.steps.size());
  p.deps.reserve(s.deps.size());
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
    Op op;
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
        op.kind = OpKind::local;
        op.peer = -1;
        op.bytes = st.dst.count * elem_size;
        break;
    }
    op.dep_begin = static_cast<std::uint32_t>(p.deps.size());
    op.dep_count = static_cast<std::uint16_t>(st.dep_count);
    for (std::uint32_t k = 0; k < st.dep_count; ++k) {
      const schedule::Dep& d = s.deps[st.dep_begin + k];
      p.deps.push_back(d.step | (d.wait == schedule::Wait::follow ? kFollow : 0u));
    }
    if (keep_phase_numbers) p.phase_numbers.push_back(st.phase);
    p.ops.push_back(op);
  }
  return p;
}

}  // namespace toroid::exec::sim
