#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/reduce.hpp"

using namespace toroid;

TEST_CASE("native reductions, in place, every op", "[kernels]") {
  std::vector<float> a{1, -2, 3, 4}, b{5, 6, -7, 8};
  std::vector<float> d(4);
  kernels::reduce_fn(DataType::f32, ReduceOp::sum)(d.data(), a.data(), b.data(), 4);
  CHECK(d == std::vector<float>{6, 4, -4, 12});
  kernels::reduce_fn(DataType::f32, ReduceOp::prod)(d.data(), a.data(), b.data(), 4);
  CHECK(d == std::vector<float>{5, -12, -21, 32});
  kernels::reduce_fn(DataType::f32, ReduceOp::min)(a.data(), a.data(), b.data(), 4);
  CHECK(a == std::vector<float>{1, -2, -7, 4});
  std::vector<std::int64_t> x{INT64_MAX, 3}, y{1, -5};
  kernels::reduce_fn(DataType::i64, ReduceOp::sum)(x.data(), x.data(), y.data(), 2);
  CHECK(x[0] == INT64_MIN);  // wraps like two's complement
  CHECK(x[1] == -2);
  kernels::reduce_fn(DataType::i64, ReduceOp::max)(x.data(), x.data(), y.data(), 2);
  CHECK(x == std::vector<std::int64_t>{1, -2});
}

TEST_CASE("min and max propagate NaN from either side", "[kernels]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> a{nan, 1, nan}, b{1, nan, nan}, d(3);
  for (ReduceOp op : {ReduceOp::min, ReduceOp::max}) {
    kernels::reduce_fn(DataType::f32, op)(d.data(), a.data(), b.data(), 3);
    for (float v : d) CHECK(std::isnan(v));
  }
}

TEST_CASE("16-bit floats reduce in f32 and round on store; avg divides", "[kernels]") {
  std::vector<bfloat16> a{to_bfloat16(1.0f), to_bfloat16(256.0f)},
      b{to_bfloat16(2.0f), to_bfloat16(1.0f)};
  kernels::reduce_fn(DataType::bf16, ReduceOp::sum)(a.data(), a.data(), b.data(), 2);
  CHECK(to_float(a[0]) == 3.0f);
  CHECK(to_float(a[1]) == 256.0f);  // 257 is not a bf16: ties to even gives 256
  std::vector<float16> h{to_float16(6.0f), to_float16(-3.0f)};
  kernels::divide(DataType::f16, h.data(), 2, 4);
  CHECK(to_float(h[0]) == 1.5f);
  CHECK(to_float(h[1]) == -0.75f);
}
