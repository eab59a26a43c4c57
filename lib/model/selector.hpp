// `auto`: which algorithm runs a collective of a given size on one communicator.
//
// Per size class (the whole vector's bytes, one class per power of two: [2^(k-1), 2^k)), the
// selector prices every algorithm that implements the collective on this communicator with the
// simulator, on the communicator's own links (simulator.hpp, EndpointLinks: shared memory or MPI
// inside a node, the network between nodes, each with its measured alpha and bandwidth from
// tuning.hpp), at the class's middle size, and picks the fastest. A TOROID_ALGO rule covering
// the size comes first, then a choice toroid-tune measured on a communicator of this very layout
// (Tuning::choices, stock `mpi` among its candidates), then the model. Each class is decided
// once, on its first call; after that a choice is an array lookup. Every rank computes the same
// table from the same inputs (the tuning comes from rank 0), so every rank runs the same
// algorithm.
//
//   size class   4 KiB-8 KiB    ...   4 MiB-8 MiB
//   priced at    6 KiB                6 MiB
//   candidates   ring  bidir_ring  torus2d  torus2d_both  hierarchical  recursive_doubling  rabenseifner
//                swing  swing_latency
//   choice       the least predicted time; a tie goes to the earlier candidate in that list
//
// The first call of a class simulates every rank's schedule of every candidate: measured 0.15 ms
// at 2 ranks, 1.4 ms at 8, 62 ms at 64 and 1.7 s at 256 (it grows as p^2: p schedules of O(p)
// steps), after which a choice is 8-10 ns. Above kMaxModeledRanks `auto` therefore uses the fixed
// rule below (fixed_rule), which docs/algorithms.md states.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/algorithm_rules.hpp"
#include "model/simulator.hpp"
#include "model/tuning.hpp"
#include "toroid/algorithm.hpp"
#include "toroid/defaults.hpp"
#include "toroid/topology.hpp"
#include "toroid/torus.hpp"

namespace toroid::model {

inline constexpr int kMaxModeledRanks = 64;
inline constexpr int kSizeClasses = 65;

// The rule without a model (above kMaxModeledRanks): by size, with crossovers taken from
// toroid-sim on the tpu-v3 presets (their values and the measurements behind them in
// selector.cpp; the rule in words in docs/algorithms.md).
Algorithm fixed_rule(Collective c, std::uint64_t bytes, const Torus& t);

// Two ranks, all-reduce: recursive doubling (one exchange of the whole vector, each rank
// reducing all of it) below this, the model above. The model prices that reduction at memory
// speed, so it puts recursive doubling 2-3x slower than it runs while the vector is
// cache-resident, and picks bidir_ring or ring, which take two exchanges. Measured
// (toroid-bench, 2 ranks, one node): on the 2-core VM recursive doubling 2.0 against 4.3 us
// (bidir_ring) at 16 KiB, and the fastest in 9 of 12 rows at 32-64 KiB (at most 1.22x); from
// 128 KiB it measured 1.07-1.44x of ring, Rabenseifner or bidir_ring in six fresh jobs
// (2026-12-05, after the slot stores: 256 KiB 27-34 against 21-30 us), where before them, with
// plain-store slots in the far vCPU placement, it had been as fast as the ring to 1 MiB. On a
// 16-core Xeon (before the slot stores) the fastest or within 2% of it from 8 KiB to 512 KiB.
inline constexpr std::uint64_t kTwoRankExchangeBytes = 128 * 1024;

// Two ranks on one node's shared memory: bidir_ring is no candidate. Its two lanes go to the one
// peer, so it is ring's exchange cut in two, and the model's gain for it (one lane's reduction
// overlapping the other lane's slot fills) is the work of one thread done once either way.
// Measured on the 2-core VM (toroid-bench --op all --algo all -b 8 -e 64M -f 4 --rounds 3
// -n 10, three jobs, 2026-12-05): reduce-scatter 8 KiB 1.20-1.24x ring (the model picked it
// from 8 to 128 KiB), all-gather 512 B-8 KiB 1.16-1.67x; from 32 KiB within 1-9% either way.
// The torus algorithms on two ranks (one row of two, a bidirectional ring) are that schedule.
bool bidir_ring_candidate(int ranks, bool one_node_shm);
bool candidate_on(Algorithm a, int ranks, bool one_node_shm);

struct SelectorInputs {
  Torus topology{Torus2D{1, 1}};
  std::vector<int> node_of_rank;  // every rank's node, as the schedules see it (hierarchical)
  // Every rank's node as the links see it (which class carries a transfer); empty: node_of_rank.
  // They differ under TOROID_NODES, whose emulated nodes share one machine's memory.
  std::vector<int> link_node_of_rank;
  bool shm_inside_node = true;  // shared-memory links inside a node (else MPI)
  Tuning tuning = default_tuning();
  std::uint64_t segment_bytes = default_segment_bytes;
  std::vector<AlgorithmRule> rules;
};

struct Choice {
  Algorithm algorithm = Algorithm::ring;
  const AlgorithmRule* rule = nullptr;  // the rule that decided, if one did
  bool measured = false;                // that rule is the tuning's measured choice
  bool modeled = false;                 // false: fixed_rule decided (too many ranks)
  bool exchange = false;                // two ranks, a small all-reduce: one exchange
  std::vector<std::pair<Algorithm, double>>
      predicted;  // seconds per candidate priced, in candidate order
};

class Selector {
 public:
  // Throws InvalidArgument when the tuning lacks a link class this communicator uses.
  explicit Selector(SelectorInputs in);

  // The algorithm for a call; the first call of each (collective, class) tells the observer.
  Algorithm choose(Collective c, std::uint64_t bytes);
  // Computes the class's choice on first use.
  const Choice& choice(Collective c, int size_class);

  // Called once per (collective, class) at its first call (TOROID_LOG=info).
  void set_observer(std::function<void(Collective, int, const Choice&)> f) {
    observer_ = std::move(f);
  }

  // "recursive_doubling below 128 KiB, rabenseifner below 2 MiB, torus2d_both from 2 MiB" over
  // the classes up to `up_to` bytes (computing them), or one name where all agree.
  std::string describe(Collective c, std::uint64_t up_to = std::uint64_t{1} << 30);

  // Predicted seconds of algorithm a for `bytes` on these links; nullopt when it cannot run here.
  std::optional<double> predict(Collective c, Algorithm a, std::uint64_t bytes) const;

  // Link classes this communicator's transfers use, and what they are priced with.
  std::string describe_links() const;

  // What a measured choice must have been measured on to apply here: "4 ranks, 4x1, 1 node(s),
  // shm" (", 2 emulated nodes" under TOROID_NODES). toroid-tune writes it; equal text applies.
  const std::string& layout() const noexcept { return layout_; }

  static int size_class(std::uint64_t bytes) noexcept;       // 0 for 0 bytes, else bit_width
  static std::uint64_t class_low(int k) noexcept;            // the smallest size in class k
  static std::uint64_t class_middle(int k) noexcept;         // where class k is priced
  const SimModel& model() const noexcept { return model_; }  // what candidates are priced on
  const SelectorInputs& inputs() const noexcept { return in_; }

 private:
  SelectorInputs in_;
  std::string layout_;
  std::vector<AlgorithmRule> measured_;  // the tuning's measured choices for this layout
  bool uses_[kLinkClasses] = {};
  bool one_node_shm_ = false;  // every rank on one node, over shared memory
  SimModel model_;             // the links every candidate is priced on, built once
  static constexpr std::size_t kCollectives = 5;  // Collective's values, alltoall the last
  std::array<std::array<std::optional<Choice>, kSizeClasses>, kCollectives> table_;
  std::array<std::array<bool, kSizeClasses>, kCollectives> reported_{};
  std::function<void(Collective, int, const Choice&)> observer_;
};

std::string size_text(std::uint64_t bytes);  // "128 KiB", "2 MiB", "96 B"

}  // namespace toroid::model
