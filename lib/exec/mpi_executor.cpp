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
#include "exec/mpi_executor.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "exec/mpi_check.hpp"
#include "kernels/reduce.hpp"

namespace toroid::exec {
namespace {

using schedule::Kind;
using schedule::Step;

using detail::Pending;
using detail::Stream;

// Prints, for every request still open, the step it belongs to, then ends the job: a hang
// becomes a message and a non-zero exit status.
[[noreturn]] void report_stuck(const ExecParams& params, MPI_Comm comm, const Step& first_step,
                               const std::vector<MPI_Request>& reqs, const std::vector<Pending>& pending,
                               std::size_t seg_bytes, std::size_t esize) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::string lines;
  int shown = 0;
  for (std::size_t i = 0; i < reqs.size() && shown < 8; ++i) {
    if (reqs[i] == MPI_REQUEST_NULL || !pending[i].step) continue;
    const Step& st = *pending[i].step;
    const std::size_t bytes = (st.kind == Kind::send ? st.src.count : st.dst.count) * esize;
    lines += fmt::format("\n  waiting: {} (segment at byte {} of {})", schedule::describe(st),
                         pending[i].seg * seg_bytes, bytes);
    ++shown;
  }
  fmt::print(stderr, "toroid: rank {}: {} made no progress for {} s in phase {} (TOROID_TIMEOUT){}\n", rank,
             params.what, params.timeout_s, first_step.phase, lines);
  std::fflush(stderr);
  MPI_Abort(comm, 3);
  std::abort();
}

}  // namespace

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

    // Size the request table and the staging area for this phase.
    std::size_t nreq = 0, nstream = 0;
    for (std::size_t i = b; i < e; ++i) {
      const Step& st = s.steps[i];
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
    for (std::size_t i = b; i < e; ++i) {
      const Step& st = s.steps[i];
      if (st.kind == Kind::copy) {
        const std::byte* from = buf.readable(st.src);
        std::byte* to = buf.writable(st.dst);
        if (from != to) std::memmove(to, from, st.dst.count * esize);
      } else if (st.kind == Kind::scale) {
        kernels::divide(params.type, buf.writable(st.dst), st.dst.count, st.divisor);
      }
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
            report_stuck(params, comm, s.steps[b], ws.requests, pending, seg_bytes, esize);
        }
      }
      if (idx == MPI_UNDEFINED) break;
      const Pending done = pending[idx];
      if (done.stream < 0) continue;
      Stream& st = streams[done.stream];
      const std::size_t off = done.seg * seg_bytes;
      const std::size_t len = static_cast<std::size_t>(seg_len(st.bytes, done.seg));
      reduce(buf.writable(st.step->dst) + off, buf.readable(st.step->src) + off,
             st.staging + static_cast<std::size_t>(done.slot) * seg_bytes, len / esize);
      if (st.next_seg < st.nseg) post_stream_recv(done.stream, done.slot, static_cast<std::size_t>(idx));
    }
    b = e;
  }
}

}  // namespace toroid::exec
