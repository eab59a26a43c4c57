// The step vocabulary: an algorithm is a per-rank list of these, built without calling MPI.
//
//   chunk   = (buffer, offset, count) in elements of the collective's data type
//   step    = send | recv | recv_reduce | copy | scale over chunks, addressed to a peer rank
//   phase   = group of consecutive steps that may be in flight together; a step only reads
//             data written in earlier phases (the verifier checks this)
//   tag     = lane id, so two transfers between the same pair in one phase stay apart
//
// Executors (MPI, in-process verifier, simulator) run the same Schedule.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "toroid/algorithm.hpp"

namespace toroid::schedule {

enum class Buf : std::uint8_t { input, output, scratch };

struct Chunk {
  Buf buf = Buf::input;
  std::uint64_t offset = 0;
  std::uint64_t count = 0;
};

enum class Kind : std::uint8_t {
  send,         // send src to peer
  recv,         // receive from peer into dst
  recv_reduce,  // receive from peer, dst = src op received (src may equal dst)
  copy,         // dst = src, local
  scale,        // dst = dst / divisor (the final step of an average), local
};

struct Step {
  Kind kind = Kind::send;
  std::int32_t peer = -1;  // communicator rank; -1 for local steps
  std::int32_t tag = 0;
  std::uint32_t phase = 0;
  Chunk src;
  Chunk dst;
  std::uint32_t divisor = 1;  // scale only
};

struct Schedule {
  std::string algorithm;
  int rank = 0;
  int nranks = 1;
  std::uint64_t scratch_count = 0;  // elements of scratch the executor must provide
  std::vector<Step> steps;          // ordered by phase

  std::uint32_t phase_count() const { return steps.empty() ? 0 : steps.back().phase + 1; }
};

// Which collective a schedule computes; the verifier's reference depends on it.
using toroid::Collective;

std::string_view to_string(Kind k) noexcept;
std::string describe(const Step& s);  // one line, for error messages and debugging

}  // namespace toroid::schedule
