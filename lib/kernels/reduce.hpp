// Reduction kernels used by every executor: dst = a op b, elementwise.
// f16/bf16 are computed in f32 and rounded to nearest-even on store. min/max propagate NaN
// (if either operand is NaN the result is NaN). avg reduces as sum; the final division is scale.
#pragma once

#include <cstddef>
#include <cstdint>

#include "toroid/types.hpp"

namespace toroid::kernels {

// dst may alias a or b exactly (in-place); partial overlap is not allowed.
using ReduceFn = void (*)(void* dst, const void* a, const void* b, std::size_t n);

ReduceFn reduce_fn(DataType type, ReduceOp op);
// data[i] = data[i] / divisor (integers: not supported, callers reject avg on integers first).
void divide(DataType type, void* data, std::size_t n, std::uint32_t divisor);

}  // namespace toroid::kernels
