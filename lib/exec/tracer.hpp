// The engine's recorder of a timeline (model/timeline.hpp) while TOROID_TRACE (Options::trace)
// names a file: every call and every step of every schedule this rank runs, with start and end
// on a clock that all ranks start together (a barrier at the communicator's construction), and
// at the communicator's end one file for the job, written by rank 0.
//
// Off, it costs the engine nothing per step: the engine runs a copy of its step loop without
// the recording (Engine::advance<bool>), chosen once per round. On, memory is bounded: at most
// kCapacity steps and calls are kept, the rest counted and the count written into the file.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

#include "model/timeline.hpp"

namespace toroid::exec {

class Tracer {
 public:
  static constexpr std::size_t kCapacity = 1'000'000;  // steps (about 60 MB), and as many calls
  static constexpr std::uint32_t kNone = UINT32_MAX;

  // The file of this process's next traced communicator: `base`, then base.2, base.3, ...
  // (counting the Tracers constructed).
  static std::string path_for(const std::string& base);
  // Throws InvalidArgument when `path` cannot be written: checked by rank 0 at the start (the
  // caller agrees on it across ranks), not found out at the end.
  static void check_writable(const std::string& path);
  // Collective over `comm` (a barrier: the ranks' clocks start together).
  Tracer(MPI_Comm comm, std::string path);

  double now_us() const {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0_)
        .count();
  }
  // These three may be called from the caller's and the progress thread alike.
  // A call begins now: its index in the timeline (kNone once full).
  std::uint32_t begin_call(std::string name, std::uint64_t bytes);
  void end_call(std::uint32_t call);
  void step(const model::TraceStep& s);

  // Collective over `comm`: every rank's events to rank 0, which writes the file. Where MPI is
  // finalized already, each rank writes its own file (path + ".rank<r>") and says so.
  void write(MPI_Comm comm) noexcept;

  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
  std::mutex mutex_;
  std::chrono::steady_clock::time_point t0_;
  model::RankTimeline timeline_;
};

}  // namespace toroid::exec
