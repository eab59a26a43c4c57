// toroid-bench's command line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "toroid/toroid.hpp"

namespace toroid::bench {

struct Settings {
  std::vector<Collective> ops;
  // --op alltoallv: the all-to-all rows are alltoallv with skewed blocks, as a gate's choices
  // make them (measure.cpp, skewed_count): some ranks receive several times what others do.
  bool alltoallv = false;
  std::vector<Algorithm> algos;
  std::string topology;
  // --axes: toroid's rows and the stock one run along these axes (every sub-torus at once; the
  // stock collective on a communicator of each group); unset: the whole communicator.
  std::optional<Axes> axes;
  DataType type = DataType::f32;
  ReduceOp op = ReduceOp::sum;
  std::uint64_t min_bytes = 4096, max_bytes = 64ull << 20, factor = 4;
  int iters = 20, warmup = 3;
  int rounds = 1;  // --rounds: each row timed this many times, the rows of a size taking turns
  // --batch: calls per timed iteration, back to back, the time divided by them; 0 (auto): enough
  // calls for kBatchTargetUs, at most kMaxBatch (1 for large calls and in place).
  int batch = 0;
  static constexpr double kBatchTargetUs = 50;
  static constexpr int kMaxBatch = 1000;
  bool check = true, in_place = false, baseline = true;
  std::string format = "table";  // table | csv | json
  std::string output;            // file for the results; empty: stdout
  std::string csv;               // also the rows as CSV here (for plots); empty: none
  // --timeout; unset: TOROID_TIMEOUT, else kDefaultTimeoutS (see toroid_bench.cpp).
  std::optional<double> timeout_s;
  static constexpr double kDefaultTimeoutS = 300;
  std::vector<std::string>
      isas;  // kernel levels to run toroid's algorithms with; empty: the active one
  // Transports to run toroid's algorithms over (rows named ALGO/TRANSPORT when more than one).
  std::vector<Transport> transports = {Transport::automatic};
  // How toroid's collectives are called (rows named ALGO:MODE when more than one): blocking,
  // nonblocking (i* then wait), persistent (*_init once, then start and wait). Stock rows block.
  enum class Mode { blocking, nonblocking, persistent };
  std::vector<Mode> modes = {Mode::blocking};
  // Whose memory toroid's rows run on (rows named ALGO+owned for toroid's when both are listed):
  // user = ordinary memory (std::vector); toroid = Communicator::allocate's, which a blocking
  // `auto` call on one node turns into the single-copy path. Stock rows use ordinary memory.
  enum class Memory { user, toroid };
  std::vector<Memory> memories = {Memory::user};
  bool bound = false;  // add the memory-traffic bound row (every rank copies its vector at once)
  // Rotate over buffer sets larger than the last-level cache, so no iteration finds its input
  // or output cached (measure.cpp, cold_sets); false: the same buffers every iteration.
  bool cold = false;
  // --cache: the last-level cache `cold` must defeat, in bytes; 0: what the machine says
  // (last_level_cache_bytes). Under a VM CPUID can claim many times the host's L3.
  std::uint64_t cache_bytes = 0;
  // --offset: how far past a 4 KiB multiple from the input each output set starts (ordinary
  // memory: every set page-aligned plus this). Where malloc happened to put two vectors decided
  // rows: glibc's memcpy, and the kernel's copy that Open MPI's vader uses, run many times
  // slower at 1-31 bytes, and stock's reductions at 0 (docs/performance.md, "Where the buffers
  // lie"); half a page apart meets neither, so that is the default, and it is stated.
  std::uint64_t output_offset = 2048;
};

// Parses argv; sets `help` (and `help_text`) for --help. Throws InvalidArgument naming the option
// and its value on bad input (the caller exits with status 2 on every rank).
std::string_view to_string(Settings::Mode m) noexcept;
std::string_view to_string(Settings::Memory m) noexcept;

Settings parse_settings(int argc, char** argv, bool& help, std::string& help_text);

}  // namespace toroid::bench
