#include "schedule/buffers.hpp"

#include <cstring>

namespace toroid::schedule {

namespace {
void move_run(BufferSet::CopyBytes bytes, std::byte* dst, const std::byte* src, std::size_t n) {
  if (dst == src) return;
  if (bytes && (dst + n <= src || src + n <= dst))
    bytes(dst, src, n);
  else
    std::memmove(dst, src, n);
}
}  // namespace

void BufferSet::copy(const Chunk& from, const Chunk& to, CopyBytes bytes) const {
  if (from.gathered() || to.gathered()) {
    // Run by run: each piece of the one side against the matching elements of the other.
    const Operand src = operand(from);
    each_run(to, pieces, 0, to.count, [&](std::uint64_t at, std::uint64_t pos, std::uint64_t n) {
      std::byte* out = writable(Chunk{to.buf, at, n});
      src.each(pos * elem_size, n * elem_size,
               [&](const std::byte* p, std::size_t o, std::size_t len) {
                 move_run(bytes, out + o, p, len);
               });
    });
    return;
  }
  const std::byte* src = readable(from);
  std::byte* dst = writable(to);
  move_run(bytes, dst, src, to.count * elem_size);
}

}  // namespace toroid::schedule
