#include "schedule/buffers.hpp"

#include <cstring>

namespace toroid::schedule {

void BufferSet::copy(const Chunk& from, const Chunk& to) const {
  if (from.gathered() || to.gathered()) {
    // Run by run: each piece of the one side against the matching elements of the other.
    const Operand src = operand(from);
    each_run(to, pieces, 0, to.count, [&](std::uint64_t at, std::uint64_t pos, std::uint64_t n) {
      std::byte* out = writable(Chunk{to.buf, at, n});
      src.each(pos * elem_size, n * elem_size,
               [&](const std::byte* p, std::size_t o, std::size_t len) {
                 std::memmove(out + o, p, len);
               });
    });
    return;
  }
  const std::byte* src = readable(from);
  std::byte* dst = writable(to);
  if (src != dst) std::memmove(dst, src, to.count * elem_size);
}

}  // namespace toroid::schedule
