// The defaults the library, its model and its tools share, each named once (no MPI here, so the
// layers below MPI read them too).
#pragma once

#include <cstddef>

#include "toroid/export.hpp"

TOROID_API_BEGIN
namespace toroid {

// The pipelining segment of transfers over MPI (Options::segment_bytes, TOROID_SEGMENT_BYTES).
inline constexpr std::size_t default_segment_bytes = 256 * 1024;
// The default instead where the communicator spans several real nodes (and neither
// Options::segment_bytes nor TOROID_SEGMENT_BYTES says otherwise). Over TCP, MPI sends a
// message above its eager limit (Open MPI: 64 KiB) by rendezvous, and the receiver's reply waits
// in the same TCP stream behind the bulk data going the other way, so an algorithm that uses
// both directions of a link got no more than one of them (measured: docs/cluster.md).
inline constexpr std::size_t cross_node_segment_bytes = 56 * 1024;

// `auto`'s broadcast: the binomial tree (recursive_doubling) below this many bytes, the torus's
// chains from here (docs/algorithms.md, "Broadcast").
inline constexpr std::size_t broadcast_tree_bytes = 64 * 1024;

// Gradient buckets, in bytes of the wire type: the first (the last layers) smaller, so its
// communication starts early; both as PyTorch DDP.
inline constexpr std::size_t default_bucket_bytes = std::size_t{25} << 20;
inline constexpr std::size_t default_first_bucket_bytes = std::size_t{1} << 20;

}  // namespace toroid
TOROID_API_END
