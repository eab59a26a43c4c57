// Names, sizes and scalar conversions of toroid's element types.
#include "toroid/types.hpp"

#include <bit>
#include <cmath>

#include "toroid/error.hpp"

namespace toroid {

std::string_view to_string(DataType t) noexcept {
  switch (t) {
    case DataType::f32:
      return "f32";
    case DataType::f64:
      return "f64";
    case DataType::f16:
      return "f16";
    case DataType::bf16:
      return "bf16";
    case DataType::i32:
      return "i32";
    case DataType::i64:
      return "i64";
  }
  return "?";
}

std::string_view to_string(ReduceOp op) noexcept {
  switch (op) {
    case ReduceOp::sum:
      return "sum";
    case ReduceOp::prod:
      return "prod";
    case ReduceOp::min:
      return "min";
    case ReduceOp::max:
      return "max";
    case ReduceOp::avg:
      return "avg";
  }
  return "?";
}

DataType parse_data_type(std::string_view text) {
  for (DataType t :
       {DataType::f32, DataType::f64, DataType::f16, DataType::bf16, DataType::i32, DataType::i64})
    if (text == to_string(t)) return t;
  throw InvalidArgument("unknown data type '" + std::string(text) +
                        "' (valid: f32, f64, f16, bf16, i32, i64)");
}

ReduceOp parse_reduce_op(std::string_view text) {
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max, ReduceOp::avg})
    if (text == to_string(op)) return op;
  throw InvalidArgument("unknown reduction op '" + std::string(text) +
                        "' (valid: sum, prod, min, max, avg)");
}

float to_float(bfloat16 v) noexcept {
  return std::bit_cast<float>(static_cast<std::uint32_t>(v.bits) << 16);
}

bfloat16 to_bfloat16(float f) noexcept {
  std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return {static_cast<std::uint16_t>((u >> 16) | 0x40)};
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even
  return {static_cast<std::uint16_t>(u >> 16)};
}

float to_float(float16 v) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(v.bits & 0x8000u) << 16;
  const std::uint32_t exp = (v.bits >> 10) & 0x1fu;
  const std::uint32_t man = v.bits & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (man << 13));
  if (exp != 0) return std::bit_cast<float>(sign | ((exp + 112) << 23) | (man << 13));
  // Zero or subnormal: value = man * 2^-24, exact in f32.
  const float mag = static_cast<float>(man) * 0x1p-24f;
  return sign ? -mag : mag;
}

float16 to_float16(float f) noexcept {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const std::uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u)
    return {static_cast<std::uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu))};
  if (abs >= 0x477ff000u) return {static_cast<std::uint16_t>(sign | 0x7c00u)};  // rounds to Inf
  if (abs >= 0x38800000u) {                                                     // normal f16 range
    std::uint32_t r = abs - 0x38000000u;  // rebias exponent 127 -> 15
    r += 0xfffu + ((r >> 13) & 1u);
    return {static_cast<std::uint16_t>(sign | (r >> 13))};
  }
  // Subnormal or zero in f16: scale so the rounding happens in the f32 adder (ties to even).
  const float scaled = std::bit_cast<float>(abs) * 0x1p24f;
  return {static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(std::nearbyint(scaled)))};
}

}  // namespace toroid
