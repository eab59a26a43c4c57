// How a shared-memory channel's sender fills a slot, and the measurement that picks the way
// on each node when a communicator is made (Options::slot_stores, TOROID_SLOT_STORES).
//
// A slot's bytes reach the receiver one of two ways:
//
//   cached:     sender --plain stores--> its cache ==(coherence, line by line)==> receiver
//   streaming:  sender --non-temporal stores--> memory --(prefetched reads)--> receiver
//
// Where the two cores share a last-level cache the first is a cache-to-cache hand-off and
// the faster. Where they do not (dies or sockets apart; on a VM, wherever the host has put
// the two vCPUs for the moment), each line is fetched out of the other core's cache at
// several times a memory access's latency, and the second wins by far: on the project's
// 2-core VM, whose host keeps its vCPUs either close (a cache line's round trip 80-140 ns)
// or far apart (390-480 ns) for minutes at a time, a 2-rank ring all-reduce of 256 KiB took
// 90 us with cached slots and 30 us with streamed ones in the far state, 40 and 45 us in the
// near one (docs/performance.md, "The slow state").
//
// The measurement (collective over the node's ranks): local rank 0 receives kProbeBytes
// from each of up to kProbeSenders other local ranks in turn, through the slots of their
// lane-0 channel, filled alternately each way; the sender times its fill, rank 0 its own
// reduction of the slots (what a recv_reduce does with one); the fastest of kProbeRounds per
// way. A sender whose streamed hand-off (fill and read) took less than 1/kMargin of its cached
// one votes for streaming; the majority decides for the whole node.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <functional>
#include <string>

namespace toroid::exec {

enum class SlotFill { cached, streaming };
const char* to_string(SlotFill f) noexcept;

struct SlotFillProbe {
  struct Way {
    double fill_us = 0, read_us = 0;  // the sender's fill of kProbeBytes, the receiver's read
    double total_us() const noexcept { return fill_us + read_us; }
  };
  bool measured = false;      // false: fixed by the options (or no channels on the node)
  Way cached, streaming;      // the first sender's
  int senders = 0;            // senders timed
  int senders_streaming = 0;  // of which streaming won
};

inline constexpr std::size_t kProbeBytes = std::size_t{128} << 10;
inline constexpr int kProbeSenders = 3;
inline constexpr int kProbeRounds = 5;
inline constexpr double kMargin = 1.5;

// Collective over `node` (this rank is `local` of `local_count`). `area(sender)` is this rank's
// view of kProbeBytes of slot memory in local rank 0's part that `sender` may write (its
// lane-0 channel to rank 0). Every rank of the node returns rank 0's result.
SlotFillProbe measure_slot_fill(MPI_Comm node, int local, int local_count,
                                const std::function<std::byte*(int sender)>& area);
// "measured per 128 KiB, fill + read: cached 22.3 + 10.1 us, streaming 5.9 + 7.5 us" (the
// first sender's numbers; with several, "from 3 senders, 1 faster streamed; the first's"
// before the comma), for logs and benchmark headers.
std::string describe(const SlotFillProbe& p);
// The way a probe decides: streaming where most senders voted for it.
SlotFill slot_fill_of(const SlotFillProbe& p) noexcept;

}  // namespace toroid::exec
