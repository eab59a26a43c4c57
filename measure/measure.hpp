// One measured row of toroid-bench: a collective, a size, an algorithm.
#pragma once

#include <vector>

#include "measure/settings.hpp"

namespace toroid::bench {

struct Row {
  std::string coll, type, redop;
  std::uint64_t bytes, count;
  std::string algo;
  double median_us, min_us, max_us, algbw, busbw;
  std::uint64_t wrong;
  double vs_mpi;  // stock median / this median; 0 when no baseline ran
  // auto's cost model for this row (the algorithm auto picked, for auto's row); 0: no model
  // (the stock row, or the copy bound)
  double predicted_us = 0;
  std::string picked;  // auto's row: the algorithm it ran; others: algo
  // With --bound: the copy bound's time / this time, the fraction of the one-node memory limit
  // this row reaches (an all-reduce moves 2·p·N bytes, one concurrent copy of every rank's
  // vector); 0 without --bound.
  double of_copy = 0;
  // With --rounds: the least and the largest of the rounds' own ratios (stock's median in a
  // round / this row's in the same round); 0 with one round or no baseline.
  double vs_mpi_low = 0, vs_mpi_high = 0;
};

// The last-level cache of this machine (sysfs, else sysconf), 32 MiB when neither says; --cold
// rotates over buffer sets twice its size.
std::uint64_t last_level_cache_bytes();
// The cache --cold defeats: --cache when given, else last_level_cache_bytes().
std::uint64_t cache_bytes(const Settings& s);

// Checks once (when s.check) and times s.warmup + s.iters calls; every rank returns the same row.
Row measure(Collective c, const Settings& s, std::uint64_t bytes, Algorithm algo,
            Communicator& comm, Settings::Mode mode = Settings::Mode::blocking,
            Settings::Memory memory = Settings::Memory::user);
// One row from the same row timed in several rounds: the median of the rounds' medians (its
// bandwidths scaled to it), the least minimum, the largest maximum, every round's wrong
// elements.
Row median_of_rounds(std::vector<Row> rounds);
// The memory-traffic bound of a collective of `bytes` per rank: every rank memcpy's its vector
// at the same time (timed like the collectives). An all-reduce must at least read its input and
// write its output, so no algorithm on one node beats this row.
Row measure_copy_bound(Collective c, const Settings& s, std::uint64_t bytes, Communicator& comm);

}  // namespace toroid::bench
