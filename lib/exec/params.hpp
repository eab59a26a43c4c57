// How one collective is run: its element type and operation, the MPI segment size, the
// watchdog, and the shared-memory channels it may use.
#pragma once

#include <cstddef>
#include <string>

#include "exec/shm_links.hpp"
#include "toroid/algorithm.hpp"
#include "toroid/defaults.hpp"
#include "toroid/types.hpp"

namespace toroid::exec {

// What a collective is called in messages ("non-blocking allreduce along x (torus2d)"): kept as
// its parts and formatted only when a message needs it, because every call carries one (the
// formatting alone doubled the instructions of an 8-byte all-reduce with the watchdog on).
// `form` and `along` point at string literals.
struct CallName {
  const char* form = "";   // "", "non-blocking ", "persistent "
  const char* along = "";  // "", " along x", " along y"
  Collective collective = Collective::allreduce;
  Algorithm algorithm = Algorithm::automatic;
  bool named = false;        // false: nothing set ("collective" in messages)
  bool blocks_vary = false;  // an all-to-all of each rank's own counts: named "alltoallv"
  std::string text() const;
  bool operator==(const CallName&) const = default;
};

// Outputs at least this large are written with non-temporal stores (a schedule's copies and
// receives whose bytes are final, and the single-copy paths): nothing in the collective reads
// them again, and write-allocating every line would read it from memory first (2 ranks,
// 2-128 MiB: 15-40% faster than plain stores).
inline constexpr std::size_t kStreamBytes = std::size_t{1} << 20;

struct ExecParams {
  DataType type = DataType::f32;
  ReduceOp reduction = ReduceOp::sum;
  std::size_t segment_bytes = default_segment_bytes;
  int depth = 4;  // receive-and-reduce segments in flight per MPI step
  // Watchdog: when > 0 and nothing moves for this many seconds while a caller waits, the rank
  // prints what it waits for (collective, algorithm, step, peer, bytes done) and aborts the job.
  double timeout_s = 0;
  CallName what;            // for the watchdog's message
  std::uint64_t bytes = 0;  // the call's vector (a timeline names the call with it)
  // Shared-memory channels to the ranks on this node; null: every step goes over MPI.
  const ShmLinks* shm = nullptr;
};

}  // namespace toroid::exec
