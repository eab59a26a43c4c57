// Simulator: costs the schedules the engine runs, as the engine runs them (a dataflow over the
// schedule's dependencies), on a model of a torus of chips of 1 to 6 dimensions.
//
// Terms:
//   chip       = one rank; rank = x + X·(y + Y·z ...) as in Torus (first dimension fastest)
//   link dir   = one direction of one physical link, named by the chip it leaves and the way it
//                goes (+x, -x, +y, -y, +z, ...); the two directions of a link are independent
//   hop        = one link crossed; each has a latency, and each dimension its own bandwidth
//   route      = dimension order, X first, then Y, then Z ...; along a dimension with
//                wraparound the shorter way round (a tie takes +), along a mesh dimension (and a
//                twisted torus's short ones) straight to the coordinate
//   transfer   = one send step met by its receive step (same pair, same tag, in order: the
//                verifier's rendezvous matching); it starts when both steps are posted
//   posted     = a step whose dependencies are met (`done`: that step has ended; `follow`: that
//                receive's first segment is final) and the step before it on its channel
//                (direction, peer, tag) is out of the way, as in the engine: on the torus's
//                links (MPI between hosts) once that one is issued, its last byte sent (its
//                landing is a route's latency later); with endpoint links (one node's shared
//                memory) once it has ended
//   reducer    = the chip's reduction unit, a resource with a throughput (bytes/s); recv_reduce
//                and the local steps (copy, scale) queue on it
//
//      (0,0) --+x--> (1,0) --+x--> (2,0)        a transfer (0,0) -> (2,1) crosses
//        |             |             |          +x of (0,0), +x of (1,0), then +y of (2,0):
//       +y            +y            +y          3 hops of latency; each of the three link
//        v             v             v          dirs serves it at its share
//      (0,1) ------- (1,1) ------- (2,1)
//
// Time of one transfer of B bytes over h hops, started at t0 = the later of the two steps'
// posting: it joins every link dir of its route at t0 and each serves it at its fair share
// (processor sharing: n transfers on a link dir move at bw/n each, and speed up as others
// leave; sim_network.hpp). The links of a route are not coupled (buffering routers):
//
//   carried             when every link dir of the route has served its B bytes
//   last byte arrives   carried + sum(hop latencies)                   (cut-through routing)
//   recv_reduce done    max(arrival + s/reduce_bw,                     (last segment's reduction)
//                           reducer start + B/reduce_bw)               (reducer-bound transfers)
//   with s = min(B, segment) and the reducer starting when the first segment has landed.
//
// So segments pipeline analytically (no per-segment events): a segment's reduction overlaps the
// next one's transfer, as in the engine. A send that follows a receive starts on that receive's
// first segment and cannot end before that receive's end plus one segment (it trickles behind
// it); a recv_reduce whose local operand still arrives ends no earlier than that operand's end
// plus one segment's reduction. No link dir ever carries more than its bandwidth.
//
// Cost: two or three events per step, O(hops · log) per transfer (each link dir of the route is
// joined and left); no per-segment or per-element work. The endpoint model (below) reserves its
// ports FIFO at once instead.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/timeline.hpp"
#include "model/tuning.hpp"
#include "schedule/build.hpp"
#include "schedule/step.hpp"
#include "toroid/defaults.hpp"
#include "toroid/topology.hpp"
#include "toroid/torus.hpp"
#include "toroid/types.hpp"

namespace toroid::model {

// The links of a machine rather than a torus (what `auto`'s cost model prices): every rank has a
// port out and a port in for the links inside its node, every node one for the network. A
// transfer of B bytes of link class c holds the sender's out port and the receiver's in port
// (for the network: their nodes') for alpha_c + B/bw_c, FIFO, and its last byte arrives then.
struct EndpointLinks {
  std::vector<int> node_of_rank;  // every rank's node
  bool shm_inside_node = true;    // inside a node: toroid's shared-memory links (else MPI)
  std::array<LinkParams, kLinkClasses> params;
  LinkClass class_of(int a, int b) const {
    if (node_of_rank[static_cast<std::size_t>(a)] != node_of_rank[static_cast<std::size_t>(b)])
      return LinkClass::network;
    return shm_inside_node ? LinkClass::shm : LinkClass::mpi;
  }
};

using PerDimension = std::array<double, Torus::kMaxDimensions>;

struct SimModel {
  Torus topology{Torus2D{1, 1}};           // any number of dimensions
  std::optional<EndpointLinks> endpoints;  // set: these links, not the torus's
  PerDimension link_bytes_per_s{80e9, 80e9, 80e9, 80e9, 80e9, 80e9};  // per direction, [x, y, ...]
  PerDimension hop_latency_s{1e-6, 1e-6, 1e-6, 1e-6, 1e-6, 1e-6};     // per hop, [x, y, ...]
  double reduce_bytes_per_s = 300e9;  // received bytes reduced per second, per chip
  std::uint64_t segment_bytes = default_segment_bytes;  // the executor's pipelining segment
  // simulate_collective on the torus: run one rank per class of ranks whose schedules are
  // moved copies of each other (sim_symmetry.hpp) where it finds such classes; false: every rank.
  bool symmetric = true;
};

struct SimPhase {
  std::uint32_t phase = 0;  // the schedule's phase number
  double start_s = 0, end_s = 0;
};

// The link directions leaving a chip: + and - along each dimension, at least the four of two
// dimensions (the endpoint model's ports are named by them); link id = chip * that number +
// 2·dimension + (1 for the - direction).
inline int directions_per_chip(const Torus& t) { return 2 * std::max(2, t.dimensions()); }
inline int link_id(const Torus& t, int chip, int dimension, int direction) {
  return chip * directions_per_chip(t) + 2 * dimension + (direction < 0 ? 1 : 0);
}
// The same on a shape of two dimensions or fewer.
enum class LinkDir : std::uint8_t { plus_x, minus_x, plus_y, minus_y };
inline int link_id(int chip, LinkDir d) { return chip * 4 + static_cast<int>(d); }

struct SimResult {
  std::string error;  // "" when every schedule ran to its end; else what went wrong
  double time_s = 0;  // the last rank's finish
  std::vector<SimPhase> rank0_phases;
  std::vector<std::uint64_t> link_bytes;       // per link id
  std::vector<double> link_busy_s;             // per link id
  std::vector<std::uint64_t> chip_sent_bytes;  // bytes each chip injected (its sends)
  int busiest_link = -1;                       // link id with the most busy time
  double busiest_utilisation = 0;              // its busy time / time_s
  std::uint64_t transfers = 0, max_hops = 0;
  int simulated_ranks = 0;         // simulate_collective: ranks run (one per class, or every rank)
  std::uint64_t vector_bytes = 0;  // the collective's full vector
  double algbw_gbps = 0, busbw_gbps = 0;  // 1e9 bytes/s; busbw as toroid-bench computes it
};

// What the schedules of a collective on `m` are built for (rank 0's; set `rank` for others): the
// torus links' rates and hop latency (endpoint links: their rates only). A communicator whose
// `auto` prices on `m` builds what it runs from the same context, so that both are one schedule.
schedule::Context schedule_context(const SimModel& m, const std::vector<int>& node_of_rank);

// What one group of a collective along `axes` runs on: the sub-torus (Torus::along) with the
// chosen dimensions' link rates and hop latencies, the same reducer and segment. Its groups share
// no link, so the collective along axes takes the time the sub-torus alone takes, and its bounds
// (limit_of) are the sub-torus's.
SimModel model_along(const SimModel& m, Axes axes);

// Simulates schedules (index = rank) whose chunks count elements of `elem_size` bytes.
SimResult simulate(const SimModel& m, const std::vector<schedule::Schedule>& schedules,
                   std::size_t elem_size);

// Builds and simulates one collective: where its ranks' schedules are moved copies of each other
// along the wrapping axes (and `m.symmetric`, no endpoints, no root, no timeline), one rank per
// class (sim_symmetry.hpp: the multipod's ring runs 128 of its 4096 chips); else every rank's,
// compacted as they are built (48 bytes a step, sim_program.hpp), so 4096 ranks of `ring`
// (16380 steps each) take about 4 GB. Throws what build throws.
// `timeline`: when given, filled with every rank's steps as the model ran them (a transfer's
// steps from when its links were taken to their ends; model/timeline.hpp), one entry per rank.
SimResult simulate_collective(const SimModel& m, Algorithm a, const schedule::Spec& r,
                              DataType type, const std::vector<int>& node_of_rank = {},
                              std::vector<RankTimeline>* timeline = nullptr);

// Link ids a message from chip a to chip b crosses, in order (dimension order: x, then y, ...;
// the shorter way round a ring; a twisted torus's short dimensions as lines).
std::vector<int> route(const Torus& t, int a, int b);

}  // namespace toroid::model
