// The AVX-512 level (F, BW, VL): 512-bit registers, masked loads and stores for tails.
// Built with -mavx512f -mavx512bw -mavx512vl; dispatch.cpp calls in only when the CPU has them.
//
// AVX-512-BF16's VCVTNEPS2BF16 is not used: it flushes f32 denormals to zero, so its results
// would differ from the scalar level's to_bfloat16, and the integer rounding below already keeps
// up with memory.
#include "kernels/table.hpp"

#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
// GCC 12's _mm512_undefined_* (used inside cvtph_ps, cvtps_ph, ...) is a self-initialization that
// draws a false -Wmaybe-uninitialized at every use (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include "kernels/optimizer_loops.hpp"
#include "kernels/simd_loops.hpp"

namespace toroid::kernels {
namespace {

using std::size_t;

__mmask16 mask16(size_t n) { return static_cast<__mmask16>((1u << n) - 1u); }  // n < 16
__mmask8 mask8(size_t n) { return static_cast<__mmask8>((1u << n) - 1u); }     // n < 8

// f32 arithmetic shared by f32, f16 and bf16 lanes. VMINPS/VMAXPS return the second operand
// when either is NaN (or both are zero), which is the scalar rule `a < b ? a : b`; the blend
// then makes a NaN in `a` win, as the scalar `|| a != a` does.
struct F32Math {
  using Vec = __m512;
  static Vec add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
  static Vec mul(Vec a, Vec b) { return _mm512_mul_ps(a, b); }
  static Vec min(Vec a, Vec b) {
    return _mm512_mask_mov_ps(_mm512_min_ps(a, b), _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q), a);
  }
  static Vec max(Vec a, Vec b) {
    return _mm512_mask_mov_ps(_mm512_max_ps(a, b), _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q), a);
  }
  static Vec div(Vec a, std::uint32_t d) {
    return _mm512_div_ps(a, _mm512_set1_ps(static_cast<float>(d)));
  }
};

struct F32 : F32Math {
  using Elem = float;
  static constexpr size_t kLanes = 16;
  static Vec load(const void* p) { return _mm512_loadu_ps(p); }
  static void store(void* p, Vec v) { _mm512_storeu_ps(p, v); }
  static Vec load_n(const void* p, size_t n) { return _mm512_maskz_loadu_ps(mask16(n), p); }
  static void store_n(void* p, Vec v, size_t n) { _mm512_mask_storeu_ps(p, mask16(n), v); }
};

struct F64 {
  using Elem = double;
  using Vec = __m512d;
  static constexpr size_t kLanes = 8;
  static Vec load(const void* p) { return _mm512_loadu_pd(p); }
  static void store(void* p, Vec v) { _mm512_storeu_pd(p, v); }
  static Vec load_n(const void* p, size_t n) { return _mm512_maskz_loadu_pd(mask8(n), p); }
  static void store_n(void* p, Vec v, size_t n) { _mm512_mask_storeu_pd(p, mask8(n), v); }
  static Vec add(Vec a, Vec b) { return _mm512_add_pd(a, b); }
  static Vec mul(Vec a, Vec b) { return _mm512_mul_pd(a, b); }
  static Vec min(Vec a, Vec b) {
    return _mm512_mask_mov_pd(_mm512_min_pd(a, b), _mm512_cmp_pd_mask(a, a, _CMP_UNORD_Q), a);
  }
  static Vec max(Vec a, Vec b) {
    return _mm512_mask_mov_pd(_mm512_max_pd(a, b), _mm512_cmp_pd_mask(a, a, _CMP_UNORD_Q), a);
  }
  static Vec div(Vec a, std::uint32_t d) {
    return _mm512_div_pd(a, _mm512_set1_pd(static_cast<double>(d)));
  }
};

// bf16 is the top half of an f32: widening is a shift. Narrowing rounds to nearest-even by
// adding 0x7fff plus the lowest kept bit, and turns NaN into (bits >> 16) | 0x40 (quiet),
// exactly as to_bfloat16 does.
struct BF16 : F32Math {
  using Elem = std::uint16_t;
  static constexpr size_t kLanes = 16;
  static Vec widen(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  static __m256i narrow(Vec v) {
    const __m512i u = _mm512_castps_si512(v);
    const __m512i high = _mm512_srli_epi32(u, 16);
    const __m512i bias =
        _mm512_add_epi32(_mm512_and_si512(high, _mm512_set1_epi32(1)), _mm512_set1_epi32(0x7fff));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, bias), 16);
    r = _mm512_mask_or_epi32(r, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), high,
                             _mm512_set1_epi32(0x40));
    return _mm512_cvtepi32_epi16(r);
  }
  static Vec load(const void* p) {
    return widen(_mm256_loadu_si256(static_cast<const __m256i*>(p)));
  }
  static void store(void* p, Vec v) { _mm256_storeu_si256(static_cast<__m256i*>(p), narrow(v)); }
  static Vec load_n(const void* p, size_t n) {
    return widen(_mm256_maskz_loadu_epi16(mask16(n), p));
  }
  static void store_n(void* p, Vec v, size_t n) {
    _mm256_mask_storeu_epi16(p, mask16(n), narrow(v));
  }
};

// bf16 reductions, 32 lanes per 512-bit load: the even elements become f32 by a shift left,
// the odd ones by clearing their low neighbour, so no lane crosses a register half on the way
// in or out (the 16-lane BF16 above needs a widening load and VPMOVDW, which cost more than the
// arithmetic). Same rounding and NaN rule as BF16::narrow.
struct BF16Pairs {
  using Elem = std::uint16_t;
  struct Vec {
    __m512 even, odd;
  };
  static constexpr size_t kLanes = 32;
  static Vec split(__m512i x) {
    return {
        _mm512_castsi512_ps(_mm512_slli_epi32(x, 16)),
        _mm512_castsi512_ps(_mm512_and_si512(x, _mm512_set1_epi32(static_cast<int>(0xffff0000u))))};
  }
  // The rounded f32 bits, bf16 in the top half (the low half is left over from rounding).
  static __m512i round(__m512 v) {
    const __m512i u = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    const __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
    return _mm512_mask_or_epi32(r, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), u,
                                _mm512_set1_epi32(0x400000));
  }
  static __m512i join(Vec v) {
    return _mm512_mask_blend_epi16(0xaaaaaaaau, _mm512_srli_epi32(round(v.even), 16), round(v.odd));
  }
  static Vec load(const void* p) { return split(_mm512_loadu_si512(p)); }
  static void store(void* p, Vec v) { _mm512_storeu_si512(p, join(v)); }
  static Vec load_n(const void* p, size_t n) {
    return split(_mm512_maskz_loadu_epi16(static_cast<__mmask32>((1ull << n) - 1u), p));
  }
  static void store_n(void* p, Vec v, size_t n) {
    _mm512_mask_storeu_epi16(p, static_cast<__mmask32>((1ull << n) - 1u), join(v));
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

// f16 <-> f32 in hardware; round-to-nearest-even and NaN quieting match to_float16 bit for bit.
struct F16 : F32Math {
  using Elem = std::uint16_t;
  static constexpr size_t kLanes = 16;
  static __m256i narrow(Vec v) { return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT); }
  static Vec load(const void* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(static_cast<const __m256i*>(p)));
  }
  static void store(void* p, Vec v) { _mm256_storeu_si256(static_cast<__m256i*>(p), narrow(v)); }
  static Vec load_n(const void* p, size_t n) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask16(n), p));
  }
  static void store_n(void* p, Vec v, size_t n) {
    _mm256_mask_storeu_epi16(p, mask16(n), narrow(v));
  }
};

// VCVTPH2PS quiets a signalling NaN, while to_float(float16) keeps it signalling; the bulk
// conversion promises the scalar bits, so clear the f32 quiet bit again where the f16 input
// was signalling (exponent all ones, quiet bit clear, payload not zero).
struct F16Widen : F16 {
  static Vec keep_signalling(__m256i h, Vec v) {
    const __m512i x = _mm512_cvtepu16_epi32(h);
    const __mmask16 nan_not_quiet = _mm512_cmpeq_epi32_mask(
        _mm512_and_si512(x, _mm512_set1_epi32(0x7e00)), _mm512_set1_epi32(0x7c00));
    const __mmask16 signalling =
        nan_not_quiet & _mm512_test_epi32_mask(x, _mm512_set1_epi32(0x1ff));
    const __m512i u = _mm512_castps_si512(v);
    return _mm512_castsi512_ps(
        _mm512_mask_andnot_epi32(u, signalling, _mm512_set1_epi32(0x400000), u));
  }
  static Vec load(const void* p) {
    const __m256i h = _mm256_loadu_si256(static_cast<const __m256i*>(p));
    return keep_signalling(h, _mm512_cvtph_ps(h));
  }
  static Vec load_n(const void* p, size_t n) {
    const __m256i h = _mm256_maskz_loadu_epi16(mask16(n), p);
    return keep_signalling(h, _mm512_cvtph_ps(h));
  }
};

// Integer add and low-half multiply wrap around, as the scalar level's unsigned arithmetic does.
struct I32 {
  using Elem = std::int32_t;
  using Vec = __m512i;
  static constexpr size_t kLanes = 16;
  static Vec load(const void* p) { return _mm512_loadu_si512(p); }
  static void store(void* p, Vec v) { _mm512_storeu_si512(p, v); }
  static Vec load_n(const void* p, size_t n) { return _mm512_maskz_loadu_epi32(mask16(n), p); }
  static void store_n(void* p, Vec v, size_t n) { _mm512_mask_storeu_epi32(p, mask16(n), v); }
  static Vec add(Vec a, Vec b) { return _mm512_add_epi32(a, b); }
  static Vec mul(Vec a, Vec b) { return _mm512_mullo_epi32(a, b); }
  static Vec min(Vec a, Vec b) { return _mm512_min_epi32(a, b); }
  static Vec max(Vec a, Vec b) { return _mm512_max_epi32(a, b); }
  static Vec div(Vec a, std::uint32_t) { return a; }  // never called: avg is floating only
};

struct I64 {
  using Elem = std::int64_t;
  using Vec = __m512i;
  static constexpr size_t kLanes = 8;
  static Vec load(const void* p) { return _mm512_loadu_si512(p); }
  static void store(void* p, Vec v) { _mm512_storeu_si512(p, v); }
  static Vec load_n(const void* p, size_t n) { return _mm512_maskz_loadu_epi64(mask8(n), p); }
  static void store_n(void* p, Vec v, size_t n) { _mm512_mask_storeu_epi64(p, mask8(n), v); }
  static Vec add(Vec a, Vec b) { return _mm512_add_epi64(a, b); }
  // VPMULLQ is AVX-512DQ, which this level does not require: build the low 64 bits of the
  // product from 32x32->64 multiplies (lo*lo + ((hi*lo + lo*hi) << 32), mod 2^64).
  static Vec mul(Vec a, Vec b) {
    const Vec cross = _mm512_add_epi64(_mm512_mul_epu32(_mm512_srli_epi64(a, 32), b),
                                       _mm512_mul_epu32(a, _mm512_srli_epi64(b, 32)));
    return _mm512_add_epi64(_mm512_mul_epu32(a, b), _mm512_slli_epi64(cross, 32));
  }
  static Vec min(Vec a, Vec b) { return _mm512_min_epi64(a, b); }
  static Vec max(Vec a, Vec b) { return _mm512_max_epi64(a, b); }
  static Vec div(Vec a, std::uint32_t) { return a; }
};

// f32 lanes for the optimizer kernels; the f64 sum of squares widens each half (the upper
// half is taken as f64 bits because extracting 256 f32 bits needs AVX-512DQ).
struct OptF32 : F32 {
  struct Acc {
    __m512d lo, hi;
  };
  static Vec sub(Vec a, Vec b) { return _mm512_sub_ps(a, b); }
  static Vec div(Vec a, Vec b) { return _mm512_div_ps(a, b); }
  static Vec sqrt(Vec a) { return _mm512_sqrt_ps(a); }
  static Vec set1(float x) { return _mm512_set1_ps(x); }
  static Acc acc_zero() { return {_mm512_setzero_pd(), _mm512_setzero_pd()}; }
  static Acc acc_squares(Acc acc, Vec v) {
    const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    const __m512d hi =
        _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    return {_mm512_add_pd(acc.lo, _mm512_mul_pd(lo, lo)),
            _mm512_add_pd(acc.hi, _mm512_mul_pd(hi, hi))};
  }
  static double acc_total(Acc acc) {
    double lanes[8];
    _mm512_storeu_pd(lanes, _mm512_add_pd(acc.lo, acc.hi));
    return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
           ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
  }
};

// Whole registers of bytes, for simd::copy and simd::copy_stream.
struct Bytes {
  static constexpr size_t kWidth = 64;
  static __m512i load(const unsigned char* p) {
    return _mm512_loadu_si512(reinterpret_cast<const __m512i*>(p));
  }
  static void store(unsigned char* p, __m512i v) {
    _mm512_storeu_si512(reinterpret_cast<__m512i*>(p), v);
  }
  static void stream(unsigned char* p, __m512i v) {
    _mm512_stream_si512(reinterpret_cast<__m512i*>(p), v);
  }
  static void fence() { _mm_sfence(); }
};

constexpr KernelTable build() {
  KernelTable t = simd::make_table<F32, F64, F16, BF16Pairs, I32, I64>(Isa::avx512);
  simd::fill_conversions<F32, BF16, F16, F16Widen>(t);
  t.optimizer = opt::make_optimizer_kernels<OptF32>();
  t.copy = simd::copy<Bytes>;
  t.copy_stream = simd::copy_stream<Bytes>;
  return t;
}
constexpr KernelTable kTable = build();

}  // namespace

extern const bool kAvx512Built = true;
const KernelTable* avx512_table() { return &kTable; }

}  // namespace toroid::kernels

#else  // not built for x86-64 AVX-512: the level does not exist in this build

namespace toroid::kernels {
extern const bool kAvx512Built = false;
const KernelTable* avx512_table() { return nullptr; }
}  // namespace toroid::kernels

#endif
