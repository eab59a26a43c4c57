// The simulator's links: dimension-order routes and FIFO reservation of link directions.
#pragma once

#include <cstdint>
#include <vector>

#include "model/simulator.hpp"

namespace toroid::model::sim {

// Appends the link ids from chip a to chip b to `path`; hops[d] = links crossed along axis d.
void route_into(const Torus2D& t, int a, int b, std::vector<int>& path, int hops[2]);

struct Reservation {
  double start = 0;          // when the route was free and the transfer began
  double arrive = 0;         // last byte at the receiver
  double first_segment = 0;  // first segment at the receiver
  int hops = 0;
};

class Network {
 public:
  explicit Network(const SimModel& m);

  // Reserves every link dir from chip a to chip b for `bytes`, no earlier than `ready`, after
  // whatever already holds them (FIFO). Counts the bytes and busy time on each link dir.
  // `source_done`: when the bytes being sent are all final (a send that forwards a receive
  // segment by segment). Such a transfer cannot end before that time plus one segment; it is
  // modeled as taking its links at full rate as late as that allows (so they stay free for
  // others before), not as trickling behind its source for the whole time.
  Reservation reserve(int a, int b, std::uint64_t bytes, std::uint64_t segment_bytes, double ready,
                      double source_done = 0);

  const std::vector<std::uint64_t>& bytes() const { return bytes_; }
  const std::vector<double>& busy() const { return busy_; }

 private:
  const SimModel& m_;
  std::vector<double> free_;  // endpoint model, per link id: when its last reservation ends
  std::vector<std::vector<double>>
      active_;  // per link id: ends of the transfers it carries (torus)
  std::vector<std::uint64_t> bytes_;
  std::vector<double> busy_;
  Reservation reserve_endpoints(int a, int b, std::uint64_t bytes, std::uint64_t segment_bytes,
                                double ready, double source_done);

  std::vector<int> path_;  // reused route buffer
  std::vector<int>
      node_port_;  // endpoint model: per node, the rank whose link ids carry its network ports
  int hops_[2] = {0, 0};  // of the last route, per dimension
};

}  // namespace toroid::model::sim
