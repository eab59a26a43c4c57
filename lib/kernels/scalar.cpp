// The portable level: plain loops the compiler vectorizes for the baseline ISA where it can.
// These are the reference every SIMD level is tested against, bit for bit.
#include <cmath>
#include <cstring>
#include <type_traits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "kernels/optimizer_loops.hpp"
#include "kernels/simd_loops.hpp"
#include "kernels/table.hpp"

namespace toroid::kernels {
namespace {

struct Sum {
  template <class T>
  static T apply(T a, T b) {
    return a + b;
  }
};
struct Prod {
  template <class T>
  static T apply(T a, T b) {
    return a * b;
  }
};
struct Min {
  template <class T>
  static T apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>)
      return (a < b || a != a) ? a : b;
    else
      return a < b ? a : b;
  }
};
struct Max {
  template <class T>
  static T apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>)
      return (a > b || a != a) ? a : b;
    else
      return a > b ? a : b;
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

// Native types compute as themselves; 16-bit floats widen to f32 and round back on store.
template <class T>
struct Compute {
  static T load(T v) { return v; }
  static T store(T v) { return v; }
};
template <>
struct Compute<bfloat16> {
  static float load(bfloat16 v) { return to_float(v); }
  static bfloat16 store(float v) { return to_bfloat16(v); }
};
template <>
struct Compute<float16> {
  static float load(float16 v) { return to_float(v); }
  static float16 store(float v) { return to_float16(v); }
};

template <class T, class Op>
T combine(T x, T y) {
  using C = Compute<T>;
  return C::store(apply_wrapping<decltype(C::load(x)), Op>(C::load(x), C::load(y)));
}

template <class T, class Op>
void reduce(void* dst, const void* a, const void* b, std::size_t n) {
  T* d = static_cast<T*>(dst);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (std::size_t i = 0; i < n; ++i) d[i] = combine<T, Op>(x[i], y[i]);
}

template <class T, class Op>
void reduce_copy(void* dst, void* copy, const void* a, const void* b, std::size_t n) {
  T* d = static_cast<T*>(dst);
  T* c = static_cast<T*>(copy);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (std::size_t i = 0; i < n; ++i) c[i] = d[i] = combine<T, Op>(x[i], y[i]);
}

template <class T>
void divide(void* data, std::size_t n, std::uint32_t divisor) {
  using C = Compute<T>;
  using F = decltype(C::load(T{}));
  T* d = static_cast<T*>(data);
  const F div = static_cast<F>(divisor);
  for (std::size_t i = 0; i < n; ++i) d[i] = C::store(C::load(d[i]) / div);
}
void divide_nothing(void*, std::size_t, std::uint32_t) {}  // integers: rejected before any run

template <class From, class To>
void convert(const void* src, void* dst, std::size_t n) {
  const From* s = static_cast<const From*>(src);
  To* d = static_cast<To*>(dst);
  for (std::size_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<To, bfloat16>)
      d[i] = to_bfloat16(s[i]);
    else if constexpr (std::is_same_v<To, float16>)
      d[i] = to_float16(s[i]);
    else
      d[i] = to_float(s[i]);
  }
}

template <class T>
void fill_type(KernelTable& t, DataType type) {
  const int i = KernelTable::index(type);
  t.reduce[i][0] = reduce<T, Sum>;
  t.reduce[i][1] = reduce<T, Prod>;
  t.reduce[i][2] = reduce<T, Min>;
  t.reduce[i][3] = reduce<T, Max>;
  t.reduce_copy[i][0] = reduce_copy<T, Sum>;
  t.reduce_copy[i][1] = reduce_copy<T, Prod>;
  t.reduce_copy[i][2] = reduce_copy<T, Min>;
  t.reduce_copy[i][3] = reduce_copy<T, Max>;
  if constexpr (std::is_integral_v<T>)
    t.divide[i] = divide_nothing;
  else
    t.divide[i] = divide<T>;
}

// One float per "register": the optimizer loops then run element by element, in the same
// operation order as every SIMD level.
struct ScalarLanes {
  using Vec = float;
  using Acc = double;
  static constexpr std::size_t kLanes = 1;
  static float load(const float* p) { return *p; }
  static void store(float* p, float v) { *p = v; }
  static float load_n(const float* p, std::size_t) { return *p; }  // never called: no tails
  static void store_n(float* p, float v, std::size_t) { *p = v; }
  static float add(float a, float b) { return a + b; }
  static float sub(float a, float b) { return a - b; }
  static float mul(float a, float b) { return a * b; }
  static float div(float a, float b) { return a / b; }
  static float sqrt(float a) { return std::sqrt(a); }
  static float set1(float x) { return x; }
  static double acc_zero() { return 0.0; }
  static double acc_squares(double acc, float v) { return acc + static_cast<double>(v) * v; }
  static double acc_total(double acc) { return acc; }
};

void copy_plain(void* dst, const void* src, std::size_t bytes) { std::memcpy(dst, src, bytes); }

#if defined(__SSE2__)
// SSE2 is part of x86-64 itself, so even this level need not meet glibc's rep movsb
// (reduce.hpp): simd::copy over 16-byte registers.
struct Bytes {
  static constexpr std::size_t kWidth = 16;
  static __m128i load(const unsigned char* p) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  }
  static void store(unsigned char* p, __m128i v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v);
  }
};
constexpr CopyFn kCopy = simd::copy<Bytes>;
#else
constexpr CopyFn kCopy = copy_plain;
#endif

KernelTable make_table() {
  KernelTable t{};
  t.isa = Isa::scalar;
  fill_type<float>(t, DataType::f32);
  fill_type<double>(t, DataType::f64);
  fill_type<float16>(t, DataType::f16);
  fill_type<bfloat16>(t, DataType::bf16);
  fill_type<std::int32_t>(t, DataType::i32);
  fill_type<std::int64_t>(t, DataType::i64);
  t.f32_to_bf16 = convert<float, bfloat16>;
  t.f32_to_f16 = convert<float, float16>;
  t.bf16_to_f32 = convert<bfloat16, float>;
  t.f16_to_f32 = convert<float16, float>;
  t.optimizer = opt::make_optimizer_kernels<ScalarLanes>();
  t.copy = kCopy;
  t.copy_stream = copy_plain;
  return t;
}

}  // namespace

const KernelTable& scalar_table() {
  static const KernelTable table = make_table();
  return table;
}

}  // namespace toroid::kernels
