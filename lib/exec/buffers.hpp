// Binds a schedule's buffer ids to memory.
#pragma once

#include <cstddef>

#include "schedule/step.hpp"

namespace toroid::exec {

struct BufferSet {
  const std::byte* input = nullptr;
  std::byte* output = nullptr;
  std::byte* scratch = nullptr;
  std::size_t elem_size = 1;

  // Writable address of a chunk. Only output and scratch are ever written by a schedule; in
  // place, input and output are the same memory.
  std::byte* writable(const schedule::Chunk& c) const {
    return (c.buf == schedule::Buf::scratch ? scratch : output) + c.offset * elem_size;
  }
  const std::byte* readable(const schedule::Chunk& c) const {
    const std::byte* base = c.buf == schedule::Buf::input    ? input
                            : c.buf == schedule::Buf::output ? output
                                                             : scratch;
    return base + c.offset * elem_size;
  }
};

}  // namespace toroid::exec
