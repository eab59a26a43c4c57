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

ReduceFn reduce_fn(DataType type, ReduceOp op);
CopyFn copy_stream_fn();
ReduceCopyFn reduce_copy_fn(DataType type, ReduceOp op);
// data[i] = data[i] / divisor (integers: not supported, callers reject avg on integers first).
void divide(DataType type, void* data, std::size_t n, std::uint32_t divisor);

}  // namespace toroid::kernels
