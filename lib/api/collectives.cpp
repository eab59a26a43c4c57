// Public collectives: validate -> choose algorithm -> fetch schedule -> execute.
#include "toroid/collectives.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "api/call_path.hpp"
#include "api/internal.hpp"
#include "api/request_state.hpp"
#include "exec/single_copy.hpp"
#include "mpi_base/agreement.hpp"
#include "schedule/build.hpp"
#include "toroid/error.hpp"
#include "toroid/mpi_helpers.hpp"

namespace toroid {
namespace {

using schedule::Collective;

struct Call {
  Collective collective;
  const void* in;
  std::uint64_t in_count;
  void* out;
  std::uint64_t out_count;
  DataType type;
  ReduceOp reduction;
  Algorithm algo;
  std::optional<Axes> axes;  // set: in each sub-torus along these (normalize_axes)
  int root = 0;              // broadcast
  // alltoallv: each rank's own blocks (in_count, out_count: the buffers' lengths); offsets
  // filled in (packed where none were given) once validated.
  std::shared_ptr<schedule::VarBlocks> blocks = nullptr;
};

// The ranks taking part in one collective: all, or the sub-torus along the axes through this
// rank (its size and this rank's place in it).
struct Span {
  int size;
  int position;
};

Span span_of(const Call& c, const Communicator::Impl& m) {
  if (!c.axes) return {m.size, m.rank};
  return {m.topology.along(*c.axes).chips(), m.topology.position_along(m.rank, *c.axes)};
}

// Axes whose sub-torus is the whole communicator are no axes (api::spans_communicator).
void normalize_axes(Call& c, const Communicator::Impl& m) {
  if (c.axes && api::spans_communicator(m, *c.axes)) c.axes.reset();
}

std::uint64_t full_count(const Call& c) {
  return c.collective == Collective::allgather ? c.out_count : c.in_count;
}

bool in_place(const Call& c, const Block& own) {
  if (c.collective == Collective::alltoall) return false;  // refused by validate when it is
  const auto* in = static_cast<const std::byte*>(c.in);
  const auto* out = static_cast<const std::byte*>(c.out);
  if (c.collective == Collective::allgather) return out && in == out + own.offset * size_of(c.type);
  return in == out;
}

// " along x", " along xz", ... for a collective along axes, "" otherwise: part of every
// message (a request keeps the pointer: the texts live as long as the program).
const char* along(const Call& c) {
  static const std::array<std::string, 64> texts = [] {
    std::array<std::string, 64> t;
    for (unsigned bits = 1; bits < t.size(); ++bits) {
      t[bits] = " along ";
      for (int d = 0; d < Torus::kMaxDimensions; ++d)
        if ((bits >> d) & 1u) t[bits] += "xyzwvu"[d];
    }
    return t;
  }();
  return c.axes ? texts[c.axes->bits() & 63u].c_str() : "";
}

// The checks validate and plainly_valid_allreduce share. More elements of size `es` than
// 2^62 bytes hold (es is a power of two: a shift, no division).
bool too_large(std::uint64_t count, std::size_t es) {
  return count > (std::uint64_t{1} << 62) >> std::countr_zero(es);
}
// Whether [a, a + a_bytes) and [b, b + b_bytes) share a byte.
bool overlap(const void* a, std::uint64_t a_bytes, const void* b, std::uint64_t b_bytes) {
  const auto* x = static_cast<const std::byte*>(a);
  const auto* y = static_cast<const std::byte*>(b);
  return x < y + b_bytes && y < x + a_bytes;
}

// An alltoallv's blocks on this rank: one count (and offset, where given) per rank, each block
// inside its buffer and at most 2^31 - 1 bytes (one message), the receive blocks apart, the
// same count to and from itself.
void validate_blocks(const Call& c, int rank, int p) {
  const schedule::VarBlocks& v = *c.blocks;
  const std::size_t es = size_of(c.type);
  const auto n = static_cast<std::size_t>(p);
  const auto fail = [&](const std::string& why) {
    throw InvalidArgument(fmt::format("alltoallv on rank {}: {}", rank, why));
  };
  if (v.send_counts.size() != n || v.recv_counts.size() != n)
    fail(fmt::format("{} send counts and {} receive counts given; one per rank ({}) each",
                     v.send_counts.size(), v.recv_counts.size(), p));
  if ((!v.send_offsets.empty() && v.send_offsets.size() != n) ||
      (!v.recv_offsets.empty() && v.recv_offsets.size() != n))
    fail(fmt::format(
        "{} send offsets and {} receive offsets given; one per rank ({}), or none (packed)",
        v.send_offsets.size(), v.recv_offsets.size(), p));
  if (too_large(std::max(c.in_count, c.out_count), es))
    fail(fmt::format("a buffer of {} elements of {} is too large",
                     std::max(c.in_count, c.out_count), to_string(c.type)));
  const auto check_side = [&](const char* side, const std::vector<std::uint64_t>& counts,
                              const std::vector<std::uint64_t>& offsets, std::uint64_t length,
                              const void* data) {
    std::uint64_t packed = 0;
    for (std::size_t q = 0; q < n; ++q) {
      const std::uint64_t count = counts[q], at = offsets.empty() ? packed : offsets[q];
      packed += count;
      if (count > static_cast<std::uint64_t>(INT32_MAX) / es)
        fail(fmt::format("the {} block for rank {} has {} elements of {}, over 2^31 - 1 bytes",
                         side, q, count, to_string(c.type)));
      if (at > length || count > length - at)
        fail(
            fmt::format("the {} block for rank {} (offset {}, {} elements) ends past the {} "
                        "elements of the {} buffer",
                        side, q, at, count, length, side));
      if (count > 0 && data == nullptr)
        fail(fmt::format("the {} buffer is null but its block for rank {} has {} elements", side, q,
                         count));
    }
  };
  check_side("send", v.send_counts, v.send_offsets, c.in_count, c.in);
  check_side("receive", v.recv_counts, v.recv_offsets, c.out_count, c.out);
  const auto me = static_cast<std::size_t>(rank);
  if (v.send_counts[me] != v.recv_counts[me])
    fail(fmt::format("it sends {} elements to itself but its receive count for itself is {}",
                     v.send_counts[me], v.recv_counts[me]));
  if (!v.recv_offsets.empty()) {  // packed ones are apart by construction
    std::vector<std::pair<std::uint64_t, std::size_t>> starts;
    for (std::size_t q = 0; q < n; ++q)
      if (v.recv_counts[q] > 0) starts.emplace_back(v.recv_offsets[q], q);
    std::sort(starts.begin(), starts.end());
    for (std::size_t k = 1; k < starts.size(); ++k) {
      const std::size_t a = starts[k - 1].second, b = starts[k].second;
      if (v.recv_offsets[a] + v.recv_counts[a] > v.recv_offsets[b])
        fail(fmt::format("the receive blocks for ranks {} and {} overlap", a, b));
    }
  }
  if (c.in_count > 0 && c.out_count > 0 && overlap(c.in, c.in_count * es, c.out, c.out_count * es))
    fail("input and output overlap (an alltoallv is not in place)");
}

// Offsets where none were given: the blocks packed in rank order.
void fill_offsets(schedule::VarBlocks& v) {
  const auto pack = [](const std::vector<std::uint64_t>& counts, std::vector<std::uint64_t>& at) {
    if (!at.empty()) return;
    at.resize(counts.size());  // within the capacity of a reused layout's vector
    std::uint64_t next = 0;
    for (std::size_t q = 0; q < counts.size(); ++q) {
      at[q] = next;
      next += counts[q];
    }
  };
  pack(v.send_counts, v.send_offsets);
  pack(v.recv_counts, v.recv_offsets);
}

// TOROID_CHECK: every rank's send counts against their receivers' receive counts (one
// all-to-all of the counts), before any data moves; collective, run under run_agreed so that a
// disagreement throws on every rank.
void check_counts_agree(const schedule::VarBlocks& v, MPI_Comm comm, int rank) {
  std::vector<std::uint64_t> sent_to_me(v.send_counts.size());
  mpi_check(
      MPI_Alltoall(v.send_counts.data(), 1, MPI_UINT64_T, sent_to_me.data(), 1, MPI_UINT64_T, comm),
      "MPI_Alltoall");
  for (std::size_t q = 0; q < sent_to_me.size(); ++q)
    if (sent_to_me[q] != v.recv_counts[q])
      throw InvalidArgument(fmt::format(
          "alltoallv on rank {}: rank {} sends {} elements to rank {}, whose receive count for "
          "rank {} is {}: a send count and the matching receive count must be equal",
          rank, q, sent_to_me[q], rank, q, v.recv_counts[q]));
}

void validate(const Call& c, int rank, Span group) {
  if (c.blocks) return validate_blocks(c, rank, group.size);
  // Built only when there is an error to report: validation runs on every call.
  const auto name = [&] { return std::string(toroid::to_string(c.collective)) + along(c); };
  const std::size_t es = size_of(c.type);
  if (c.axes && c.axes->empty())
    throw InvalidArgument(fmt::format(
        "{} on rank {}: no axes named; name at least one (Axis::x, or Axes{{Axis::x, Axis::z}})",
        name(), rank));
  if (too_large(std::max(c.in_count, c.out_count), es))
    throw InvalidArgument(fmt::format("{} on rank {}: count {} of {} is too large", name(), rank,
                                      std::max(c.in_count, c.out_count), to_string(c.type)));
  if (c.reduction == ReduceOp::avg && !is_floating(c.type))
    throw InvalidArgument(fmt::format("{} on rank {}: op avg needs a floating type, got {}", name(),
                                      rank, to_string(c.type)));
  if (c.in_count > 0 && c.in == nullptr)
    throw InvalidArgument(
        fmt::format("{} on rank {}: input is null with count {}", name(), rank, c.in_count));
  // Only a reduce-scatter's and an all-gather's checks look at this rank's block.
  const bool blocks =
      c.collective == Collective::reduce_scatter || c.collective == Collective::allgather;
  const Block own = blocks ? block_of(full_count(c), group.size, group.position) : Block{};
  std::uint64_t needed = 0;
  switch (c.collective) {
    case Collective::allreduce:
      needed = c.in_count;
      break;
    case Collective::reduce_scatter:
      needed = in_place(c, own) ? c.in_count : own.count;
      break;
    case Collective::alltoall:
      needed = c.in_count;
      if (c.in_count % static_cast<std::uint64_t>(group.size) != 0)
        throw InvalidArgument(fmt::format(
            "{} on rank {}: input has {} elements, not {} equal blocks (one for each rank)", name(),
            rank, c.in_count, group.size));
      if (c.in_count > 0 && c.in == c.out)
        throw InvalidArgument(
            fmt::format("{} on rank {}: in place is not supported; give separate input and output",
                        name(), rank));
      break;
    case Collective::broadcast:
      needed = c.in_count;
      if (c.root < 0 || c.root >= group.size)
        throw InvalidArgument(fmt::format("{} on rank {}: root {} is outside [0, {})", name(), rank,
                                          c.root, group.size));
      break;
    case Collective::allgather:
      needed = c.out_count;
      if (c.in_count != own.count)
        throw InvalidArgument(fmt::format(
            "{} on rank {}: input has {} elements, but block {} of a {}-element result has {}",
            name(), rank, c.in_count, group.position, c.out_count, own.count));
      break;
  }
  if (needed > 0 && c.out == nullptr)
    throw InvalidArgument(fmt::format("{} on rank {}: output is null but {} elements are needed",
                                      name(), rank, needed));
  if (c.out_count < needed)
    throw InvalidArgument(fmt::format("{} on rank {}: output has {} elements, needs {}", name(),
                                      rank, c.out_count, needed));
  // Input and output must be the same memory (in place) or not overlap at all.
  if (!in_place(c, own) && c.in_count > 0 && needed > 0) {
    if (overlap(c.in, c.in_count * es, c.out, needed * es))
      throw InvalidArgument(fmt::format(
          "{} on rank {}: input and output overlap without being in place", name(), rank));
  }
}

// validate's checks for an all-reduce that passes them all, inline and without messages: the
// repeated call on new buffers runs this, and anything it does not pass goes to validate,
// which says what is wrong.
bool plainly_valid_allreduce(const Call& c) {
  const std::uint64_t n = c.in_count;
  const std::size_t es = size_of(c.type);
  if (c.collective != Collective::allreduce || too_large(std::max(n, c.out_count), es) ||
      (c.reduction == ReduceOp::avg && !is_floating(c.type)) || c.out_count < n)
    return false;
  if (n == 0) return true;
  return c.in && c.out && (c.in == c.out || !overlap(c.in, n * es, c.out, n * es));
}

// An enum's name from its value, for the cross-rank check's messages.
template <class E>
std::string_view named(std::int64_t v) {
  return to_string(static_cast<E>(v));
}

// The stock collective's communicator along axes: my group, ordered by position (collective
// over m.comm the first time: every rank makes the same call along the same axes).
MPI_Comm stock_comm(Communicator::Impl& m, const Call& c) {
  if (!c.axes) return m.comm;
  if (const auto it = m.along.find(c.axes->bits()); it != m.along.end()) return it->second;
  MPI_Comm along = MPI_COMM_NULL;
  const int color = m.topology.group_along(m.rank, *c.axes).front();
  mpi_check(MPI_Comm_split(m.comm, color, m.topology.position_along(m.rank, *c.axes), &along),
            "MPI_Comm_split");
  m.along.emplace(c.axes->bits(), along);
  return along;
}

// The form of a collective that runs through the node's control block (exec/single_copy.hpp),
// where this rank's call qualifies: `auto`, the whole communicator, all on one node, on the path
// exec::node_path names (staged, single-copy on toroid's buffers, an all-to-all's remote reads;
// whether every rank's buffers are toroid's is settled inside the call).
// `own`: this rank's block of the whole vector (no axis here: the group is the communicator).
std::optional<exec::SingleCopyCall> single_copy_form(const Call& c, const Communicator::Impl& m,
                                                     const Block& own, bool in_place) {
  const std::size_t es = size_of(c.type);
  const std::uint64_t count = full_count(c);
  if (!api::node_path_possible(m, c.collective, c.algo, c.axes.has_value(), count,
                               c.blocks != nullptr))
    return std::nullopt;
  const std::uint64_t out_count = c.blocks ? c.out_count
                                  : c.collective == Collective::reduce_scatter && !in_place
                                      ? own.count
                                      : count;
  const std::uint64_t in_count = c.blocks                                ? c.in_count
                                 : c.collective == Collective::allgather ? own.count
                                                                         : count;
  // Whose memory the buffers are matters only above the staged sizes, and only on a
  // communicator that allocated: the others (every repeat of a small call comes through here)
  // skip the lookups and their lock.
  std::optional<exec::SharedPlace> in, out;
  if (m.allocated && (c.blocks || !exec::small_enough_to_stage(c.collective, count, es, m.size))) {
    in = m.memory->find(c.in, in_count * es);
    out = m.memory->find(c.out, out_count * es);
  }
  const exec::NodePath path =
      exec::node_path(c.collective, count, es, m.size, in && out, c.blocks != nullptr);
  if (path == exec::NodePath::schedule) return std::nullopt;
  exec::SingleCopyCall s;
  s.collective = c.collective, s.count = count, s.in_place = in_place;
  s.rank = m.rank, s.size = m.size;
  s.blocks = c.blocks;
  s.staged = path == exec::NodePath::staged;
  // An all-to-all reads its peers where they are unless every rank's buffers are toroid's.
  s.remote_reads = c.collective == Collective::alltoall && !s.staged;
  s.in_data = static_cast<const std::byte*>(c.in);
  s.out_data = static_cast<std::byte*>(c.out);
  if (in) s.in = *in;
  if (out) s.out = *out;
  return s;
}

std::string_view buffers_name(std::int64_t v) {
  return v ? "toroid buffers (Communicator::allocate)" : "other memory";
}

// A collective ready to run: validated (and agreed on across ranks when checking), its
// algorithm resolved, its schedule built and its buffers named.
struct Prepared {
  bool stock = false;  // the `mpi` algorithm: the stock collective of the MPI library
  std::optional<exec::SingleCopyCall> single_copy;
  Call call;
  std::uint64_t count = 0;
  MPI_Comm on = MPI_COMM_NULL;    // stock: the communicator it runs on
  ScheduleCache::Entry schedule;  // null: stock or single-copy
  schedule::BufferSet buffers;
  exec::ExecParams params;
};

// `form` is a string literal ("", "non-blocking ", "persistent "): the call's name keeps it.
Prepared prepare(Call c, Communicator& comm, std::optional<Algorithm> requested, const char* form) {
  Communicator::Impl& m = internal::impl(comm);
  c.algo = requested.value_or(m.config.algorithm);
  const Span group = span_of(c, m);
  auto check_args = [&] { validate(c, m.rank, group); };
  if (m.config.check)
    toroid::run_agreed(m.comm, check_args, m.config.timeout_s);
  else
    check_args();
  if (c.blocks) {
    fill_offsets(*c.blocks);
    if (m.config.check)
      toroid::run_agreed(
          m.comm, [&] { check_counts_agree(*c.blocks, m.comm, m.rank); }, m.config.timeout_s);
  }
  // After validation: the arguments' addresses are only computed with once they are sane.
  const Block own = block_of(full_count(c), group.size, group.position);
  const bool ip = in_place(c, own);
  std::optional<exec::SingleCopyCall> single_copy;
  if (m.memory) single_copy = single_copy_form(c, m, own, ip);
  if (m.config.check) {
    toroid::require_agreement(
        m.comm, fmt::format("{}{}", form, toroid::to_string(c.collective)),
        {{"collective", static_cast<std::int64_t>(c.collective), named<Collective>},
         {"count", c.blocks ? 0 : static_cast<std::int64_t>(full_count(c))},
         {"blocks vary (alltoallv)", c.blocks != nullptr},
         {"type", static_cast<std::int64_t>(c.type), named<DataType>},
         {"op", static_cast<std::int64_t>(c.reduction), named<ReduceOp>},
         {"algorithm", static_cast<std::int64_t>(c.algo), named<Algorithm>},
         {"axes", c.axes ? static_cast<std::int64_t>(c.axes->bits()) : -1},
         {"root", c.root},
         {"form", static_cast<std::int64_t>(std::strlen(form))},
         {"buffers", single_copy.has_value() && !single_copy->staged, buffers_name}},
        m.config.timeout_s);
  }
  Prepared p;
  p.single_copy = std::move(single_copy);
  p.count = full_count(c);
  const Algorithm algo = api::schedule_algorithm(m, c.collective, p.count * size_of(c.type), c.algo,
                                                 c.axes, c.blocks != nullptr);
  // Named for messages (a request's errors, the watchdog's), formatted only when one is shown.
  p.params.what = {form, along(c), c.collective, algo, true, c.blocks != nullptr};
  p.params.bytes = p.count * size_of(c.type);
  if (algo == Algorithm::mpi) {
    p.stock = true;
    p.on = stock_comm(m, c);
    p.call = std::move(c);
    return p;
  }
  const bool average = c.reduction == ReduceOp::avg;
  const int axes_key = c.axes ? static_cast<int>(c.axes->bits()) : -1;
  const schedule::Context& ctx = m.schedule_context;
  const std::uint32_t elem_bytes =
      ctx.knows_hops() ? static_cast<std::uint32_t>(size_of(c.type)) : 0;
  if (c.blocks) {  // counts of this call: built for it, never cached
    if (algo != Algorithm::direct)
      throw InvalidArgument(fmt::format(
          "alltoallv on rank {}: algorithm {} cannot run it; alltoallv runs on direct, mpi or auto "
          "(a chip forwarding others' blocks would need their counts)",
          m.rank, to_string(algo)));
    // A call on the node's path never falls back to a schedule when it may read remotely
    // (single_copy.hpp): none is built for it, which a small alltoallv would pay at every call.
    if (!p.single_copy || !p.single_copy->remote_reads) {
      schedule::Schedule built = schedule::build_alltoallv(*c.blocks, ctx);
      schedule::set_later_uses(built);
      p.schedule = {std::make_shared<const schedule::Schedule>(std::move(built)), 0};
    }
  } else {
    p.schedule = m.schedules.get(
        {c.collective, algo, p.count, ip, average, axes_key, c.root, elem_bytes}, [&] {
          return schedule::build(
              algo, {c.collective, p.count, ip, average, c.axes, c.root, elem_bytes}, ctx);
        });
  }
  p.buffers.input =
      static_cast<const std::byte*>(ip && c.collective != Collective::allgather ? c.out : c.in);
  p.buffers.output = static_cast<std::byte*>(c.out);
  p.buffers.elem_size = size_of(c.type);
  p.params.type = c.type;
  p.params.reduction = c.reduction;
  p.params.segment_bytes = m.config.segment_bytes;
  p.params.timeout_s = m.config.timeout_s;
  p.params.shm = m.shm_links.get();
  p.call = std::move(c);  // moved last: its layouts (an alltoallv's) are not copied
  return p;
}

// An op for the single-copy form of `p`: named "(auto)" in messages, whatever auto would have
// chosen among the schedules.
// A blocking call (`may_fall_back`) binds the communicator's own op again where nothing else
// holds it: a small call then allocates nothing for its op.
std::shared_ptr<exec::BoundCollective> single_copy_op(Communicator::Impl& m, const Prepared& p,
                                                      bool may_fall_back) {
  exec::ExecParams params = p.params;
  params.what.algorithm = Algorithm::automatic;
  std::shared_ptr<exec::BoundCollective> op;
  if (may_fall_back && m.blocking_single_copy_op.use_count() == 1 &&
      m.blocking_single_copy_op->status() != exec::BoundCollective::Status::active)
    op = m.blocking_single_copy_op;
  else
    op = std::make_shared<exec::BoundCollective>();
  op->bind_single_copy(*m.memory, *p.single_copy, params, may_fall_back);
  if (may_fall_back && !m.blocking_single_copy_op) m.blocking_single_copy_op = op;
  return op;
}

// The call's key (communicator_impl.hpp): what the repeated-call check compares.
CallKey key_of(const Call& c, Algorithm algo) {
  CallKey k;
  k.what = static_cast<std::uint64_t>(c.collective) | static_cast<std::uint64_t>(c.type) << 8 |
           static_cast<std::uint64_t>(c.reduction) << 16 | static_cast<std::uint64_t>(algo) << 24 |
           static_cast<std::uint64_t>(c.axes ? c.axes->bits() + 1 : 0) << 32;
  k.in = reinterpret_cast<std::uintptr_t>(c.in);
  k.in_count = c.in_count;
  k.out = reinterpret_cast<std::uintptr_t>(c.out);
  k.out_count = c.out_count;
  k.root = static_cast<std::uint32_t>(c.root);
  return k;
}

// The same call as `last` but for its buffers' addresses: the same collective, type, op,
// algorithm, axes, root and counts, both in place or both not, on a communicator that never
// allocated (where no buffer can be toroid's, whose path would be single-copy). Its path and
// schedule are last's, so only the arguments' checks and the buffers' binding are left to do.
bool same_but_buffers(const Communicator::Impl& m, const CallKey& key, const Call& c,
                      bool in_place) {
  const RepeatedCall& last = m.last_call;
  return !m.allocated && last.key.same_but_buffers(key) && last.in_place == in_place &&
         c.in_count > 0;
}

// Whether c is in place, before validation (the addresses are only compared).
bool in_place_call(const Call& c, const Communicator::Impl& m) {
  if (c.collective != Collective::allgather) return c.in == c.out;
  const Span group = span_of(c, m);
  return in_place(c, block_of(full_count(c), group.size, group.position));
}

void run(Call c, Communicator& comm, std::optional<Algorithm> requested) {
  Communicator::Impl& m = internal::impl(comm);
  normalize_axes(c, m);
  const auto key = key_of(c, requested.value_or(m.config.algorithm));
  if (m.last_call.op && !c.blocks &&
      m.last_call.op->status() != exec::BoundCollective::Status::active) {
    if (m.last_call.key == key) {
      m.executor->run(m.last_call.op);
      return;
    }
    const bool ip = in_place_call(c, m);
    if (same_but_buffers(m, key, c, ip)) {
      if (!plainly_valid_allreduce(c)) validate(c, m.rank, span_of(c, m));
      schedule::BufferSet user;
      user.input =
          static_cast<const std::byte*>(ip && c.collective != Collective::allgather ? c.out : c.in);
      user.output = static_cast<std::byte*>(c.out);
      user.elem_size = size_of(c.type);
      m.last_call.key.in = key.in;  // the rest is equal (same_but_buffers)
      m.last_call.key.out = key.out;
      m.executor->run_on(m.last_call.op, user);
      return;
    }
  }
  const Prepared p = prepare(std::move(c), comm, requested, "");  // c is p.call from here
  const Call& prepared = p.call;
  const bool blocks = prepared.blocks != nullptr;
  if (p.single_copy) {
    // A blocking call may fall back: every rank learns inside the call that the ranks' buffers
    // are in different allocations, and then runs the schedule below, at the same point.
    auto op = single_copy_op(m, p, true);
    m.executor->run(op);
    const bool fell_back = op->fell_back();
    op->release_single_copy();
    if (!fell_back) return;
  }
  if (p.stock) {
    const std::uint32_t traced =
        m.tracer ? m.tracer->begin_call(p.params.what.text(), p.params.bytes) : 0;
    if (api::Executor::busy_besides(nullptr)) {  // started, so that the wait moves them too
      exec::StockCall call(prepared.collective, prepared.in, prepared.out, p.count, prepared.type,
                           prepared.reduction, p.on, m.stock_ops, prepared.root,
                           prepared.blocks.get());
      call.start();
      api::wait_stock(call);
    } else {
      exec::run_stock(prepared.collective, prepared.in, prepared.out, p.count, prepared.type,
                      prepared.reduction, p.on, m.stock_ops, prepared.root, prepared.blocks.get());
    }
    if (m.tracer) m.tracer->end_call(traced);  // a stock call is one slice: MPI's steps are its own
    return;
  }
  // An alltoallv's schedule is this call's alone: not the pool's (acquire_into).
  auto op = blocks
                ? m.executor->acquire_into(m.alltoallv_op, p.schedule.schedule, p.buffers, p.params)
                : m.executor->acquire(p.schedule.schedule, p.schedule.serial, p.buffers, p.params);
  if (!m.config.check && !p.single_copy && !blocks)
    m.last_call = {key, in_place_call(prepared, m), op, p.params.what};
  m.executor->run(op);
}

Request start(Call c, Communicator& comm, std::optional<Algorithm> requested, bool persistent) {
  Communicator::Impl& m = internal::impl(comm);
  normalize_axes(c, m);
  auto state = std::make_shared<Request::State>();
  state->executor = m.executor;
  state->persistent = persistent;
  state->rank = m.rank;
  // The same non-blocking call as the last, whose request is gone and whose op has finished:
  // started again as it is, without prepare() (an op a request still holds is never shared).
  const auto key = key_of(c, requested.value_or(m.config.algorithm));
  if (!persistent && !c.blocks && m.last_start.op && m.last_start.key == key &&
      m.last_start.op.use_count() == 1 && m.executor->finished(*m.last_start.op)) {
    state->what = m.last_start.what;
    state->op = m.last_start.op;
    m.executor->start(state->op);
    state->started = true;
    return internal::make_request(std::move(state));
  }
  const char* form = persistent ? "persistent " : "non-blocking ";
  const Prepared p = prepare(c, comm, requested, form);
  state->what = p.params.what;
  if (p.stock) {
    // MPI's own non-blocking collective; MPI moves it (inside test/wait, or its own progress).
    state->stock =
        std::make_unique<exec::StockCall>(c.collective, c.in, c.out, p.count, c.type, c.reduction,
                                          p.on, m.stock_ops, c.root, p.call.blocks.get());
    if (!persistent) {
      state->stock->start();
      state->started = true;
    }
    return internal::make_request(std::move(state));
  }
  if (p.single_copy)
    state->op = single_copy_op(m, p, false);
  else if (c.blocks && !persistent)
    state->op = m.executor->acquire_into(m.alltoallv_op, p.schedule.schedule, p.buffers, p.params);
  else
    state->op = m.executor->acquire(p.schedule.schedule, p.schedule.serial, p.buffers, p.params,
                                    persistent);
  if (!persistent && !m.config.check && !p.single_copy && !c.blocks)
    m.last_start = {key, in_place_call(c, m), state->op, state->what};
  if (!persistent) {
    m.executor->start(state->op);
    state->started = true;
  }
  return internal::make_request(std::move(state));
}

}  // namespace

void allreduce(const void* in, std::uint64_t in_count, void* out, std::uint64_t out_count,
               DataType type, ReduceOp op, Communicator& comm, std::optional<Algorithm> algo) {
  run({Collective::allreduce, in, in_count, out, out_count, type, op, Algorithm::automatic,
       std::nullopt},
      comm, algo);
}

void reduce_scatter(const void* in, std::uint64_t in_count, void* out, std::uint64_t out_count,
                    DataType type, ReduceOp op, Communicator& comm, std::optional<Algorithm> algo) {
  run({Collective::reduce_scatter, in, in_count, out, out_count, type, op, Algorithm::automatic,
       std::nullopt},
      comm, algo);
}

void allgather(const void* in, std::uint64_t in_count, void* out, std::uint64_t out_count,
               DataType type, Communicator& comm, std::optional<Algorithm> algo) {
  run({Collective::allgather, in, in_count, out, out_count, type, ReduceOp::sum,
       Algorithm::automatic, std::nullopt},
      comm, algo);
}

void allreduce_axis(const void* in, std::uint64_t in_count, void* out, std::uint64_t out_count,
                    DataType type, ReduceOp op, Axes axes, Communicator& comm,
                    std::optional<Algorithm> algo) {
  run({Collective::allreduce, in, in_count, out, out_count, type, op, Algorithm::automatic, axes},
      comm, algo);
}

void reduce_scatter_axis(const void* in, std::uint64_t in_count, void* out, std::uint64_t out_count,
                         DataType type, ReduceOp op, Axes axes, Communicator& comm,
                         std::optional<Algorithm> algo) {
  run({Collective::reduce_scatter, in, in_count, out, out_count, type, op, Algorithm::automatic,
       axes},
      comm, algo);
}

void allgather_axis(const void* in, std::uint64_t in_count, void* out, std::uint64_t out_count,
                    DataType type, Axes axes, Communicator& comm, std::optional<Algorithm> algo) {
  run({Collective::allgather, in, in_count, out, out_count, type, ReduceOp::sum,
       Algorithm::automatic, axes},
      comm, algo);
}

void alltoall_axis(const void* in, std::uint64_t in_count, void* out, std::uint64_t out_count,
                   DataType type, Axes axes, Communicator& comm, std::optional<Algorithm> algo) {
  run({Collective::alltoall, in, in_count, out, out_count, type, ReduceOp::sum,
       Algorithm::automatic, axes},
      comm, algo);
}

void alltoall(const void* in, std::uint64_t in_count, void* out, std::uint64_t out_count,
              DataType type, Communicator& comm, std::optional<Algorithm> algo) {
  run({Collective::alltoall, in, in_count, out, out_count, type, ReduceOp::sum,
       Algorithm::automatic, std::nullopt},
      comm, algo);
}

// ---- Non-blocking and persistent forms, each written out: one start() call per entry point.

Request iallreduce(const void* in, std::uint64_t in_count, void* out, std::uint64_t out_count,
                   DataType type, ReduceOp op, Communicator& comm, std::optional<Algorithm> algo) {
  return start({Collective::allreduce, in, in_count, out, out_count, type, op, Algorithm::automatic,
                std::nullopt},
               comm, algo, false);
}
Request allreduce_init(const void* in, std::uint64_t in_count, void* out, std::uint64_t out_count,
                       DataType type, ReduceOp op, Communicator& comm,
                       std::optional<Algorithm> algo) {
  return start({Collective::allreduce, in, in_count, out, out_count, type, op, Algorithm::automatic,
                std::nullopt},
               comm, algo, true);
}
Request ireduce_scatter(const void* in, std::uint64_t in_count, void* out, std::uint64_t out_count,
                        DataType type, ReduceOp op, Communicator& comm,
                        std::optional<Algorithm> algo) {
  return start({Collective::reduce_scatter, in, in_count, out, out_count, type, op,
                Algorithm::automatic, std::nullopt},
               comm, algo, false);
}
Request reduce_scatter_init(const void* in, std::uint64_t in_count, void* out,
                            std::uint64_t out_count, DataType type, ReduceOp op, Communicator& comm,
                            std::optional<Algorithm> algo) {
  return start({Collective::reduce_scatter, in, in_count, out, out_count, type, op,
                Algorithm::automatic, std::nullopt},
               comm, algo, true);
}

Request iallgather(const void* in, std::uint64_t in_count, void* out, std::uint64_t out_count,
                   DataType type, Communicator& comm, std::optional<Algorithm> algo) {
  return start({Collective::allgather, in, in_count, out, out_count, type, ReduceOp::sum,
                Algorithm::automatic, std::nullopt},
               comm, algo, false);
}
Request allgather_init(const void* in, std::uint64_t in_count, void* out, std::uint64_t out_count,
                       DataType type, Communicator& comm, std::optional<Algorithm> algo) {
  return start({Collective::allgather, in, in_count, out, out_count, type, ReduceOp::sum,
                Algorithm::automatic, std::nullopt},
               comm, algo, true);
}
Request iallreduce_axis(const void* in, std::uint64_t in_count, void* out, std::uint64_t out_count,
                        DataType type, ReduceOp op, Axes axes, Communicator& comm,
                        std::optional<Algorithm> algo) {
  return start(
      {Collective::allreduce, in, in_count, out, out_count, type, op, Algorithm::automatic, axes},
      comm, algo, false);
}
Request ireduce_scatter_axis(const void* in, std::uint64_t in_count, void* out,
                             std::uint64_t out_count, DataType type, ReduceOp op, Axes axes,
                             Communicator& comm, std::optional<Algorithm> algo) {
  return start({Collective::reduce_scatter, in, in_count, out, out_count, type, op,
                Algorithm::automatic, axes},
               comm, algo, false);
}
Request iallgather_axis(const void* in, std::uint64_t in_count, void* out, std::uint64_t out_count,
                        DataType type, Axes axes, Communicator& comm,
                        std::optional<Algorithm> algo) {
  return start({Collective::allgather, in, in_count, out, out_count, type, ReduceOp::sum,
                Algorithm::automatic, axes},
               comm, algo, false);
}

Request ialltoall(const void* in, std::uint64_t in_count, void* out, std::uint64_t out_count,
                  DataType type, Communicator& comm, std::optional<Algorithm> algo) {
  return start({Collective::alltoall, in, in_count, out, out_count, type, ReduceOp::sum,
                Algorithm::automatic, std::nullopt},
               comm, algo, false);
}
Request ialltoall_axis(const void* in, std::uint64_t in_count, void* out, std::uint64_t out_count,
                       DataType type, Axes axes, Communicator& comm,
                       std::optional<Algorithm> algo) {
  return start({Collective::alltoall, in, in_count, out, out_count, type, ReduceOp::sum,
                Algorithm::automatic, axes},
               comm, algo, false);
}
Request alltoall_init(const void* in, std::uint64_t in_count, void* out, std::uint64_t out_count,
                      DataType type, Communicator& comm, std::optional<Algorithm> algo) {
  return start({Collective::alltoall, in, in_count, out, out_count, type, ReduceOp::sum,
                Algorithm::automatic, std::nullopt},
               comm, algo, true);
}

namespace {

// An alltoallv's call: the layouts copied (a request outlives the caller's spans). `reuse`: a
// blocking call's, filled again where nothing else holds it (their vectors keep their capacity,
// so a repeated call allocates nothing for them).
Call alltoallv_call(const void* in, std::uint64_t in_count, BlockLayout send, void* out,
                    std::uint64_t out_count, BlockLayout recv, DataType type,
                    std::shared_ptr<schedule::VarBlocks>* reuse = nullptr) {
  std::shared_ptr<schedule::VarBlocks> blocks;
  if (reuse && reuse->use_count() == 1)
    blocks = *reuse;
  else
    blocks = std::make_shared<schedule::VarBlocks>();
  if (reuse && !*reuse) *reuse = blocks;
  blocks->send_counts.assign(send.counts.begin(), send.counts.end());
  blocks->send_offsets.assign(send.offsets.begin(), send.offsets.end());
  blocks->recv_counts.assign(recv.counts.begin(), recv.counts.end());
  blocks->recv_offsets.assign(recv.offsets.begin(), recv.offsets.end());
  return {Collective::alltoall,
          in,
          in_count,
          out,
          out_count,
          type,
          ReduceOp::sum,
          Algorithm::automatic,
          std::nullopt,
          0,
          std::move(blocks)};
}

}  // namespace

void alltoallv(const void* in, std::uint64_t in_count, BlockLayout send, void* out,
               std::uint64_t out_count, BlockLayout recv, DataType type, Communicator& comm,
               std::optional<Algorithm> algo) {
  run(alltoallv_call(in, in_count, send, out, out_count, recv, type,
                     &internal::impl(comm).blocking_layouts),
      comm, algo);
}
Request ialltoallv(const void* in, std::uint64_t in_count, BlockLayout send, void* out,
                   std::uint64_t out_count, BlockLayout recv, DataType type, Communicator& comm,
                   std::optional<Algorithm> algo) {
  return start(alltoallv_call(in, in_count, send, out, out_count, recv, type), comm, algo, false);
}
Request alltoallv_init(const void* in, std::uint64_t in_count, BlockLayout send, void* out,
                       std::uint64_t out_count, BlockLayout recv, DataType type, Communicator& comm,
                       std::optional<Algorithm> algo) {
  return start(alltoallv_call(in, in_count, send, out, out_count, recv, type), comm, algo, true);
}

void broadcast(void* data, std::uint64_t count, DataType type, int root, Communicator& comm,
               std::optional<Algorithm> algo) {
  run({Collective::broadcast, data, count, data, count, type, ReduceOp::sum, Algorithm::automatic,
       std::nullopt, root},
      comm, algo);
}
Request ibroadcast(void* data, std::uint64_t count, DataType type, int root, Communicator& comm,
                   std::optional<Algorithm> algo) {
  return start({Collective::broadcast, data, count, data, count, type, ReduceOp::sum,
                Algorithm::automatic, std::nullopt, root},
               comm, algo, false);
}
Request broadcast_init(void* data, std::uint64_t count, DataType type, int root, Communicator& comm,
                       std::optional<Algorithm> algo) {
  return start({Collective::broadcast, data, count, data, count, type, ReduceOp::sum,
                Algorithm::automatic, std::nullopt, root},
               comm, algo, true);
}

}  // namespace toroid
