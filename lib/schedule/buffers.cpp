#include "schedule/buffers.hpp"

#include <cstring>

namespace toroid::schedule {

namespace {
void move_run(BufferSet::CopyBytes bytes, std::size_t from_bytes, std::byte* dst,
              const std::byte* src, std::size_t n) {
  if (n >= from_bytes && bytes && (dst + n <= src || src + n <= dst))
    bytes(dst, src, n);
  else
    std::memmove(dst, src, n);
}

// Run by run: each piece of the one side against the matching elements of the other. Kept out
// of BufferSet::copy, whose plain case (a small call's only copy) then needs no stack frame.
[[gnu::noinline]] void copy_gathered(const BufferSet& buf, const Chunk& from, const Chunk& to,
                                     BufferSet::CopyBytes bytes, std::size_t from_bytes) {
  const Operand src = buf.operand(from);
  each_run(to, buf.pieces, 0, to.count, [&](std::uint64_t at, std::uint64_t pos, std::uint64_t n) {
    std::byte* out = buf.writable(Chunk{to.buf, at, n});
    src.each(pos * buf.elem_size, n * buf.elem_size,
             [&](const std::byte* p, std::size_t o, std::size_t len) {
               move_run(bytes, from_bytes, out + o, p, len);
             });
  });
}
}  // namespace

void BufferSet::copy(const Chunk& from, const Chunk& to, CopyBytes bytes,
                     std::size_t from_bytes) const {
  if (from.gathered() || to.gathered()) return copy_gathered(*this, from, to, bytes, from_bytes);
  const std::byte* src = readable(from);
  std::byte* dst = writable(to);
  if (src != dst) move_run(bytes, from_bytes, dst, src, to.count * elem_size);
}

}  // namespace toroid::schedule
