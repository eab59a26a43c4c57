// Bulk conversions between f32 and the 16-bit float containers, at the active ISA level.
// Narrowing rounds to nearest-even, NaN stays NaN (quieted): the same bits as the scalar
// to_bfloat16 / to_float16 of toroid/types.hpp, element by element. Source and destination
// must not overlap.
#pragma once

#include <cstddef>

#include "toroid/types.hpp"

namespace toroid::kernels {

void convert(const float* src, bfloat16* dst, std::size_t n);
void convert(const float* src, float16* dst, std::size_t n);
void convert(const bfloat16* src, float* dst, std::size_t n);
void convert(const float16* src, float* dst, std::size_t n);

}  // namespace toroid::kernels
