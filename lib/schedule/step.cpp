// Printable forms of steps, and the phase order of a schedule.
#include "schedule/step.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace toroid::schedule {
namespace {
std::string_view buf_name(Buf b) {
  switch (b) {
    case Buf::input:
      return "in";
    case Buf::output:
      return "out";
    case Buf::scratch:
      return "scratch";
  }
  return "?";
}
std::string chunk(const Chunk& c) {
  if (c.gathered())
    return fmt::format("{}[{}+{} in {} pieces over {}]", buf_name(c.buf), c.offset, c.count,
                       c.pieces, c.extent);
  return fmt::format("{}[{}+{}]", buf_name(c.buf), c.offset, c.count);
}
}  // namespace

std::string_view to_string(Kind k) noexcept {
  switch (k) {
    case Kind::send:
      return "send";
    case Kind::recv:
      return "recv";
    case Kind::recv_reduce:
      return "recv_reduce";
    case Kind::copy:
      return "copy";
    case Kind::scale:
      return "scale";
    case Kind::reduce:
      return "reduce";
  }
  return "?";
}

std::string describe(const Step& s) {
  switch (s.kind) {
    case Kind::send:
      return fmt::format("phase {} send {} to {} tag {}", s.phase, chunk(s.src), s.peer, s.tag);
    case Kind::recv:
      return fmt::format("phase {} recv {} from {} tag {}", s.phase, chunk(s.dst), s.peer, s.tag);
    case Kind::recv_reduce:
      return fmt::format("phase {} recv_reduce {} = {} op from {} tag {}", s.phase, chunk(s.dst),
                         chunk(s.src), s.peer, s.tag);
    case Kind::copy:
      return fmt::format("phase {} copy {} -> {}", s.phase, chunk(s.src), chunk(s.dst));
    case Kind::scale:
      return fmt::format("phase {} scale {} / {}", s.phase, chunk(s.dst), s.divisor);
    case Kind::reduce:
      return fmt::format("phase {} reduce {} op= {}", s.phase, chunk(s.dst), chunk(s.src));
  }
  return "?";
}

void order_by_phase(Schedule& s) {
  const auto earlier = [](const Step& x, const Step& y) { return x.phase < y.phase; };
  // Most builders emit in order already; a stable sort would still copy every step twice.
  if (!std::is_sorted(s.steps.begin(), s.steps.end(), earlier))
    std::stable_sort(s.steps.begin(), s.steps.end(), earlier);
}

}  // namespace toroid::schedule
