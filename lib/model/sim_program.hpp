// Ranks' schedules reduced to what the simulator needs, laid end to end in one array (the i-th
// rank's steps are ops[begin[i], begin[i+1])): per step its kind, peer, tag, bytes and what it
// waits for (the schedule's dependencies), and beside them the run's state of the step. 48
// bytes a step plus 4 a dependency (a Step is ~80), so 4096 ranks of `ring` (16380 steps each)
// take about 3.2 GB. One record and one array (or one per building thread), rather than a
// program per rank and the run's state apart: the run is bound by reaching memory, ranks
// advance together so each event lands on another rank's steps, and one line then holds what
// an event needs of a step.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "schedule/step.hpp"
#include "schedule/wait_graph.hpp"

namespace toroid::model::sim {

enum class OpKind : std::uint8_t { send, recv, recv_reduce, local };

inline constexpr std::uint32_t kNone = UINT32_MAX;      // no op
inline constexpr std::uint32_t kMany = UINT32_MAX - 1;  // Instr::follows: several; see the deps

// Instr::flags, set by the run
enum : std::uint8_t {
  kPosted = 1,          // posted, its partner not yet
  kFirstWanted = 2,     // some op follows its first segment
  kDoneWanted = 4,      // some op waits for its end
  kScale = 8,           // set by append: a local op that is a scale (else a copy)
  kInFlight = 16,       // its transfer is on the torus's links, its end not known yet (`waits`
                        // then holds the flow's index: an op posted waits for nothing)
  kChannelWanted = 32,  // the next op on its channel waits for it
  kIssued = 64,         // that next op was let go when this one was issued, before its end
};

struct Instr {
  // The step:
  std::uint64_t bytes = 0;
  std::int32_t peer = -1;
  std::uint32_t follows = kNone;  // the one op whose receive it follows segment by segment
  std::uint32_t dep_begin = 0;    // Programs::deps[dep_begin, + dep_count)
  std::uint16_t dep_count = 0;
  std::uint16_t tag = 0;
  OpKind kind = OpKind::local;
  // The run's state of it:
  std::uint8_t flags = 0;
  std::uint32_t partner = kNone;  // its match's index in the peer's program (kNone: never met)
  std::uint32_t waits = 0;        // conditions not met yet (kInFlight: its flow's index)
  std::uint32_t waiters = 0;      // who waits for it: the run's list from here to the next op's
  double done = std::numeric_limits<double>::infinity();  // when it ends
};
static_assert(sizeof(Instr) == 48);

// A dependency: the earlier op's index in its rank's program, with kFollow set for a
// segment-by-segment one (the same bit the wait graph marks such waiters with).
inline constexpr std::uint32_t kFollow = schedule::WaitGraph::kFollow;

struct Programs {
  std::vector<Instr> ops;               // every rank's, rank after rank
  std::vector<std::uint32_t> deps;      // grouped by op (Instr::dep_begin)
  std::vector<std::uint64_t> begin{0};  // per rank + 1: where its ops start in `ops`
  // Per op, of the first rank appended (rank 0's per-phase breakdown), or of every rank when
  // `every_phase` is set before the first append (a timeline).
  std::vector<std::uint32_t> phase_numbers;
  bool every_phase = false;

  int ranks() const { return static_cast<int>(begin.size()) - 1; }
  std::size_t size(int r) const {
    return static_cast<std::size_t>(begin[static_cast<std::size_t>(r) + 1] -
                                    begin[static_cast<std::size_t>(r)]);
  }
};

// Appends the next rank's schedule. Throws InvalidArgument for a tag outside 0..65535, steps
// out of phase order, or more than 65535 dependencies on one step.
void append(Programs& p, const schedule::Schedule& s, std::size_t elem_size);

}  // namespace toroid::model::sim
