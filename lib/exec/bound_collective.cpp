#include "exec/bound_collective.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "exec/engine.hpp"
#include "schedule/later_use.hpp"
#include "toroid/error.hpp"

namespace toroid::exec {

using schedule::Kind;
using schedule::LaterUse;
using schedule::Step;

void run_local_step(const Step& st, const schedule::BufferSet& buf, DataType type,
                    kernels::CopyFn copy, kernels::ReduceFn reduce) {
  if (st.kind == Kind::copy) {
    buf.copy(st.src, st.dst, copy, kernels::kCopyLoopBytes);
  } else if (st.kind == Kind::scale) {
    kernels::divide(type, buf.writable(st.dst), st.dst.count, st.divisor);
  } else if (st.kind == Kind::reduce && st.dst.count > 0) {
    std::byte* dst = buf.writable(st.dst);
    reduce(dst, dst, buf.readable(st.src), st.dst.count);
  }
}

bool BoundCollective::bound_to(const schedule::Schedule& s, std::uint64_t serial,
                               const schedule::BufferSet& user,
                               const ExecParams& p) const noexcept {
  return schedule_.get() == &s && serial_ == serial && serial != 0 && user_.input == user.input &&
         user_.output == user.output && user_.elem_size == user.elem_size &&
         params_.type == p.type && params_.reduction == p.reduction &&
         params_.segment_bytes == p.segment_bytes && params_.depth == p.depth &&
         params_.timeout_s == p.timeout_s && params_.shm == p.shm && params_.what == p.what;
}

void BoundCollective::bind(std::shared_ptr<const schedule::Schedule> sp,
                           const schedule::BufferSet& user, const ExecParams& params,
                           Engine& engine) {
  schedule_ = std::move(sp);
  const schedule::Schedule& s = *schedule_;
  if (s.later_use.size() != s.steps.size())
    throw toroid::Error("bind: a schedule without its later uses (schedule::set_later_uses)");
  single_copy_.reset();
  serial_ = 0;
  user_ = user;
  params_ = params;
  reduce_ = kernels::reduce_fn(params.type, params.reduction);
  reduce_copy_ = kernels::reduce_copy_fn(params.type, params.reduction);
  copy_ = kernels::copy_fn();
  const std::size_t es = user.elem_size;
  if (scratch_.size() < s.scratch_count * es) scratch_.resize(s.scratch_count * es);
  buf_ = user;
  buf_.scratch = scratch_.data();
  buf_.pieces = s.pieces.data();

  const std::size_t seg = std::max<std::size_t>(1, params.segment_bytes / es) * es;
  const auto depth = static_cast<std::uint32_t>(std::max(1, params.depth));
  segment_ = seg;
  depth_ = depth;
  const ShmLinks* links = params.shm;
  std::size_t staged = 0;
  for (const Step& st : s.steps)
    if (st.kind == Kind::recv_reduce && !(links && links->carries(st.peer, st.tag))) ++staged;
  if (staging_.size() < staged * depth * seg) staging_.resize(staged * depth * seg);

  tasks_.assign(s.steps.size(), Task{});
  shm_tasks_ = mpi_tasks_ = 0;
  for (std::size_t i = 0; i < s.steps.size(); ++i) {
    const Step& st = s.steps[i];
    Task& t = tasks_[i];
    t.step = &st;
    if (schedule::is_local(st.kind)) continue;
    const bool sends = st.kind == Kind::send;
    t.bytes = (sends ? st.src.count : st.dst.count) * es;
    t.channel = &engine.channel(sends, st.peer, st.tag);
    // An exact message's size is checked where it arrives, which MPI tells and the rings do not.
    t.via = links && !s.exact_messages && links->carries(st.peer, st.tag) ? Via::shm : Via::mpi;
    shm_tasks_ += t.via == Via::shm;
    mpi_tasks_ += t.via == Via::mpi;
  }
  if (shm_tasks_ > 0) carry_local_copies();
  bind_addresses();
  status_ = Status::idle;
}

void BoundCollective::rebind(const schedule::BufferSet& user) {
  // Same type and schedule: only the two addresses change (scratch and pieces stay the op's).
  user_.input = buf_.input = user.input;
  user_.output = buf_.output = user.output;
  bind_addresses();
}

void BoundCollective::bind_addresses() {
  const std::size_t es = buf_.elem_size, seg = segment_;
  const std::uint32_t depth = depth_;
  std::size_t slot = 0;
  for (Task& t : tasks_) {
    const Step& st = *t.step;
    if (schedule::is_local(st.kind)) continue;
    const bool sends = st.kind == Kind::send;
    if (t.via == Via::shm) {
      t.shm = shm_transfer_for(st, *params_.shm, buf_);
      t.relay = -1;
    } else {
      std::byte* staging = nullptr;
      if (st.kind == Kind::recv_reduce) staging = staging_.data() + (slot++) * depth * seg;
      t.mpi.bind(st,
                 sends || st.kind == Kind::recv_reduce ? buf_.operand(st.src) : schedule::Operand{},
                 sends ? schedule::Destination{} : buf_.destination(st.dst), t.bytes, seg, es,
                 staging, depth, schedule_->exact_messages);
    }
  }
  if (shm_tasks_ > 0) mark_shared_memory_hints();
}

void BoundCollective::bind_single_copy(NodeMemory& memory, const SingleCopyCall& call,
                                       const ExecParams& params, bool may_fall_back) {
  schedule_.reset();
  serial_ = 0;
  params_ = params;
  tasks_.clear();
  shm_tasks_ = mpi_tasks_ = 0;
  single_copy_.emplace(memory, call, params, may_fall_back);
  status_ = Status::idle;
}

// Shared memory: a receive whose bytes one send forwards unchanged hands each segment straight
// into that send's ring (a relay, ShmTransfer::pop), writing its destination too only when
// something else reads it later; large receives of final output use non-temporal stores. (A
// relay into a send that streams its slots streams too, through a scratch: ShmTransfer::pop.)
void BoundCollective::mark_shared_memory_hints() {
  const schedule::Schedule& s = *schedule_;
  for (std::size_t i = 0; i < tasks_.size(); ++i) {
    Task& t = tasks_[i];
    if (t.via != Via::shm) continue;
    const Step& st = *t.step;
    if (t.carries >= 0)  // the carried copy's destination on these buffers
      t.shm.along = buf_.writable(s.steps[static_cast<std::size_t>(t.carries)].dst);
    if (st.kind == Kind::send && st.dep_count == 1) {
      const schedule::Dep& d = s.deps[st.dep_begin];
      Task& g = tasks_[d.step];
      if (d.wait == schedule::Wait::follow && d.offset == 0 && g.via == Via::shm && g.relay < 0 &&
          g.bytes == t.bytes && g.shm.channel.slot_bytes == t.shm.channel.slot_bytes) {
        g.relay = static_cast<int>(i);
        const LaterUse use = s.later_use[i];  // of the receive's bytes, this relay aside
        g.shm.keep_dst = use != LaterUse::dead;
        g.shm.store =
            use == LaterUse::final && g.bytes >= kStreamBytes ? kernels::copy_stream_fn() : nullptr;
      }
    }
    // (A send that relays this receive comes later in the loop and sets its store again.)
    if (st.kind == Kind::recv && t.bytes >= kStreamBytes && s.later_use[i] == LaterUse::final)
      t.shm.store = kernels::copy_stream_fn();
  }
}

// A local copy whose source a shared-memory send reads whole, exactly (a ring all-gather's own
// block: copied into the output, and sent from the input), rides along that send: each segment
// is copied right after it fills the slot, from this core's cache, where the copy run on its
// own first read the whole block from memory a second time and held the first segment back
// while it ran (2 ranks, 1-16 MiB out of place: 1.2-1.6x the in-place time). Only a copy and a
// send that wait for nothing, and a copy no step waits for, so that finishing the copy with
// the send can hold up nothing but the collective's end.
//
//   before   copy  in[B] -> out[B]  (all of it) ; send  in[B] -> slots
//   after    send  in[B] -> slot k ; in[B]_k -> out[B]_k   for each segment k
void BoundCollective::carry_local_copies() {
  const schedule::Schedule& s = *schedule_;  // tasks_ fresh from bind: nothing carried yet
  std::vector<bool> awaited(tasks_.size(), false);
  for (const schedule::Dep& d : s.deps) awaited[d.step] = true;
  for (std::size_t j = 0; j < tasks_.size(); ++j) {
    const Step& c = s.steps[j];
    if (c.kind != Kind::copy || c.dep_count != 0 || awaited[j] || c.src.gathered() ||
        c.dst.gathered() || c.src.count == 0)
      continue;
    for (std::size_t i = 0; i < tasks_.size(); ++i) {
      Task& t = tasks_[i];
      const Step& st = *t.step;
      if (t.via != Via::shm || st.kind != Kind::send || st.dep_count != 0 || t.carries >= 0 ||
          st.src.gathered() || st.src.buf != c.src.buf || st.src.offset != c.src.offset ||
          st.src.count != c.src.count)
        continue;
      t.carries = static_cast<int>(j);
      tasks_[j].carried = true;
      break;
    }
  }
}

}  // namespace toroid::exec
