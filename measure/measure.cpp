// Timing: a barrier before each iteration, the slowest rank's time per iteration, the median
// over iterations. Checking: inputs whose exact result is known (small integers), every
// element compared.
#include "measure/measure.hpp"

#include <fmt/format.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>

#include "core/element.hpp"

namespace toroid::bench {
namespace {

// The ranks one call runs among: the communicator, or this rank's sub-torus along --axes
// (members in block order, and this rank's place there).
struct Group {
  std::vector<int> members;
  int position = 0;
  int size() const { return static_cast<int>(members.size()); }
};
Group group_of(const Settings& s, Communicator& comm) {
  Group g;
  if (!s.axes) {
    for (int r = 0; r < comm.size(); ++r) g.members.push_back(r);
    g.position = comm.rank();
    return g;
  }
  g.members = comm.shape().group_along(comm.rank(), *s.axes);
  g.position = comm.shape().position_along(comm.rank(), *s.axes);
  return g;
}

// --op alltoallv: the elements rank i sends rank j out of `count` a rank, as top-2 gating over
// one expert per rank makes them: every fourth rank's expert is popular (4 to 5 times the
// others' share), and the shares vary a little from sender to sender. A rank's blocks add up to
// at most `count`; a popular rank receives about twice `count`.
std::uint64_t skewed_weight(int i, int j) { return (j % 4 == 0 ? 4 : 1) + ((i + j) % 3 == 0); }
std::uint64_t skewed_count(std::uint64_t count, int p, int i, int j) {
  std::uint64_t total = 0;
  for (int q = 0; q < p; ++q) total += skewed_weight(i, q);
  return count * skewed_weight(i, j) / total;
}

// One rank's alltoallv blocks (packed in rank order) for `count` elements a rank.
struct Skewed {
  std::vector<std::uint64_t> send, recv;
  std::uint64_t out_count = 0;
};
Skewed skewed_layout(std::uint64_t count, int p, int me) {
  Skewed k;
  for (int q = 0; q < p; ++q) {
    k.send.push_back(skewed_count(count, p, me, q));
    k.recv.push_back(skewed_count(count, p, q, me));
    k.out_count += k.recv.back();
  }
  return k;
}

// The arguments of one collective call of `c` with this rank's buffers (`in`: full length);
// `skewed`: an alltoallv's blocks (--op alltoallv).
struct Args {
  const void* in;
  std::uint64_t in_count;
  void* out;
  std::uint64_t out_count;
  const Skewed* skewed = nullptr;
};
Args args_of(Collective c, const Settings& s, std::byte* in, std::byte* out, std::uint64_t count,
             Communicator& comm) {
  const std::size_t es = size_of(s.type);
  const Group g = group_of(s, comm);
  const Block own = block_of(count, g.size(), g.position);
  switch (c) {
    case Collective::allreduce:
      return s.in_place ? Args{out, count, out, count} : Args{in, count, out, count};
    case Collective::reduce_scatter:
      return s.in_place ? Args{out, count, out, count} : Args{in, count, out, own.count};
    case Collective::allgather:
      return {(s.in_place ? out : in) + own.offset * es, own.count, out, count};
    case Collective::broadcast:
      return {out, count, out, count};  // from rank 0
    case Collective::alltoall:          // never in place (settings.cpp)
      return {in, count, out, count, nullptr};
  }
  return {};
}

// Every input/output set of a row in one block: ordinary memory, page-aligned plus `offset`
// (Settings::output_offset: where malloc puts a vector is not left to chance), or toroid's
// (Communicator::allocate, collective) for --buffers toroid.
class Sets {
 public:
  Sets(Communicator& comm, std::uint64_t set_bytes, std::uint64_t sets, Settings::Memory memory,
       std::uint64_t offset = 0)
      : set_bytes_(set_bytes) {
    if (memory == Settings::Memory::toroid) {
      shared_ = comm.allocate<std::byte>(set_bytes * sets);
      base_ = shared_.data();
      return;
    }
    const std::uint64_t bytes = (set_bytes * sets + offset + 4095) / 4096 * 4096;
    own_.reset(static_cast<std::byte*>(std::aligned_alloc(4096, bytes)));
    if (!own_) throw Error(fmt::format("toroid-bench: out of memory for {} bytes", bytes));
    std::memset(own_.get(), 0, bytes);  // touched, as a std::vector's would be
    base_ = own_.get() + offset;
  }
  std::byte* set(std::uint64_t k) { return base_ + k * set_bytes_; }

 private:
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  std::uint64_t set_bytes_;
  std::unique_ptr<std::byte, Free> own_;
  Buffer<std::byte> shared_;
  std::byte* base_ = nullptr;
};

// A request for the call (non-blocking: started; persistent: bound, not started).
Request request_for(Collective c, const Settings& s, const Args& a, Algorithm algo,
                    Communicator& comm, bool persistent) {
  if (s.axes) switch (c) {  // blocking and non-blocking only (settings.cpp)
      case Collective::allreduce:
        return iallreduce_axis(a.in, a.in_count, a.out, a.out_count, s.type, s.op, *s.axes, comm,
                               algo);
      case Collective::reduce_scatter:
        return ireduce_scatter_axis(a.in, a.in_count, a.out, a.out_count, s.type, s.op, *s.axes,
                                    comm, algo);
      case Collective::allgather:
        return iallgather_axis(a.in, a.in_count, a.out, a.out_count, s.type, *s.axes, comm, algo);
      case Collective::broadcast:
      case Collective::alltoall:
        break;
    }
  switch (c) {
    case Collective::allreduce:
      return persistent
                 ? allreduce_init(a.in, a.in_count, a.out, a.out_count, s.type, s.op, comm, algo)
                 : iallreduce(a.in, a.in_count, a.out, a.out_count, s.type, s.op, comm, algo);
    case Collective::reduce_scatter:
      return persistent
                 ? reduce_scatter_init(a.in, a.in_count, a.out, a.out_count, s.type, s.op, comm,
                                       algo)
                 : ireduce_scatter(a.in, a.in_count, a.out, a.out_count, s.type, s.op, comm, algo);
    case Collective::allgather:
      return persistent ? allgather_init(a.in, a.in_count, a.out, a.out_count, s.type, comm, algo)
                        : iallgather(a.in, a.in_count, a.out, a.out_count, s.type, comm, algo);
    case Collective::broadcast:
      return persistent ? broadcast_init(a.out, a.out_count, s.type, 0, comm, algo)
                        : ibroadcast(a.out, a.out_count, s.type, 0, comm, algo);
    case Collective::alltoall:
      if (a.skewed)
        return persistent
                   ? alltoallv_init(a.in, a.in_count, {a.skewed->send}, a.out, a.skewed->out_count,
                                    {a.skewed->recv}, s.type, comm, algo)
                   : ialltoallv(a.in, a.in_count, {a.skewed->send}, a.out, a.skewed->out_count,
                                {a.skewed->recv}, s.type, comm, algo);
      return persistent ? alltoall_init(a.in, a.in_count, a.out, a.out_count, s.type, comm, algo)
                        : ialltoall(a.in, a.in_count, a.out, a.out_count, s.type, comm, algo);
  }
  return {};
}

// One collective call of `c` with this rank's buffers; `in` is the full-length input.
void call(Collective c, const Settings& s, const Args& a, Algorithm algo, Communicator& comm) {
  if (s.axes) switch (c) {  // no broadcast (settings.cpp)
      case Collective::allreduce:
        return allreduce_axis(a.in, a.in_count, a.out, a.out_count, s.type, s.op, *s.axes, comm,
                              algo);
      case Collective::reduce_scatter:
        return reduce_scatter_axis(a.in, a.in_count, a.out, a.out_count, s.type, s.op, *s.axes,
                                   comm, algo);
      case Collective::allgather:
        return allgather_axis(a.in, a.in_count, a.out, a.out_count, s.type, *s.axes, comm, algo);
      case Collective::broadcast:
      case Collective::alltoall:
        break;
    }
  switch (c) {
    case Collective::allreduce:
      allreduce(a.in, a.in_count, a.out, a.out_count, s.type, s.op, comm, algo);
      return;
    case Collective::reduce_scatter:
      reduce_scatter(a.in, a.in_count, a.out, a.out_count, s.type, s.op, comm, algo);
      return;
    case Collective::allgather:
      allgather(a.in, a.in_count, a.out, a.out_count, s.type, comm, algo);
      return;
    case Collective::broadcast:
      broadcast(a.out, a.out_count, s.type, 0, comm, algo);
      return;
    case Collective::alltoall:
      if (a.skewed)
        alltoallv(a.in, a.in_count, {a.skewed->send}, a.out, a.skewed->out_count, {a.skewed->recv},
                  s.type, comm, algo);
      else
        alltoall(a.in, a.in_count, a.out, a.out_count, s.type, comm, algo);
      return;
  }
}

// Number of wrong elements after one call, given inputs exact_input(op, rank, i) (the result
// over this rank's group).
std::uint64_t count_wrong(Collective c, const Settings& s, const std::byte* out,
                          std::uint64_t count, Communicator& comm) {
  const Group group = group_of(s, comm);
  const int p = group.size();
  const auto member = [&](int q) { return group.members[static_cast<std::size_t>(q)]; };
  const std::size_t es = size_of(s.type);
  const Block own = block_of(count, p, group.position);
  const std::uint64_t first = c == Collective::reduce_scatter ? own.offset : 0;
  std::uint64_t len = c == Collective::reduce_scatter ? own.count : count;
  // alltoallv: the block from q, packed in rank order, is q's block for me (packed in q's).
  std::vector<std::pair<int, std::uint64_t>> from;  // per element: sender, its index there
  if (c == Collective::alltoall && s.alltoallv) {
    for (int q = 0; q < p; ++q) {
      std::uint64_t at_q = 0;
      for (int j = 0; j < group.position; ++j) at_q += skewed_count(count, p, q, j);
      for (std::uint64_t k = 0; k < skewed_count(count, p, q, group.position); ++k)
        from.emplace_back(q, at_q + k);
    }
    len = from.size();
  }
  const std::uint64_t at = c == Collective::reduce_scatter && !s.in_place ? 0 : first;
  std::uint64_t wrong = 0;
  for (std::uint64_t i = 0; i < len; ++i) {
    const std::uint64_t g = first + i;
    double want;
    if (!from.empty()) {
      want = exact_input(s.op, member(from[i].first), from[i].second);
    } else if (c == Collective::alltoall) {  // block q: member q's block for my place
      const std::uint64_t b = count / static_cast<std::uint64_t>(p), q = g / b;
      want = exact_input(s.op, member(static_cast<int>(q)),
                         static_cast<std::uint64_t>(group.position) * b + g % b);
    } else if (c == Collective::broadcast) {
      want = exact_input(s.op, 0, g);  // rank 0's vector
    } else if (c == Collective::allgather) {
      int owner = 0;
      while (block_of(count, p, owner).offset + block_of(count, p, owner).count <= g) ++owner;
      want = exact_input(s.op, member(owner), g);
    } else {
      want = exact_input(s.op, member(0), g);
      for (int r = 1; r < p; ++r) {
        const double v = exact_input(s.op, member(r), g);
        switch (s.op) {
          case ReduceOp::sum:
          case ReduceOp::avg:
            want += v;
            break;
          case ReduceOp::prod:
            want *= v;
            break;
          case ReduceOp::min:
            want = std::min(want, v);
            break;
          case ReduceOp::max:
            want = std::max(want, v);
            break;
        }
      }
      if (s.op == ReduceOp::avg) want /= p;
    }
    std::byte ref[8];
    store_as(s.type, ref, want);
    const double got = load_as_double(s.type, out + (at + i) * es),
                 exp = load_as_double(s.type, ref);
    const double tol = s.op == ReduceOp::avg ? 1e-2 * std::max(1.0, std::abs(exp)) : 0.0;
    wrong += std::abs(got - exp) > tol;
  }
  return wrong;
}

int ranks_on_node(Communicator& comm) {
  MPI_Comm node;
  int node_size = 0;
  MPI_Comm_split_type(comm.mpi_comm(), MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &node_size);
  MPI_Comm_free(&node);
  return node_size;
}

// How many input/output sets a run rotates over. Warm: one (the same buffers every iteration).
// Cold (--cold): enough that what the node's `node_ranks` ranks (they share the cache) touch
// between two uses of a set is twice the last-level cache, and at least two, so an iteration
// never finds its buffers cached by the one before; at most kMaxColdSets (below a few KiB the
// sets then fit the cache: small calls are latency, not memory, bound).
constexpr std::uint64_t kMaxColdSets = 1024;
std::uint64_t cold_sets(const Settings& s, std::uint64_t set_bytes, int node_ranks) {
  const std::uint64_t per_set =
      std::max<std::uint64_t>(set_bytes, 1) * static_cast<std::uint64_t>(node_ranks);
  const std::uint64_t want = (2 * cache_bytes(s) + per_set - 1) / per_set;
  return std::clamp<std::uint64_t>(want, 2, kMaxColdSets);
}

}  // namespace

// The kernel's view first (sysfs: the highest cache level of cpu0, "32768K"): under a VM glibc's
// sysconf reads CPUID, which here says 320 MiB for a 32 MiB L3; then sysconf; then 32 MiB.
std::uint64_t last_level_cache_bytes() {
  std::uint64_t best = 0;
  int best_level = 0;
  for (int i = 0; i < 8; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream level_file(dir + "level"), size_file(dir + "size");
    int level = 0;
    std::string size;
    if (!(level_file >> level) || !(size_file >> size) || size.empty()) continue;
    std::uint64_t bytes = std::strtoull(size.c_str(), nullptr, 10);
    if (size.back() == 'K') bytes <<= 10;
    if (size.back() == 'M') bytes <<= 20;
    if (level > best_level && bytes > 0) best = bytes, best_level = level;
  }
  if (best > 0) return best;
  long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (llc <= 0) llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
  return llc > 0 ? static_cast<std::uint64_t>(llc) : std::uint64_t{32} << 20;
}

std::uint64_t cache_bytes(const Settings& s) {
  return s.cache_bytes > 0 ? s.cache_bytes : last_level_cache_bytes();
}

// Median over iterations of the slowest rank's time of fn(iteration), each after a barrier;
// `before` runs outside the timing.
template <class Fn, class Before>
std::vector<double> timed(const Settings& s, Communicator& comm, Fn&& fn, Before&& before) {
  std::vector<double> times;
  for (int it = 0; it < s.warmup + s.iters; ++it) {
    before(it);
    MPI_Barrier(comm.mpi_comm());
    const double t0 = MPI_Wtime();
    fn(it);
    double dt = MPI_Wtime() - t0;
    MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, comm.mpi_comm());
    if (it >= s.warmup) times.push_back(dt * 1e6);
  }
  std::sort(times.begin(), times.end());
  return times;
}

// Calls per timed iteration (Settings::batch): auto times three single calls (each after a
// barrier, the slowest rank's) and takes enough for kBatchTargetUs at the fastest of them; every
// rank gets the same count. In place, one: the output is the next call's input, restored before
// each iteration.
template <class Once>
int batch_for(const Settings& s, Communicator& comm, Once&& once) {
  if (s.in_place) return 1;
  if (s.batch > 0) return s.batch;
  double fastest = 1e30;
  for (int i = 0; i < 3; ++i) {
    MPI_Barrier(comm.mpi_comm());
    const double t0 = MPI_Wtime();
    once();
    double dt = MPI_Wtime() - t0;
    MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, comm.mpi_comm());
    fastest = std::min(fastest, dt * 1e6);
  }
  return static_cast<int>(std::clamp(std::ceil(Settings::kBatchTargetUs / std::max(fastest, 1e-3)),
                                     1.0, static_cast<double>(Settings::kMaxBatch)));
}

// The copy bound: the aggregate copy bandwidth of all ranks copying at once, as the time one
// copy of the vector per rank takes at that rate. Each rank copies `reps` times (about 512 MiB
// in all) and the time is from the first rank starting to the last one finishing, divided by
// reps: ranks that outnumber the cores take turns, so one copy's own time would count a rank
// that ran alone, and the skew of leaving the barrier (up to a time slice) is spread over many
// copies. On one node every rank reads the same clock; across nodes the clocks differ, so there
// each rank's own time is taken, as for the collectives. Cold: the copies rotate over buffer
// sets as the collectives' rows do, so each copy reads and writes memory the cache lost.
Row measure_copy_bound(Collective c, const Settings& s, std::uint64_t bytes, Communicator& comm) {
  const std::size_t es = size_of(s.type);
  const int p = comm.size();
  const std::uint64_t count = std::max<std::uint64_t>(bytes / es / p, 1) * p;
  const int node_size = ranks_on_node(comm);
  const std::uint64_t sets = s.cold ? cold_sets(s, 2 * count * es, node_size) : 1;
  std::vector<std::vector<std::byte>> in(sets, std::vector<std::byte>(count * es, std::byte{1})),
      out(sets, std::vector<std::byte>(count * es, std::byte{0}));
  const int reps = static_cast<int>(
      std::clamp<std::uint64_t>((std::uint64_t{512} << 20) / (count * es), 1, 1024));
  std::vector<double> times;
  std::uint64_t next = 0;
  for (int it = 0; it < s.warmup + s.iters; ++it) {
    MPI_Barrier(comm.mpi_comm());
    double span[2] = {-MPI_Wtime(), 0};  // -start (so that the max is the earliest start), end
    for (int r = 0; r < reps; ++r, next = (next + 1) % sets)
      std::memcpy(out[next].data(), in[next].data(), count * es);
    span[1] = MPI_Wtime();
    double own = span[1] + span[0];
    MPI_Allreduce(MPI_IN_PLACE, span, 2, MPI_DOUBLE, MPI_MAX, comm.mpi_comm());
    MPI_Allreduce(MPI_IN_PLACE, &own, 1, MPI_DOUBLE, MPI_MAX, comm.mpi_comm());
    const double dt = node_size == p ? std::max(own, span[1] + span[0]) : own;
    if (it >= s.warmup) times.push_back(dt / reps * 1e6);
  }
  std::sort(times.begin(), times.end());
  const double med = times[times.size() / 2];
  const double algbw = static_cast<double>(count * es) / (med * 1e-6) / 1e9;
  return {std::string(to_string(c)),
          std::string(to_string(s.type)),
          std::string(to_string(s.op)),
          count * es,
          count,
          "copy_bound",
          med,
          times.front(),
          times.back(),
          algbw,
          algbw,
          0,
          0.0,
          0.0,
          {}};
}

Row median_of_rounds(std::vector<Row> rounds) {
  std::sort(rounds.begin(), rounds.end(),
            [](const Row& a, const Row& b) { return a.median_us < b.median_us; });
  Row row = rounds[rounds.size() / 2];
  for (const Row& r : rounds) {
    row.min_us = std::min(row.min_us, r.min_us);
    row.max_us = std::max(row.max_us, r.max_us);
  }
  row.wrong = 0;
  for (const Row& r : rounds) row.wrong += r.wrong;
  return row;
}

Row measure(Collective c, const Settings& s, std::uint64_t bytes, Algorithm algo,
            Communicator& comm, Settings::Mode mode, Settings::Memory memory) {
  const std::size_t es = size_of(s.type);
  const int p = group_of(s, comm).size();  // the ranks of one call
  // Round the count to a multiple of p so every block is equal (as MPI_Reduce_scatter_block needs).
  std::uint64_t count = std::max<std::uint64_t>(bytes / es / p, 1) * p;
  // Warm rows ask MPI nothing here: the node's size matters only to cold sets.
  const bool skew = c == Collective::alltoall && s.alltoallv;
  const Skewed skewed = skew ? skewed_layout(count, p, comm.rank()) : Skewed{};
  // alltoallv: every rank's output as long as the most any rank receives (equal sets, and
  // collective allocation for --buffers toroid, on every rank).
  std::uint64_t out_count = count;
  if (skew) {
    out_count = skewed.out_count;
    MPI_Allreduce(MPI_IN_PLACE, &out_count, 1, MPI_UINT64_T, MPI_MAX, comm.mpi_comm());
    out_count = std::max<std::uint64_t>(out_count, 1);
  }
  const std::uint64_t sets =
      s.cold ? cold_sets(s, (count + out_count) * es, ranks_on_node(comm)) : 1;
  Sets ins(comm, count * es, sets, memory),
      outs(comm, out_count * es, sets, memory, s.output_offset);
  const auto args = [&](std::uint64_t k) {
    Args a = args_of(c, s, ins.set(k), outs.set(k), count, comm);
    if (skew) a.skewed = &skewed;
    return a;
  };
  auto fill = [&](std::uint64_t k) {
    for (std::uint64_t i = 0; i < count; ++i)
      store_as(s.type, ins.set(k) + i * es, exact_input(s.op, comm.rank(), i));
    if (s.in_place || (c == Collective::broadcast && comm.rank() == 0))
      std::memcpy(outs.set(k), ins.set(k), count * es);
  };
  for (std::uint64_t k = 0; k < sets; ++k) fill(k);
  // The buffers stay where they are (in place, `out = in` copies into out's storage), so one
  // persistent request per set serves every iteration.
  std::vector<Request> persistent(mode == Settings::Mode::persistent ? sets : 0);
  for (std::uint64_t k = 0; k < persistent.size(); ++k)
    persistent[k] = request_for(c, s, args(k), algo, comm, true);
  auto once = [&](std::uint64_t k) {
    if (mode == Settings::Mode::blocking) {
      call(c, s, args(k), algo, comm);
    } else if (mode == Settings::Mode::nonblocking) {
      request_for(c, s, args(k), algo, comm, false).wait();
    } else {
      persistent[k].start();
      persistent[k].wait();
    }
  };
  std::uint64_t wrong = 0;
  if (s.check) {
    once(0);
    wrong = count_wrong(c, s, outs.set(0), count, comm);
    MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_UINT64_T, MPI_SUM, comm.mpi_comm());
  }
  // In place overwrites the input: warm, it is restored outside the timing before each
  // iteration; cold, a restore would bring the set back into the cache, so the sets keep
  // whatever the previous rotation left (the check above ran on fresh inputs).
  const int batch = batch_for(s, comm, [&] { once(0); });
  std::vector<double> times = timed(
      s, comm,
      [&](int it) {
        for (int j = 0; j < batch; ++j)
          once((static_cast<std::uint64_t>(it) * static_cast<std::uint64_t>(batch) +
                static_cast<std::uint64_t>(j)) %
               sets);
      },
      [&](int) {
        if (s.in_place && !s.cold) std::memcpy(outs.set(0), ins.set(0), count * es);
      });
  for (double& t : times) t /= batch;
  const double med = times[times.size() / 2];
  const double total = static_cast<double>(count * es);
  const double factor = c == Collective::allreduce   ? 2.0 * (p - 1) / p
                        : c == Collective::broadcast ? 1.0
                                                     : static_cast<double>(p - 1) / p;
  const double algbw = total / (med * 1e-6) / 1e9;
  return {skew ? std::string("alltoallv") : std::string(to_string(c)),
          std::string(to_string(s.type)),
          std::string(to_string(s.op)),
          count * es,
          count,
          std::string(to_string(algo)),
          med,
          times.front(),
          times.back(),
          algbw,
          algbw * factor,
          wrong,
          0.0,
          0.0,
          {}};
}

}  // namespace toroid::bench
