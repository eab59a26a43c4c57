#include "kernels/optimizer_kernels.hpp"

#include "kernels/table.hpp"

namespace toroid::kernels {

const OptimizerKernels& optimizer_kernels() { return active_kernels().optimizer; }

}  // namespace toroid::kernels
