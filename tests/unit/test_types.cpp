#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "core/parse_size.hpp"
#include "toroid/algorithm.hpp"
#include "toroid/error.hpp"
#include "toroid/types.hpp"

using namespace toroid;

TEST_CASE("type and op names round-trip and bad names are rejected with the text", "[types]") {
  for (DataType t :
       {DataType::f32, DataType::f64, DataType::f16, DataType::bf16, DataType::i32, DataType::i64})
    CHECK(parse_data_type(to_string(t)) == t);
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max, ReduceOp::avg})
    CHECK(parse_reduce_op(to_string(op)) == op);
  CHECK_THROWS_WITH(parse_data_type("f8"), Catch::Contains("unknown data type 'f8'"));
  CHECK_THROWS_WITH(parse_reduce_op("xor"), Catch::Contains("unknown reduction op 'xor'"));
  CHECK_THROWS_WITH(parse_algorithm("tree"), Catch::Contains("unknown algorithm 'tree'"));
  CHECK(parse_algorithm("ring") == Algorithm::ring);
  CHECK(size_of(DataType::bf16) == 2);
  CHECK(size_of(DataType::i64) == 8);
}

TEST_CASE("bf16 conversion rounds to nearest even and keeps NaN and Inf", "[types]") {
  CHECK(to_float(to_bfloat16(1.0f)) == 1.0f);
  CHECK(to_float(to_bfloat16(256.0f)) == 256.0f);
  // 1 + 2^-8 is exactly halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1).
  CHECK(to_float(to_bfloat16(1.0f + 0x1p-8f)) == 1.0f);
  // 1 + 3*2^-8 is halfway between 1+2^-7 and 1+2^-6: even is 1+2^-6.
  CHECK(to_float(to_bfloat16(1.0f + 3 * 0x1p-8f)) == 1.0f + 0x1p-6f);
  CHECK(std::isnan(to_float(to_bfloat16(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(std::isinf(to_float(to_bfloat16(std::numeric_limits<float>::infinity()))));
}

TEST_CASE("f16 conversion covers normals, subnormals, overflow and ties", "[types]") {
  CHECK(to_float(to_float16(1.0f)) == 1.0f);
  CHECK(to_float(to_float16(2048.0f)) == 2048.0f);
  CHECK(to_float(to_float16(65504.0f)) == 65504.0f);
  CHECK(std::isinf(to_float(to_float16(65520.0f))));  // halfway to 65536 rounds to even: Inf
  CHECK(to_float(to_float16(0x1p-24f)) == 0x1p-24f);  // smallest subnormal
  CHECK(to_float(to_float16(0x1p-26f)) == 0.0f);
  CHECK(to_float(to_float16(1.0f + 0x1p-11f)) == 1.0f);  // tie to even
  CHECK(to_float(to_float16(-3.5f)) == -3.5f);
  CHECK(std::isnan(to_float(to_float16(std::numeric_limits<float>::quiet_NaN()))));
  // Every f16 value converts to f32 and back unchanged.
  for (unsigned b = 0; b < 0x10000; ++b) {
    const float16 h{static_cast<std::uint16_t>(b)};
    const float f = to_float(h);
    if (std::isnan(f)) continue;
    REQUIRE(to_float16(f).bits == h.bits);
  }
}

TEST_CASE("sizes parse with binary suffixes and bad text names the option", "[types]") {
  CHECK(parse_size("4096", "-b") == 4096);
  CHECK(parse_size("4K", "-b") == 4096);
  CHECK(parse_size("256M", "-e") == 256ull << 20);
  CHECK(parse_size("1G", "-e") == 1ull << 30);
  CHECK_THROWS_WITH(parse_size("12Q", "-e"), Catch::Contains("-e: '12Q' is not a size"));
  CHECK_THROWS_WITH(parse_size("", "-b"), Catch::Contains("-b: '' is not a size"));
  CHECK_THROWS_AS(parse_size("99999999999999999999", "-b"), InvalidArgument);
  CHECK_THROWS_WITH(
      parse_size("-5", "TOROID_MIN_BYTES"),
      Catch::Contains("TOROID_MIN_BYTES: '-5' is not a size (a size cannot be negative"));
  CHECK_THROWS_WITH(parse_size("x", "-b"), Catch::Contains("(no number"));
}
