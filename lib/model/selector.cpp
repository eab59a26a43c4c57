#include "model/selector.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "model/simulator.hpp"
#include "toroid/defaults.hpp"
#include "toroid/error.hpp"

namespace toroid::model {
namespace {

// Candidates in tie-break order (of equal predictions the first wins): the simpler algorithm
// first, but swing before bidir_ring: at 2 ranks the model sees one schedule in bidir_ring,
// torus2d, hierarchical and swing, and swing measured 1.0-1.1x the best at 2, 8 and 32 MiB
// (16-core Xeon, 2-core VM) where bidir_ring was 1.2-1.5x at 2 and 8 MiB.
// clang-format off
constexpr Algorithm kCandidates[] = {
    Algorithm::ring,               Algorithm::swing,        Algorithm::bidir_ring,
    Algorithm::torus2d,            Algorithm::torus2d_both, Algorithm::hierarchical,
    Algorithm::recursive_doubling, Algorithm::rabenseifner, Algorithm::swing_latency,
    Algorithm::direct};
// clang-format on

// Crossovers of the fixed rule (bytes of the whole vector), measured with toroid-bench on one
// node over MPI before the shared-memory transport.
constexpr std::uint64_t kSmallMessageBytes = 128 * 1024;
constexpr std::uint64_t kMediumMessageBytes = 2 * 1024 * 1024;
// The rule serves communicators above 64 ranks, which span hosts, so its crossovers are
// toroid-sim's on the tpu-v3 presets with the engine's cross-node segments (56 KiB; f32,
// powers of two, links shared by processor sharing; docs/simulator.md, 2026-12-04).
// On a 2D torus: swing_latency below this, torus2d_both from it, whose rings take about p/2
// steps a pass (bidir_ring.hpp): on 32x32 64.4 against 64.5 us at 64 KiB, 53.7 against 64.1 at
// 32 KiB; from there it beats Swing (71 against 88 us at 1 MiB, 143 against 190 at 16 MiB;
// 2026-12-05).
constexpr std::uint64_t kLatencyBytesTorus = 64 * 1024;
// With a line: swing_latency below this, torus2d_both from it (no Swing: its peers are XOR
// partners whose messages pile up on the line's links, algorithms.md). On 128x32 the crossover
// is 4-8 KiB (155 against 160 us at 4 KiB, 162.7 against 160.6 at 8 KiB, 177 against 161 at
// 16 KiB; 2026-12-05): torus2d_both's shorter Y-first part takes the whole vector there
// (torus2d.cpp) and its ring takes about 16 steps a pass.
constexpr std::uint64_t kLatencyBytesMesh = 8 * 1024;
// Reduce-scatter on a 2D shape: swing_latency (an all-reduce, each keeping its block) below
// this, torus2d from it: on 32x32 43.5 against 32.0 us at 4 KiB (42.4 against 47.0 at 2 KiB, where
// most blocks are empty and the rings go all the way round), on 128x32 162.7 against 158.1 at
// 8 KiB (2026-12-05).
constexpr std::uint64_t kScatterLatencyBytesTorus = 4 * 1024;
constexpr std::uint64_t kScatterLatencyBytesMesh = 8 * 1024;
// All-gather on a 2D shape: swing_latency (recursive doubling with Swing's peers) below this,
// torus2d from it: on 32x32 42.1 against 32.0 us at 4 KiB, on 128x32 148.3 against 143.1 at
// 16 KiB (148.2 against 158.1 at 8 KiB).
constexpr std::uint64_t kGatherLatencyBytesTorus = 4 * 1024;
constexpr std::uint64_t kGatherLatencyBytesMesh = 16 * 1024;
// Reduce-scatter and all-gather on a 2D shape: torus2d_both (both dimensions' links at once: one
// part of every block X-first, one Y-first, torus_dims.cpp) from these sizes, torus2d below. On
// a torus from where swing_latency stops, its rows' blocks going half way round each way, so it
// is never slower than torus2d (32x32, 2026-12-05: 32.0 against 32.0 us at 4 KiB,
// reduce-scatter 36.7 against 39.6 at 1 MiB and 77 against 122 at 16 MiB). On 128x32, whose X
// is a 128-long line, the reduce-scatter from 16 MiB (229 against 238 us; at 8 MiB torus2d,
// 183 against 186), the all-gather from 32 MiB (235 against 274; at 16 MiB torus2d, 187 against
// 210), toroid-sim 2026-12-08, since 2D runs the N-dimensional parts (until then 32 and 64 MiB).
constexpr std::uint64_t kBothBytesTorus = 4 * 1024;
constexpr std::uint64_t kScatterBothBytesMesh = 16u << 20;
constexpr std::uint64_t kGatherBothBytesMesh = 32u << 20;
// Three dimensions and more, all-reduce (toroid-sim, f32, µs): swing_latency below 64 KiB
// (32 KiB: 4x4x8 15.0 against torus2d_both's 16.3, 16x16x16 45.1 against torus2d's 48.5,
// 16x16x24 51.0 against 56.3; 64 KiB: 20.5 / 59.2 / 59.3 against 16.5 / 48.5 / 56.6), torus2d
// to 128 KiB (16x16x24 64 KiB: torus2d_both 78.2, its parts too small; elsewhere within 4% of
// it), torus2d_both from 128 KiB (16x16x16 48.9 against 50.2, then ahead: 16 MiB 135 against
// 367). Reduce-scatter and all-gather: torus2d below 128 KiB too, then torus2d_both's parts
// (4x4x8 1 MiB 12.7 against 17.0 µs, 16 MiB 78 against 160).
constexpr std::uint64_t kLatencyBytes3d = 64 * 1024;
constexpr std::uint64_t kBothBytes3d = 128 * 1024;

}  // namespace

bool bidir_ring_candidate(int ranks, bool one_node_shm) { return !(ranks == 2 && one_node_shm); }

bool candidate_on(Algorithm a, int ranks, bool one_node_shm) {
  const bool two_lanes =
      a == Algorithm::bidir_ring || a == Algorithm::torus2d || a == Algorithm::torus2d_both;
  return !two_lanes || bidir_ring_candidate(ranks, one_node_shm);
}

Algorithm fixed_rule(Collective c, std::uint64_t bytes, const Torus& t) {
  int long_dims = 0;  // dimensions longer than one
  bool mesh = false;  // one of them is a line
  for (int d = 0; d < t.dimensions(); ++d)
    if (t.size(d) > 1) {
      ++long_dims;
      mesh = mesh || !t.ring_along(d);
    }
  const bool two_d = long_dims == 2 && t.as_torus2d();
  // All-to-all: blocks aggregated a dimension at a time, every dimension busy, wherever there
  // are several (toroid-sim: the pod's time of direct with 124 messages a chip for 1023; 4x4x8
  // 1 MiB 31.7 against 34.2 µs, 64 MiB 10% behind direct).
  if (c == Collective::alltoall) return long_dims > 1 ? Algorithm::torus2d_both : Algorithm::direct;
  if (long_dims > 2 || (long_dims == 2 && !two_d)) {
    // Three dimensions and more: the crossovers from toroid-sim on tpu-v4 (4x4x8), tpu-v4-pod
    // (16x16x16) and tpu-v5p (16x16x24), f32 (at kLatencyBytes3d above).
    // Broadcast: the chains at every size (the tree's partners lie far apart on a large torus:
    // 16x16x16 1 KiB 24.5 µs against 45.6, 4x4x8 8.2 against 13.3).
    if (c == Collective::broadcast) return Algorithm::torus2d;
    // A twisted torus: torus2d goes along its short dimensions' lines one after the other,
    // torus2d_both starts parts on the rings its twisted links close: torus2d_both from
    // kLatencyBytes3d (4x4x8 twisted, 64 KiB: 18.5 against swing_latency's 20.5 and torus2d's
    // 22.7 µs; 96 KiB 18.7 against 24.4 and 24.1; 2026-12-08).
    if (c == Collective::allreduce)
      return bytes < kLatencyBytes3d                ? Algorithm::swing_latency
             : bytes < kBothBytes3d && !t.twisted() ? Algorithm::torus2d
                                                    : Algorithm::torus2d_both;
    return bytes < kBothBytes3d ? Algorithm::torus2d : Algorithm::torus2d_both;
  }
  if (c == Collective::allreduce) {
    if (t.chips() == 1) return Algorithm::ring;
    if (two_d && mesh)
      return bytes < kLatencyBytesMesh ? Algorithm::swing_latency : Algorithm::torus2d_both;
    if (two_d)
      return bytes < kLatencyBytesTorus ? Algorithm::swing_latency : Algorithm::torus2d_both;
    if (bytes < kSmallMessageBytes) return Algorithm::recursive_doubling;
    if (bytes < kMediumMessageBytes)
      return t.chips() == 2 ? Algorithm::recursive_doubling : Algorithm::rabenseifner;
    return Algorithm::bidir_ring;
  }
  if (c == Collective::broadcast) {
    if (t.chips() == 1 || bytes < broadcast_tree_bytes) return Algorithm::recursive_doubling;
    return two_d ? Algorithm::torus2d : Algorithm::ring;
  }
  if (!two_d) return Algorithm::bidir_ring;
  if (c == Collective::reduce_scatter &&
      bytes < (mesh ? kScatterLatencyBytesMesh : kScatterLatencyBytesTorus))
    return Algorithm::swing_latency;
  if (c == Collective::allgather &&
      bytes < (mesh ? kGatherLatencyBytesMesh : kGatherLatencyBytesTorus))
    return Algorithm::swing_latency;
  const std::uint64_t both = !mesh                             ? kBothBytesTorus
                             : c == Collective::reduce_scatter ? kScatterBothBytesMesh
                                                               : kGatherBothBytesMesh;
  return bytes < both ? Algorithm::torus2d : Algorithm::torus2d_both;
}

std::string size_text(std::uint64_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  if (bytes >= (1u << 10) && bytes % (1u << 10) == 0) return fmt::format("{} KiB", bytes >> 10);
  return fmt::format("{} B", bytes);
}

int Selector::size_class(std::uint64_t bytes) noexcept {
  return static_cast<int>(std::bit_width(bytes));
}
std::uint64_t Selector::class_low(int k) noexcept {
  return k == 0 ? 0 : std::uint64_t{1} << (k - 1);
}
std::uint64_t Selector::class_middle(int k) noexcept {
  return k <= 1 ? static_cast<std::uint64_t>(k) : class_low(k) + class_low(k) / 2;
}

Selector::Selector(SelectorInputs in) : in_(std::move(in)) {
  const int p = in_.topology.chips();
  if (in_.node_of_rank.empty()) in_.node_of_rank.assign(static_cast<std::size_t>(p), 0);
  if (in_.node_of_rank.size() != static_cast<std::size_t>(p))
    throw InvalidArgument(
        fmt::format("selector: {} node indices for {} ranks", in_.node_of_rank.size(), p));
  if (in_.link_node_of_rank.empty()) in_.link_node_of_rank = in_.node_of_rank;
  if (in_.link_node_of_rank.size() != static_cast<std::size_t>(p))
    throw InvalidArgument(fmt::format("selector: {} link node indices for {} ranks",
                                      in_.link_node_of_rank.size(), p));
  for (const auto* nodes : {&in_.node_of_rank, &in_.link_node_of_rank})
    for (int n : *nodes)
      if (n < 0 || n >= p)
        throw InvalidArgument(fmt::format("selector: node index {} outside [0, {})", n, p));
  EndpointLinks e;
  e.node_of_rank = in_.link_node_of_rank;
  e.shm_inside_node = in_.shm_inside_node;
  // Two ranks on one node use the node's class; two nodes, the network.
  std::vector<int> on_node(static_cast<std::size_t>(p), 0);
  int nodes = 0;
  for (int n : e.node_of_rank) {
    if (on_node[static_cast<std::size_t>(n)]++ == 0) ++nodes;
    if (on_node[static_cast<std::size_t>(n)] == 2)
      uses_[static_cast<int>(e.shm_inside_node ? LinkClass::shm : LinkClass::mpi)] = true;
  }
  if (nodes > 1) uses_[static_cast<int>(LinkClass::network)] = true;
  one_node_shm_ = nodes == 1 && e.shm_inside_node;
  std::vector<bool> seen(static_cast<std::size_t>(p), false);
  int schedule_nodes = 0;
  for (int n : in_.node_of_rank)
    if (!seen[static_cast<std::size_t>(n)])
      seen[static_cast<std::size_t>(n)] = true, ++schedule_nodes;
  layout_ = fmt::format("{} ranks, {}, {} node(s), {}", p, in_.topology.to_string(), nodes,
                        in_.shm_inside_node ? "shm" : "mpi");
  if (schedule_nodes != nodes) layout_ += fmt::format(", {} emulated nodes", schedule_nodes);
  if (const auto* m = in_.tuning.choices_for(layout_)) measured_ = *m;
  for (int c = 0; c < kLinkClasses; ++c)
    if (uses_[c] && !in_.tuning.links[static_cast<std::size_t>(c)])
      throw InvalidArgument(fmt::format(
          "tuning {} has no {} link parameters, which this communicator needs ({} ranks on {} "
          "node(s){}): run "
          "toroid-tune on such a layout, or unset TOROID_TUNING for the built-in defaults",
          in_.tuning.source, to_string(static_cast<LinkClass>(c)), p, nodes,
          in_.shm_inside_node ? "" : ", MPI transport"));

  model_.topology = in_.topology;
  model_.reduce_bytes_per_s = in_.tuning.reduce_bytes_per_s;
  model_.segment_bytes = in_.segment_bytes;
  // Nodes wired as the communicator's torus, one rank each: the torus model, per link and hop.
  if (in_.tuning.network_torus && nodes == p && in_.tuning[LinkClass::network]) {
    const LinkParams& n = *in_.tuning[LinkClass::network];
    model_.link_bytes_per_s.fill(n.bytes_per_s);  // every dimension's links alike (a 3D torus
    model_.hop_latency_s.fill(n.alpha_s);         // of nodes too, not only the first two)
  } else {
    for (int k = 0; k < kLinkClasses; ++k) {
      const auto& l = in_.tuning.links[static_cast<std::size_t>(k)];
      e.params[static_cast<std::size_t>(k)] = l ? *l : LinkParams{};
    }
    model_.endpoints = std::move(e);
  }
}

std::optional<double> Selector::predict(Collective c, Algorithm a, std::uint64_t bytes) const {
  if (!implements(a, c) || !has_schedule(a)) return std::nullopt;
  const int p = in_.topology.chips();
  schedule::Spec r;
  r.collective = c;
  // f32 elements; all-gather and reduce-scatter need a count that splits into the ranks' blocks
  // as the caller's would, so round to a multiple of the ranks.
  const std::uint64_t elems = std::max<std::uint64_t>(bytes / 4, 1);
  r.count = c == Collective::allreduce || c == Collective::broadcast
                ? elems
                : std::max<std::uint64_t>(elems / p, 1) * p;
  try {
    const SimResult s = simulate_collective(model_, a, r, DataType::f32, in_.node_of_rank);
    if (!s.error.empty()) return std::nullopt;
    return s.time_s;
  } catch (const InvalidArgument&) {
    return std::nullopt;  // this algorithm cannot run this shape (e.g. torus2d_both on a line)
  }
}

const Choice& Selector::choice(Collective c, int k) {
  auto& slot = table_[static_cast<std::size_t>(c)][static_cast<std::size_t>(k)];
  if (slot) return *slot;
  Choice ch;
  const std::uint64_t at = class_middle(k);
  if (const AlgorithmRule* rule = find_rule(in_.rules, c, at)) {
    ch.algorithm = rule->algorithm;
    ch.rule = rule;
  } else if (const AlgorithmRule* m = find_rule(measured_, c, at)) {
    ch.algorithm = m->algorithm;
    ch.rule = m;
    ch.measured = true;
  } else if (in_.topology.chips() == 2 && c == Collective::allreduce &&
             at < kTwoRankExchangeBytes) {
    ch.algorithm = Algorithm::recursive_doubling;
    ch.exchange = true;
  } else if (in_.topology.chips() > kMaxModeledRanks) {
    ch.algorithm = fixed_rule(c, at, in_.topology);
  } else if (in_.topology.chips() == 1) {
    ch.algorithm = fixed_rule(c, at, in_.topology);  // nothing to move: every algorithm is a copy
  } else {
    ch.modeled = true;
    double best = 0;
    for (Algorithm a : kCandidates) {
      if (!candidate_on(a, in_.topology.chips(), one_node_shm_)) continue;
      const std::optional<double> t = predict(c, a, at);
      if (!t) continue;
      ch.predicted.emplace_back(a, *t);
      if (ch.predicted.size() == 1 || *t < best) {
        best = *t;
        ch.algorithm = a;
      }
    }
    if (ch.predicted.empty()) ch.algorithm = fixed_rule(c, at, in_.topology);
  }
  slot = std::move(ch);
  return *slot;
}

Algorithm Selector::choose(Collective c, std::uint64_t bytes) {
  const int k = size_class(bytes);
  const Choice& ch = choice(c, k);
  bool& reported = reported_[static_cast<std::size_t>(c)][static_cast<std::size_t>(k)];
  if (!reported) {
    reported = true;
    if (observer_) observer_(c, k, ch);
  }
  return ch.algorithm;
}

std::string Selector::describe(Collective c, std::uint64_t up_to) {
  std::string text;
  const int last = size_class(up_to);
  Algorithm current = choice(c, 0).algorithm;
  std::uint64_t from = 0;
  for (int k = 1; k <= last; ++k) {
    const Algorithm a = choice(c, k).algorithm;
    if (a == current) continue;
    text += fmt::format("{} below {}, ", to_string(current), size_text(class_low(k)));
    current = a;
    from = class_low(k);
  }
  if (text.empty()) return std::string(to_string(current));
  return text + fmt::format("{} from {}", to_string(current), size_text(from));
}

std::string Selector::describe_links() const {
  std::string text;
  for (int k = 0; k < kLinkClasses; ++k) {
    if (!uses_[k]) continue;
    const LinkParams& l = *in_.tuning.links[static_cast<std::size_t>(k)];
    text += fmt::format("{}{} {:.3g} us + {:.3g} GB/s", text.empty() ? "" : ", ",
                        to_string(static_cast<LinkClass>(k)), l.alpha_s * 1e6, l.bytes_per_s / 1e9);
  }
  return fmt::format("{}{}reduce {:.3g} GB/s ({})", text, text.empty() ? "" : ", ",
                     in_.tuning.reduce_bytes_per_s / 1e9, in_.tuning.source);
}

}  // namespace toroid::model
