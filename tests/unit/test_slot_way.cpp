// A sender's way of writing slots to one peer, kept current from its own timed fills
// (exec/slot_way.hpp): it moves to streaming when plain fills become much slower than
// streamed ones (cores moved apart), back when they are alike again, and not on noise.
#include <catch2/catch.hpp>

#include "exec/slot_fill.hpp"
#include "exec/slot_way.hpp"

using toroid::exec::SlotFill;
using toroid::exec::SlotWay;

namespace {

// Feeds `segments` timed fills, each taking the way next_streams() says, at `cached` or
// `streaming` ns per byte.
void fill(SlotWay& w, int segments, double cached, double streaming) {
  for (int i = 0; i < segments; ++i) {
    const bool s = w.next_streams();
    w.record(s, s ? streaming : cached);
  }
}

}  // namespace

TEST_CASE("slot way: follows the cores apart and together, explores one fill in 64", "[slot_way]") {
  SlotWay w(SlotFill::cached, true);
  CHECK(w.timed(SlotWay::kTimedBytes));
  CHECK_FALSE(w.timed(SlotWay::kTimedBytes - 1));
  fill(w, 200, 0.08, 0.07);  // near: alike
  CHECK_FALSE(w.streaming());
  CHECK(w.switches() == 0);
  fill(w, SlotWay::kExploreEvery, 0.25, 0.07);  // far: plain fills 3.6x
  CHECK(w.streaming());
  CHECK(w.switches() == 1);
  fill(w, 300, 0.25, 0.07);
  CHECK(w.streaming());
  CHECK(w.switches() == 1);
  fill(w, SlotWay::kExploreEvery, 0.08, 0.07);  // near again
  CHECK_FALSE(w.streaming());
  CHECK(w.switches() == 2);
}

TEST_CASE("slot way: the gap between its thresholds holds, a slow outlier does not move it",
          "[slot_way]") {
  SlotWay w(SlotFill::cached, true);
  fill(w, 500, 0.12, 0.07);  // plain 1.7x: under kToStreaming
  CHECK_FALSE(w.streaming());
  SlotWay s(SlotFill::streaming, true);
  fill(s, 500, 0.12, 0.07);  // over kToCached: stays streaming
  CHECK(s.streaming());
  // One interrupted plain fill among fast ones: the fastest of the recent ones stands.
  SlotWay o(SlotFill::cached, true);
  for (int i = 1; i <= 500; ++i) {
    const bool streams = o.next_streams();
    o.record(streams, streams ? 0.07 : (i % 8 == 0 ? 5.0 : 0.08));
  }
  CHECK_FALSE(o.streaming());
  CHECK(o.switches() == 0);
}

TEST_CASE("slot way: a fixed way never times or moves", "[slot_way]") {
  for (SlotFill f : {SlotFill::cached, SlotFill::streaming}) {
    SlotWay w(f, false);
    CHECK_FALSE(w.timed(std::size_t{1} << 20));
    CHECK(w.streaming() == (f == SlotFill::streaming));
  }
}

// The node's choice is the senders' majority, and its description says so beside the first
// sender's numbers (toroid-bench's header, TOROID_LOG=info).
TEST_CASE("slot probe: the majority decides, and the description names the vote") {
  using toroid::exec::SlotFillProbe;
  SlotFillProbe p;
  p.measured = true;
  p.cached = {31.8, 9.4};
  p.streaming = {5.9, 6.9};
  p.senders = 3;
  p.senders_streaming = 1;
  CHECK(toroid::exec::slot_fill_of(p) == SlotFill::cached);
  CHECK(toroid::exec::describe(p) ==
        "measured per 128 KiB from 3 senders, 1 faster streamed; the first's, fill + read: cached "
        "31.8 + 9.4 us, streaming 5.9 + 6.9 us");
  p.senders_streaming = 2;
  CHECK(toroid::exec::slot_fill_of(p) == SlotFill::streaming);
  p.senders = 1;
  p.senders_streaming = 1;
  CHECK(toroid::exec::slot_fill_of(p) == SlotFill::streaming);
  CHECK(toroid::exec::describe(p) ==
        "measured per 128 KiB, fill + read: cached 31.8 + 9.4 us, streaming 5.9 + 6.9 us");
  p.measured = false;  // fixed by the options: never streams by vote
  CHECK(toroid::exec::slot_fill_of(p) == SlotFill::cached);
}
