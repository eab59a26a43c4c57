// CRC-32C: the check values of the standard (RFC 3720 B.4 and the catalogue's "123456789"),
// the instruction form equal to the table form at every length and alignment, continuation,
// and combine equal to the CRC of the concatenation at every split.
#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/crc32c.hpp"

using namespace toroid::kernels;

TEST_CASE("crc32c: check values, both forms, continuation and combine", "[kernels]") {
  std::vector<Crc32cFunction> forms = {&crc32c_table, &crc32c};
  if (crc32c_instruction()) forms.push_back(crc32c_instruction());
  const std::string digits = "123456789";
  const std::vector<unsigned char> zeros(32, 0x00), ones(32, 0xff);
  std::vector<unsigned char> ascending(32), descending(32);
  for (int i = 0; i < 32; ++i) ascending[i] = i, descending[i] = 31 - i;
  for (Crc32cFunction f : forms) {
    CHECK(f(0, digits.data(), digits.size()) == 0xE3069283u);
    CHECK(f(0, zeros.data(), 32) == 0x8A9136AAu);
    CHECK(f(0, ones.data(), 32) == 0x62A8AB43u);
    CHECK(f(0, ascending.data(), 32) == 0x46DD794Eu);
    CHECK(f(0, descending.data(), 32) == 0x113FDB5Cu);
    CHECK(f(0, nullptr, 0) == 0u);
  }

  std::mt19937 rng(7);
  std::vector<unsigned char> data(4096 + 64);
  for (auto& b : data) b = static_cast<unsigned char>(rng());
  for (std::size_t offset = 0; offset < 9; ++offset)
    for (std::size_t n : {0, 1, 7, 8, 9, 63, 64, 65, 1000, 4096}) {
      CAPTURE(offset, n);
      const std::uint32_t want = crc32c_table(0, data.data() + offset, n);
      for (Crc32cFunction f : forms) CHECK(f(0, data.data() + offset, n) == want);
      for (std::size_t split : {std::size_t{0}, n / 3, n}) {
        const std::uint32_t a = crc32c(0, data.data() + offset, split);
        const std::uint32_t b = crc32c(0, data.data() + offset + split, n - split);
        CHECK(crc32c(a, data.data() + offset + split, n - split) == want);
        CHECK(crc32c_combine(a, b, n - split) == want);
      }
    }
  // A long run joined from pieces of very different sizes, as a section's runs from several
  // ranks are.
  std::vector<unsigned char> big(3 << 20);
  for (auto& b : big) b = static_cast<unsigned char>(rng());
  std::uint32_t joined = 0;
  for (std::size_t at = 0, step = 1; at < big.size(); at += step, step = step * 3 + 1) {
    const std::size_t n = std::min(step, big.size() - at);
    joined = crc32c_combine(joined, crc32c(0, big.data() + at, n), n);
  }
  CHECK(joined == crc32c(0, big.data(), big.size()));
}
