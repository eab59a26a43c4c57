// The loops every SIMD level shares, written once over a "lane traits" class V that one ISA file
// supplies per element type:
//
//   Elem, Vec, kLanes        storage type, register type, elements per register
//   load/store               kLanes elements, any alignment (16-bit floats widen to f32 / round)
//   load_n/store_n           the first n < kLanes elements (tails; loads fill the rest with zero)
//   add mul min max          the four reductions, with the scalar level's exact semantics
//   div                      x / divisor as the scalar level computes it (floating types only)
//
// Include this only from an ISA file, after defining the traits in an unnamed namespace: every
// instantiation then has internal linkage, so no function compiled for AVX-512 can be merged by
// the linker into code that runs on a lesser CPU. For the same reason nothing here calls an
// inline library function (std::min and friends would be emitted as shared weak symbols).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/table.hpp"

namespace toroid::kernels::simd {

struct Sum {
  template <class V>
  static typename V::Vec apply(typename V::Vec a, typename V::Vec b) {
    return V::add(a, b);
  }
};
struct Prod {
  template <class V>
  static typename V::Vec apply(typename V::Vec a, typename V::Vec b) {
    return V::mul(a, b);
  }
};
struct Min {
  template <class V>
  static typename V::Vec apply(typename V::Vec a, typename V::Vec b) {
    return V::min(a, b);
  }
};
struct Max {
  template <class V>
  static typename V::Vec apply(typename V::Vec a, typename V::Vec b) {
    return V::max(a, b);
  }
};

template <class V>
inline const std::byte* at(const void* p, std::size_t i) {
  return static_cast<const std::byte*>(p) + i * sizeof(typename V::Elem);
}
template <class V>
inline std::byte* at(void* p, std::size_t i) {
  return static_cast<std::byte*>(p) + i * sizeof(typename V::Elem);
}

// Elements to handle before `dst` sits on a register-width boundary, so the main loop's stores
// never split a cache line (loads may; they are cheaper to split). Zero when dst is not even
// element-aligned or n is too short to gain from it.
template <class V>
inline std::size_t head_count(const void* dst, std::size_t n) {
  constexpr std::size_t width = V::kLanes * sizeof(typename V::Elem);
  const auto addr = reinterpret_cast<std::uintptr_t>(dst);
  if (n < 8 * V::kLanes || addr % sizeof(typename V::Elem) != 0) return 0;
  return ((width - addr % width) % width) / sizeof(typename V::Elem);
}

// out(i, v) stores the result v of elements [i, i + kLanes) (or the first `len` of them).
template <class V, class Op, class Out>
inline void reduce_loop(const void* a, const void* b, std::size_t n, std::size_t head, Out out) {
  constexpr std::size_t L = V::kLanes;
  std::size_t i = 0;
  if (head) {
    out.partial(0, Op::template apply<V>(V::load_n(a, head), V::load_n(b, head)), head);
    i = head;
  }
  // Four independent registers per turn keep enough loads in flight to reach memory speed.
  for (; i + 4 * L <= n; i += 4 * L) {
    const auto a0 = V::load(at<V>(a, i)), a1 = V::load(at<V>(a, i + L));
    const auto a2 = V::load(at<V>(a, i + 2 * L)), a3 = V::load(at<V>(a, i + 3 * L));
    const auto b0 = V::load(at<V>(b, i)), b1 = V::load(at<V>(b, i + L));
    const auto b2 = V::load(at<V>(b, i + 2 * L)), b3 = V::load(at<V>(b, i + 3 * L));
    out.full(i, Op::template apply<V>(a0, b0));
    out.full(i + L, Op::template apply<V>(a1, b1));
    out.full(i + 2 * L, Op::template apply<V>(a2, b2));
    out.full(i + 3 * L, Op::template apply<V>(a3, b3));
  }
  for (; i + L <= n; i += L)
    out.full(i, Op::template apply<V>(V::load(at<V>(a, i)), V::load(at<V>(b, i))));
  if (i < n)
    out.partial(i,
                Op::template apply<V>(V::load_n(at<V>(a, i), n - i), V::load_n(at<V>(b, i), n - i)),
                n - i);
}

template <class V>
struct ToDst {
  void* dst;
  void full(std::size_t i, typename V::Vec v) const { V::store(at<V>(dst, i), v); }
  void partial(std::size_t i, typename V::Vec v, std::size_t len) const {
    V::store_n(at<V>(dst, i), v, len);
  }
};

template <class V>
struct ToDstAndCopy {
  void* dst;
  void* copy;
  void full(std::size_t i, typename V::Vec v) const {
    V::store(at<V>(dst, i), v);
    V::store(at<V>(copy, i), v);
  }
  void partial(std::size_t i, typename V::Vec v, std::size_t len) const {
    V::store_n(at<V>(dst, i), v, len);
    V::store_n(at<V>(copy, i), v, len);
  }
};

template <class V, class Op>
void reduce(void* dst, const void* a, const void* b, std::size_t n) {
  reduce_loop<V, Op>(a, b, n, head_count<V>(dst, n), ToDst<V>{dst});
}

template <class V, class Op>
void reduce_copy(void* dst, void* copy, const void* a, const void* b, std::size_t n) {
  reduce_loop<V, Op>(a, b, n, head_count<V>(dst, n), ToDstAndCopy<V>{dst, copy});
}

template <class V>
void divide(void* data, std::size_t n, std::uint32_t divisor) {
  constexpr std::size_t L = V::kLanes;
  std::size_t i = 0;
  for (; i + L <= n; i += L) V::store(at<V>(data, i), V::div(V::load(at<V>(data, i)), divisor));
  if (i < n) V::store_n(at<V>(data, i), V::div(V::load_n(at<V>(data, i), n - i), divisor), n - i);
}
template <class V>
void divide_nothing(void*, std::size_t, std::uint32_t) {}  // integers: rejected before any run

// From and To share the register type (f32 lanes): From::load widens, To::store narrows.
template <class From, class To>
void convert(const void* src, void* dst, std::size_t n) {
  static_assert(From::kLanes == To::kLanes);
  constexpr std::size_t L = From::kLanes;
  std::size_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {
    const auto v0 = From::load(at<From>(src, i)), v1 = From::load(at<From>(src, i + L));
    To::store(at<To>(dst, i), v0);
    To::store(at<To>(dst, i + L), v1);
  }
  for (; i + L <= n; i += L) To::store(at<To>(dst, i), From::load(at<From>(src, i)));
  if (i < n) To::store_n(at<To>(dst, i), From::load_n(at<From>(src, i), n - i), n - i);
}

// constexpr, so the ISA files' tables are constant data: taking one runs no ISA-specific code.
template <class V, bool floating>
constexpr void fill_type(KernelTable& t, DataType type) {
  const int i = static_cast<int>(type);  // not KernelTable::index: see the top of this file
  t.reduce[i][0] = reduce<V, Sum>;
  t.reduce[i][1] = reduce<V, Prod>;
  t.reduce[i][2] = reduce<V, Min>;
  t.reduce[i][3] = reduce<V, Max>;
  t.reduce_copy[i][0] = reduce_copy<V, Sum>;
  t.reduce_copy[i][1] = reduce_copy<V, Prod>;
  t.reduce_copy[i][2] = reduce_copy<V, Min>;
  t.reduce_copy[i][3] = reduce_copy<V, Max>;
  if constexpr (floating)
    t.divide[i] = divide<V>;
  else
    t.divide[i] = divide_nothing<V>;
}

// The reductions and divide of one level, from its lane traits per type.
template <class F32, class F64, class F16, class BF16, class I32, class I64>
constexpr KernelTable make_table(Isa isa) {
  KernelTable t{};
  t.isa = isa;
  fill_type<F32, true>(t, DataType::f32);
  fill_type<F64, true>(t, DataType::f64);
  fill_type<F16, true>(t, DataType::f16);
  fill_type<BF16, true>(t, DataType::bf16);
  fill_type<I32, false>(t, DataType::i32);
  fill_type<I64, false>(t, DataType::i64);
  return t;
}

// The conversions: all four traits have f32 registers of the same width. F16Widen is f16 lanes
// whose load keeps signalling NaNs signalling (reductions can use the plain F16: their store
// quiets every NaN anyway).
template <class F32, class BF16, class F16, class F16Widen>
constexpr void fill_conversions(KernelTable& t) {
  t.f32_to_bf16 = convert<F32, BF16>;
  t.f32_to_f16 = convert<F32, F16>;
  t.bf16_to_f32 = convert<BF16, F32>;
  t.f16_to_f32 = convert<F16Widen, F32>;
}

// memcpy with plain stores over the same traits (S::store: any alignment), four registers per
// turn; what is left under one register goes through memcpy. Any length; the library calls it
// from kCopyLoopBytes on (kernels::copy). See reduce.hpp (copy_fn) for why the library has its
// own.
template <class S>
void copy(void* dst, const void* src, std::size_t bytes) {
  constexpr std::size_t W = S::kWidth;
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  std::size_t i = 0;
  for (; i + 4 * W <= bytes; i += 4 * W) {
    const auto a = S::load(s + i), b = S::load(s + i + W), c = S::load(s + i + 2 * W),
               e = S::load(s + i + 3 * W);
    S::store(d + i, a), S::store(d + i + W, b), S::store(d + i + 2 * W, c),
        S::store(d + i + 3 * W, e);
  }
  for (; i + W <= bytes; i += W) S::store(d + i, S::load(s + i));
  __builtin_memcpy(d + i, s + i, bytes - i);
}

// memcpy with non-temporal stores over "stream traits" S: kWidth bytes per register, load(p)
// (any alignment) and stream(p, v) (p aligned to kWidth). The head up to a kWidth boundary of
// dst and the tail go through memcpy; the rest is streamed four registers per turn; ends with
// S::fence() so the stores are ordered before whatever publishes them.
template <class S>
void copy_stream(void* dst, const void* src, std::size_t bytes) {
  constexpr std::size_t W = S::kWidth;
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  const std::size_t head = (W - reinterpret_cast<std::uintptr_t>(d) % W) % W;
  if (bytes < head + 4 * W) {
    __builtin_memcpy(d, s, bytes);
    return;
  }
  __builtin_memcpy(d, s, head);
  d += head, s += head, bytes -= head;
  std::size_t i = 0;
  for (; i + 4 * W <= bytes; i += 4 * W)
    for (std::size_t k = 0; k < 4 * W; k += W) S::stream(d + i + k, S::load(s + i + k));
  for (; i + W <= bytes; i += W) S::stream(d + i, S::load(s + i));
  __builtin_memcpy(d + i, s + i, bytes - i);
  S::fence();
}

}  // namespace toroid::kernels::simd
