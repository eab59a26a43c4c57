#include "pmpi/guard.hpp"

namespace toroid::pmpi {
namespace {

thread_local int depth = 0;

}  // namespace

bool inside_toroid() noexcept { return depth > 0; }
ToroidScope::ToroidScope() noexcept { ++depth; }
ToroidScope::~ToroidScope() { --depth; }

}  // namespace toroid::pmpi
