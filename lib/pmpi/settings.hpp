// The preload's own settings, read once per process from the environment: which calls go to
// toroid (TOROID_MIN_BYTES) and whether to say what was chosen (TOROID_LOG). TOROID_ALGO,
// TOROID_TOPOLOGY and the other TOROID_* variables are read by toroid::Communicator itself.
//
// Whether a call is served must be decided alike on every rank, and it depends on these
// settings: every rank of a job must see the same TOROID_MIN_BYTES (mpirun -x passes one value);
// agree_on_settings checks it at MPI_Init.
#pragma once

#include <cstdint>
#include <string>

namespace toroid::pmpi {

// Below this many bytes of the whole vector, toroid's per-call bookkeeping (plus the attribute
// lookup) costs more than it saves: measured with toroid-bench --algo mpi under the preload at 2,
// 3 and 4 ranks over the shared-memory transport, see docs/preload.md.
inline constexpr std::uint64_t kDefaultMinBytes = 4 * 1024;

struct PreloadConfig {
  std::uint64_t min_bytes = kDefaultMinBytes;
  bool log_info = false;
  // TOROID_THREAD_LEVEL: the least thread level the preload asks MPI for, whatever the program
  // asked (thread_level.hpp): 0 for `program` (the default: what the program asked; nothing
  // changes for its own calls), MPI_THREAD_FUNNELED, or MPI_THREAD_MULTIPLE (the progress thread
  // may call MPI, so non-blocking calls are served across nodes too). Each level above SINGLE
  // costs every MPI call of the program under Open MPI 4.1 (docs/preload.md).
  int thread_floor = 0;
  // Non-empty when a variable is malformed. Then min_bytes is 0, so the first call toroid could
  // serve reports this through the communicator's error handler instead of ignoring it.
  std::string error;
};

const PreloadConfig& preload_config();

// Right after MPI_Init: compares, over MPI_COMM_WORLD, every TOROID_* variable that decides
// what a rank does (TOROID_MIN_BYTES and the library's). A difference (a variable exported on
// one host only) becomes `error` on every rank, and rank 0 says so on stderr: every rank then
// serves its first eligible call and reports the error there, instead of some ranks serving
// calls that the others forward, which hangs.
void agree_on_settings() noexcept;

}  // namespace toroid::pmpi
