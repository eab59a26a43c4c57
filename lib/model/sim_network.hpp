// The simulator's links: dimension-order routes; the torus's link directions shared by the
// transfers on them (processor sharing), the endpoint model's ports reserved FIFO.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "model/simulator.hpp"

namespace toroid::model::sim {

// Links crossed along each dimension.
using Hops = std::array<int, Torus::kMaxDimensions>;

// Appends the link ids from chip a to chip b to `path` (SimModel's route); hops[d] = links
// crossed along dimension d.
void route_into(const Torus& t, int a, int b, std::vector<int>& path, Hops& hops);

// Endpoint model: a transfer reserved at once (its ends fixed when it starts).
struct Reservation {
  double start = 0;          // when the route was free and the transfer began
  double arrive = 0;         // last byte at the receiver
  double first_segment = 0;  // first segment at the receiver
  int hops = 0;
};

// Torus model: what is known of a flow when it starts; its end is known when its links have
// carried it (Network::advance).
struct FlowStart {
  double first_segment = 0;  // estimate: first segment at the receiver, at the shares it found
  double latency = 0;        // the route's hop latencies
  double segment_s = 0;      // one segment through the slowest dimension crossed, alone
  int hops = 0;
};

// Processor sharing on every torus link direction. A link direction with n flows on it serves
// each at bw/n; when one joins or leaves the others speed up or slow down, so no link ever
// carries more than its bandwidth (the reservation model this replaced fixed a transfer's end
// when it started: later arrivals could not slow it, and a link overlapping many transfers
// carried more than it can). Each link direction keeps a virtual clock V, the service one flow
// on it has had (seconds at full rate): dV/dt = 1/n. A flow of duration d (bytes / bw) joining
// at V0 leaves when V reaches V0 + d, so the order in which a link's flows leave is fixed when
// they join (the smallest tag first), and only its next leaving is an event, moved whenever n
// changes. Links are not coupled along a route (as with buffering routers): a flow is carried
// when each link of its route has carried it. Cost: O(log) per link of a route, per join and
// per leave.
//
//   link +x of chip 0:   A ======----======     (A alone at bw, then A and B at bw/2 each,
//                        B       ==========      then A alone again; B: d_B over 2 d_B)
class Network {
 public:
  explicit Network(const SimModel& m);

  // Endpoint model: reserves the sender's out port and the receiver's in port for `bytes` no
  // earlier than `ready`, after whatever already holds them (FIFO). `source_done`: when the
  // bytes being sent are all final (a send that forwards a receive segment by segment); such a
  // transfer cannot end before that time plus one segment, and takes its ports at full rate as
  // late as that allows.
  Reservation reserve(int a, int b, std::uint64_t bytes, std::uint64_t segment_bytes, double ready,
                      double source_done = 0);

  // Torus model: flow `id` (the caller's, below the flows in flight plus one) of `bytes` from
  // chip a to chip b joins every link direction of its route at time t. Returns false when the
  // route has no links (the flow is carried at t).
  bool start(std::uint32_t id, int a, int b, std::uint64_t bytes, std::uint64_t segment_bytes,
             double t, FlowStart& out);
  // Torus model, with classes of ranks (sim_symmetry.hpp): per link id, the link that stands
  // for it (a flow joins that one, and the bytes and busy time are counted there).
  void use_link_classes(std::vector<std::uint32_t> representative) {
    link_rep_ = std::move(representative);
  }
  const std::vector<std::uint32_t>& link_classes() const { return link_rep_; }
  // Torus model: job `id` (a flow's reduction, or a local copy: the caller's id space, any
  // value) of `bytes` joins chip `chip`'s reducer at time t, which serves the jobs on it by
  // processor sharing at the model's reduce rate, as the engine's progress loop reduces the
  // segments of every transfer in flight as they land. advance() reports it (id | kReducerJob)
  // when the reducer has carried it.
  void start_reduction(std::uint32_t id, int chip, std::uint64_t bytes, double t);
  static constexpr std::uint32_t kReducerJob = 1u << 31;

  // When the next flow leaves a link (infinity: none on any).
  double next_time() const {
    return events_.empty() ? std::numeric_limits<double>::infinity() : events_.front().t;
  }
  // Handles the next leaving: appends (id, time) for each flow that every link of its route
  // has now carried.
  void advance(std::vector<std::pair<std::uint32_t, double>>& carried);

  const std::vector<std::uint64_t>& bytes() const { return bytes_; }
  const std::vector<double>& busy() const { return busy_; }

 private:
  struct Tag {
    double leave;  // the link's virtual clock when the flow has been carried
    std::uint32_t flow;
    bool operator>(const Tag& o) const { return leave > o.leave; }
  };
  struct Link {
    double clock = 0;  // virtual: service each flow on it has had
    double at = 0;     // real time the clock was last brought to
    std::uint32_t flows = 0, version = 0;
    std::vector<Tag> tags;  // a heap, the next to leave first
  };
  struct Event {
    double t;
    std::uint64_t seq;
    std::uint32_t link, version;  // stale when the link's version moved on
    bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };
  // Flow (or reducer job) `flow` joins link `at` for `duration` seconds at full rate, at time
  // t. Returns the flows now on it.
  std::uint32_t join(std::uint32_t at, std::uint32_t flow, double duration, double t);
  void catch_up(Link& l, double t) const;
  void schedule_leave(std::uint32_t id, Link& l, double t);

  const SimModel& m_;
  int directions_;            // link directions per chip (directions_per_chip)
  std::vector<double> free_;  // endpoint model, per link id: when its last reservation ends
  std::vector<Link> links_;   // torus model, per link id, then per chip its reducer
  std::vector<std::uint32_t> links_left_;  // per flow id: links of its route still carrying it
  std::vector<Event> events_;              // a heap, earliest first
  std::uint64_t seq_ = 0;
  std::vector<std::uint64_t> bytes_;
  std::vector<double> busy_;

  std::vector<int> path_;                // reused route buffer
  std::vector<std::uint32_t> link_rep_;  // empty: every link stands for itself
  std::vector<int>
      node_port_;  // endpoint model: per node, the rank whose link ids carry its network ports
  Hops hops_{};    // of the last route, per dimension
};

}  // namespace toroid::model::sim
