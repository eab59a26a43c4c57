// Bulk f32 <-> 16-bit float conversions at the active level.
#include "kernels/convert.hpp"

#include "kernels/table.hpp"

namespace toroid::kernels {

void convert(const float* src, bfloat16* dst, std::size_t n) {
  active_kernels().f32_to_bf16(src, dst, n);
}
void convert(const float* src, float16* dst, std::size_t n) {
  active_kernels().f32_to_f16(src, dst, n);
}
void convert(const bfloat16* src, float* dst, std::size_t n) {
  active_kernels().bf16_to_f32(src, dst, n);
}
void convert(const float16* src, float* dst, std::size_t n) {
  active_kernels().f16_to_f32(src, dst, n);
}

}  // namespace toroid::kernels
