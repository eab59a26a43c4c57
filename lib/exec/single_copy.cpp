#include "exec/single_copy.hpp"

#include <fmt/format.h>
#include <sys/uio.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "core/who_holds.hpp"
#include "kernels/reduce.hpp"
#include "toroid/error.hpp"

namespace toroid::exec {
namespace {

// A rank's running sum lives in a buffer this small, so it stays in the first-level cache
// between the reductions that build it and the copies that hand it out.
constexpr std::size_t kChunkBytes = 16 * 1024;
// Work done per advance() before the engine's other collectives get a turn.
constexpr std::size_t kWorkBytes = 256 * 1024;
// Of each peer's stage, what enter() fetches ahead (prefetch_peers): four lines.
constexpr std::size_t kPrefetchedStageBytes = 256;

std::uint64_t load(const std::uint64_t& v) {
  return std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(v))
      .load(std::memory_order_acquire);
}
void store(std::uint64_t& v, std::uint64_t x) {
  std::atomic_ref<std::uint64_t>(v).store(x, std::memory_order_release);
}

}  // namespace

bool takes_staged_path(Collective c, std::uint64_t count, std::size_t elem_size, int size) {
  return size >= 3 && small_enough_to_stage(c, count, elem_size, size);
}

bool small_enough_to_stage(Collective c, std::uint64_t count, std::size_t elem_size, int size) {
  if (count == 0 || size < 1) return false;
  const std::uint64_t staged =
      (c == Collective::allgather ? count / static_cast<std::uint64_t>(size) + 1 : count) *
      elem_size;
  // An all-to-all reads one block of each stage: its own input's worth in all.
  const std::uint64_t read =
      c == Collective::alltoall ? staged : staged * static_cast<std::uint64_t>(size);
  return staged <= NodeMemory::kStageBytes && read <= kStagedReadBytes;
}

NodePath node_path(Collective c, std::uint64_t count, std::size_t elem_size, int size, bool owned,
                   bool varying) {
  if (c == Collective::broadcast) return NodePath::schedule;
  if (varying) {
    if (!layout_fits_stage(size)) return NodePath::schedule;
    return owned ? NodePath::single_copy : NodePath::remote_reads;
  }
  if (count == 0) return NodePath::schedule;
  if (small_enough_to_stage(c, count, elem_size, size))  // the schedule at 2 ranks
    return takes_staged_path(c, count, elem_size, size) ? NodePath::staged : NodePath::schedule;
  if (owned) return NodePath::single_copy;
  return c == Collective::alltoall ? NodePath::remote_reads : NodePath::schedule;
}

std::string_view to_string(NodePath p) {
  switch (p) {
    case NodePath::schedule:
      return "schedule";
    case NodePath::staged:
      return "staged";
    case NodePath::single_copy:
      return "single_copy";
    case NodePath::remote_reads:
      return "remote_reads";
  }
  return "?";
}

bool layout_fits_stage(int size) {
  return size >= 1 &&
         3 * static_cast<std::size_t>(size) * sizeof(std::uint64_t) <= NodeMemory::kStageBytes;
}

SingleCopy::SingleCopy(NodeMemory& memory, const SingleCopyCall& call, const ExecParams& params,
                       bool may_fall_back)
    : memory_(memory), call_(call), params_(params), may_fall_back_(may_fall_back) {
  mine_ = block_of(call.count, call.size, call.rank);
}

void SingleCopy::restart() {
  phase_ = Phase::queued;
  fell_back_ = false;
  at_ = 0;
  remote_ = false;
  all_in_stage_ = false;
  failed_errno_ = 0;
}

bool SingleCopy::advance() {
  bool moved = false;
  if (phase_ == Phase::queued) {
    // Post this call: what it passed, then the seq that makes it visible (release).
    seq_ = memory_.next_seq();
    CallPost& post = memory_.control(memory_.local_rank()).post[seq_ % 2];
    post.in_id = call_.in.id, post.in_offset = call_.in.offset;
    post.out_id = call_.out.id, post.out_offset = call_.out.offset;
    post.count = call_.blocks ? 0 : call_.count;  // an alltoallv's counts are in its layout
    post.collective = static_cast<std::uint32_t>(call_.collective);
    post.type = static_cast<std::uint16_t>(params_.type);
    post.reduction = static_cast<std::uint16_t>(params_.reduction);
    post.staged = call_.staged ? 1 : 0;
    post.varying = call_.blocks ? 1 : 0;
    post.remote_reads = call_.remote_reads ? 1 : 0;
    post.pid = memory_.pid();
    post.in_address = reinterpret_cast<std::uintptr_t>(call_.in_data);
    post.out_address = reinterpret_cast<std::uintptr_t>(call_.out_data);
    if (call_.blocks) {  // the layout peers read: send counts, send offsets, receive counts
      const schedule::VarBlocks& v = *call_.blocks;
      auto* layout = reinterpret_cast<std::uint64_t*>(memory_.stage(memory_.local_rank(), seq_));
      const std::size_t p = v.send_counts.size();
      std::memcpy(layout, v.send_counts.data(), p * sizeof(std::uint64_t));
      std::memcpy(layout + p, v.send_offsets.data(), p * sizeof(std::uint64_t));
      std::memcpy(layout + 2 * p, v.recv_counts.data(), p * sizeof(std::uint64_t));
      // The input too where it fits (up to its last block's end: a buffer longer than its
      // blocks, or null with none, stages only what is sent): its blocks then come from here,
      // without a remote read.
      std::uint64_t extent = 0;
      for (std::size_t q = 0; q < p; ++q)
        if (v.send_counts[q] > 0) extent = std::max(extent, v.send_offsets[q] + v.send_counts[q]);
      const std::size_t bytes = extent * size_of(params_.type);
      post.in_stage = bytes <= NodeMemory::kStageBytes - 3 * p * sizeof(std::uint64_t) ? 1 : 0;
      if (post.in_stage && bytes > 0) std::memcpy(layout + 3 * p, call_.in_data, bytes);
    } else if (call_.staged) {
      const std::size_t es = size_of(params_.type);
      const std::uint64_t n = call_.collective == Collective::allgather ? mine_.count : call_.count;
      kernels::copy(memory_.stage(memory_.local_rank(), seq_), call_.in_data, n * es);
    }
    store(post.seq, seq_);
    phase_ = Phase::entering;
    moved = true;
  }
  if (phase_ == Phase::entering) {
    if (!enter()) return moved;
    moved = true;
  }
  if (phase_ == Phase::working) {
    moved |= work();
    if (phase_ != Phase::leaving) return moved;
  }
  if (phase_ == Phase::leaving) moved |= leave();
  return moved;
}

// Every peer's post is here: its second line, and the first lines of what this rank reads of
// each peer's stage (an alltoallv's layout, a staged call's input), are fetched at once rather
// than one cache miss after another as the checks and copies below reach them. A small call's
// time is mostly those misses: a 64-byte alltoallv at 2 ranks took 0.90 us without, 0.80 with.
void SingleCopy::prefetch_peers() const {
  const std::size_t es = size_of(params_.type);
  // Where this rank's part of a stage starts and how long it is (no line it will not read: a
  // line fetched for nothing is one more transfer between the cores).
  std::size_t from = 0, bytes = 0;
  const std::uint64_t block = call_.count / static_cast<std::uint64_t>(call_.size);
  if (call_.blocks) {
    bytes = kPrefetchedStageBytes;  // the layout, then whatever input follows it
  } else if (call_.staged) {
    switch (call_.collective) {
      case Collective::alltoall:
        from = static_cast<std::size_t>(call_.rank) * block * es, bytes = block * es;
        break;
      case Collective::reduce_scatter:
        from = mine_.offset * es, bytes = mine_.count * es;
        break;
      case Collective::allgather:
        bytes = (block + 1) * es;
        break;
      default:
        bytes = call_.count * es;
    }
  }
  bytes = std::min(bytes, kPrefetchedStageBytes);
  for (int r = 0; r < call_.size; ++r) {
    if (r == call_.rank) continue;
    __builtin_prefetch(reinterpret_cast<const char*>(&post_of(r)) + 64);
    const char* stage = reinterpret_cast<const char*>(memory_.stage(memory_.local_of(r), seq_));
    for (std::size_t at = 0; at < bytes; at += 64) __builtin_prefetch(stage + from + at);
  }
}

// Every peer's post of this call seen (acquire): their inputs are final, their calls known.
bool SingleCopy::enter() {
  for (int r = 0; r < call_.size; ++r)
    if (load(post_of(r).seq) != seq_) return false;
  prefetch_peers();
  const auto key = [](const CallPost& p) {
    return std::tuple(p.collective, p.varying, p.count, p.type, p.reduction, p.staged,
                      p.remote_reads);
  };
  for (int r = 1; r < call_.size; ++r)
    if (key(post_of(r)) != key(post_of(0))) {
      // The first field that differs, with every rank's value; the same text on every rank.
      using Show = std::string (*)(const CallPost&);
      const std::pair<const char*, Show> fields[] = {
          {"collective",
           [](const CallPost& p) {
             return std::string(to_string(static_cast<Collective>(p.collective)));
           }},
          {"blocks",
           [](const CallPost& p) {
             return std::string(p.varying ? "each rank's own (alltoallv)" : "equal");
           }},
          {"count", [](const CallPost& p) { return std::to_string(p.count); }},
          {"type",
           [](const CallPost& p) { return std::string(to_string(static_cast<DataType>(p.type))); }},
          {"op",
           [](const CallPost& p) {
             return std::string(to_string(static_cast<ReduceOp>(p.reduction)));
           }},
          {"path", [](const CallPost& p) {
             return std::string(p.staged         ? "staged"
                                : p.remote_reads ? "single-copy or remote reads"
                                                 : "single-copy");
           }}};
      std::string text;
      for (const auto& [name, show] : fields) {
        std::vector<std::string> values;
        for (int k = 0; k < call_.size; ++k) values.push_back(show(post_of(k)));
        const Holders holders = holders_by_first_rank(values);
        if (holders.size() == 1) continue;
        text = fmt::format("{} differs between ranks: {}", name, who_holds(holders));
        break;
      }
      phase_ = Phase::finished;
      throw InvalidArgument(
          fmt::format("{} on rank {}: {}", params_.what.text(), call_.rank, text));
    }
  if (call_.blocks) {
    check_layouts();
    all_in_stage_ = true;
    for (int r = 0; r < call_.size; ++r) all_in_stage_ = all_in_stage_ && post_of(r).in_stage;
    if (all_in_stage_) {  // every block from the stages: no peer's buffer is touched
      streams_ = false;
      phase_ = Phase::working;
      return true;
    }
  }
  if (call_.staged) {
    work_staged();
    memory_.count_staged();
    phase_ = Phase::finished;  // no leave: see single_copy.hpp
    return true;
  }
  bool one_allocation = call_.in.id != 0 && call_.out.id != 0;  // 0: not toroid's (remote reads)
  for (int r = 0; r < call_.size; ++r)
    one_allocation =
        one_allocation && post_of(r).in_id == call_.in.id && post_of(r).out_id == call_.out.id;
  if (!one_allocation && call_.remote_reads) {
    // Every rank sees the same posts: all read their peers where they are (single_copy.hpp).
    remote_ = true;
    in_.clear();  // addresses in each peer's own process
    for (int r = 0; r < call_.size; ++r)
      in_.push_back(reinterpret_cast<const std::byte*>(post_of(r).in_address));
    streams_ = false;
    phase_ = Phase::working;
    return true;
  }
  if (!one_allocation) {
    // Every rank sees the same posts, so every rank ends here alike; nobody touched anything,
    // and no rank waits for a done of this seq (done only ever grows).
    phase_ = Phase::finished;
    if (may_fall_back_) {
      fell_back_ = true;
      return true;
    }
    throw InvalidArgument(fmt::format(
        "{} on rank {}: the ranks' buffers come from different Communicator::allocate calls; a "
        "blocking call runs its schedule then, but a non-blocking or persistent one cannot (use "
        "buffers of one allocate call on every rank, or other memory)",
        params_.what.text(), call_.rank));
  }
  // This rank holds both allocations (its own buffers lie in them), so every peer's part of
  // them is mapped here.
  in_held_ = memory_.held(call_.in.id);
  out_held_ = memory_.held(call_.out.id);
  in_.clear(), out_.clear();
  for (int r = 0; r < call_.size; ++r) {
    const auto l = static_cast<std::size_t>(memory_.local_of(r));
    in_.push_back(in_held_->part[l] + post_of(r).in_offset);
    out_.push_back(out_held_->part[l] + post_of(r).out_offset);
  }
  std::uint64_t writes = call_.count;  // what this rank writes, in elements
  if (call_.blocks) {
    writes = 0;
    for (std::uint64_t c : call_.blocks->recv_counts) writes += c;
  }
  streams_ = writes * size_of(params_.type) >= kStreamBytes;
  phase_ = Phase::working;
  return true;
}

// An alltoallv's layouts, every sender's send count against its receiver's receive count: the
// first pair that differs, by receiver and then sender, the same on every rank (every rank
// reads every stage).
void SingleCopy::check_layouts() const {
  const auto p = static_cast<std::size_t>(call_.size);
  for (int to = 0; to < call_.size; ++to) {
    const std::uint64_t* receives = layout_of(to) + 2 * p;
    for (int from = 0; from < call_.size; ++from) {
      const std::uint64_t sends = layout_of(from)[to];
      if (sends == receives[from]) continue;
      throw InvalidArgument(fmt::format(
          "{} on rank {}: rank {} sends {} elements to rank {}, whose receive count for rank {} "
          "is {}: a send count and the matching receive count must be equal",
          params_.what.text(), call_.rank, from, sends, to, from,
          receives[static_cast<std::size_t>(from)]));
    }
  }
}

// A rank's alltoallv layout in its stage of this call: send counts, send offsets, receive
// counts, p words each; then its input, where it fits (CallPost::in_stage).
const std::byte* SingleCopy::stage_input_of(int rank) const {
  return reinterpret_cast<const std::byte*>(layout_of(rank) +
                                            3 * static_cast<std::size_t>(call_.size));
}

void SingleCopy::put(std::byte* dst, const std::byte* src, std::size_t bytes) const {
  if (streams_)
    kernels::copy_stream_fn()(dst, src, bytes);
  else
    kernels::copy(kernels::copy_fn(), dst, src, bytes);
}

// Every block this rank receives, one copy each from the sender's input, peers in the order
// rank, rank + 1, ... (so the ranks do not all read one peer at once); at_ counts peers done.
bool SingleCopy::work_alltoall() {
  const std::size_t es = size_of(params_.type);
  const auto p = static_cast<std::uint64_t>(call_.size);
  const auto me = static_cast<std::size_t>(call_.rank);
  std::byte* out = call_.out_data;  // (mapped single-copy: the same address as out_[me])
  const std::uint64_t budget = std::max<std::uint64_t>(kWorkBytes / es, 1);
  // A block from peer j: read out of j's process where the call reads remotely, else copied.
  const auto take = [&](std::size_t j, std::byte* to, const std::byte* from, std::size_t bytes) {
    if (remote_ && j != me) return read_remote(static_cast<int>(j), to, from, bytes);
    put(to, from, bytes);
    return true;
  };
  std::uint64_t moved = 0;
  for (; at_ < p && moved < budget && failed_errno_ == 0; ++at_) {
    const auto j = static_cast<std::size_t>((call_.rank + at_) % p);
    if (call_.blocks) {
      const schedule::VarBlocks& v = *call_.blocks;
      const std::uint64_t n = v.recv_counts[j];
      if (n == 0) continue;
      const std::uint64_t from = layout_of(static_cast<int>(j))[p + me];  // j's offset for me
      std::byte* to = out + v.recv_offsets[j] * es;
      if (post_of(static_cast<int>(j)).in_stage)
        put(to, stage_input_of(static_cast<int>(j)) + from * es, n * es);
      else if (!take(j, to, in_[j] + from * es, n * es))
        break;
      moved += n;
    } else {
      const std::uint64_t b = call_.count / p;
      if (!take(j, out + j * b * es, in_[j] + me * b * es, b * es)) break;
      moved += b;
    }
  }
  if (at_ == p && all_in_stage_) {  // no leave: as a staged call (single_copy.hpp)
    memory_.count_staged();
    phase_ = Phase::finished;
  } else if (at_ == p || failed_errno_ != 0) {
    phase_ = Phase::leaving;
  }
  return true;
}

bool SingleCopy::read_remote(int j, std::byte* to, const std::byte* from, std::size_t bytes) {
  while (bytes > 0) {
    iovec local{to, bytes}, remote{const_cast<std::byte*>(from), bytes};
    const ssize_t got =
        ::process_vm_readv(static_cast<pid_t>(post_of(j).pid), &local, 1, &remote, 1, 0);
    if (got <= 0) {
      if (got < 0 && errno == EINTR) continue;
      failed_errno_ = got < 0 ? errno : EIO;
      return false;
    }
    const auto n = static_cast<std::size_t>(got);
    to += n, from += n, bytes -= n;
  }
  return true;
}

// Up to kWorkBytes of this rank's share (exec/single_copy.hpp's diagram).
bool SingleCopy::work() {
  if (call_.collective == Collective::alltoall) return work_alltoall();
  const std::size_t es = size_of(params_.type);
  const std::uint64_t budget = std::max<std::uint64_t>(kWorkBytes / es, 1);
  if (call_.collective == Collective::allgather) {
    // at_ counts blocks here: every block is one copy into this rank's output.
    std::uint64_t moved = 0;
    for (; at_ < static_cast<std::uint64_t>(call_.size) && moved < budget; ++at_) {
      const int j = static_cast<int>(at_);
      if (j == call_.rank && call_.in_place) continue;
      const Block b = block_of(call_.count, call_.size, j);
      put(out_[static_cast<std::size_t>(call_.rank)] + b.offset * es,
          in_[static_cast<std::size_t>(j)], b.count * es);
      moved += b.count;
    }
    if (at_ == static_cast<std::uint64_t>(call_.size)) phase_ = Phase::leaving;
    return true;
  }
  const kernels::ReduceFn reduce = kernels::reduce_fn(params_.type, params_.reduction);
  alignas(64) std::byte sum[kChunkBytes];
  const std::uint64_t chunk = kChunkBytes / es, end = std::min(mine_.count, at_ + budget);
  for (; at_ < end; at_ += chunk) {
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk, end - at_));
    const std::size_t at = (mine_.offset + at_) * es, bytes = n * es;
    if (call_.size == 1)
      kernels::copy(sum, in_[0] + at, bytes);
    else
      reduce(sum, in_[0] + at, in_[1] + at, n);
    for (std::size_t j = 2; j < in_.size(); ++j) reduce(sum, sum, in_[j] + at, n);
    if (params_.reduction == ReduceOp::avg)
      kernels::divide(params_.type, sum, n, static_cast<std::uint32_t>(call_.size));
    if (call_.collective == Collective::allreduce) {
      for (std::byte* out : out_) put(out + at, sum, bytes);
    } else {  // reduce-scatter: this rank's output only, at the block's own offset in place
      std::byte* out = out_[static_cast<std::size_t>(call_.rank)];
      put(out + (call_.in_place ? at : at_ * es), sum, bytes);
    }
  }
  at_ = end;
  if (at_ >= mine_.count) phase_ = Phase::leaving;
  return true;
}

// The whole result from the p stages of this call (every peer's input, final since it posted).
void SingleCopy::work_staged() {
  const std::size_t es = size_of(params_.type);
  const auto stage = [&](int r) -> const std::byte* {
    return memory_.stage(memory_.local_of(r), seq_);
  };
  if (call_.collective == Collective::allgather) {
    for (int j = 0; j < call_.size; ++j) {
      if (j == call_.rank && call_.in_place) continue;
      const Block b = block_of(call_.count, call_.size, j);
      kernels::copy(call_.out_data + b.offset * es, stage(j), b.count * es);
    }
    return;
  }
  if (call_.collective == Collective::alltoall) {  // block j of mine: block `rank` of j's stage
    const std::size_t b = call_.count / static_cast<std::uint64_t>(call_.size) * es;
    for (int j = 0; j < call_.size; ++j)
      kernels::copy(call_.out_data + static_cast<std::size_t>(j) * b,
                    stage(j) + static_cast<std::size_t>(call_.rank) * b, b);
    return;
  }
  // All-reduce: every element; reduce-scatter: this rank's block, at its own offset in place.
  const Block part = call_.collective == Collective::allreduce ? Block{0, call_.count} : mine_;
  std::byte* out =
      call_.out_data +
      (call_.collective == Collective::reduce_scatter && !call_.in_place ? 0 : part.offset * es);
  const std::size_t at = part.offset * es, n = part.count;
  const kernels::ReduceFn reduce = kernels::reduce_fn(params_.type, params_.reduction);
  reduce(out, stage(0) + at, stage(1) + at, n);
  for (int j = 2; j < call_.size; ++j) reduce(out, out, stage(j) + at, n);
  if (params_.reduction == ReduceOp::avg)
    kernels::divide(params_.type, out, n, static_cast<std::uint32_t>(call_.size));
}

// This rank's reads and writes are done (release; the streaming copies end with a store
// fence); the call ends once every peer's are (acquire), and only then may the caller reuse
// its buffers.
bool SingleCopy::leave() {
  RankControl& mine = memory_.control(memory_.local_rank());
  if (load(mine.done) < seq_) {
    if (failed_errno_ != 0) {  // published with the done that follows (release)
      mine.failed_errno = static_cast<std::uint64_t>(failed_errno_);
      mine.failed = seq_;
    }
    store(mine.done, seq_);
    if (remote_)
      memory_.count_remote_reads();
    else
      memory_.count_single_copy();
  }
  for (int r = 0; r < call_.size; ++r)
    if (load(memory_.control(memory_.local_of(r)).done) < seq_) return false;
  in_held_.reset(), out_held_.reset();
  phase_ = Phase::finished;
  for (int r = 0; r < call_.size; ++r) {
    const RankControl& c = memory_.control(memory_.local_of(r));
    if (c.failed != seq_) continue;
    throw Error(fmt::format(
        "{} on rank {}: rank {} could not read its peers' buffers (process_vm_readv: {}); the "
        "kernel refuses cross-memory reads between these processes (ptrace policy). Pass buffers "
        "from Communicator::allocate, or name an algorithm (direct) to run the schedule",
        params_.what.text(), call_.rank, r, std::strerror(static_cast<int>(c.failed_errno))));
  }
  return true;
}

std::string SingleCopy::waiting() const {
  std::string lines;
  for (int r = 0; r < call_.size; ++r) {
    const RankControl& c = memory_.control(memory_.local_of(r));
    if (phase_ == Phase::entering && load(c.post[seq_ % 2].seq) != seq_)
      lines += fmt::format("\n  waiting: rank {} to enter {} (single-copy, call {})", r,
                           params_.what.text(), seq_);
    if (phase_ == Phase::leaving && load(c.done) < seq_)
      lines += fmt::format("\n  waiting: rank {} to finish {} (single-copy, call {})", r,
                           params_.what.text(), seq_);
  }
  if (phase_ == Phase::queued)
    lines += fmt::format("\n  waiting: {} (single-copy) behind an earlier single-copy call",
                         params_.what.text());
  return lines;
}

}  // namespace toroid::exec
