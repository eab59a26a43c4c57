// How many collectives a communicator ran on each of the node's paths (exec/single_copy.hpp),
// for the tests that check which path a call took.
#pragma once

#include <cstdint>

#include "api/internal.hpp"
#include "toroid/toroid.hpp"

namespace toroid::testing {

inline std::uint64_t single_copy_calls(Communicator& c) {
  return internal::impl(c).memory ? internal::impl(c).memory->single_copy_calls() : 0;
}
inline std::uint64_t staged_calls(Communicator& c) {
  return internal::impl(c).memory ? internal::impl(c).memory->staged_calls() : 0;
}
inline std::uint64_t remote_read_calls(Communicator& c) {
  return internal::impl(c).memory ? internal::impl(c).memory->remote_read_calls() : 0;
}
// Whether this job can take the node's paths: every rank on one node, shared memory allowed.
inline bool single_copy_here(Communicator& c) { return internal::impl(c).single_copy_possible(); }

}  // namespace toroid::testing
