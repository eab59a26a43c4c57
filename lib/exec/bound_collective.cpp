#include "exec/bound_collective.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "exec/engine.hpp"
#include "schedule/chunk_range.hpp"

namespace toroid::exec {
namespace {

using schedule::Kind;
using schedule::Step;

struct Range {
  const std::byte* begin = nullptr;
  const std::byte* end = nullptr;
  bool empty() const { return begin == end; }
  bool overlaps(const Range& o) const {
    return !empty() && !o.empty() && begin < o.end && o.begin < end;
  }
  bool within(const Range& o) const { return !empty() && o.begin <= begin && end <= o.end; }
};

// What a step reads and writes, by address (in place, input and output are one buffer).
Range step_reads(const Step& st, const schedule::BufferSet& buf) {
  const schedule::Chunk* c = schedule::read_chunk(st);
  if (!c) return {};
  const std::byte* p = buf.readable(*c);
  return {p, p + c->span() * buf.elem_size};  // a gathered chunk: its whole span
}
Range step_writes(const Step& st, const schedule::BufferSet& buf) {
  const schedule::Chunk* c = schedule::written_chunk(st);
  if (!c) return {};
  const std::byte* p = buf.writable(*c);
  return {p, p + c->span() * buf.elem_size};
}

// What becomes of the bytes step g writes once step `reader` (a relay, or none) has read them:
// dead (no other later step reads them before one overwrites them all, or the schedule ends
// with them in scratch; a ring all-reduce's partial sums), read (something else reads them
// later), or final (output that nothing in the collective reads again).
enum class LaterUse { dead, read, final };
LaterUse later_use(const schedule::Schedule& s, std::size_t g, std::size_t reader,
                   const schedule::BufferSet& buf) {
  const Range w = step_writes(s.steps[g], buf);
  for (std::size_t j = g + 1; j < s.steps.size(); ++j) {
    const Step& st = s.steps[j];
    if (j == reader || st.phase == s.steps[g].phase) continue;
    if (step_reads(st, buf).overlaps(w)) return LaterUse::read;
    if (!st.dst.gathered() && w.within(step_writes(st, buf))) return LaterUse::dead;
  }
  return s.steps[g].dst.buf == schedule::Buf::scratch ? LaterUse::dead : LaterUse::final;
}

}  // namespace

void run_local_step(const Step& st, const schedule::BufferSet& buf, DataType type) {
  if (st.kind == Kind::copy) {
    buf.copy(st.src, st.dst);
  } else if (st.kind == Kind::scale) {
    kernels::divide(type, buf.writable(st.dst), st.dst.count, st.divisor);
  }
}

bool BoundCollective::bound_to(const schedule::Schedule& s, std::uint64_t serial,
                               const schedule::BufferSet& user,
                               const ExecParams& p) const noexcept {
  return schedule_.get() == &s && serial_ == serial && serial != 0 && user_.input == user.input &&
         user_.output == user.output && user_.elem_size == user.elem_size &&
         params_.type == p.type && params_.op == p.op && params_.segment_bytes == p.segment_bytes &&
         params_.depth == p.depth && params_.timeout_s == p.timeout_s && params_.shm == p.shm &&
         params_.what == p.what;
}

void BoundCollective::bind(std::shared_ptr<const schedule::Schedule> sp,
                           const schedule::BufferSet& user, const ExecParams& params,
                           Engine& engine) {
  schedule_ = std::move(sp);
  const schedule::Schedule& s = *schedule_;
  single_copy_.reset();
  serial_ = 0;
  user_ = user;
  params_ = params;
  reduce_ = kernels::reduce_fn(params.type, params.op);
  reduce_copy_ = kernels::reduce_copy_fn(params.type, params.op);
  const std::size_t es = user.elem_size;
  if (scratch_.size() < s.scratch_count * es) scratch_.resize(s.scratch_count * es);
  buf_ = user;
  buf_.scratch = scratch_.data();
  buf_.pieces = s.pieces.data();

  const std::size_t seg = std::max<std::size_t>(1, params.segment_bytes / es) * es;
  const auto depth = static_cast<std::uint32_t>(std::max(1, params.depth));
  const ShmLinks* links = params.shm;
  std::size_t staged = 0;
  for (const Step& st : s.steps)
    if (st.kind == Kind::recv_reduce && !(links && links->carries(st.peer, st.tag))) ++staged;
  if (staging_.size() < staged * depth * seg) staging_.resize(staged * depth * seg);

  tasks_.assign(s.steps.size(), Task{});
  shm_tasks_ = 0;
  for (std::size_t i = 0; i < s.steps.size(); ++i) {
    const Step& st = s.steps[i];
    Task& t = tasks_[i];
    t.step = &st;
    if (schedule::is_local(st.kind)) continue;
    const bool sends = st.kind == Kind::send;
    t.bytes = (sends ? st.src.count : st.dst.count) * es;
    t.channel = &engine.channel(sends, st.peer, st.tag);
    t.via = links && links->carries(st.peer, st.tag) ? Via::shm : Via::mpi;
    shm_tasks_ += t.via == Via::shm;
  }
  bind_addresses();
  state_ = State::idle;
}

void BoundCollective::rebind(const schedule::BufferSet& user) {
  user_ = user;
  buf_ = user;
  buf_.scratch = scratch_.data();
  buf_.pieces = schedule_->pieces.data();
  bind_addresses();
}

void BoundCollective::bind_addresses() {
  const std::size_t es = buf_.elem_size;
  const std::size_t seg = std::max<std::size_t>(1, params_.segment_bytes / es) * es;
  const auto depth = static_cast<std::uint32_t>(std::max(1, params_.depth));
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
                 sends ? nullptr : buf_.writable(st.dst), t.bytes, seg, es, staging, depth);
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
  shm_tasks_ = 0;
  single_copy_ = std::make_unique<SingleCopy>(memory, call, params, may_fall_back);
  state_ = State::idle;
}

// Shared memory: a receive whose bytes one send forwards unchanged hands each segment straight
// into that send's ring (a relay, ShmTransfer::pop), writing its destination too only when
// something else reads it later; large receives of final output use non-temporal stores.
void BoundCollective::mark_shared_memory_hints() {
  const schedule::Schedule& s = *schedule_;
  for (std::size_t i = 0; i < tasks_.size(); ++i) {
    Task& t = tasks_[i];
    if (t.via != Via::shm) continue;
    const Step& st = *t.step;
    if (st.kind == Kind::send && st.dep_count == 1) {
      const schedule::Dep& d = s.deps[st.dep_begin];
      Task& g = tasks_[d.step];
      if (d.wait == schedule::Wait::follow && d.offset == 0 && g.via == Via::shm && g.relay < 0 &&
          g.bytes == t.bytes && g.shm.channel.slot_bytes == t.shm.channel.slot_bytes) {
        g.relay = static_cast<int>(i);
        const LaterUse use = later_use(s, d.step, i, buf_);
        g.shm.keep_dst = use != LaterUse::dead;
        g.shm.store =
            use == LaterUse::final && g.bytes >= kStreamBytes ? kernels::copy_stream_fn() : nullptr;
      }
    }
    // (A send that relays this receive comes later in the loop and sets its store again.)
    if (st.kind == Kind::recv && t.bytes >= kStreamBytes &&
        later_use(s, i, s.steps.size(), buf_) == LaterUse::final)
      t.shm.store = kernels::copy_stream_fn();
  }
}

}  // namespace toroid::exec
