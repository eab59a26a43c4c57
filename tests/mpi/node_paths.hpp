// How many collectives a communicator ran on each of the node's paths (exec/single_copy.hpp),
// for the tests that check which path a call took.
#pragma once

#include <cstdint>

#include "api/internal.hpp"
#include "toroid/toroid.hpp"

namespace toroid::testing {

inline std::uint64_t single_copy_calls(Communicator& c) { return c.node_path_calls().single_copy; }
inline std::uint64_t staged_calls(Communicator& c) { return c.node_path_calls().staged; }
inline std::uint64_t remote_read_calls(Communicator& c) { return c.node_path_calls().remote_reads; }
// Whether this job can take the node's paths: every rank on one node, shared memory allowed.
inline bool single_copy_here(Communicator& c) { return internal::impl(c).single_copy_possible(); }

}  // namespace toroid::testing
