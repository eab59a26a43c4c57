// A timeline of collectives: what each rank did, per collective and per step (start, end, peer,
// bytes, transport), as the engine measured it (TOROID_TRACE) or as the simulator modeled it
// (toroid-sim --trace), written in the Chrome trace event format that Perfetto
// (ui.perfetto.dev) and chrome://tracing open.
//
//   file     = {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}
//   process  = one rank ("rank 3"), pid = rank
//   track    = one thread of that process: "collectives" (one slice per call), then one per
//              channel ("send -> 1 tag 0", "recv <- 2 tag 0", "local"): the steps of a channel
//              run one after another, so its slices never overlap; a second track of the same
//              channel ("... #2") takes any that would
//   slice    = a complete event ("ph": "X") from start to end, in microseconds; its args name
//              the call, the step's index in the schedule, its phase, peer, tag, bytes and
//              transport (shm, mpi, local; "link" in a simulated run)
//
//      rank 0  collectives      [ allreduce torus2d_both 1 MiB                         ]
//              send -> 1 tag 0    [send 256K]      [send 256K]
//              recv <- 1 tag 0    [recv_reduce 256K]   [recv 256K]
//      rank 1  ...
//
// Both writers use these records and this one function, so a measured and a simulated timeline
// of the same call have the same tracks and names and can be opened side by side.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace toroid::model {

struct TraceCall {
  double start_us = 0, end_us = 0;
  std::string name;  // "allreduce (torus2d_both)"
  std::uint64_t bytes = 0;
};

struct TraceStep {
  double start_us = 0, end_us = 0;
  std::uint32_t call = 0;  // index in RankTimeline::calls
  std::uint32_t step = 0;  // index in the call's schedule
  std::uint32_t phase = 0;
  std::int32_t peer = -1;
  std::int32_t tag = 0;
  std::uint64_t bytes = 0;
  const char* kind = "";  // "send", "recv", "recv_reduce", "copy", "scale" ("local": simulated)
  const char* via = "";   // "shm", "mpi", "local", "link"
};

struct RankTimeline {
  int rank = 0;
  std::vector<TraceCall> calls;
  std::vector<TraceStep> steps;
  std::uint64_t dropped = 0;  // steps and calls not kept: the recorder was full
};

// One rank's events as JSON objects separated by commas (no brackets): what each rank sends to
// the one that writes the file.
std::string chrome_trace_events(const RankTimeline& t);
// The whole file from the ranks' events; `source` says where it came from ("toroid, measured",
// "toroid-sim, modeled"). It is the head, the ranks' events joined by ",\n", and the tail: a
// writer that streams the ranks' events writes those parts itself.
std::string chrome_trace_file(const std::vector<std::string>& rank_events, std::string_view source,
                              std::uint64_t dropped);
std::string_view chrome_trace_head();
std::string chrome_trace_tail(std::string_view source, std::uint64_t dropped);

}  // namespace toroid::model
