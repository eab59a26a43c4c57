// The library's kernel entry points: look the kernel up in the active level's table.
#include "kernels/reduce.hpp"

#include "kernels/table.hpp"

namespace toroid::kernels {

ReduceFn reduce_fn(DataType type, ReduceOp op) { return active_kernels().reduce_for(type, op); }

ReduceCopyFn reduce_copy_fn(DataType type, ReduceOp op) {
  return active_kernels().reduce_copy_for(type, op);
}

CopyFn copy_fn() { return active_kernels().copy; }
CopyFn copy_stream_fn() { return active_kernels().copy_stream; }

void divide(DataType type, void* data, std::size_t n, std::uint32_t divisor) {
  active_kernels().divide[KernelTable::index(type)](data, n, divisor);
}

}  // namespace toroid::kernels
