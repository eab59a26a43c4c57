#include "exec/single_copy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "exec/shm_transfer.hpp"
#include "exec/stuck.hpp"
#include "kernels/reduce.hpp"
#include "toroid/block.hpp"
#include "toroid/error.hpp"

namespace toroid::exec {
namespace {

// A rank's running sum lives in a buffer this small, so it stays in the first-level cache
// between the reductions that build it and the copies that hand it out.
constexpr std::size_t kChunkBytes = 16 * 1024;
// Outputs this large are written with non-temporal stores: nothing in the collective reads them
// again, and write-allocating every line would read it from memory first (as in op.cpp).
constexpr std::size_t kStreamBytes = std::size_t{1} << 20;

std::uint64_t load(const std::uint64_t& v) {
  return std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(v))
      .load(std::memory_order_acquire);
}
void store(std::uint64_t& v, std::uint64_t x) {
  std::atomic_ref<std::uint64_t>(v).store(x, std::memory_order_release);
}

// Spins (then yields) until every local rank's `reached(local)` holds; the watchdog's timeout
// ends the job with the ranks still missing.
template <class Reached>
void wait_all(const NodeMemory& memory, const ExecParams& params, MPI_Comm comm,
              std::uint32_t phase, const char* doing, Reached reached) {
  Backoff backoff(params.timeout_s);
  for (int l = 0; l < memory.local_size(); ++l) {
    while (!reached(l)) {
      if (!backoff.idle()) continue;
      std::string missing;
      for (int m = 0; m < memory.local_size(); ++m)
        if (!reached(m))
          missing += fmt::format("\n  single-copy: waiting for node rank {} to {}", m, doing);
      abort_stuck(params, comm, phase, missing);
    }
    backoff.moved();
  }
}

// The first field in which the ranks' posts differ, as "count differs between ranks: rank 0 has
// 8, rank 1 has 16"; empty when they all match.
std::string mismatch(const NodeMemory& memory, int size, std::uint64_t seq) {
  const auto post = [&](int r) -> const CallPost& {
    return memory.control(memory.local_of(r)).post[seq % 2];
  };
  struct Named {
    const char* name;
    std::string (*show)(const CallPost&);
  };
  static constexpr Named fields[] = {
      {"collective",
       [](const CallPost& p) {
         return std::string(to_string(static_cast<Collective>(p.collective)));
       }},
      {"count", [](const CallPost& p) { return std::to_string(p.count); }},
      {"type",
       [](const CallPost& p) { return std::string(to_string(static_cast<DataType>(p.type))); }},
      {"op",
       [](const CallPost& p) { return std::string(to_string(static_cast<ReduceOp>(p.op))); }}};
  const auto key = [](const CallPost& p) {
    return std::tuple(p.collective, p.count, p.type, p.op);
  };
  bool all_same = true;
  for (int r = 1; r < size; ++r) all_same = all_same && key(post(r)) == key(post(0));
  if (all_same) return {};  // the usual case: nothing formatted
  for (const Named& f : fields) {
    bool same = true;
    for (int r = 1; r < size; ++r) same = same && f.show(post(r)) == f.show(post(0));
    if (same) continue;
    std::string text = fmt::format("{} differs between ranks:", f.name);
    for (int r = 0; r < size; ++r)
      text += fmt::format("{} rank {} has {}", r ? "," : "", r, f.show(post(r)));
    return text;
  }
  return {};
}

struct Views {
  std::vector<const std::byte*> in;  // by communicator rank
  std::vector<std::byte*> out;
};

void reduce_block(const SingleCopyCall& c, const ExecParams& params, const Views& v, Block mine) {
  const std::size_t es = size_of(params.type);
  const kernels::ReduceFn reduce = kernels::reduce_fn(params.type, params.op);
  const kernels::CopyFn stream = kernels::copy_stream_fn();
  const bool streams = c.count * es >= kStreamBytes;
  const auto put = [&](std::byte* dst, const std::byte* src, std::size_t bytes) {
    if (streams)
      stream(dst, src, bytes);
    else
      std::memcpy(dst, src, bytes);
  };
  alignas(64) std::byte sum[kChunkBytes];
  const std::size_t chunk = kChunkBytes / es;
  for (std::uint64_t done = 0; done < mine.count; done += chunk) {
    const std::size_t n =
        static_cast<std::size_t>(std::min<std::uint64_t>(chunk, mine.count - done));
    const std::size_t at = (mine.offset + done) * es, bytes = n * es;
    if (c.size == 1)
      std::memcpy(sum, v.in[0] + at, bytes);
    else
      reduce(sum, v.in[0] + at, v.in[1] + at, n);
    for (int j = 2; j < c.size; ++j) reduce(sum, sum, v.in[static_cast<std::size_t>(j)] + at, n);
    if (params.op == ReduceOp::avg)
      kernels::divide(params.type, sum, n, static_cast<std::uint32_t>(c.size));
    if (c.collective == Collective::allreduce) {
      for (int j = 0; j < c.size; ++j) put(v.out[static_cast<std::size_t>(j)] + at, sum, bytes);
    } else {  // reduce-scatter: my output only, at the block's own offset when in place
      std::byte* dst = v.out[static_cast<std::size_t>(c.rank)] + (c.in_place ? at : done * es);
      put(dst, sum, bytes);
    }
  }
}

void gather_blocks(const SingleCopyCall& c, const ExecParams& params, const Views& v) {
  const std::size_t es = size_of(params.type);
  const kernels::CopyFn stream = kernels::copy_stream_fn();
  const bool streams = c.count * es >= kStreamBytes;
  std::byte* out = v.out[static_cast<std::size_t>(c.rank)];
  for (int j = 0; j < c.size; ++j) {
    if (j == c.rank && c.in_place) continue;
    const Block b = block_of(c.count, c.size, j);
    if (streams)
      stream(out + b.offset * es, v.in[static_cast<std::size_t>(j)], b.count * es);
    else
      std::memcpy(out + b.offset * es, v.in[static_cast<std::size_t>(j)], b.count * es);
  }
}

}  // namespace

bool run_single_copy(NodeMemory& memory, const SingleCopyCall& c, const ExecParams& params,
                     MPI_Comm comm) {
  const std::uint64_t seq = memory.next_seq();
  const int me = memory.local_rank();
  CallPost& post = memory.control(me).post[seq % 2];
  post.in_id = c.in.id, post.in_offset = c.in.offset;
  post.out_id = c.out.id, post.out_offset = c.out.offset;
  post.count = c.count;
  post.collective = static_cast<std::uint32_t>(c.collective);
  post.type = static_cast<std::uint16_t>(params.type);
  post.op = static_cast<std::uint16_t>(params.op);
  store(post.seq, seq);
  wait_all(memory, params, comm, 0, "enter the call",
           [&](int l) { return load(memory.control(l).post[seq % 2].seq) == seq; });

  const auto peer = [&](int l) -> const CallPost& { return memory.control(l).post[seq % 2]; };
  if (const std::string differs = mismatch(memory, c.size, seq); !differs.empty())
    throw InvalidArgument(fmt::format("{} on rank {}: {}", params.what.text(), c.rank, differs));
  for (int l = 0; l < memory.local_size(); ++l)
    if (peer(l).in_id != c.in.id || peer(l).out_id != c.out.id) return false;

  // Both allocations are held by this rank (its own buffers are in them), so every peer's part
  // is mapped here.
  const auto in = memory.held(c.in.id), out = memory.held(c.out.id);
  Views v;
  for (int r = 0; r < c.size; ++r) {
    const int l = memory.local_of(r);
    v.in.push_back(in->part[static_cast<std::size_t>(l)] + peer(l).in_offset);
    v.out.push_back(out->part[static_cast<std::size_t>(l)] + peer(l).out_offset);
  }
  if (c.collective == Collective::allgather)
    gather_blocks(c, params, v);
  else
    reduce_block(c, params, v, block_of(c.count, c.size, c.rank));
  memory.count_single_copy();

  store(memory.control(me).done, seq);
  wait_all(memory, params, comm, 1, "finish the call",
           [&](int l) { return load(memory.control(l).done) >= seq; });
  return true;
}

}  // namespace toroid::exec
