// One ISA level's kernels as a table of function pointers. Each level's file fills a table;
// dispatch.cpp picks one. Tests and the kernel benchmark reach a given level through
// kernels_for(), the library only through reduce.hpp / convert.hpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/isa.hpp"
#include "kernels/optimizer_kernels.hpp"
#include "kernels/reduce.hpp"
#include "toroid/types.hpp"

namespace toroid::kernels {

using DivideFn = void (*)(void* data, std::size_t n, std::uint32_t divisor);
using ConvertFn = void (*)(const void* src, void* dst, std::size_t n);

inline constexpr int kTypes = 6;  // DataType values f32 .. i64
inline constexpr int kOps = 4;    // ReduceOp sum, prod, min, max (avg runs as sum)

static_assert(static_cast<int>(DataType::i64) == kTypes - 1 &&
                  static_cast<int>(ReduceOp::max) == kOps - 1,
              "KernelTable indexes by DataType and ReduceOp values");

struct KernelTable {
  Isa isa;
  ReduceFn reduce[kTypes][kOps];
  ReduceCopyFn reduce_copy[kTypes][kOps];
  DivideFn divide[kTypes];  // no-ops for the integer types
  CopyFn copy;              // memcpy without glibc's `rep movsb` (see reduce.hpp)
  CopyFn copy_stream;       // memcpy whose stores bypass the cache (see reduce.hpp)
  ConvertFn f32_to_bf16, f32_to_f16, bf16_to_f32, f16_to_f32;
  OptimizerKernels optimizer;

  ReduceFn reduce_for(DataType t, ReduceOp op) const { return reduce[index(t)][index(op)]; }
  ReduceCopyFn reduce_copy_for(DataType t, ReduceOp op) const {
    return reduce_copy[index(t)][index(op)];
  }
  static int index(DataType t) { return static_cast<int>(t); }
  static int index(ReduceOp op) { return op == ReduceOp::avg ? 0 : static_cast<int>(op); }
};

// The table of one level; throws InvalidArgument if this CPU cannot run it.
const KernelTable& kernels_for(Isa isa);
// The table the library runs: active_isa()'s, unless use_isa() switched it.
const KernelTable& active_kernels();
// Switches every later kernel call of this process to `isa` (throws InvalidArgument if this CPU
// cannot run it). For benchmarks that compare levels within one run; not thread-safe against
// collectives running at the same time.
void use_isa(Isa isa);

// Filled by scalar.cpp, avx2.cpp, avx512.cpp. Reach them only through kernels_for(): the SIMD
// tables' kernels fault on CPUs without the level.
const KernelTable& scalar_table();
const KernelTable* avx2_table();  // nullptr where this build has no such level
const KernelTable* avx512_table();
// Whether this build compiled each SIMD level (constant data: reading it runs no ISA code).
extern const bool kAvx2Built;
extern const bool kAvx512Built;

}  // namespace toroid::kernels
