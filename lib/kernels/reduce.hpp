// Reduction kernels used by every executor: dst = a op b, elementwise.
// f16/bf16 are computed in f32 and rounded to nearest-even on store. min/max propagate NaN
// (if either operand is NaN the result is NaN; when both are, a's NaN, quieted). avg reduces as
// sum; the final division is `divide`. Integer sum/prod wrap around (two's complement).
//
// Every function here runs the kernels of the ISA level chosen once per process (see isa.hpp and
// dispatch.cpp); all levels give bit-identical results.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "toroid/types.hpp"

namespace toroid::kernels {

// dst may alias a or b exactly (in-place); partial overlap is not allowed.
using ReduceFn = void (*)(void* dst, const void* a, const void* b, std::size_t n);
// dst = copy = a op b in one pass (the last reduce-scatter step that also fills the output).
// dst may alias a or b exactly; copy must not overlap dst, a or b.
using ReduceCopyFn = void (*)(void* dst, void* copy, const void* a, const void* b, std::size_t n);

// memcpy with non-temporal stores where the level has them (scalar: memcpy): for data written
// once and not read again soon, so it does not first read every destination line into the cache
// and push other data out; ends with a store fence. dst and src must not overlap.
using CopyFn = void (*)(void* dst, const void* src, std::size_t bytes);

// memcpy by this level's vector loop (the scalar level: SSE2 where the target has it), for the
// data path's copies of 2 KiB and more (kCopyLoopBytes). glibc's memcpy (2.36, Debian 12)
// copies from about 4 KiB to about 1 MiB with `rep movsb`, which on CPUs with fast short rep
// moves (AMD EPYC here) runs about 15x slower, 3 against 45-50 GB/s, when dst - src is 1 to 31
// bytes past a multiple of 4 KiB. Two vectors that glibc placed one after the other on its heap
// lie exactly 16 bytes past such a multiple apart when their size is a multiple of 4 KiB, so
// ordinary buffers met it: a 2-rank all-gather of 256 KiB took 60 instead of 21 us, its local
// copy of the rank's own block 43 instead of 4 (docs/performance.md). dst and src must not
// overlap.
CopyFn copy_fn();
inline constexpr std::size_t kCopyLoopBytes = 2048;  // below this glibc never uses rep movsb
// memcpy below kCopyLoopBytes (its small-size paths, inlined), `loop` (copy_fn(), held by a
// hot path) from there; the second form looks the loop up itself.
inline void copy(CopyFn loop, void* dst, const void* src, std::size_t bytes) {
  if (bytes < kCopyLoopBytes)
    std::memcpy(dst, src, bytes);
  else
    loop(dst, src, bytes);
}
inline void copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes < kCopyLoopBytes)
    std::memcpy(dst, src, bytes);
  else
    copy_fn()(dst, src, bytes);
}

ReduceFn reduce_fn(DataType type, ReduceOp op);
CopyFn copy_stream_fn();
ReduceCopyFn reduce_copy_fn(DataType type, ReduceOp op);
// data[i] = data[i] / divisor (integers: not supported, callers reject avg on integers first).
void divide(DataType type, void* data, std::size_t n, std::uint32_t divisor);

}  // namespace toroid::kernels
