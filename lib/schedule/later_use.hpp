// What becomes of the bytes a receive writes, asked once per schedule the engine runs (the
// schedule cache sets it), not at every bind: the engine's shared-memory transport skips
// writing a relayed receive's destination when nothing reads it later, and streams final
// output past the caches.
//
//   recv / recv_reduce   the later use of what it writes (LaterUse in step.hpp)
//   send that relays     (one dependency, `follow` at offset 0: it forwards one receive
//                        segment by segment) the later use of that receive's bytes once this
//                        send has read them
//   any other step       not_asked
//
//      phase 0  recv_reduce acc[B] <- left      its bytes, after the relay below has read them:
//      phase 1  send        acc[B] -> right       dead when the next touch of acc[B] is
//      phase 2  recv        acc[B] <- left        this overwrite (a ring's partial sums)
//
// A later step of the same phase as the writer does not count (it cannot rely on it). Ranges
// are whole spans (a gathered chunk counts as its extent), in place the input is the output.
// Cost: O(steps × later steps) at worst, so the simulator, which never asks, does not pay it.
#pragma once

#include "schedule/step.hpp"

namespace toroid::schedule {

// Fills s.later_use (one entry per step).
void set_later_uses(Schedule& s);

}  // namespace toroid::schedule
