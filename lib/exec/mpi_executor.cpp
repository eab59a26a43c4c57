// MPI executor.
//
// A phase is run as: post every send (all segments), post every receive (plain receives: all
// segments straight into place; receive-and-reduce: `depth` segments into staging slots), do
// the phase's local copies/scales, then complete requests as they finish. When a staged segment
// arrives it is reduced into its destination at once and its slot is re-posted for the next
// segment, so the reduction of segment k overlaps the transfer of segments k+1.. .
//
//   segment = slice of one step's chunk of at most segment_bytes (whole elements)
//   slot    = staging buffer of one segment; `depth` slots per receive-and-reduce step
//
// Segments of one (peer, tag) stream match in posting order (MPI's non-overtaking rule), so
// the k-th receive posted for a step always carries segment k. Each MPI message is at most one
// segment (< 2 GiB), so no MPI count overflows.
//
// Steps whose peer shares the node travel over a shared-memory channel instead (shm_links.hpp):
// the phase then polls, moving segments through every channel that can move and testing the
// MPI requests, spinning briefly and then yielding the core when nothing moves, so ranks that
// outnumber the cores still run. A channel's ring is FIFO like an MPI (peer, tag) stream, so the
// schedule's order is kept the same way.
#include "exec/mpi_executor.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "exec/mpi_check.hpp"
#include "exec/shm_window.hpp"
#include "exec/stuck.hpp"
#include "kernels/reduce.hpp"

namespace toroid::exec {
namespace {

using schedule::Kind;
using schedule::Step;

using detail::Pending;
using detail::Stream;

// Every request still open and every unfinished shared-memory transfer, for the watchdog.
std::string waiting_lines(const std::vector<MPI_Request>& reqs, const std::vector<Pending>& pending,
                          const std::vector<ShmTransfer>& shm, std::size_t seg_bytes, std::size_t esize) {
  int shown = 0;
  std::string lines = describe_waiting(shm, 8, shown);
  for (std::size_t i = 0; i < reqs.size() && shown < 8; ++i) {
    if (reqs[i] == MPI_REQUEST_NULL || !pending[i].step) continue;
    const Step& st = *pending[i].step;
    const std::size_t bytes = (st.kind == Kind::send ? st.src.count : st.dst.count) * esize;
    lines += fmt::format("\n  waiting: {} (segment at byte {} of {})", schedule::describe(st),
                         pending[i].seg * seg_bytes, bytes);
    ++shown;
  }
  return lines;
}

// A phase with shared-memory transfers: move whatever can move on every channel, test the MPI
// requests, and when nothing moved spin a little (the peer is usually a few hundred
// nanoseconds away) and then give the core away, so oversubscribed ranks are not starved.
template <class Complete>
void poll_phase(const ExecParams& params, MPI_Comm comm, const Step& first, Workspace& ws,
                kernels::ReduceFn reduce, std::size_t nreq, Complete&& complete, std::size_t seg_bytes,
                std::size_t esize) {
  bool mpi_open = nreq > 0;
  Backoff backoff(params.timeout_s);
  for (;;) {
    bool moved = false, open = false;
    for (ShmTransfer& t : ws.shm) {
      if (t.finished()) continue;
      moved |= t.advance(reduce, t.bytes);
      open |= !t.finished();
    }
    while (mpi_open) {
      int idx = MPI_UNDEFINED, flag = 0;
      mpi_check(MPI_Testany(static_cast<int>(nreq), ws.requests.data(), &idx, &flag, MPI_STATUS_IGNORE),
                "MPI_Testany");
      if (!flag) break;
      if (idx == MPI_UNDEFINED) {
        mpi_open = false;
        break;
      }
      complete(idx);
      moved = true;
    }
    if (!open && !mpi_open) return;
    if (moved) backoff.moved();
    else if (backoff.idle())
      abort_stuck(params, comm, first.phase, waiting_lines(ws.requests, ws.pending, ws.shm, seg_bytes, esize));
  }
}

}  // namespace

void run_local_step(const Step& st, const BufferSet& buf, DataType type) {
  if (st.kind == Kind::copy) {
    const std::byte* from = buf.readable(st.src);
    std::byte* to = buf.writable(st.dst);
    if (from != to) std::memmove(to, from, st.dst.count * buf.elem_size);
  } else if (st.kind == Kind::scale) {
    kernels::divide(type, buf.writable(st.dst), st.dst.count, st.divisor);
  }
}

void run_mpi(const schedule::Schedule& s, const BufferSet& buf, const ExecParams& params,
             MPI_Comm comm, Workspace& ws) {
  const std::size_t esize = buf.elem_size;
  const std::size_t seg_bytes = std::max<std::size_t>(1, params.segment_bytes / esize) * esize;
  const int depth = std::max(1, params.depth);
  const kernels::ReduceFn reduce = kernels::reduce_fn(params.type, params.op);
  std::vector<Stream>& streams = ws.streams;
  std::vector<Pending>& pending = ws.pending;

  auto segments = [&](std::size_t bytes) { return (bytes + seg_bytes - 1) / seg_bytes; };
  auto seg_len = [&](std::size_t bytes, std::size_t k) {
    return static_cast<int>(std::min(seg_bytes, bytes - k * seg_bytes));
  };
  auto post_stream_recv = [&](int si, int slot, std::size_t req_index) {
    Stream& st = streams[si];
    const std::size_t k = st.next_seg++;
    std::byte* where = st.staging + static_cast<std::size_t>(slot) * seg_bytes;
    mpi_check(MPI_Irecv(where, seg_len(st.bytes, k), MPI_BYTE, st.step->peer, st.step->tag, comm,
                        &ws.requests[req_index]),
              "MPI_Irecv");
    pending[req_index] = {si, slot, k, st.step};
  };

  for (std::size_t b = 0; b < s.steps.size();) {
    std::size_t e = b;
    while (e < s.steps.size() && s.steps[e].phase == s.steps[b].phase) ++e;
    if (params.links && shm_only(s, b, e, *params.links, true)) {
      b = run_shm_window(s, b, buf, params, comm, ws);
      continue;
    }

    // Steps to ranks on this node go over shared memory; the rest are sized for MPI below.
    ws.shm.clear();
    auto on_shm = [&](const Step& st) {
      return params.links && st.kind != Kind::copy && st.kind != Kind::scale && params.links->carries(st.peer, st.tag);
    };
    for (std::size_t i = b; i < e; ++i) {
      const Step& st = s.steps[i];
      if (on_shm(st)) ws.shm.push_back(shm_transfer_for(st, *params.links, buf));
    }

    // Size the request table and the staging area for this phase.
    std::size_t nreq = 0, nstream = 0;
    for (std::size_t i = b; i < e; ++i) {
      const Step& st = s.steps[i];
      if (on_shm(st)) continue;
      const std::size_t nseg = segments(st.kind == Kind::send ? st.src.count * esize : st.dst.count * esize);
      if (st.kind == Kind::send || st.kind == Kind::recv) nreq += nseg;
      if (st.kind == Kind::recv_reduce) {
        nreq += std::min<std::size_t>(depth, nseg);
        ++nstream;
      }
    }
    if (ws.staging.size() < nstream * depth * seg_bytes) ws.staging.resize(nstream * depth * seg_bytes);
    ws.requests.assign(nreq, MPI_REQUEST_NULL);
    pending.assign(nreq, {});
    streams.clear();

    std::size_t r = 0;
    for (std::size_t i = b; i < e; ++i) {
      const Step& st = s.steps[i];
      if (on_shm(st)) continue;
      if (st.kind == Kind::send || st.kind == Kind::recv) {
        // Every segment of a plain transfer is posted at once, straight from/into place.
        const bool send = st.kind == Kind::send;
        const std::size_t bytes = (send ? st.src.count : st.dst.count) * esize;
        const std::byte* from = send ? buf.readable(st.src) : nullptr;
        std::byte* into = send ? nullptr : buf.writable(st.dst);
        for (std::size_t k = 0; k < segments(bytes); ++k, ++r) {
          const std::size_t off = k * seg_bytes;
          mpi_check(send ? MPI_Isend(from + off, seg_len(bytes, k), MPI_BYTE, st.peer, st.tag, comm, &ws.requests[r])
                         : MPI_Irecv(into + off, seg_len(bytes, k), MPI_BYTE, st.peer, st.tag, comm, &ws.requests[r]),
                    send ? "MPI_Isend" : "MPI_Irecv");
          pending[r] = {-1, 0, k, &st};
        }
      } else if (st.kind == Kind::recv_reduce) {
        const std::size_t bytes = st.dst.count * esize;
        streams.push_back({&st, bytes, segments(bytes), 0,
                           ws.staging.data() + streams.size() * depth * seg_bytes});
        const int si = static_cast<int>(streams.size() - 1);
        for (int slot = 0; slot < depth && streams[si].next_seg < streams[si].nseg; ++slot)
          post_stream_recv(si, slot, r++);
      }
    }
    // Local steps overlap the transfers just posted (the verifier guarantees no hazard).
    for (std::size_t i = b; i < e; ++i) run_local_step(s.steps[i], buf, params.type);
    // One finished MPI request: a staged segment is reduced and its slot re-posted.
    auto complete = [&](int idx) {
      const Pending done = pending[static_cast<std::size_t>(idx)];
      if (done.stream < 0) return;
      Stream& st = streams[static_cast<std::size_t>(done.stream)];
      const std::size_t off = done.seg * seg_bytes;
      const std::size_t len = static_cast<std::size_t>(seg_len(st.bytes, done.seg));
      reduce(buf.writable(st.step->dst) + off, buf.readable(st.step->src) + off,
             st.staging + static_cast<std::size_t>(done.slot) * seg_bytes, len / esize);
      if (st.next_seg < st.nseg) post_stream_recv(done.stream, done.slot, static_cast<std::size_t>(idx));
    };
    if (!ws.shm.empty()) {
      poll_phase(params, comm, s.steps[b], ws, reduce, nreq, complete, seg_bytes, esize);
      b = e;
      continue;
    }
    for (;;) {
      int idx = MPI_UNDEFINED;
      if (params.timeout_s <= 0) {
        mpi_check(MPI_Waitany(static_cast<int>(nreq), ws.requests.data(), &idx, MPI_STATUS_IGNORE),
                  "MPI_Waitany");
      } else {
        // Polling instead of blocking, only so that a stall can be noticed and reported.
        const double since = MPI_Wtime();
        for (int flag = 0; !flag;) {
          mpi_check(MPI_Testany(static_cast<int>(nreq), ws.requests.data(), &idx, &flag, MPI_STATUS_IGNORE),
                    "MPI_Testany");
          if (!flag && MPI_Wtime() - since > params.timeout_s)
            abort_stuck(params, comm, s.steps[b].phase, waiting_lines(ws.requests, pending, ws.shm, seg_bytes, esize));
        }
      }
      if (idx == MPI_UNDEFINED) break;
      complete(idx);
    }
    b = e;
  }
}

}  // namespace toroid::exec
