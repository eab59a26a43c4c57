// The AVX2 level (with F16C and FMA): 256-bit registers; tails go through a small stack buffer
// because AVX2 has no byte- or word-granular masked loads.
// Built with -mavx2 -mfma -mf16c; dispatch.cpp calls in only when the CPU has all three.
#include "kernels/table.hpp"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__F16C__) && defined(__FMA__)
#include <immintrin.h>

#include "kernels/optimizer_loops.hpp"
#include "kernels/simd_loops.hpp"

namespace toroid::kernels {
namespace {

using std::size_t;

// load_n/store_n for a traits class S from its full-width load/store.
template <class S>
struct Buffered {
  template <class Self = S>  // a template, so S is complete when the body is instantiated
  static auto load_n(const void* p, size_t n) {
    typename Self::Elem buf[Self::kLanes] = {};
    __builtin_memcpy(buf, p, n * sizeof(typename Self::Elem));
    return Self::load(buf);
  }
  template <class Vec>
  static void store_n(void* p, Vec v, size_t n) {
    typename S::Elem buf[S::kLanes];
    S::store(buf, v);
    __builtin_memcpy(p, buf, n * sizeof(typename S::Elem));
  }
};

// f32 arithmetic shared by f32, f16 and bf16 lanes. VMINPS/VMAXPS return the second operand
// when either is NaN (or both are zero), which is the scalar rule `a < b ? a : b`; the blend
// then makes a NaN in `a` win, as the scalar `|| a != a` does.
struct F32Math {
  using Vec = __m256;
  static Vec add(Vec a, Vec b) { return _mm256_add_ps(a, b); }
  static Vec mul(Vec a, Vec b) { return _mm256_mul_ps(a, b); }
  static Vec min(Vec a, Vec b) {
    return _mm256_blendv_ps(_mm256_min_ps(a, b), a, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
  }
  static Vec max(Vec a, Vec b) {
    return _mm256_blendv_ps(_mm256_max_ps(a, b), a, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
  }
  static Vec div(Vec a, std::uint32_t d) {
    return _mm256_div_ps(a, _mm256_set1_ps(static_cast<float>(d)));
  }
};

struct F32 : F32Math, Buffered<F32> {
  using Elem = float;
  static constexpr size_t kLanes = 8;
  static Vec load(const void* p) { return _mm256_loadu_ps(static_cast<const float*>(p)); }
  static void store(void* p, Vec v) { _mm256_storeu_ps(static_cast<float*>(p), v); }
};

struct F64 : Buffered<F64> {
  using Elem = double;
  using Vec = __m256d;
  static constexpr size_t kLanes = 4;
  static Vec load(const void* p) { return _mm256_loadu_pd(static_cast<const double*>(p)); }
  static void store(void* p, Vec v) { _mm256_storeu_pd(static_cast<double*>(p), v); }
  static Vec add(Vec a, Vec b) { return _mm256_add_pd(a, b); }
  static Vec mul(Vec a, Vec b) { return _mm256_mul_pd(a, b); }
  static Vec min(Vec a, Vec b) {
    return _mm256_blendv_pd(_mm256_min_pd(a, b), a, _mm256_cmp_pd(a, a, _CMP_UNORD_Q));
  }
  static Vec max(Vec a, Vec b) {
    return _mm256_blendv_pd(_mm256_max_pd(a, b), a, _mm256_cmp_pd(a, a, _CMP_UNORD_Q));
  }
  static Vec div(Vec a, std::uint32_t d) {
    return _mm256_div_pd(a, _mm256_set1_pd(static_cast<double>(d)));
  }
};

// bf16 is the top half of an f32: widening is a shift. Narrowing rounds to nearest-even by
// adding 0x7fff plus the lowest kept bit, and turns NaN into (bits >> 16) | 0x40 (quiet),
// exactly as to_bfloat16 does. Results fit 16 bits, so the unsigned-saturating pack is exact.
struct BF16 : F32Math, Buffered<BF16> {
  using Elem = std::uint16_t;
  static constexpr size_t kLanes = 8;
  static Vec widen(__m128i h) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  static __m128i narrow(Vec v) {
    const __m256i u = _mm256_castps_si256(v);
    const __m256i high = _mm256_srli_epi32(u, 16);
    const __m256i bias =
        _mm256_add_epi32(_mm256_and_si256(high, _mm256_set1_epi32(1)), _mm256_set1_epi32(0x7fff));
    const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, bias), 16);
    const __m256i quiet = _mm256_or_si256(high, _mm256_set1_epi32(0x40));
    const __m256i r =
        _mm256_blendv_epi8(rounded, quiet, _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
    return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
  }
  static Vec load(const void* p) { return widen(_mm_loadu_si128(static_cast<const __m128i*>(p))); }
  static void store(void* p, Vec v) { _mm_storeu_si128(static_cast<__m128i*>(p), narrow(v)); }
};

// bf16 reductions, 16 lanes per 256-bit load: the even elements become f32 by a shift left,
// the odd ones by clearing their low neighbour, so nothing crosses a 128-bit half on the way in
// or out (BF16 above widens and packs, which costs more than the arithmetic). Same rounding and
// NaN rule as BF16::narrow.
struct BF16Pairs : Buffered<BF16Pairs> {
  using Elem = std::uint16_t;
  struct Vec {
    __m256 even, odd;
  };
  static constexpr size_t kLanes = 16;
  static Vec split(__m256i x) {
    return {
        _mm256_castsi256_ps(_mm256_slli_epi32(x, 16)),
        _mm256_castsi256_ps(_mm256_and_si256(x, _mm256_set1_epi32(static_cast<int>(0xffff0000u))))};
  }
  // The rounded f32 bits, bf16 in the top half (the low half is left over from rounding).
  static __m256i round(__m256 v) {
    const __m256i u = _mm256_castps_si256(v);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    const __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff)));
    const __m256i quiet = _mm256_or_si256(u, _mm256_set1_epi32(0x400000));
    return _mm256_blendv_epi8(r, quiet, _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
  }
  static Vec load(const void* p) {
    return split(_mm256_loadu_si256(static_cast<const __m256i*>(p)));
  }
  static void store(void* p, Vec v) {
    const __m256i joined =
        _mm256_blend_epi16(_mm256_srli_epi32(round(v.even), 16), round(v.odd), 0xaa);
    _mm256_storeu_si256(static_cast<__m256i*>(p), joined);
  }
  static Vec add(Vec a, Vec b) {
    return {F32Math::add(a.even, b.even), F32Math::add(a.odd, b.odd)};
  }
  static Vec mul(Vec a, Vec b) {
    return {F32Math::mul(a.even, b.even), F32Math::mul(a.odd, b.odd)};
  }
  static Vec min(Vec a, Vec b) {
    return {F32Math::min(a.even, b.even), F32Math::min(a.odd, b.odd)};
  }
  static Vec max(Vec a, Vec b) {
    return {F32Math::max(a.even, b.even), F32Math::max(a.odd, b.odd)};
  }
  static Vec div(Vec a, std::uint32_t d) {
    return {F32Math::div(a.even, d), F32Math::div(a.odd, d)};
  }
};

// f16 <-> f32 with F16C; round-to-nearest-even and NaN quieting match to_float16 bit for bit.
struct F16 : F32Math, Buffered<F16> {
  using Elem = std::uint16_t;
  static constexpr size_t kLanes = 8;
  static Vec load(const void* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(static_cast<const __m128i*>(p)));
  }
  static void store(void* p, Vec v) {
    _mm_storeu_si128(static_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
};

// VCVTPH2PS quiets a signalling NaN, while to_float(float16) keeps it signalling; the bulk
// conversion promises the scalar bits, so clear the f32 quiet bit again where the f16 input
// was signalling (exponent all ones, quiet bit clear, payload not zero).
struct F16Widen : F32Math, Buffered<F16Widen> {
  using Elem = std::uint16_t;
  static constexpr size_t kLanes = 8;
  static Vec load(const void* p) {
    const __m128i h = _mm_loadu_si128(static_cast<const __m128i*>(p));
    const __m256i x = _mm256_cvtepu16_epi32(h);
    const __m256i nan_not_quiet = _mm256_cmpeq_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7e00)),
                                                     _mm256_set1_epi32(0x7c00));
    const __m256i no_payload =
        _mm256_cmpeq_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x1ff)), _mm256_setzero_si256());
    const __m256i signalling = _mm256_andnot_si256(no_payload, nan_not_quiet);
    const __m256i u = _mm256_castps_si256(_mm256_cvtph_ps(h));
    return _mm256_castsi256_ps(
        _mm256_andnot_si256(_mm256_and_si256(signalling, _mm256_set1_epi32(0x400000)), u));
  }
  static void store(void* p, Vec v) { F16::store(p, v); }
};

// Integer add and low-half multiply wrap around, as the scalar level's unsigned arithmetic does.
struct I32 : Buffered<I32> {
  using Elem = std::int32_t;
  using Vec = __m256i;
  static constexpr size_t kLanes = 8;
  static Vec load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
  static void store(void* p, Vec v) { _mm256_storeu_si256(static_cast<__m256i*>(p), v); }
  static Vec add(Vec a, Vec b) { return _mm256_add_epi32(a, b); }
  static Vec mul(Vec a, Vec b) { return _mm256_mullo_epi32(a, b); }
  static Vec min(Vec a, Vec b) { return _mm256_min_epi32(a, b); }
  static Vec max(Vec a, Vec b) { return _mm256_max_epi32(a, b); }
  static Vec div(Vec a, std::uint32_t) { return a; }  // never called: avg is floating only
};

struct I64 : Buffered<I64> {
  using Elem = std::int64_t;
  using Vec = __m256i;
  static constexpr size_t kLanes = 4;
  static Vec load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
  static void store(void* p, Vec v) { _mm256_storeu_si256(static_cast<__m256i*>(p), v); }
  static Vec add(Vec a, Vec b) { return _mm256_add_epi64(a, b); }
  // No 64-bit multiply in AVX2: the low 64 bits of the product are
  // lo*lo + ((hi*lo + lo*hi) << 32), mod 2^64, from 32x32->64 multiplies.
  static Vec mul(Vec a, Vec b) {
    const Vec cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(a, 32), b),
                                       _mm256_mul_epu32(a, _mm256_srli_epi64(b, 32)));
    return _mm256_add_epi64(_mm256_mul_epu32(a, b), _mm256_slli_epi64(cross, 32));
  }
  // No 64-bit min/max either: compare and blend.
  static Vec min(Vec a, Vec b) { return _mm256_blendv_epi8(a, b, _mm256_cmpgt_epi64(a, b)); }
  static Vec max(Vec a, Vec b) { return _mm256_blendv_epi8(b, a, _mm256_cmpgt_epi64(a, b)); }
  static Vec div(Vec a, std::uint32_t) { return a; }
};

// f32 lanes for the optimizer kernels; the f64 sum of squares widens each half.
struct OptF32 : F32 {
  struct Acc {
    __m256d lo, hi;
  };
  static Vec sub(Vec a, Vec b) { return _mm256_sub_ps(a, b); }
  static Vec div(Vec a, Vec b) { return _mm256_div_ps(a, b); }
  static Vec sqrt(Vec a) { return _mm256_sqrt_ps(a); }
  static Vec set1(float x) { return _mm256_set1_ps(x); }
  static Acc acc_zero() { return {_mm256_setzero_pd(), _mm256_setzero_pd()}; }
  static Acc acc_squares(Acc acc, Vec v) {
    const __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
    const __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
    return {_mm256_add_pd(acc.lo, _mm256_mul_pd(lo, lo)),
            _mm256_add_pd(acc.hi, _mm256_mul_pd(hi, hi))};
  }
  static double acc_total(Acc acc) {
    double lanes[4];
    _mm256_storeu_pd(lanes, _mm256_add_pd(acc.lo, acc.hi));
    return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  }
};

// Whole registers of bytes, for simd::copy and simd::copy_stream.
struct Bytes {
  static constexpr size_t kWidth = 32;
  static __m256i load(const unsigned char* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  }
  static void store(unsigned char* p, __m256i v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
  }
  static void stream(unsigned char* p, __m256i v) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(p), v);
  }
  static void fence() { _mm_sfence(); }
};

constexpr KernelTable build() {
  KernelTable t = simd::make_table<F32, F64, F16, BF16Pairs, I32, I64>(Isa::avx2);
  simd::fill_conversions<F32, BF16, F16, F16Widen>(t);
  t.optimizer = opt::make_optimizer_kernels<OptF32>();
  t.copy = simd::copy<Bytes>;
  t.copy_stream = simd::copy_stream<Bytes>;
  return t;
}
constexpr KernelTable kTable = build();

}  // namespace

extern const bool kAvx2Built = true;
const KernelTable* avx2_table() { return &kTable; }

}  // namespace toroid::kernels

#else  // not built for x86-64 AVX2: the level does not exist in this build

namespace toroid::kernels {
extern const bool kAvx2Built = false;
const KernelTable* avx2_table() { return nullptr; }
}  // namespace toroid::kernels

#endif
