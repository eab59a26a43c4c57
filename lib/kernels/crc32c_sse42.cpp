// CRC-32C with the SSE4.2 crc32 instruction, eight bytes per instruction. Built with -msse4.2
// and reached only through crc32c_instruction(), after the CPU check.
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && defined(__SSE4_2__)
#include <nmmintrin.h>

namespace toroid::kernels {

std::uint32_t crc32c_sse42(std::uint32_t crc, const void* data, std::size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t c = ~crc;
  for (; bytes > 0 && reinterpret_cast<std::uintptr_t>(p) % 8 != 0; --bytes)
    c = _mm_crc32_u8(static_cast<std::uint32_t>(c), *p++);
  for (; bytes >= 8; bytes -= 8, p += 8) {
    std::uint64_t word;
    std::memcpy(&word, p, sizeof word);
    c = _mm_crc32_u64(c, word);
  }
  for (; bytes > 0; --bytes) c = _mm_crc32_u8(static_cast<std::uint32_t>(c), *p++);
  return ~static_cast<std::uint32_t>(c);
}

}  // namespace toroid::kernels
#endif
