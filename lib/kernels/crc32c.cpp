#include "kernels/crc32c.hpp"

#include <array>

#include "kernels/isa.hpp"

namespace toroid::kernels {

#if defined(__x86_64__)
std::uint32_t crc32c_sse42(std::uint32_t crc, const void* data, std::size_t bytes);
#endif

namespace {

constexpr std::uint32_t kPolynomial = 0x82F63B78u;  // reflected

constexpr std::array<std::uint32_t, 256> make_crc_table() {
  std::array<std::uint32_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = c & 1 ? (c >> 1) ^ kPolynomial : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr std::array<std::uint32_t, 256> kTable = make_crc_table();

// Appending zero bits is linear over GF(2): a 32x32 bit matrix, one column per bit of the CRC.
using Matrix = std::array<std::uint32_t, 32>;

std::uint32_t times(const Matrix& m, std::uint32_t v) {
  std::uint32_t sum = 0;
  for (int i = 0; v != 0; ++i, v >>= 1)
    if (v & 1) sum ^= m[static_cast<std::size_t>(i)];
  return sum;
}

Matrix squared(const Matrix& m) {
  Matrix out{};
  for (std::size_t i = 0; i < 32; ++i) out[i] = times(m, m[i]);
  return out;
}

Crc32cFunction chosen() {
  static const Crc32cFunction f = [] {
    const Crc32cFunction instruction = crc32c_instruction();
    return active_isa() != Isa::scalar && instruction ? instruction : &crc32c_table;
  }();
  return f;
}

}  // namespace

std::uint32_t crc32c_table(std::uint32_t crc, const void* data, std::size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint32_t c = ~crc;
  for (std::size_t i = 0; i < bytes; ++i) c = kTable[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return ~c;
}

Crc32cFunction crc32c_instruction() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (__builtin_cpu_supports("sse4.2")) return &crc32c_sse42;
#endif
  return nullptr;
}

std::uint32_t crc32c(std::uint32_t crc, const void* data, std::size_t bytes) {
  return chosen()(crc, data, bytes);
}

// The CRC of a, then b_bytes zero bytes (the operator for one zero bit squared up to a byte,
// then to each power of two in b_bytes), XORed with b's: the pre- and post-inversion of the
// standard CRC cancel out in the XOR.
std::uint32_t crc32c_combine(std::uint32_t crc_a, std::uint32_t crc_b, std::size_t b_bytes) {
  if (b_bytes == 0) return crc_a;
  Matrix odd{};  // one zero bit
  odd[0] = kPolynomial;
  for (std::size_t i = 1; i < 32; ++i) odd[i] = 1u << (i - 1);
  Matrix even = squared(odd);  // two zero bits
  odd = squared(even);         // four
  for (;;) {
    even = squared(odd);  // 8, 32, 128 ... zero bits: one byte, then 4, 16, ...
    if (b_bytes & 1) crc_a = times(even, crc_a);
    if ((b_bytes >>= 1) == 0) break;
    odd = squared(even);
    if (b_bytes & 1) crc_a = times(odd, crc_a);
    if ((b_bytes >>= 1) == 0) break;
  }
  return crc_a ^ crc_b;
}

}  // namespace toroid::kernels
