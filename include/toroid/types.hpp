// Element types and reduction operations understood by toroid.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "toroid/export.hpp"

TOROID_API_BEGIN
namespace toroid {

// 16-bit floating types are plain bit containers: arithmetic happens in f32 inside the kernels,
// so the public types only need to carry bits and convert.
struct bfloat16 {
  std::uint16_t bits = 0;
};
struct float16 {
  std::uint16_t bits = 0;
};

enum class DataType : std::uint8_t { f32, f64, f16, bf16, i32, i64 };
enum class ReduceOp : std::uint8_t { sum, prod, min, max, avg };

// Inline: every call asks it, and a call into the library for a table lookup costs more than
// the lookup.
constexpr std::size_t size_of(DataType t) noexcept {
  switch (t) {
    case DataType::f32:
    case DataType::i32:
      return 4;
    case DataType::f64:
    case DataType::i64:
      return 8;
    case DataType::f16:
    case DataType::bf16:
      return 2;
  }
  return 0;
}
constexpr bool is_floating(DataType t) noexcept { return t != DataType::i32 && t != DataType::i64; }
std::string_view to_string(DataType t) noexcept;
std::string_view to_string(ReduceOp op) noexcept;
// Parse "f32", "bf16", ... / "sum", "avg", ...; throw InvalidArgument naming the bad text.
DataType parse_data_type(std::string_view text);
ReduceOp parse_reduce_op(std::string_view text);

// Scalar conversions (round-to-nearest-even on narrowing; NaN stays NaN).
float to_float(bfloat16 v) noexcept;
float to_float(float16 v) noexcept;
bfloat16 to_bfloat16(float v) noexcept;
float16 to_float16(float v) noexcept;

template <class T>
struct data_type_of;
template <>
struct data_type_of<float> {
  static constexpr DataType value = DataType::f32;
};
template <>
struct data_type_of<double> {
  static constexpr DataType value = DataType::f64;
};
template <>
struct data_type_of<float16> {
  static constexpr DataType value = DataType::f16;
};
template <>
struct data_type_of<bfloat16> {
  static constexpr DataType value = DataType::bf16;
};
template <>
struct data_type_of<std::int32_t> {
  static constexpr DataType value = DataType::i32;
};
template <>
struct data_type_of<std::int64_t> {
  static constexpr DataType value = DataType::i64;
};
template <class T>
inline constexpr DataType data_type_v = data_type_of<T>::value;

}  // namespace toroid
TOROID_API_END
