// What each step of a schedule waits for, derived from the builder's phases and the chunks the
// steps read and write.
//
// A builder states order as phases: a step may rely on everything earlier phases wrote. That is
// stronger than the data needs, so every executor used to run a phase only after the whole
// previous one. Here each step gets just the earlier steps it conflicts with:
//
//   reads what i writes (RAW)     -> follow i, when this step reads its source in order, its
//                                    source lies inside i's destination and i writes in order
//                                    (a receive): segment k may go once i's segment k is final
//                                 -> done i, otherwise
//   writes what i reads (WAR), or what i writes (WAW)  -> done i
//
//      phase 0:  recv_reduce  acc[B2] <- left        writes acc[B2] segment by segment
//      phase 1:  send         acc[B2] -> right       follow (offset 0): forwards each segment
//      phase 3:  recv         out[B2] <- left        done: overwrites what the send reads
//
// Only the last writer and the readers since are tracked per piece (each buffer cut at every
// offset where a step's range begins or ends), so the cost is about linear in the steps; older conflicts are ordered through those
// (a writer waits for the previous writer and its readers). Steps of one phase never wait for
// each other: the builders keep a phase hazard-free, and the verifier checks it.
#pragma once

#include "schedule/step.hpp"

namespace toroid::schedule {

// Fills s.deps and every step's dep range (replacing what was there). Uses s.in_place: in place,
// input and output are one buffer.
void derive_dependencies(Schedule& s);

}  // namespace toroid::schedule
