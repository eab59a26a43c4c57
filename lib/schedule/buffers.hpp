// Binds a schedule's buffer ids to memory.
#pragma once

#include <algorithm>
#include <cstddef>

#include "schedule/step.hpp"

namespace toroid::schedule {

// A step's chunk as a transfer reads or writes it: one address, or the runs of a gathered
// chunk (a send's or recv_reduce's source, a receive's or recv_reduce's destination). `Byte`
// is const for a source.
template <class Byte>
struct Runs {
  Byte* base = nullptr;         // contiguous: the chunk's first byte; gathered: the buffer's
  const Block* runs = nullptr;  // gathered: its runs, in elements from base
  std::uint32_t nruns = 0;
  std::size_t elem_size = 1;

  bool gathered() const noexcept { return runs != nullptr; }
  // Calls f(address, offset from lo, bytes) for each run of the chunk's bytes [lo, lo + len).
  template <class F>
  void each(std::size_t lo, std::size_t len, F&& f) const {
    if (!runs) {
      f(base + lo, std::size_t{0}, len);
      return;
    }
    std::size_t at = 0;  // byte position of run k in the chunk
    for (std::uint32_t k = 0; k < nruns && at < lo + len; ++k) {
      const std::size_t n = runs[k].count * elem_size;
      const std::size_t from = std::max(lo, at), to = std::min(lo + len, at + n);
      if (from < to) f(base + runs[k].offset * elem_size + (from - at), from - lo, to - from);
      at += n;
    }
  }
};
using Operand = Runs<const std::byte>;  // read
using Destination = Runs<std::byte>;    // written

// Calls f(destination address, operand address, offset from lo, bytes) for each piece of bytes
// [lo, lo + len) that lies in one run of both (a recv_reduce's destination and local operand,
// either or both gathered, in runs that may be cut at different places).
template <class F>
void each_pair(const Destination& dst, const Operand& src, std::size_t lo, std::size_t len, F&& f) {
  dst.each(lo, len, [&](std::byte* d, std::size_t od, std::size_t nd) {
    src.each(lo + od, nd,
             [&](const std::byte* p, std::size_t o, std::size_t n) { f(d + o, p, od + o, n); });
  });
}

struct BufferSet {
  const std::byte* input = nullptr;
  std::byte* output = nullptr;
  std::byte* scratch = nullptr;
  std::size_t elem_size = 1;
  const Block* pieces = nullptr;  // the bound schedule's Schedule::pieces (gathered chunks)

  // Writable address of a chunk. Only output and scratch are ever written by a schedule; in
  // place, input and output are the same memory.
  std::byte* writable(const Chunk& c) const {
    return (c.buf == Buf::scratch ? scratch : output) + c.offset * elem_size;
  }
  const std::byte* readable(const Chunk& c) const {
    const std::byte* base = c.buf == Buf::input ? input : c.buf == Buf::output ? output : scratch;
    return base + c.offset * elem_size;
  }
  Operand operand(const Chunk& c) const {
    if (!c.gathered()) return {readable(c), nullptr, 0, elem_size};
    return {readable(Chunk{c.buf, 0, 0}), pieces + c.first_piece, c.pieces, elem_size};
  }
  Destination destination(const Chunk& c) const {
    if (!c.gathered()) return {writable(c), nullptr, 0, elem_size};
    return {writable(Chunk{c.buf, 0, 0}), pieces + c.first_piece, c.pieces, elem_size};
  }
  // Copies a chunk's elements to another chunk of the same count (either may be gathered), each
  // run of at least `from_bytes` by `bytes(dst, src, n)` where the two runs do not overlap, the
  // rest by memmove.
  using CopyBytes = void (*)(void* dst, const void* src, std::size_t n);
  void copy(const Chunk& from, const Chunk& to, CopyBytes bytes = nullptr,
            std::size_t from_bytes = 0) const;
};

}  // namespace toroid::schedule
