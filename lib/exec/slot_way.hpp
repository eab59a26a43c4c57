// How one sender writes its slots to one peer now, kept current while the job runs.
//
// The node's measurement (slot_fill.hpp) picks the way when the communicator is made, but a
// VM's host may move the two vCPUs apart or together at any time (on the project's 2-core VM
// every few minutes), and a long job would keep a choice that has stopped being right. The
// choice is the sender's alone (a receiver reads a slot the same way either way), so each
// sender keeps it current by itself, from what it can time: its own fills. Where the cores
// share no cache, a plain-store fill first takes every line back out of the receiver's cache
// and takes 2.5-5x a non-temporal one; where they do, the two cost about the same (0.9-1.7x,
// docs/performance.md, "The slow state's mechanism"):
//
//   segments:  c c c c ... c  S  c c c ... c  S  ...     (c: the current way, S: the other,
//   timed:     the last kRecent of the current way, and each explored one       every
//   decide at each S:  cached -> streaming when c / S > kToStreaming            kExploreEvery-th)
//                      streaming -> cached when S / c < kToCached
//
// The explored segment is compared with the current way's recent fills (the same vectors, so
// whether the source is in cache or in memory weighs on both alike); the fastest of each
// (min) stands for it, so a fill the scheduler interrupted does not count. The two thresholds
// apart keep a pair near the line from flapping. Only segments of at least kTimedBytes are
// timed and explored (smaller ones take the current way: a clock read is no longer small
// beside them). Exploring costs a few percent in the far state (one plain fill in 64).
#pragma once

#include <cstddef>
#include <cstdint>

#include "exec/slot_fill.hpp"

namespace toroid::exec {

class SlotWay {
 public:
  static constexpr std::size_t kTimedBytes = std::size_t{16} << 10;
  static constexpr std::uint32_t kExploreEvery = 64;
  static constexpr int kRecent = 8;
  static constexpr double kToStreaming = 2.0;
  static constexpr double kToCached = 1.5;

  SlotWay() = default;
  // `adapt`: keep the way current (Options::slot_stores auto); otherwise it stays `start`.
  SlotWay(SlotFill start, bool adapt) : streaming_(start == SlotFill::streaming), adapt_(adapt) {}

  bool streaming() const noexcept { return streaming_; }
  // Whether a segment of `bytes` should be timed (and record() called with its time).
  bool timed(std::size_t bytes) const noexcept { return adapt_ && bytes >= kTimedBytes; }
  // The way for the next timed segment: the current one, or every kExploreEvery-th the other.
  bool next_streams() noexcept { return ++timed_ % kExploreEvery == 0 ? !streaming_ : streaming_; }
  // A timed segment's fill: `streamed` how it was written, `ns` per byte.
  void record(bool streamed, double ns_per_byte) noexcept;
  std::uint32_t switches() const noexcept { return switches_; }

 private:
  double recent_best() const noexcept;

  bool streaming_ = false;
  bool adapt_ = false;
  std::uint32_t timed_ = 0;
  std::uint32_t switches_ = 0;
  double recent_[kRecent] = {};
  int recent_count_ = 0, recent_at_ = 0;
};

}  // namespace toroid::exec
