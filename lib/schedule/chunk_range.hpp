// What a step touches: the chunk it reads and the chunk it writes, and the same as element
// ranges of its buffers, where in place the input's range is the output's (one buffer).
//
//   send, recv_reduce, copy   read src      scale   reads and writes dst
//   recv                      reads nothing send    writes nothing
//   reduce                    reads src and dst, writes dst: its read of dst needs no range
//                             of its own (the write orders it after dst's writers and
//                             before its later readers and writers, as a write must be)
#pragma once

#include <algorithm>
#include <cstdint>

#include "schedule/step.hpp"

namespace toroid::schedule {

inline const Chunk* read_chunk(const Step& s) noexcept {
  switch (s.kind) {
    case Kind::send:
    case Kind::recv_reduce:
    case Kind::copy:
    case Kind::reduce:
      return &s.src;
    case Kind::scale:
      return &s.dst;
    case Kind::recv:
      return nullptr;
  }
  return nullptr;
}
inline const Chunk* written_chunk(const Step& s) noexcept {
  return s.kind == Kind::send ? nullptr : &s.dst;
}

struct ChunkRange {
  int space = 0;  // 0 input, 1 output, 2 scratch
  std::uint64_t lo = 0, hi = 0;
  // A gathered chunk: its runs (ascending, inside [lo, hi)); null: all of [lo, hi).
  const Block* runs = nullptr;
  std::uint32_t nruns = 0;
  bool empty() const noexcept { return lo >= hi; }
  bool gathered() const noexcept { return runs != nullptr; }
};

// `pieces`: the schedule's Schedule::pieces (needed only for gathered chunks).
inline ChunkRange range_of(const Chunk& c, bool in_place, const Block* pieces) noexcept {
  int space = c.buf == Buf::input ? 0 : c.buf == Buf::output ? 1 : 2;
  if (in_place && space == 0) space = 1;
  if (c.count == 0) return {space, c.offset, c.offset};
  if (c.gathered()) return {space, c.offset, c.offset + c.extent, pieces + c.first_piece, c.pieces};
  return {space, c.offset, c.offset + c.count};
}
inline ChunkRange read_range(const Step& s, bool in_place, const Block* pieces) noexcept {
  const Chunk* c = read_chunk(s);
  return c ? range_of(*c, in_place, pieces) : ChunkRange{};
}
inline ChunkRange write_range(const Step& s, bool in_place, const Block* pieces) noexcept {
  const Chunk* c = written_chunk(s);
  return c ? range_of(*c, in_place, pieces) : ChunkRange{};
}
// Whether the two touch a common element (exact for gathered chunks, run by run).
inline bool overlaps(const ChunkRange& a, const ChunkRange& b) noexcept {
  if (a.empty() || b.empty() || a.space != b.space || a.hi <= b.lo || b.hi <= a.lo) return false;
  if (!a.gathered() && !b.gathered()) return true;
  if (!a.gathered()) return overlaps(b, a);
  for (std::uint32_t k = 0; k < a.nruns; ++k) {
    const ChunkRange run{a.space, a.runs[k].offset, a.runs[k].offset + a.runs[k].count};
    if (overlaps(run, b)) return true;
  }
  return false;
}
// Whether `inner` lies inside `outer` (contiguous ranges only: false for a gathered one).
inline bool contains(const ChunkRange& outer, const ChunkRange& inner) noexcept {
  return !outer.gathered() && !inner.gathered() && outer.space == inner.space &&
         outer.lo <= inner.lo && inner.hi <= outer.hi;
}

// Where `read` starts among `written`'s elements in their order, when its elements are
// consecutive elements of it: a part of a contiguous range, a part of one run of a gathered
// one, or the same runs (a receive into runs forwarded as it lands). Else false. A step that
// reads `read` can follow the receive that writes `written` segment by segment from there.
inline bool position_in(const ChunkRange& written, const ChunkRange& read,
                        std::uint64_t& position) noexcept {
  if (written.space != read.space || written.empty() || read.empty()) return false;
  if (!written.gathered()) {
    if (!contains(written, read)) return false;
    position = read.lo - written.lo;
    return true;
  }
  if (read.gathered()) {
    if (read.nruns != written.nruns || !std::equal(read.runs, read.runs + read.nruns, written.runs))
      return false;
    position = 0;
    return true;
  }
  std::uint64_t at = 0;  // a contiguous read inside one run
  for (std::uint32_t k = 0; k < written.nruns; at += written.runs[k++].count) {
    const Block& run = written.runs[k];
    if (run.offset <= read.lo && read.hi <= run.offset + run.count) {
      position = at + (read.lo - run.offset);
      return true;
    }
  }
  return false;
}

// A recv_reduce that adds into its own operand (`dst op= incoming` over one contiguous range,
// or over the same runs). Following the receive that wrote that range is safe element by
// element: element e is read, reduced and written only once that receive has made it final,
// and it writes e no more.
inline bool accumulates_in_place(const Step& s, const ChunkRange& read,
                                 const ChunkRange& written) noexcept {
  if (s.kind != Kind::recv_reduce || read.gathered() != written.gathered() ||
      read.space != written.space || read.lo != written.lo || read.hi != written.hi)
    return false;
  return !read.gathered() || (read.nruns == written.nruns &&
                              std::equal(read.runs, read.runs + read.nruns, written.runs));
}

}  // namespace toroid::schedule
