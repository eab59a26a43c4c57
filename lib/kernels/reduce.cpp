// Portable reduction kernels, written so the compiler vectorizes the native-type loops.
#include "kernels/reduce.hpp"

#include <cmath>
#include <cstring>
#include <type_traits>

namespace toroid::kernels {
namespace {

struct Sum { template <class T> static T apply(T a, T b) { return a + b; } };
struct Prod { template <class T> static T apply(T a, T b) { return a * b; } };
struct Min {
  template <class T> static T apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) return (a < b || a != a) ? a : b;
    else return a < b ? a : b;
  }
};
struct Max {
  template <class T> static T apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) return (a > b || a != a) ? a : b;
    else return a > b ? a : b;
  }
};

// Integer sum/prod wrap around (two's complement) instead of overflowing, as MPI does in practice.
template <class T, class Op>
T apply_wrapping(T a, T b) {
  if constexpr (std::is_integral_v<T> && (std::is_same_v<Op, Sum> || std::is_same_v<Op, Prod>)) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(Op::apply(static_cast<U>(a), static_cast<U>(b)));
  } else {
    return Op::apply(a, b);
  }
}

template <class T, class Op>
void native(void* dst, const void* a, const void* b, std::size_t n) {
  T* d = static_cast<T*>(dst);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (std::size_t i = 0; i < n; ++i) d[i] = apply_wrapping<T, Op>(x[i], y[i]);
}

template <class H, class Op>
void half(void* dst, const void* a, const void* b, std::size_t n) {
  H* d = static_cast<H*>(dst);
  const H* x = static_cast<const H*>(a);
  const H* y = static_cast<const H*>(b);
  for (std::size_t i = 0; i < n; ++i) {
    const float r = Op::apply(to_float(x[i]), to_float(y[i]));
    if constexpr (std::is_same_v<H, bfloat16>) d[i] = to_bfloat16(r);
    else d[i] = to_float16(r);
  }
}

template <class Op>
ReduceFn for_type(DataType type) {
  switch (type) {
    case DataType::f32: return native<float, Op>;
    case DataType::f64: return native<double, Op>;
    case DataType::i32: return native<std::int32_t, Op>;
    case DataType::i64: return native<std::int64_t, Op>;
    case DataType::f16: return half<float16, Op>;
    case DataType::bf16: return half<bfloat16, Op>;
  }
  return nullptr;
}

template <class T>
void divide_native(void* data, std::size_t n, T divisor) {
  T* d = static_cast<T*>(data);
  for (std::size_t i = 0; i < n; ++i) d[i] = d[i] / divisor;
}

template <class H>
void divide_half(void* data, std::size_t n, float divisor) {
  H* d = static_cast<H*>(data);
  for (std::size_t i = 0; i < n; ++i) {
    const float r = to_float(d[i]) / divisor;
    if constexpr (std::is_same_v<H, bfloat16>) d[i] = to_bfloat16(r);
    else d[i] = to_float16(r);
  }
}

}  // namespace

ReduceFn reduce_fn(DataType type, ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return for_type<Sum>(type);
    case ReduceOp::prod: return for_type<Prod>(type);
    case ReduceOp::min: return for_type<Min>(type);
    case ReduceOp::max: return for_type<Max>(type);
  }
  return nullptr;
}

void divide(DataType type, void* data, std::size_t n, std::uint32_t divisor) {
  switch (type) {
    case DataType::f32: return divide_native<float>(data, n, static_cast<float>(divisor));
    case DataType::f64: return divide_native<double>(data, n, static_cast<double>(divisor));
    case DataType::f16: return divide_half<float16>(data, n, static_cast<float>(divisor));
    case DataType::bf16: return divide_half<bfloat16>(data, n, static_cast<float>(divisor));
    case DataType::i32:
    case DataType::i64: return;  // rejected before any schedule runs
  }
}

}  // namespace toroid::kernels
