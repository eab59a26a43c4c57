#include "schedule/group.hpp"

#include <algorithm>
#include <stdexcept>

namespace toroid::schedule {

Group group_of(std::vector<int> members, int me) {
  Group g;
  const auto it = std::find(members.begin(), members.end(), me);
  if (it == members.end()) throw std::logic_error("group_of: rank is not a member");
  g.position = static_cast<int>(it - members.begin());
  g.members = std::move(members);
  return g;
}

Blocks even_blocks(std::uint64_t offset, std::uint64_t count, int p) {
  Blocks b(p);
  for (int j = 0; j < p; ++j) {
    b[j] = block_of(count, p, j);
    b[j].offset += offset;
  }
  return b;
}

Blocks first_halves(const Blocks& b) {
  Blocks h(b.size());
  for (std::size_t j = 0; j < b.size(); ++j) h[j] = {b[j].offset, b[j].count - b[j].count / 2};
  return h;
}

Blocks second_halves(const Blocks& b) {
  Blocks h(b.size());
  for (std::size_t j = 0; j < b.size(); ++j) {
    const std::uint64_t first = b[j].count - b[j].count / 2;
    h[j] = {b[j].offset + first, b[j].count / 2};
  }
  return h;
}

Chunk first_half(Chunk c) { return {c.buf, c.offset, c.count - c.count / 2}; }
Chunk second_half(Chunk c) {
  const std::uint64_t first = c.count - c.count / 2;
  return {c.buf, c.offset + first, c.count / 2};
}

bool append_move(Schedule& s, Chunk from, Chunk to, std::uint32_t phase) {
  if (from.count == 0 || (from.buf == to.buf && from.offset == to.offset)) return false;
  s.steps.push_back({Kind::copy, -1, 0, phase, from, to});
  return true;
}

std::uint32_t append_average(Schedule& s, bool average, Chunk c, std::uint32_t divisor,
                             std::uint32_t phase) {
  if (!average || c.count == 0 || divisor <= 1) return phase;
  s.steps.push_back({Kind::scale, -1, 0, phase, {}, c, divisor});
  return phase + 1;
}

}  // namespace toroid::schedule
