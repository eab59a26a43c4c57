// parse_size: every text is a byte count that prints (in bytes) and re-parses to itself, or an
// InvalidArgument.
#include <string>

#include "core/parse_size.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace toroid;
  fuzz::expect_value_or_error([&] {
    const std::uint64_t v = parse_size(fuzz::text_of(data, size), "size");
    fuzz::require(parse_size(std::to_string(v), "size") == v, "bytes re-parse to themselves");
    if (v % 1024 == 0)
      fuzz::require(parse_size(std::to_string(v / 1024) + "K", "size") == v, "K suffix is 1024");
  });
  return 0;
}
