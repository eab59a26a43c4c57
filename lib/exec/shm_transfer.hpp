// One schedule step carried over a shared-memory channel (see shm_links.hpp), advanced without
// blocking: each call moves as many segments as the ring allows and says whether it moved any.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "exec/shm_links.hpp"
#include "kernels/reduce.hpp"
#include "schedule/buffers.hpp"
#include "schedule/step.hpp"

namespace toroid::exec {

struct ShmTransfer {
  const schedule::Step* step = nullptr;
  ShmChannel channel;
  schedule::Operand from;           // send: the data; recv_reduce: the local operand
  schedule::Destination into;       // recv, recv_reduce: the destination (may be gathered)
  std::size_t bytes = 0, done = 0;  // done: bytes moved so far
  std::size_t elem_size = 1;
  // Where the segments go in the ring: 0 (a one-segment transfer) = cycle through the first
  // kSlots slots by sequence number, so that back-to-back small messages need not wait for each
  // other; otherwise segment k of the transfer goes to slot k % depth, depth = its segments (at
  // most the ring's), so a transfer reuses the same few slots every time and a channel's cache
  // footprint is what one transfer needs, not the whole ring (cycling 2-8 segments over 8
  // slots made a 2-rank ring at 256 KiB 1.8x slower and bidir_ring at 1 MiB 1.9x, on a VM
  // whose caches other tenants share). seq0: the channel's sequence number of the transfer's
  // first segment, read from the ring when the transfer starts (both ends have moved the same
  // earlier segments on this channel by then).
  std::uint32_t depth = 0;
  std::uint64_t seq0 = 0;

  // A receive whose bytes a later send forwards (a relay, see pop): whether its destination must
  // still be written when the segment goes straight on (false: nothing else ever reads it).
  bool keep_dst = true;
  // How a plain receive writes its destination: null = kernels::copy; kernels::copy_stream_fn() for
  // large data nothing in the collective reads again (it would only push other data out).
  kernels::CopyFn store = nullptr;
  // Sender: where each segment's source bytes go too (kernels::copy), right after they fill the
  // slot: a local copy carried along (bound_collective.cpp); null: nowhere.
  std::byte* along = nullptr;

  bool finished() const { return done >= bytes; }
  bool sends() const { return step->kind == schedule::Kind::send; }
  // One call's worth of progress on whichever end this is.
  bool advance(kernels::ReduceFn reduce, std::size_t limit) {
    return sends() ? push(limit) : pop(reduce, limit);
  }

  // Sender: copy segments into free slots and publish them, up to byte `limit` of the step
  // (whole segments only: both ends cut the step at the same places).
  bool push(std::size_t limit) {
    bool moved = false;
    while (done < bytes) {
      const std::size_t len = segment();
      if (done + len > limit) break;  // the data is not final yet
      std::byte* free = free_slot_at(done);
      if (!free) break;  // ring full
      // How: the way to this peer now (slot_way.hpp; none: plain stores). A large segment of a
      // transfer within the first kSlots slots is timed: those slots come round again soon,
      // so the receiver still holds their lines when they are filled again, which is what a
      // fill's time tells apart. (A deep ring's slot has left the receiver's caches by then,
      // and its first fills take page faults.)
      SlotWay* way = channel.way;
      const bool timed = way && depth <= ShmLinks::kSlots && way->timed(len);
      const bool stream = timed ? way->next_streams() : way && way->streaming();
      const auto t0 =
          timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
      from.each(done, len, [&](const std::byte* p, std::size_t o, std::size_t n) {
        if (stream)
          channel.stream(free + o, p, n);
        else
          kernels::copy(channel.copy, free + o, p, n);
      });
      if (timed)
        way->record(stream,
                    std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0)
                            .count() /
                        static_cast<double>(len));
      const std::size_t at = done;
      publish(len);
      if (along)  // the source is in this core's cache now: copy it along before it leaves
        from.each(at, len, [&](const std::byte* p, std::size_t o, std::size_t n) {
          kernels::copy(channel.copy, along + at + o, p, n);
        });
      moved = true;
    }
    return moved;
  }

  // Receiver: take published segments, reducing (or copying) each straight out of its slot,
  // up to byte `limit` (a recv_reduce operand that is still arriving from elsewhere).
  //
  // relay: the send that forwards exactly these bytes (null: none, or it may not move yet).
  // While it has kept pace, each segment is reduced (copied) straight into its next free slot,
  // and into the destination too only when keep_dst says something else reads it later:
  //
  //   in slot --reduce with operand--> out slot (the relay's)  [+ destination, same pass]
  //
  // so a ring's intermediate partial sums never go to memory. When the relay's ring is full the
  // segment goes to the destination as usual and the relay catches up from there.
  bool pop(kernels::ReduceFn reduce, std::size_t limit, ShmTransfer* relay = nullptr,
           kernels::ReduceCopyFn reduce_copy = nullptr) {
    std::atomic_ref<std::uint64_t> head(*channel.head), tail(*channel.tail);
    bool moved = false;
    while (done < bytes) {
      const std::size_t len = segment();
      if (done + len > limit) break;
      const std::uint64_t t = tail.load(std::memory_order_relaxed);
      if (head.load(std::memory_order_acquire) == t) break;  // nothing published yet
      if (done == 0) seq0 = t;
      const bool reduces = step->kind == schedule::Kind::recv_reduce;
      std::byte* out = relay ? relay->free_slot_at(done) : nullptr;
      const std::byte* in = slot(t);
      // While the relay streams its slots, plain stores into them would hand the next rank its
      // lines out of this core's cache: the segment goes on with non-temporal stores instead,
      // reduced piece by piece through a scratch that stays in this core's cache.
      if (out && relay->channel.way && relay->channel.way->streaming()) {
        const kernels::CopyFn stream = relay->channel.stream;
        if (reduces)
          schedule::each_pair(into, from, done, len,
                              [&](std::byte* d, const std::byte* p, std::size_t o, std::size_t n) {
                                for (std::size_t c = 0; c < n; c += kRelayPiece) {
                                  const std::size_t m = std::min(kRelayPiece, n - c);
                                  std::byte* sum = keep_dst ? d + c : relay_scratch();
                                  reduce(sum, p + c, in + o + c, m / elem_size);
                                  stream(out + o + c, sum, m);
                                }
                              });
        else {
          stream(out, in, len);
          if (keep_dst) store_dst(in, len);
        }
        relay->publish(len);
      } else if (out) {
        if (reduces && keep_dst)
          schedule::each_pair(into, from, done, len,
                              [&](std::byte* d, const std::byte* p, std::size_t o, std::size_t n) {
                                reduce_copy(d, out + o, p, in + o, n / elem_size);
                              });
        else if (reduces)
          from.each(done, len, [&](const std::byte* p, std::size_t o, std::size_t n) {
            reduce(out + o, p, in + o, n / elem_size);
          });
        else
          kernels::copy(channel.copy, out, in, len);
        if (!reduces && keep_dst) store_dst(out, len);
        relay->publish(len);
      } else if (reduces) {
        schedule::each_pair(into, from, done, len,
                            [&](std::byte* d, const std::byte* p, std::size_t o, std::size_t n) {
                              reduce(d, p, in + o, n / elem_size);
                            });
      } else {
        store_dst(in, len);
      }
      tail.store(t + 1, std::memory_order_release);
      done += len, moved = true;
    }
    return moved;
  }

 private:
  // A streaming relay's reduction goes through this much scratch at a time (a multiple of every
  // element size), small enough to stay in the first-level cache between the two passes.
  static constexpr std::size_t kRelayPiece = 16 * 1024;
  static std::byte* relay_scratch() {
    alignas(64) static thread_local std::byte scratch[kRelayPiece];
    return scratch;
  }
  // Sender: the slot for its next segment when it has sent everything up to byte `at` of its
  // data (a relay asks with the receive's position) and its ring has room; null otherwise.
  std::byte* free_slot_at(std::size_t at) {
    if (done != at || finished()) return nullptr;
    std::atomic_ref<std::uint64_t> head(*channel.head), tail(*channel.tail);
    const std::uint64_t h = head.load(std::memory_order_relaxed);
    if (done == 0) seq0 = h;
    // Free once the receiver has consumed whatever went there last (it consumes in order).
    if (tail.load(std::memory_order_acquire) < channel.written[slot_index(h)]) return nullptr;
    return slot(h);
  }
  // Sender: hands the segment just written to the receiver (release: its bytes first).
  void publish(std::size_t len) {
    std::atomic_ref<std::uint64_t> head(*channel.head);
    const std::uint64_t h = head.load(std::memory_order_relaxed);
    channel.written[slot_index(h)] = h + 1;
    head.store(h + 1, std::memory_order_release);
    done += len;
  }
  void store_dst(const std::byte* src, std::size_t len) {
    into.each(done, len, [&](std::byte* p, std::size_t o, std::size_t n) {
      if (store)
        store(p, src + o, n);
      else
        kernels::copy(channel.copy, p, src + o, n);
    });
  }
  std::size_t segment() const {
    return bytes - done < channel.slot_bytes ? bytes - done : channel.slot_bytes;
  }
  std::size_t slot_index(std::uint64_t seq) const {
    return depth == 0 ? seq % ShmLinks::kSlots : (seq - seq0) % depth;
  }
  std::byte* slot(std::uint64_t seq) const {
    return channel.slots + slot_index(seq) * channel.slot_bytes;
  }
};

// The transfer that carries `st` (a send, recv or recv_reduce to a rank `links` reaches).
inline ShmTransfer shm_transfer_for(const schedule::Step& st, const ShmLinks& links,
                                    const schedule::BufferSet& buf) {
  const bool send = st.kind == schedule::Kind::send;
  ShmTransfer t;
  t.step = &st;
  t.channel = send ? links.outgoing(st.peer, st.tag) : links.incoming(st.peer, st.tag);
  if (send || st.kind == schedule::Kind::recv_reduce) t.from = buf.operand(st.src);
  if (!send) t.into = buf.destination(st.dst);
  t.bytes = (send ? st.src.count : st.dst.count) * buf.elem_size;
  t.elem_size = buf.elem_size;
  const std::size_t segments = (t.bytes + t.channel.slot_bytes - 1) / t.channel.slot_bytes;
  if (segments > 1)
    t.depth = static_cast<std::uint32_t>(std::min<std::size_t>(segments, t.channel.deep_slots));
  return t;
}

}  // namespace toroid::exec
