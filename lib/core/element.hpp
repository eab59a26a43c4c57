// Reading and writing one element of any DataType as a double (tests, checks, references).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "toroid/types.hpp"

namespace toroid {

inline void store_as(DataType t, std::byte* p, double v) {
  auto put = [p](auto x) { std::memcpy(p, &x, sizeof x); };
  switch (t) {
    case DataType::f32:
      return put(static_cast<float>(v));
    case DataType::f64:
      return put(v);
    case DataType::f16:
      return put(to_float16(static_cast<float>(v)));
    case DataType::bf16:
      return put(to_bfloat16(static_cast<float>(v)));
    case DataType::i32:
      return put(static_cast<std::int32_t>(v));
    case DataType::i64:
      return put(static_cast<std::int64_t>(v));
  }
}

inline double load_as_double(DataType t, const std::byte* p) {
  auto get = [p](auto x) {
    std::memcpy(&x, p, sizeof x);
    return x;
  };
  switch (t) {
    case DataType::f32:
      return get(float{});
    case DataType::f64:
      return get(double{});
    case DataType::f16:
      return to_float(get(float16{}));
    case DataType::bf16:
      return to_float(get(bfloat16{}));
    case DataType::i32:
      return get(std::int32_t{});
    case DataType::i64:
      return static_cast<double>(get(std::int64_t{}));
  }
  return 0;
}

// Small integers whose sums, products, minima and maxima over up to 64 ranks are exact in every
// type (products: mostly 1, some -1, rarely 2).
inline double exact_input(ReduceOp op, int rank, std::uint64_t i) {
  if (op == ReduceOp::prod) {
    const std::uint64_t h = (static_cast<std::uint64_t>(rank) * 2654435761u + i * 40503u) % 16;
    return h == 0 ? 2.0 : h == 1 ? -1.0 : 1.0;
  }
  return static_cast<double>((static_cast<std::uint64_t>(rank) * 7 + i * 3) % 11) - 5.0;
}

}  // namespace toroid
