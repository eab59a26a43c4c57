// Choosing the kernel level: TOROID_ISA values, levels the CPU lacks, and what the library runs.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "kernels/convert.hpp"
#include "kernels/table.hpp"
#include "toroid/error.hpp"

using namespace toroid;
using namespace toroid::kernels;

namespace {
constexpr unsigned kScalarOnly = 1u << 0;
constexpr unsigned kUpToAvx2 = (1u << 0) | (1u << 1);
constexpr unsigned kAll = 0b111;

std::string message_of(std::string_view value, unsigned mask) {
  try {
    select_isa(value, mask);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST_CASE("TOROID_ISA: auto picks the best level, a name forces it", "[kernels]") {
  CHECK(select_isa("", kAll) == Isa::avx512);
  CHECK(select_isa("auto", kUpToAvx2) == Isa::avx2);
  CHECK(select_isa("", kScalarOnly) == Isa::scalar);
  CHECK(select_isa("scalar", kAll) == Isa::scalar);
  CHECK(select_isa("avx2", kAll) == Isa::avx2);
  CHECK(select_isa("avx512", kAll) == Isa::avx512);
}

TEST_CASE("TOROID_ISA: a level the CPU lacks or an unknown name is an error, never a fallback",
          "[kernels]") {
  CHECK_THROWS_AS(select_isa("avx512", kUpToAvx2), InvalidArgument);
  CHECK(message_of("avx512", kUpToAvx2) ==
        "TOROID_ISA=avx512: this CPU or build cannot run that level (available: scalar, avx2)");
  CHECK(message_of("avx2", kScalarOnly) ==
        "TOROID_ISA=avx2: this CPU or build cannot run that level (available: scalar)");
  CHECK(message_of("AVX2", kAll) ==
        "TOROID_ISA='AVX2' is not a kernel level (valid: auto, scalar, avx2, avx512)");
  CHECK(message_of("sse4", kAll) ==
        "TOROID_ISA='sse4' is not a kernel level (valid: auto, scalar, avx2, avx512)");
}

TEST_CASE("this machine's levels, and the library runs the active one", "[kernels]") {
  CHECK(isa_supported(Isa::scalar));
  for (Isa isa : kAllIsas) {
    INFO("level " << to_string(isa));
    if (isa_supported(isa)) {
      CHECK(kernels_for(isa).isa == isa);
      CHECK(static_cast<int>(isa) <= static_cast<int>(best_isa()));
    } else {
      CHECK_THROWS_AS(kernels_for(isa), InvalidArgument);
    }
  }
  const char* env = std::getenv("TOROID_ISA");
  CHECK(active_isa() == select_isa(env ? env : ""));
  const KernelTable& active = kernels_for(active_isa());
  CHECK(&active_kernels() == &active);
  for (DataType t : {DataType::f32, DataType::bf16, DataType::i64}) {
    CHECK(reduce_fn(t, ReduceOp::max) == active.reduce_for(t, ReduceOp::max));
    CHECK(reduce_fn(t, ReduceOp::avg) == active.reduce_for(t, ReduceOp::sum));  // avg sums
    CHECK(reduce_copy_fn(t, ReduceOp::prod) == active.reduce_copy_for(t, ReduceOp::prod));
  }
  WARN("kernel level in use: " << to_string(active_isa())
                               << " (best here: " << to_string(best_isa()) << ")");
}

TEST_CASE("the library's conversion and reduce-copy entry points", "[kernels]") {
  const float in[5] = {1.0f, -2.5f, 65520.0f, 1.00390625f, 3.0e-8f};
  bfloat16 b[5];
  float16 h[5];
  float back[5];
  convert(in, b, 5);
  convert(in, h, 5);
  for (int i = 0; i < 5; ++i) {
    CHECK(b[i].bits == to_bfloat16(in[i]).bits);
    CHECK(h[i].bits == to_float16(in[i]).bits);
  }
  convert(b, back, 5);
  for (int i = 0; i < 5; ++i) CHECK(back[i] == to_float(b[i]));
  convert(h, back, 5);
  for (int i = 0; i < 5; ++i) CHECK(back[i] == to_float(h[i]));

  std::int32_t x[3] = {1, 2, 3}, y[3] = {10, 20, 30}, copy[3] = {};
  reduce_copy_fn(DataType::i32, ReduceOp::sum)(x, copy, x, y, 3);  // in place, plus a copy
  CHECK((x[0] == 11 && x[1] == 22 && x[2] == 33));
  CHECK((copy[0] == 11 && copy[1] == 22 && copy[2] == 33));
}
