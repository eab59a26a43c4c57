// Every SIMD level's kernels against the scalar level, bit for bit: all types and ops, lengths
// 0..257 and one long run, pointers off the vector grid, in-place aliasing, and inputs rich in
// NaN / Inf / denormals / signed zeros and in rounding ties for the 16-bit floats.
#include <bit>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "catch_extras.hpp"
#include "kernels/table.hpp"

using namespace toroid;
using namespace toroid::kernels;

namespace {

constexpr DataType kTypesList[] = {DataType::f32,  DataType::f64, DataType::f16,
                                   DataType::bf16, DataType::i32, DataType::i64};
constexpr ReduceOp kOpsList[] = {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max};
// Several main-loop turns and an odd tail; under the sanitizers (kSanitized) fewer turns of the
// same loop: 0..257 already take it around 32 times at every level.
constexpr std::size_t kLong = toroid_test::kSanitized ? 4'099 : 100'003;
constexpr std::size_t kGuard = 8;  // elements checked around every destination
constexpr unsigned char kGuardByte = 0xa5;

std::vector<const KernelTable*> simd_levels() {
  std::vector<const KernelTable*> out;
  for (Isa isa : kAllIsas)
    if (isa != Isa::scalar && isa_supported(isa)) out.push_back(&kernels_for(isa));
  return out;
}

// One element's bits: random patterns (every class of value shows up), values near 1 whose sums
// and products land on rounding ties of the narrow types, and a list of special values.
std::uint64_t element_bits(DataType t, std::mt19937_64& rng) {
  const std::uint64_t r = rng();
  const unsigned kind = static_cast<unsigned>(r % 10);
  const std::uint64_t sign = (r >> 8) & 1;
  const std::uint64_t bits = rng();
  switch (t) {
    case DataType::f32: {
      static constexpr std::uint32_t special[] = {
          0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00001, 0x7f800001,
          0x7fa12345, 0x00000001, 0x807fffff, 0x00800000, 0x7f7fffff, 0x3f800000, 0x3f808000,
          0x3f818000, 0x477ff000, 0x33800000, 0x33c00000, 0x387fc000};
      if (kind < 4) return bits & 0xffffffffu;
      if (kind < 8)
        return (sign << 31) | 0x3f800000u | (bits & 0x007f0000u) | (kind & 1 ? 0x8000u : 0);
      return special[bits % std::size(special)];
    }
    case DataType::f64: {
      static constexpr std::uint64_t special[] = {0,
                                                  0x8000000000000000,
                                                  0x7ff0000000000000,
                                                  0xfff0000000000000,
                                                  0x7ff8000000000000,
                                                  0x7ff0000000000001,
                                                  0xfff8000000000123,
                                                  1,
                                                  0x000fffffffffffff,
                                                  0x3ff0000000000000,
                                                  0x7fefffffffffffff};
      if (kind < 6) return bits;
      if (kind < 8) return (sign << 63) | 0x3ff0000000000000u | (bits & 0x000fffff00000000u);
      return special[bits % std::size(special)];
    }
    case DataType::bf16: {
      static constexpr std::uint16_t special[] = {0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0x7f81,
                                                  0xffa5, 0x0001, 0x807f, 0x0080, 0x7f7f, 0x3f80};
      if (kind < 4) return bits & 0xffffu;
      if (kind < 8) return (sign << 15) | 0x3f80u | (bits & 0x7fu);  // [1, 2): sums round
      return special[bits % std::size(special)];
    }
    case DataType::f16: {
      static constexpr std::uint16_t special[] = {0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x7c01,
                                                  0xfd55, 0x0001, 0x83ff, 0x0400, 0x7bff, 0x3c00};
      if (kind < 4) return bits & 0xffffu;
      if (kind < 8) return (sign << 15) | 0x3c00u | (bits & 0x3ffu);
      return special[bits % std::size(special)];
    }
    case DataType::i32: {
      static constexpr std::uint32_t special[] = {0, 1, 0xffffffff, 0x7fffffff, 0x80000000, 2};
      if (kind < 7) return bits & 0xffffffffu;
      return special[bits % std::size(special)];
    }
    case DataType::i64: {
      static constexpr std::uint64_t special[] = {
          0, 1, ~0ull, 0x7fffffffffffffff, 0x8000000000000000, 0x100000001};
      if (kind < 7) return bits;
      return special[bits % std::size(special)];
    }
  }
  return 0;
}

struct Buffer {  // elements with guard bytes around them, placed `shift` elements off 64 bytes
  std::vector<std::byte> mem;
  std::size_t esize, n, shift;
  Buffer(DataType t, std::size_t n_, std::size_t shift_)
      : mem((n_ + 2 * kGuard + 64) * size_of(t) + 64, std::byte{kGuardByte}),
        esize(size_of(t)),
        n(n_),
        shift(shift_) {}
  std::byte* data() {
    auto addr = reinterpret_cast<std::uintptr_t>(mem.data()) + kGuard * esize;
    addr = (addr + 63) / 64 * 64 + shift * esize;
    return reinterpret_cast<std::byte*>(addr);
  }
  void fill(DataType t, std::mt19937_64& rng) {
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t b = element_bits(t, rng);
      std::memcpy(data() + i * esize, &b, esize);  // little-endian: the low bytes
    }
  }
  bool guards_intact() {
    const std::byte* d = data();
    for (std::size_t i = 1; i <= kGuard * esize; ++i)
      if (d[-static_cast<std::ptrdiff_t>(i)] != std::byte{kGuardByte} ||
          d[n * esize + i - 1] != std::byte{kGuardByte})
        return false;
    return true;
  }
};

std::string hex(const std::byte* p, std::size_t esize) {
  std::uint64_t v = 0;
  std::memcpy(&v, p, esize);
  char s[24];
  std::snprintf(s, sizeof s, "0x%0*llx", static_cast<int>(esize * 2),
                static_cast<unsigned long long>(v));
  return s;
}

bool is_nan(DataType t, const std::byte* p) {
  std::uint64_t v = 0;
  std::memcpy(&v, p, size_of(t));
  switch (t) {
    case DataType::f32:
      return (v & 0x7fffffffu) > 0x7f800000u;
    case DataType::f64:
      return (v & 0x7fffffffffffffffu) > 0x7ff0000000000000u;
    case DataType::f16:
      return (v & 0x7fffu) > 0x7c00u;
    case DataType::bf16:
      return (v & 0x7fffu) > 0x7f80u;
    case DataType::i32:
    case DataType::i64:
      return false;
  }
  return false;
}

// Empty when equal; otherwise the first differing element. Elements flagged in `either_nan`
// (sum or product of two NaNs) only need to be NaN in both: IEEE 754 leaves open which input's
// payload comes out, and a compiler may commute the scalar level's `a + b`.
std::string first_difference(const std::byte* got, const std::byte* want, std::size_t n, DataType t,
                             const std::vector<bool>& either_nan = {}) {
  const std::size_t esize = size_of(t);
  if (n == 0 || std::memcmp(got, want, n * esize) == 0) return {};
  for (std::size_t i = 0; i < n; ++i)
    if (std::memcmp(got + i * esize, want + i * esize, esize) != 0 &&
        !(i < either_nan.size() && either_nan[i] && is_nan(t, got + i * esize) &&
          is_nan(t, want + i * esize)))
      return "element " + std::to_string(i) + ": got " + hex(got + i * esize, esize) + ", want " +
             hex(want + i * esize, esize);
  return {};
}

enum class Alias { none, dst_is_a, dst_is_b, all_same };
constexpr Alias kAliases[] = {Alias::none, Alias::dst_is_a, Alias::dst_is_b, Alias::all_same};
const char* name(Alias a) {
  switch (a) {
    case Alias::none:
      return "separate";
    case Alias::dst_is_a:
      return "dst=a";
    case Alias::dst_is_b:
      return "dst=b";
    case Alias::all_same:
      return "dst=a=b";
  }
  return "?";
}

struct Shifts {
  std::size_t dst, a, b;
};
constexpr Shifts kShifts[] = {{0, 0, 0}, {1, 2, 3}, {3, 1, 0}, {5, 5, 5}};

// Runs `run(dst, a, b)` at level `lv` and at scalar on the same inputs; returns the first
// difference in the destination (and in `copy`, when with_copy), or a broken guard.
template <class Run>
std::string compare_once(DataType t, std::size_t n, Shifts s, Alias alias, std::uint64_t seed,
                         bool with_copy, bool nan_pairs_free, Run run) {
  std::string out;
  std::vector<std::byte> result[2], copies[2];
  std::vector<bool> both_nan(n);
  for (int pass = 0; pass < 2; ++pass) {
    std::mt19937_64 rng(seed);
    Buffer d(t, n, s.dst), a(t, n, s.a), b(t, n, s.b), c(t, n, 0);
    a.fill(t, rng);
    b.fill(t, rng);
    d.fill(t, rng);
    std::byte* pa = a.data();
    std::byte* pb = b.data();
    if (alias == Alias::dst_is_a || alias == Alias::all_same) pa = d.data();
    if (alias == Alias::dst_is_b || alias == Alias::all_same) pb = d.data();
    if (alias == Alias::dst_is_a) std::memcpy(d.data(), a.data(), n * d.esize);
    if (alias == Alias::dst_is_b) std::memcpy(d.data(), b.data(), n * d.esize);
    if (nan_pairs_free)
      for (std::size_t i = 0; i < n; ++i)
        both_nan[i] = is_nan(t, pa + i * d.esize) && is_nan(t, pb + i * d.esize);
    run(pass, d.data(), c.data(), pa, pb);
    if (!d.guards_intact() || !c.guards_intact()) return "wrote outside the destination";
    result[pass].assign(d.data(), d.data() + n * d.esize);
    copies[pass].assign(c.data(), c.data() + n * c.esize);
  }
  out = first_difference(result[0].data(), result[1].data(), n, t, both_nan);
  if (out.empty() && with_copy)
    out = first_difference(copies[0].data(), copies[1].data(), n, t, both_nan);
  if (out.empty() && with_copy) out = first_difference(copies[0].data(), result[0].data(), n, t);
  return out;
}

std::vector<std::size_t> lengths() {
  std::vector<std::size_t> v;
  for (std::size_t n = 0; n <= 257; ++n) v.push_back(n);
  v.push_back(kLong);
  return v;
}

}  // namespace

TEST_CASE("SIMD reduce kernels match the scalar level bit for bit", "[kernels]") {
  const KernelTable& ref = scalar_table();
  const auto levels = simd_levels();
  if (levels.empty()) SKIP_CASE("no SIMD level on this CPU or build");
  for (const KernelTable* lv : levels)
    for (DataType t : kTypesList)
      for (ReduceOp op : kOpsList)
        for (std::size_t n : lengths())
          for (Shifts s : kShifts)
            for (Alias alias : kAliases) {
              if (n == kLong && (s.dst != 1 || alias == Alias::all_same)) continue;  // time
              const std::uint64_t seed =
                  n * 977 + s.dst * 31 + static_cast<unsigned>(op) * 7 + static_cast<unsigned>(t);
              const std::string diff = compare_once(
                  t, n, s, alias, seed, false, op == ReduceOp::sum || op == ReduceOp::prod,
                  [&](int pass, void* d, void*, const void* a, const void* b) {
                    (pass == 0 ? lv : &ref)->reduce_for(t, op)(d, a, b, n);
                  });
              CHECK_SAYING(diff.empty(), to_string(lv->isa)
                                             << " " << to_string(t) << " " << to_string(op)
                                             << " n=" << n << " shifts " << s.dst << "/" << s.a
                                             << "/" << s.b << " " << name(alias) << ": " << diff);
            }
}

TEST_CASE("SIMD reduce-and-copy kernels match the scalar level and write both outputs",
          "[kernels]") {
  const KernelTable& ref = scalar_table();
  const auto levels = simd_levels();
  if (levels.empty()) SKIP_CASE("no SIMD level on this CPU or build");
  for (const KernelTable* lv : levels)
    for (DataType t : kTypesList)
      for (ReduceOp op : kOpsList)
        for (std::size_t n : lengths())
          for (Alias alias : {Alias::none, Alias::dst_is_a, Alias::dst_is_b}) {
            const Shifts s{1, 3, 2};
            const std::string diff = compare_once(
                t, n, s, alias, n * 13 + 5, true, op == ReduceOp::sum || op == ReduceOp::prod,
                [&](int pass, void* d, void* c, const void* a, const void* b) {
                  (pass == 0 ? lv : &ref)->reduce_copy_for(t, op)(d, c, a, b, n);
                });
            CHECK_SAYING(diff.empty(), to_string(lv->isa)
                                           << " " << to_string(t) << " " << to_string(op)
                                           << " n=" << n << " " << name(alias) << ": " << diff);
          }
}

TEST_CASE("SIMD divide matches the scalar level bit for bit", "[kernels]") {
  const KernelTable& ref = scalar_table();
  const auto levels = simd_levels();
  if (levels.empty()) SKIP_CASE("no SIMD level on this CPU or build");
  for (const KernelTable* lv : levels)
    for (DataType t : {DataType::f32, DataType::f64, DataType::f16, DataType::bf16})
      for (std::uint32_t divisor : {1u, 2u, 3u, 7u, 4096u, 100000u})
        for (std::size_t n : lengths()) {
          const Shifts s{n % 7, 0, 0};
          const std::string diff =
              compare_once(t, n, s, Alias::none, n * 3 + divisor, false, false,
                           [&](int pass, void* d, void*, const void*, const void*) {
                             (pass == 0 ? lv : &ref)->divide[KernelTable::index(t)](d, n, divisor);
                           });
          CHECK_SAYING(diff.empty(), to_string(lv->isa) << " divide " << to_string(t) << " by "
                                                        << divisor << " n=" << n << ": " << diff);
        }
}

TEST_CASE("SIMD conversions match the scalar conversions bit for bit", "[kernels]") {
  struct Case {
    const char* name;
    DataType from, to;
    ConvertFn KernelTable::*fn;
  };
  const Case cases[] = {{"f32->bf16", DataType::f32, DataType::bf16, &KernelTable::f32_to_bf16},
                        {"f32->f16", DataType::f32, DataType::f16, &KernelTable::f32_to_f16},
                        {"bf16->f32", DataType::bf16, DataType::f32, &KernelTable::bf16_to_f32},
                        {"f16->f32", DataType::f16, DataType::f32, &KernelTable::f16_to_f32}};
  const KernelTable& ref = scalar_table();
  const auto levels = simd_levels();
  if (levels.empty()) SKIP_CASE("no SIMD level on this CPU or build");
  for (const KernelTable* lv : levels)
    for (const Case& c : cases)
      for (std::size_t n : lengths())
        for (std::size_t shift : {0u, 1u, 3u}) {
          std::mt19937_64 rng(n * 101 + shift);
          Buffer src(c.from, n, shift);
          src.fill(c.from, rng);
          if (c.from == DataType::f32)  // plus exact rounding ties of both narrow types
            for (std::size_t i = 0; i < n; i += 3) {
              const std::uint32_t hi = static_cast<std::uint32_t>(rng()) & 0xffff0000u;
              const std::uint32_t tie = (i % 2) ? (hi | 0x8000u) : ((hi & 0xbfffe000u) | 0x1000u);
              std::memcpy(src.data() + i * 4, &tie, 4);
            }
          Buffer got(c.to, n, shift + 1), want(c.to, n, 0);
          (lv->*c.fn)(src.data(), got.data(), n);
          (ref.*c.fn)(src.data(), want.data(), n);
          const std::string diff = got.guards_intact()
                                       ? first_difference(got.data(), want.data(), n, c.to)
                                       : "wrote outside the destination";
          CHECK_SAYING(diff.empty(), to_string(lv->isa) << " " << c.name << " n=" << n << " shift "
                                                        << shift << ": " << diff);
        }
}

TEST_CASE("every level rounds 16-bit ties to even and propagates NaN through min and max",
          "[kernels]") {
  auto bits_of = [](auto v) { return v.bits; };
  for (Isa isa : kAllIsas) {
    if (!isa_supported(isa)) continue;
    const KernelTable& k = kernels_for(isa);
    INFO("level " << to_string(isa));
    // bf16 has 8 significant bits: 1 + 2^-8 is halfway between 1 and 1 + 2^-7.
    std::vector<bfloat16> a{{0x3f80}, {0x3f81}, {0xbf80}}, b{{0x3b80}, {0x3b80}, {0xbb80}}, d(3);
    k.reduce_for(DataType::bf16, ReduceOp::sum)(d.data(), a.data(), b.data(), 3);
    CHECK(bits_of(d[0]) == 0x3f80);  // down to even
    CHECK(bits_of(d[1]) == 0x3f82);  // up to even
    CHECK(bits_of(d[2]) == 0xbf80);
    // f16 has 11: 1 + 2^-11 is halfway between 1 and 1 + 2^-10.
    std::vector<float16> x{{0x3c00}, {0x3c01}}, y{{0x1000}, {0x1000}}, z(2);
    k.reduce_for(DataType::f16, ReduceOp::sum)(z.data(), x.data(), y.data(), 2);
    CHECK(bits_of(z[0]) == 0x3c00);
    CHECK(bits_of(z[1]) == 0x3c02);
    const float nan = std::bit_cast<float>(0x7fc00000u);
    std::vector<float> p{nan, 1, -0.0f}, q{1, nan, 0.0f}, r(3);
    for (ReduceOp op : {ReduceOp::min, ReduceOp::max}) {
      k.reduce_for(DataType::f32, op)(r.data(), p.data(), q.data(), 3);
      CHECK(r[0] != r[0]);
      CHECK(r[1] != r[1]);
      CHECK(std::bit_cast<std::uint32_t>(r[2]) == 0);  // equal operands: the second one
    }
    std::vector<bfloat16> sn{{0x7f81}}, one{{0x3f80}}, out(1);  // a signalling NaN comes out quiet
    k.reduce_for(DataType::bf16, ReduceOp::max)(out.data(), sn.data(), one.data(), 1);
    CHECK(bits_of(out[0]) == 0x7fc1);
  }
}

TEST_CASE(
    "every level's plain and streaming copies equal memcpy at every length and alignment, guards "
    "intact",
    "[kernels]") {
  std::mt19937_64 rng(7);
  std::vector<unsigned char> src(70'000 + 128);
  for (auto& b : src) b = static_cast<unsigned char>(rng());
  for (Isa isa : kAllIsas) {
    if (!isa_supported(isa)) continue;
    const KernelTable& k = kernels_for(isa);
    for (const bool stream : {false, true})
      for (std::size_t len :
           {0, 1, 15, 31, 63, 64, 65, 255, 256, 257, 1000, 2048, 4096 + 3, 65'536, 70'000}) {
        for (std::size_t off : {0, 1, 16, 17, 63}) {
          INFO(to_string(isa) << (stream ? " streaming" : " plain") << " length " << len
                              << " destination offset " << off);
          std::vector<unsigned char> dst(len + 2 * 64 + kGuard, kGuardByte);
          (stream ? k.copy_stream : k.copy)(dst.data() + 64 + off, src.data() + (off * 7) % 64,
                                            len);
          CHECK(std::memcmp(dst.data() + 64 + off, src.data() + (off * 7) % 64, len) == 0);
          bool guards = true;
          for (std::size_t i = 0; i < 64 + off; ++i) guards &= dst[i] == kGuardByte;
          for (std::size_t i = 64 + off + len; i < dst.size(); ++i) guards &= dst[i] == kGuardByte;
          CHECK(guards);
        }
      }
  }
}
